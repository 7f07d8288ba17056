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
import {
  PREVIEW_SAMPLE,
  TOP_ERRORS_WINDOW_MS,
  TOP_ERRORS_WINDOW_ROWS,
} from '../../validation/limits';
import type { CheckedWorkerQuery } from '../../validation/validate-args';
import type { CheckedAuditQuery } from '../../validation/validate-audit';
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
import { Outcome } from '../shared/outcome';
import type { ListRequest } from '../../validation/validate-list';
import { toListPage } from '../shared/page';
import { mapAttemptRow } from '../shared/attempts';
import { mapDedupeRow } from '../shared/dedupe';
import { mapQueueGroupRow } from '../shared/groups';
import { fold, mapJobView, mapOutcomesRow, mapWorkerRow, toDate } from '../shared/row-mapper';
import { mapBatch, mapBatchResults } from '../shared/batches';
import { mapDependencies } from '../shared/dependencies';
import { queueHealthOf } from '../shared/queue-health';
import { throughputSeries } from '../shared/throughput-series';
import { SqliteConnection } from './sqlite.connection';
import * as SQL from './sql';

/**
 * The read half of the SQLite dialect ({@link JobQueries}): one job, lists, stats, health,
 * throughput, top errors and previews. Each read is one deferred `BEGIN` transaction on the
 * connection, so a read of several statements sees one WAL snapshot and never waits for a writer
 * of another process; none writes. Fixed texts come from `sql/`, filtered ones are built
 * per call (and prepared once per shape). It shares its {@link SqliteConnection} with
 * {@link SqliteJobStore}, which owns the lifecycle.
 */
export class SqliteJobQueries implements DialectJobQueries {
  /** The fixed statements, by the name of the method they serve (`sql/`). */
  private readonly sql: SQL.JobQueriesStatements;
  /** Families of the error lines the top errors met before (a dashboard polls them). */
  private readonly families = new ErrorFamilyMemo();

  constructor(private readonly db: SqliteConnection) {
    this.sql = SQL.jobQueriesStatements(db.prefix);
  }

  // ---------------------------------------------------------------- reads

  /** @inheritdoc */
  async getJob(id: string, attempts: boolean): Promise<JobView | null> {
    // One read transaction: a job moving between pillars is seen exactly once (a WAL snapshot),
    // and with `attempts` its history, and the dedupe key it holds, as of that same instant.
    return this.db.read('getJob', () => {
      const found = this.findJob(id);
      if (found === null) return null;
      const key = this.db.get(this.sql.dedupeOfJob, { id });
      const view = { ...found, dedupe: key ? mapDedupeRow(key) : null };
      if (!attempts) return view;
      const history = this.db.all(this.sql.getJobAttempts, { id });
      return { ...view, attempts: history.map(mapAttemptRow) };
    });
  }

  /** @inheritdoc */
  async getBatch(id: string): Promise<BatchView | null> {
    const rows = await this.db.read('getBatch', () => this.db.all(this.sql.getBatch, { id }));
    return mapBatch(rows.map(fold));
  }

  /** One read (`getDependencies`): the job's edges both ways. */
  async getDependencies(id: string): Promise<JobDependencies> {
    const rows = await this.db.read('getDependencies', () =>
      this.db.all(this.sql.getDependencies, { id }),
    );
    return mapDependencies(rows);
  }

  /** @inheritdoc */
  async getBatchResults(
    batchId: string,
    query: Checked<CheckedBatchResultsQuery>,
  ): Promise<BatchResultsPage> {
    const rows = await this.db.read('getBatchResults', () =>
      this.db.all(this.sql.getBatchResults, {
        id: batchId,
        after: query.after,
        limit: query.limit + 1,
      }),
    );
    return mapBatchResults(rows, query.limit);
  }

  /** @inheritdoc */
  async batchHotJobIds(id: string): Promise<string[]> {
    const rows = await this.db.read('batchHotJobIds', () =>
      this.db.all(this.sql.batchHotJobIds, { id }),
    );
    return rows.map((r) => String(r.id));
  }

  /** Hot first, then archive, then DLQ (primary-key reads), inside the caller's read. */
  private findJob(id: string): JobView | null {
    const hot = this.db.get(this.sql.getJobHot, { id });
    if (hot) return mapJobView(hot, 'hot');
    const archived = this.db.get(this.sql.getJobArchive, { id });
    if (archived) return mapJobView(archived, 'archive');
    const dead = this.db.get(this.sql.getJobDlq, { id });
    return dead ? mapJobView(dead, 'dlq') : null;
  }

  /** @inheritdoc */
  async listActive(request: Checked<ListRequest<ActiveFilter>>): Promise<ListPage> {
    return this.list('listActive', this.sql.tables.hot, request);
  }

  /** @inheritdoc */
  async listArchive(request: Checked<ListRequest<HistoryFilter>>): Promise<ListPage> {
    return this.list('listArchive', this.sql.tables.archive, request);
  }

  /** @inheritdoc */
  async listDlq(request: Checked<ListRequest<DlqFilter>>): Promise<ListPage> {
    return this.list('listDlq', this.sql.tables.dlq, request);
  }

  /** One keyset page: one statement of `sql/` (`listJobs`), no count. */
  private async list(name: string, table: string, request: ListRequest<object>): Promise<ListPage> {
    const where = SQL.listWhere(request as ListRequest<ActiveFilter & DlqFilter>);
    const sql = SQL.listJobs(table, request, where);
    const rows = await this.db.read(name, () =>
      this.db.all(sql, { ...where.indexed.params, limit: request.limit + 1 }),
    );
    return toListPage(request, rows);
  }

  /**
   * Counters, hot counts and the archive's and the DLQ's row counts, all exact: the row counts are
   * kept by triggers with every insert and delete (schema version 2), so this reads rows, never a
   * count of the history tables.
   */
  async getSummary(): Promise<SummaryStats> {
    return this.db.read('getSummary', () => {
      const c = this.db.get(this.sql.getSummary)!;
      const byStatus = new Map(
        this.db.all(this.sql.getSummaryHot).map((r) => [Number(r.status), Number(r.n)]),
      );
      const retained = new Map(
        this.db
          .all(this.sql.getSummaryRetained)
          .map((r) => [String(r.pillar), Number(r.row_count)]),
      );
      return {
        succeededTotal: Number(c.succeeded_total),
        failedTotal: Number(c.failed_total),
        cancelledTotal: Number(c.cancelled_total),
        retriedTotal: Number(c.retried_total),
        deferredTotal: Number(c.deferred_total),
        resurrectedTotal: Number(c.resurrected_total),
        pending: byStatus.get(0) ?? 0,
        fetched: byStatus.get(1) ?? 0,
        processing: byStatus.get(2) ?? 0,
        waiting: byStatus.get(7) ?? 0,
        archived: retained.get('archive') ?? 0,
        dlq: retained.get('dlq') ?? 0,
        estimated: { archived: false, dlq: false },
      };
    });
  }

  /** @inheritdoc */
  /** A SQLite file has no standby: its reads never lag. */
  replicationLagMs(): Promise<number | null> {
    return Promise.resolve(null);
  }

  async getQueueStats(): Promise<QueueStats[]> {
    return this.db.read('getQueueStats', () => {
      const hot = new Map<string, number>();
      for (const r of this.db.all(this.sql.getQueueStatsHot))
        hot.set(`${r.status}:${r.queue}`, Number(r.n));
      for (const r of this.db.all(this.sql.getQueueStatsWaiting))
        hot.set(`7:${r.queue}`, Number(r.n));
      return this.db.all(this.sql.getQueueStats).map((r) => {
        const queue = String(r.queue);
        return {
          queue,
          pending: hot.get(`0:${queue}`) ?? 0,
          fetched: hot.get(`1:${queue}`) ?? 0,
          processing: hot.get(`2:${queue}`) ?? 0,
          waiting: hot.get(`7:${queue}`) ?? 0,
          succeededTotal: Number(r.succeeded_total ?? 0),
          failedTotal: Number(r.failed_total ?? 0),
          cancelledTotal: Number(r.cancelled_total ?? 0),
          retriedTotal: Number(r.retried_total ?? 0),
          deferredTotal: Number(r.deferred_total ?? 0),
          resurrectedTotal: Number(r.resurrected_total ?? 0),
          lastActivityUtc: toDate(r.last_activity_utc),
          isPaused: r.is_paused === 1,
          isActive: r.is_active === null || r.is_active === undefined || r.is_active === 1,
          maxWorkers:
            r.max_workers === null || r.max_workers === undefined ? null : Number(r.max_workers),
        };
      });
    });
  }

  /**
   * Per-queue lag and saturation. `saturation` is active / MaxWorkers, null when unlimited, and 1 for
   * a zero budget (nothing more can start).
   */
  async getQueueHealth(): Promise<QueueHealth[]> {
    const rows = await this.db.read('getQueueHealth', () => this.db.all(this.sql.getQueueHealth));
    return rows.map((r) =>
      queueHealthOf({
        queue: String(r.queue),
        maxWorkers: r.max_workers === null ? null : Number(r.max_workers),
        active: Number(r.active),
        duePending: Number(r.due_pending),
        lagSumMs: Number(r.lag_sum_ms),
        maxLagMs: Number(r.max_lag_ms),
        heldPending: Number(r.held_pending),
        heldLagSumMs: Number(r.held_lag_sum_ms),
        heldMaxLagMs: Number(r.held_max_lag_ms),
        heldUntilUtc: toDate(r.held_until_utc),
        startLagCount: Number(r.lag_count),
        startLagSumMs: Number(r.start_lag_sum_ms),
        startLagMaxMs: Number(r.lag_max_ms),
      }),
    );
  }

  /** @inheritdoc */
  async getQueueOutcomes(query: Checked<CheckedOutcomesQuery>): Promise<QueueOutcomes[]> {
    const rows = await this.db.read('getQueueOutcomes', () =>
      this.db.all(this.sql.getQueueOutcomes, { minutes: query.minutes }),
    );
    return rows.map((r) => mapOutcomesRow(r, query.minutes));
  }

  /** @inheritdoc */
  async getThroughput(queue?: string): Promise<ThroughputStats> {
    const [rows, spans] = await this.db.read('getThroughput', () => [
      this.db.all(this.sql.getThroughput, { queue: queue ?? null }),
      this.db.get(this.sql.getThroughputSpans)!,
    ]);
    const by = (outcome: Outcome, key: 'n1m' | 'n5m') =>
      Number(rows.find((r) => Number(r.outcome) === outcome)?.[key] ?? 0);
    const sum = (key: 'n1m' | 'n5m') => rows.reduce((acc, r) => acc + Number(r[key]), 0);
    return {
      perSecond1m: sum('n1m') / (Number(spans.span_1m_ms) / 1_000),
      perSecond5m: sum('n5m') / (Number(spans.span_5m_ms) / 1_000),
      succeeded1m: by(Outcome.Succeeded, 'n1m'),
      failed1m: by(Outcome.Failed, 'n1m'),
      succeeded5m: by(Outcome.Succeeded, 'n5m'),
      failed5m: by(Outcome.Failed, 'n5m'),
    };
  }

  /** @inheritdoc */
  async getQueueGroups(queue: string, limit: number): Promise<QueueGroupLoad[]> {
    const rows = await this.db.read('getQueueGroups', () =>
      this.db.all(this.sql.getQueueGroups, { queue, limit }),
    );
    return rows.map(mapQueueGroupRow);
  }

  /** @inheritdoc */
  async getThroughputSeries(query: Checked<CheckedSeriesQuery>): Promise<ThroughputPoint[]> {
    const params = {
      from: query.from.getTime(),
      to: query.to.getTime(),
      step: query.stepMs,
      ...(query.queue === null ? {} : { queue: query.queue }),
    };
    const sql =
      query.queue === null ? this.sql.getThroughputSeries : this.sql.getThroughputSeriesQueue;
    const rows = await this.db.read('getThroughputSeries', () => this.db.all(sql, params));
    return throughputSeries(
      query,
      rows.map((r) => ({
        slot: Number(r.slot),
        outcome: Number(r.outcome),
        count: Number(r.count),
        durationCount: Number(r.duration_count),
        totalDurationMs: Number(r.total_duration_ms),
        lagCount: Number(r.lag_count),
        lagSumMs: Number(r.lag_sum_ms),
        lagMaxMs: Number(r.lag_max_ms),
      })),
    );
  }

  /**
   * Error families of the DLQ over a bounded window (the newest 10,000 matching rows of the last
   * 24 hours), grouped in `shared/error-family.ts`.
   */
  async getTopDlqErrors(max: number, filter: Checked<DlqFilter>): Promise<DlqErrorFamily[]> {
    const where = SQL.dlqWhere(filter);
    const sql = SQL.getTopDlqErrors(this.sql.tables.dlq, where);
    const rows = await this.db.read('getTopDlqErrors', () =>
      this.db.all(sql, {
        ...where.params,
        prefix: ERROR_LINE_PREFIX,
        window: TOP_ERRORS_WINDOW_MS,
        rows: TOP_ERRORS_WINDOW_ROWS,
      }),
    );
    return topErrorFamilies(
      rows.map((r) => ({ line: String(r.line ?? ''), failedAtUtc: toDate(r.failed_at_utc)! })),
      max,
      (line) => this.families.familyOf(line),
    );
  }

  /** @inheritdoc */
  async countExactly(query: Checked<CheckedCountQuery>): Promise<number> {
    const table = this.sql.tables[query.pillar];
    const where = SQL.countWhere(query.pillar, query.filter);
    const sql = SQL.countExactly(table, where);
    const row = await this.db.read('countExactly', () => this.db.get(sql, where.params));
    return Number(row?.n ?? 0);
  }

  /** What a bulk DLQ action would touch; `sampleIds` are the first ids it would take (oldest failure first). */
  async previewDlqFilter(filter: Checked<DlqFilter>, limit: number): Promise<BulkPreview> {
    const where = SQL.dlqWhere(filter);
    const ids = SQL.previewDlqFilterSample(this.sql.tables.dlq, where);
    const countSql = SQL.previewDlqFilterCount(this.sql.tables.dlq, where);
    return this.db.read('previewDlqFilter', () => {
      const matched = Number(this.db.get(countSql, where.params)!.n);
      const sample = this.db.all(ids, { ...where.params, limit: Math.min(limit, PREVIEW_SAMPLE) });
      return {
        matched,
        willAffect: Math.min(matched, limit),
        sampleIds: sample.map((r) => String(r.id)),
      };
    });
  }

  /** @inheritdoc */
  async listWorkers(query: Checked<CheckedWorkerQuery>): Promise<WorkerInfo[]> {
    const rows = await this.db.read('listWorkers', () =>
      this.db.all(this.sql.listWorkers, { lostAfterMs: query.lostAfterMs, limit: query.limit }),
    );
    return rows.map(mapWorkerRow);
  }

  /** @inheritdoc */
  async getAuditLog(query: Checked<CheckedAuditQuery>): Promise<AuditLogPage> {
    const params: Record<string, unknown> = {
      at: query.after?.atMs ?? null,
      id: query.after?.id ?? null,
      actor: query.actor,
      action: query.action,
      from: query.from?.getTime() ?? null,
      to: query.to?.getTime() ?? null,
      limit: query.limit + 1,
    };
    const rows = await this.db.read('getAuditLog', () =>
      query.target === null
        ? this.db.all(this.sql.getAuditLog, params)
        : this.db.all(this.sql.getAuditLogByTarget, { ...params, target: query.target }),
    );
    return toAuditPage(query, rows);
  }
}
