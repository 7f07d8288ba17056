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
  QueueHealth,
  QueueOutcomes,
  QueueStats,
  SummaryStats,
  ThroughputPoint,
  ThroughputStats,
} from '../../interfaces/job-view.interface';
import type { JobDependencies, QueueGroupLoad } from '../../interfaces/job.interface';
import type { WorkerInfo } from '../../interfaces/worker.interface';
import { PREVIEW_SAMPLE } from '../../validation/limits';
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
import { mapAttemptRow } from '../shared/attempts';
import { mapDedupeRow } from '../shared/dedupe';
import { mapQueueGroupRow } from '../shared/groups';
import { toAuditPage } from '../shared/audit-log';
import { topErrorFamilies } from '../shared/error-family';
import { ErrorFamilyMemo } from '../shared/error-family-memo';
import { toListPage } from '../shared/page';
import { fold, mapJobView, mapOutcomesRow, mapWorkerRow, toDate } from '../shared/row-mapper';
import { mapBatch, mapBatchResults } from '../shared/batches';
import { mapDependencies } from '../shared/dependencies';
import { queueHealthOf } from '../shared/queue-health';
import { throughputSeries } from '../shared/throughput-series';
import { num, PostgresConnection } from './postgres.connection';
import * as SQL from './sql';

/**
 * The read half of the PostgreSQL dialect ({@link JobQueries}): one job, lists, stats, health,
 * throughput, top errors and previews. Every read is one autocommit statement (or a few, on one
 * pooled connection each) of `sql/`; none takes a row lock, and none is prepared by
 * name (their texts vary with the filter). It shares its {@link PostgresConnection} with
 * {@link PostgresJobStore}, which owns the lifecycle.
 */
export class PostgresJobQueries implements DialectJobQueries {
  /** Families of the error lines the top errors met before (a dashboard polls them). */
  private readonly families = new ErrorFamilyMemo();

  constructor(private readonly db: PostgresConnection) {}

  // ---------------------------------------------------------------- reads

  /**
   * Hot first, then archive, then DLQ: three primary-key reads on one pooled connection, not one
   * snapshot. Forward moves (hot → archive/DLQ) between the reads are still found; a resurrect
   * (DLQ → hot) landing exactly between the first and the last read can make one call miss the job.
   * With `attempts`, a found job's attempt rows are read after it (a move that ends a run between
   * the two reads shows its attempt with the row from before it). Then the dedupe key it holds.
   */
  async getJob(id: string, attempts: boolean): Promise<JobView | null> {
    const lookups = [
      ['hot', SQL.getJobHot(this.db.s)],
      ['archive', SQL.getJobArchive(this.db.s)],
      ['dlq', SQL.getJobDlq(this.db.s)],
    ] as const;
    for (const [pillar, sql] of lookups) {
      const [row] = await this.db.query('getJob', sql, SQL.getJobParams(id));
      if (!row) continue;
      const [key] = await this.db.query('getJob', SQL.dedupeOfJob(this.db.s), SQL.getJobParams(id));
      const view = { ...mapJobView(row, pillar), dedupe: key ? mapDedupeRow(key) : null };
      if (!attempts) return view;
      const attemptsSql = SQL.getJobAttempts(this.db.s);
      const history = await this.db.query('getJob', attemptsSql, SQL.getJobParams(id));
      return { ...view, attempts: history.map(mapAttemptRow) };
    }
    return null;
  }

  /** The batch row and its callbacks, one read. */
  async getBatch(id: string): Promise<BatchView | null> {
    const rows = await this.db.query('getBatch', SQL.getBatch(this.db.s), SQL.getBatchParams(id));
    return mapBatch(rows.map(fold));
  }

  /** One read (`SQL.getDependencies`): the job's edges both ways. */
  async getDependencies(id: string): Promise<JobDependencies> {
    const rows = await this.db.query(
      'getDependencies',
      SQL.getDependencies(this.db.s),
      SQL.getDependenciesParams(id),
    );
    return mapDependencies(rows);
  }

  /** One read (`SQL.getBatchResults`), a row more than the page to tell whether another follows. */
  async getBatchResults(
    batchId: string,
    query: Checked<CheckedBatchResultsQuery>,
  ): Promise<BatchResultsPage> {
    const rows = await this.db.query(
      'getBatchResults',
      SQL.getBatchResults(this.db.s),
      SQL.getBatchResultsParams(batchId, query.after, query.limit),
    );
    return mapBatchResults(rows, query.limit);
  }

  /** @inheritdoc */
  async batchHotJobIds(id: string): Promise<string[]> {
    const rows = await this.db.query('batchHotJobIds', SQL.batchHotJobIds(this.db.s), [id]);
    return rows.map((r) => String(r.id));
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

  /** One keyset page: one statement of `sql/` (`listJobs`), no count. */
  private async list(name: string, request: ListRequest<object>): Promise<ListPage> {
    const page = SQL.listJobsQuery(this.db.s, request);
    const rows = await this.db.query(name, page.text, page.values);
    return toListPage(request, rows);
  }

  /** @inheritdoc */
  async getSummary(): Promise<SummaryStats> {
    const [r] = await this.db.query(
      'getSummary',
      SQL.getSummary(this.db.s),
      SQL.getSummaryParams(this.db.s),
    );
    return {
      succeededTotal: num(r.succeeded_total),
      failedTotal: num(r.failed_total),
      cancelledTotal: num(r.cancelled_total),
      retriedTotal: num(r.retried_total),
      deferredTotal: num(r.deferred_total),
      resurrectedTotal: num(r.resurrected_total),
      pending: num(r.pending),
      fetched: num(r.fetched),
      processing: num(r.processing),
      waiting: num(r.waiting),
      archived: Math.max(0, num(r.archived)),
      dlq: Math.max(0, num(r.dlq)),
      estimated: { archived: true, dlq: true },
    };
  }

  /** @inheritdoc */
  async replicationLagMs(): Promise<number | null> {
    const [row] = await this.db.query('replicationLagMs', SQL.SELECT_REPLICATION_LAG);
    return row?.lag_ms === null || row?.lag_ms === undefined ? null : num(row.lag_ms);
  }

  async getQueueStats(): Promise<QueueStats[]> {
    const rows = await this.db.query('getQueueStats', SQL.getQueueStats(this.db.s));
    return rows.map((r) => ({
      queue: String(r.queue),
      pending: num(r.pending),
      fetched: num(r.fetched),
      processing: num(r.processing),
      waiting: num(r.waiting),
      succeededTotal: num(r.succeeded_total),
      failedTotal: num(r.failed_total),
      cancelledTotal: num(r.cancelled_total),
      retriedTotal: num(r.retried_total),
      deferredTotal: num(r.deferred_total),
      resurrectedTotal: num(r.resurrected_total),
      lastActivityUtc: toDate(r.last_activity_utc),
      isPaused: r.is_paused === true,
      isActive: r.is_active === true,
      maxWorkers: r.max_workers === null ? null : num(r.max_workers),
    }));
  }

  /** @inheritdoc */
  async getQueueHealth(): Promise<QueueHealth[]> {
    const rows = await this.db.query('getQueueHealth', SQL.getQueueHealth(this.db.s));
    return rows.map((r) =>
      queueHealthOf({
        queue: String(r.queue),
        maxWorkers: r.max_workers === null ? null : num(r.max_workers),
        active: num(r.active),
        duePending: num(r.due_pending),
        lagSumMs: num(r.lag_sum_ms),
        maxLagMs: num(r.max_lag_ms),
        heldPending: num(r.held_pending),
        heldLagSumMs: num(r.held_lag_sum_ms),
        heldMaxLagMs: num(r.held_max_lag_ms),
        heldUntilUtc: toDate(r.held_until_utc),
        startLagCount: num(r.lag_count),
        startLagSumMs: num(r.start_lag_sum_ms),
        startLagMaxMs: num(r.lag_max_ms),
      }),
    );
  }

  /** @inheritdoc */
  async getQueueOutcomes(query: Checked<CheckedOutcomesQuery>): Promise<QueueOutcomes[]> {
    const rows = await this.db.query(
      'getQueueOutcomes',
      SQL.getQueueOutcomes(this.db.s),
      SQL.getQueueOutcomesParams(query),
    );
    return rows.map((r) => mapOutcomesRow(r, query.minutes));
  }

  /** @inheritdoc */
  async getThroughput(queue?: string): Promise<ThroughputStats> {
    const sql = SQL.getThroughput(this.db.s);
    const [r] = await this.db.query('getThroughput', sql, SQL.getThroughputParams(queue));
    return {
      perSecond1m: num(r.total_1m) / num(r.span_1m),
      perSecond5m: num(r.total_5m) / num(r.span_5m),
      succeeded1m: num(r.succeeded_1m),
      failed1m: num(r.failed_1m),
      succeeded5m: num(r.succeeded_5m),
      failed5m: num(r.failed_5m),
    };
  }

  /** @inheritdoc */
  async getQueueGroups(queue: string, limit: number): Promise<QueueGroupLoad[]> {
    const rows = await this.db.query('getQueueGroups', SQL.getQueueGroups(this.db.s), [
      queue,
      limit,
    ]);
    return rows.map(mapQueueGroupRow);
  }

  /** @inheritdoc */
  async getThroughputSeries(query: Checked<CheckedSeriesQuery>): Promise<ThroughputPoint[]> {
    const series = SQL.getThroughputSeriesQuery(this.db.s, query);
    const rows = await this.db.query('getThroughputSeries', series.text, series.values);
    return throughputSeries(
      query,
      rows.map((r) => ({
        slot: num(r.slot),
        outcome: num(r.outcome),
        count: num(r.count),
        durationCount: num(r.duration_count),
        totalDurationMs: num(r.total_duration_ms),
        lagCount: num(r.lag_count),
        lagSumMs: num(r.lag_sum_ms),
        lagMaxMs: num(r.lag_max_ms),
      })),
    );
  }

  /**
   * Groups the window (the newest 10,000 matching rows of the last 24 hours) by error family, in
   * `shared/error-family.ts`.
   */
  async getTopDlqErrors(limit: number, f: Checked<DlqFilter>): Promise<DlqErrorFamily[]> {
    const top = SQL.getTopDlqErrorsQuery(this.db.s, f);
    const rows = await this.db.query('getTopDlqErrors', top.text, top.values);
    return topErrorFamilies(
      rows.map((r) => ({ line: String(r.line ?? ''), failedAtUtc: toDate(r.failed_at_ms)! })),
      limit,
      (line) => this.families.familyOf(line),
    );
  }

  /** @inheritdoc */
  async countExactly(query: Checked<CheckedCountQuery>): Promise<number> {
    const count = SQL.countExactlyQuery(this.db.s, query);
    const [row] = await this.db.query('countExactly', count.text, count.values);
    return num(row?.total);
  }

  /** Matched count, `min(matched, max)`, and up to 20 sample ids in the order bulk actions take them. */
  async previewDlqFilter(f: Checked<DlqFilter>, max: number): Promise<BulkPreview> {
    const q = SQL.previewDlqFilterQueries(this.db.s, f, Math.min(PREVIEW_SAMPLE, max));
    const [[count], sample] = await Promise.all([
      this.db.query('previewDlqFilter', q.count.text, q.count.values),
      this.db.query('previewDlqFilter', q.sample.text, q.sample.values),
    ]);
    const matched = num(count?.total);
    return {
      matched,
      willAffect: Math.min(matched, max),
      sampleIds: sample.map((r) => String(r.id)),
    };
  }

  /** @inheritdoc */
  async listWorkers(query: Checked<CheckedWorkerQuery>): Promise<WorkerInfo[]> {
    const sql = SQL.listWorkers(this.db.s);
    const rows = await this.db.query('listWorkers', sql, SQL.listWorkersParams(query));
    return rows.map(mapWorkerRow);
  }

  /** @inheritdoc */
  async getAuditLog(query: Checked<CheckedAuditQuery>): Promise<AuditLogPage> {
    const sql = SQL.getAuditLog(this.db.s, query.target !== null);
    const rows = await this.db.query('getAuditLog', sql, SQL.getAuditLogParams(query));
    return toAuditPage(query, rows);
  }
}
