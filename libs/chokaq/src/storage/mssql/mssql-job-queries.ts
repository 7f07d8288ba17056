import type { AuditLogPage } from '../../interfaces/audit.interface';
import type { BatchResultsPage, BatchView } from '../../interfaces/batch.interface';
import type { Checked } from '../../interfaces/checked.interface';
import {
  ActiveFilter,
  BulkPreview,
  DlqErrorFamily,
  DlqFilter,
  HistoryFilter,
  JobView,
  ListPage,
  Pillar,
  QueueHealth,
  QueueOutcomes,
  QueueStats,
  SummaryStats,
  ThroughputPoint,
  ThroughputStats,
} from '../../interfaces/job-view.interface';
import type { JobDependencies, QueueGroupLoad } from '../../interfaces/job.interface';
import type { WorkerInfo } from '../../interfaces/worker.interface';
import {
  PREVIEW_SAMPLE,
  TOP_ERRORS_WINDOW_MS,
  TOP_ERRORS_WINDOW_ROWS,
} from '../../validation/limits';
import type { CheckedWorkerQuery } from '../../validation/validate-args';
import type { CheckedAuditQuery } from '../../validation/validate-audit';
import type { ListRequest } from '../../validation/validate-list';
import type {
  CheckedBatchResultsQuery,
  CheckedCountQuery,
  CheckedOutcomesQuery,
  CheckedSeriesQuery,
} from '../../validation/validate-reads';
import { DialectJobQueries } from '../dialect-job-storage';
import { toAuditPage } from '../shared/audit-log';
import { ERROR_LINE_PREFIX, topErrorFamilies } from '../shared/error-family';
import { ErrorFamilyMemo } from '../shared/error-family-memo';
import { toListPage } from '../shared/page';
import { mapAttemptRow } from '../shared/attempts';
import { mapBatch, mapBatchResults } from '../shared/batches';
import { mapDedupeRow } from '../shared/dedupe';
import { mapDependencies } from '../shared/dependencies';
import { mapQueueGroupRow } from '../shared/groups';
import { fold, mapJobView, mapOutcomesRow, mapWorkerRow, toDate } from '../shared/row-mapper';
import { queueHealthOf } from '../shared/queue-health';
import { throughputSeries } from '../shared/throughput-series';
import { bool, idsOf, MssqlConnection, num, numOrNull } from './mssql.connection';
import * as SQL from './sql';

/**
 * The read half of the SQL Server dialect ({@link JobQueries}): one job, lists, stats, health,
 * throughput, top errors and previews. Every read is one batch of `sql/` (or two, for a
 * preview's count and sample), with the transient retry; none takes an update lock, and the telemetry
 * reads are `NOLOCK` (approximate by design). It shares its {@link MssqlConnection} with
 * {@link MssqlJobStore}, which owns the lifecycle.
 */
export class MssqlJobQueries implements DialectJobQueries {
  /** Families of the error lines the top errors met before (a dashboard polls them). */
  private readonly families = new ErrorFamilyMemo();

  constructor(private readonly db: MssqlConnection) {}

  /** The schema the statements are built for, with how its key columns compare. */
  private get schema(): SQL.MssqlSchema {
    return this.db.target;
  }

  // ---------------------------------------------------------------- reads

  /**
   * The job's row (one batch over the three pillars), then the dedupe key it holds, then with
   * `attempts` its attempt rows: each its own READ COMMITTED read, so a key that moves to a newer
   * holder between the reads shows as it is at the second.
   * @inheritdoc
   */
  async getJob(key: string, attempts: boolean): Promise<JobView | null> {
    const rows = await this.db.query('getJob', SQL.getJob(this.schema, key));
    if (!rows[0]) return null;
    const [held] = await this.db.query('getJob', SQL.dedupeOfJob(this.schema, key));
    const view = {
      ...mapJobView(rows[0], String(rows[0].Pillar) as Pillar),
      dedupe: held ? mapDedupeRow(held) : null,
    };
    if (!attempts) return view;
    const history = await this.db.query('getJob', SQL.getJobAttempts(this.schema, key));
    return { ...view, attempts: history.map(mapAttemptRow) };
  }

  /**
   * The batch's row with its callbacks, one batch (`SQL.getBatch`), its PascalCase columns folded
   * for the shared mapping.
   * @inheritdoc
   */
  async getBatch(id: string): Promise<BatchView | null> {
    const rows = await this.db.query('getBatch', SQL.getBatch(this.schema, id));
    return mapBatch(rows.map(fold));
  }

  /**
   * One read (`SQL.getDependencies`): the job's edges both ways, its PascalCase columns folded by
   * the shared mapping.
   * @inheritdoc
   */
  async getDependencies(id: string): Promise<JobDependencies> {
    const rows = await this.db.query('getDependencies', SQL.getDependencies(this.schema, id));
    return mapDependencies(rows);
  }

  /**
   * One read (`SQL.getBatchResults`), a row more than the page to tell whether another follows.
   * @inheritdoc
   */
  async getBatchResults(
    batchId: string,
    query: Checked<CheckedBatchResultsQuery>,
  ): Promise<BatchResultsPage> {
    const rows = await this.db.query(
      'getBatchResults',
      SQL.getBatchResults(this.schema, batchId, query.after, query.limit),
    );
    return mapBatchResults(rows, query.limit);
  }

  /**
   * One read (`SQL.batchHotJobIds`).
   * @inheritdoc
   */
  async batchHotJobIds(id: string): Promise<string[]> {
    return idsOf(await this.db.query('batchHotJobIds', SQL.batchHotJobIds(this.schema, id)));
  }

  /** @inheritdoc */
  listActive(request: Checked<ListRequest<ActiveFilter>>): Promise<ListPage> {
    return this.list('listActive', request);
  }

  /** @inheritdoc */
  listArchive(request: Checked<ListRequest<HistoryFilter>>): Promise<ListPage> {
    return this.list('listArchive', request);
  }

  /** @inheritdoc */
  listDlq(request: Checked<ListRequest<DlqFilter>>): Promise<ListPage> {
    return this.list('listDlq', request);
  }

  /** One keyset page: one batch of `sql/` (`listJobs`), no count. */
  private async list(name: string, request: ListRequest<object>): Promise<ListPage> {
    const rows = await this.db.query(
      name,
      SQL.listJobs(this.schema, request as SQL.MssqlListRequest),
    );
    return toListPage(request, rows);
  }

  /** @inheritdoc */
  async getSummary(): Promise<SummaryStats> {
    const r = (await this.db.query('getSummary', SQL.getSummary(this.schema)))[0] ?? {};
    return {
      succeededTotal: num(r.SucceededTotal),
      failedTotal: num(r.FailedTotal),
      cancelledTotal: num(r.CancelledTotal),
      retriedTotal: num(r.RetriedTotal),
      deferredTotal: num(r.DeferredTotal),
      resurrectedTotal: num(r.ResurrectedTotal),
      pending: num(r.Pending),
      fetched: num(r.Fetched),
      processing: num(r.Processing),
      waiting: num(r.Waiting),
      archived: num(r.Archived),
      dlq: num(r.Dlq),
      estimated: { archived: true, dlq: true },
    };
  }

  /** @inheritdoc */
  /**
   * SQL Server storage takes no read replica (`storage.readReplica` is PostgreSQL's), so its
   * connection is always the primary's.
   */
  replicationLagMs(): Promise<number | null> {
    return Promise.resolve(null);
  }

  async getQueueStats(): Promise<QueueStats[]> {
    const rows = await this.db.query('getQueueStats', SQL.getQueueStats(this.schema));
    return rows.map((r) => ({
      queue: String(r.Queue),
      pending: num(r.Pending),
      fetched: num(r.Fetched),
      processing: num(r.Processing),
      waiting: num(r.Waiting),
      succeededTotal: num(r.SucceededTotal),
      failedTotal: num(r.FailedTotal),
      cancelledTotal: num(r.CancelledTotal),
      retriedTotal: num(r.RetriedTotal),
      deferredTotal: num(r.DeferredTotal),
      resurrectedTotal: num(r.ResurrectedTotal),
      lastActivityUtc: toDate(r.LastActivityUtc),
      isPaused: bool(r.IsPaused),
      isActive: bool(r.IsActive),
      maxWorkers: numOrNull(r.MaxWorkers),
    }));
  }

  /** @inheritdoc */
  async getQueueHealth(): Promise<QueueHealth[]> {
    const rows = await this.db.query('getQueueHealth', SQL.getQueueHealth(this.schema));
    return rows.map((r) =>
      queueHealthOf({
        queue: String(r.Queue),
        maxWorkers: numOrNull(r.MaxWorkers),
        active: num(r.Active),
        duePending: num(r.DuePending),
        lagSumMs: num(r.DueLagSumMs),
        maxLagMs: num(r.MaxLagMs),
        heldPending: num(r.HeldPending),
        heldLagSumMs: num(r.HeldLagSumMs),
        heldMaxLagMs: num(r.HeldMaxLagMs),
        heldUntilUtc: toDate(r.HeldUntilUtc),
        startLagCount: num(r.LagCount),
        startLagSumMs: num(r.LagSumMs),
        startLagMaxMs: num(r.LagMaxMs),
      }),
    );
  }

  /** @inheritdoc */
  async getQueueOutcomes(query: Checked<CheckedOutcomesQuery>): Promise<QueueOutcomes[]> {
    const rows = await this.db.query(
      'getQueueOutcomes',
      SQL.getQueueOutcomes(this.schema, query.minutes),
    );
    return rows.map((r) => mapOutcomesRow(r, query.minutes));
  }

  /** @inheritdoc */
  async getThroughput(queue?: string): Promise<ThroughputStats> {
    const r =
      (await this.db.query('getThroughput', SQL.getThroughput(this.schema, queue)))[0] ?? {};
    return {
      perSecond1m: num(r.Completed1m) / (num(r.Span1mMs) / 1_000),
      perSecond5m: num(r.Completed5m) / (num(r.Span5mMs) / 1_000),
      succeeded1m: num(r.Succeeded1m),
      failed1m: num(r.Failed1m),
      succeeded5m: num(r.Succeeded5m),
      failed5m: num(r.Failed5m),
    };
  }

  /**
   * One batch (`SQL.getQueueGroups`): the queue's grouped hot rows, through the two filtered
   * indexes that hold only rows with a group.
   * @inheritdoc
   */
  async getQueueGroups(queue: string, limit: number): Promise<QueueGroupLoad[]> {
    const rows = await this.db.query(
      'getQueueGroups',
      SQL.getQueueGroups(this.schema, queue, limit),
    );
    return rows.map(mapQueueGroupRow);
  }

  /** @inheritdoc */
  async getThroughputSeries(query: Checked<CheckedSeriesQuery>): Promise<ThroughputPoint[]> {
    const rows = await this.db.query(
      'getThroughputSeries',
      SQL.getThroughputSeries(this.schema, query),
    );
    return throughputSeries(
      query,
      rows.map((r) => ({
        slot: num(r.Slot),
        outcome: num(r.Outcome),
        count: num(r.CompletedCount),
        durationCount: num(r.DurationCount),
        totalDurationMs: num(r.TotalDurationMs),
        lagCount: num(r.LagCount),
        lagSumMs: num(r.LagSumMs),
        lagMaxMs: num(r.LagMaxMs),
      })),
    );
  }

  /** Groups the window (the newest 10,000 matching rows of the last 24 hours) by error family. */
  async getTopDlqErrors(top: number, filter: Checked<DlqFilter>): Promise<DlqErrorFamily[]> {
    const rows = await this.db.query(
      'getTopDlqErrors',
      SQL.getTopDlqErrors(this.schema, filter, {
        rows: TOP_ERRORS_WINDOW_ROWS,
        windowMs: TOP_ERRORS_WINDOW_MS,
        prefix: ERROR_LINE_PREFIX,
      }),
    );
    return topErrorFamilies(
      rows.map((r) => ({ line: String(r.Line ?? ''), failedAtUtc: toDate(r.FailedAtUtc)! })),
      top,
      (line) => this.families.familyOf(line),
    );
  }

  /** @inheritdoc */
  async countExactly(query: Checked<CheckedCountQuery>): Promise<number> {
    const rows = await this.db.query(
      'countExactly',
      SQL.countExactly(this.schema, query.pillar, query.filter),
    );
    return num(rows[0]?.Total);
  }

  /** @inheritdoc */
  async previewDlqFilter(valid: Checked<DlqFilter>, bound: number): Promise<BulkPreview> {
    const matched = num(
      (await this.db.query('previewDlqFilter', SQL.previewDlqFilterCount(this.schema, valid)))[0]
        ?.Total,
    );
    const sample = Math.min(PREVIEW_SAMPLE, bound);
    const sampleIds =
      sample === 0
        ? []
        : idsOf(
            await this.db.query(
              'previewDlqFilter',
              SQL.previewDlqFilterSample(this.schema, valid, sample),
            ),
          );
    return { matched, willAffect: Math.min(matched, bound), sampleIds };
  }

  /** @inheritdoc */
  async listWorkers(query: Checked<CheckedWorkerQuery>): Promise<WorkerInfo[]> {
    const rows = await this.db.query(
      'listWorkers',
      SQL.listWorkers(this.schema, query.lostAfterMs, query.limit),
    );
    return rows.map(mapWorkerRow);
  }

  /** @inheritdoc */
  async getAuditLog(query: Checked<CheckedAuditQuery>): Promise<AuditLogPage> {
    return toAuditPage(
      query,
      await this.db.query('getAuditLog', SQL.getAuditLog(this.schema, query)),
    );
  }
}
