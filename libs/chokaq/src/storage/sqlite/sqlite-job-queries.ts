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
  QueueStats,
  SummaryStats,
  ThroughputStats,
} from '../../interfaces/job-view.interface';
import type { WorkerInfo } from '../../interfaces/worker.interface';
import { PREVIEW_SAMPLE } from '../../validation/limits';
import type { CheckedWorkerQuery } from '../../validation/validate-args';
import { DialectJobQueries } from '../dialect-job-storage';
import { Outcome } from '../shared/outcome';
import type { ListRequest } from '../../validation/validate-list';
import { toListPage } from '../shared/page';
import { mapJobView, mapWorkerRow, toDate } from '../shared/row-mapper';
import { SqliteConnection } from './sqlite.connection';
import * as SQL from './sqlite.sql';

/** DLQ rows scanned (most recent first) by getTopDlqErrors. */
const TOP_ERRORS_SCAN = 10_000;

/**
 * The read half of the SQLite dialect ({@link JobQueries}): one job, lists, stats, health,
 * throughput, top errors and previews. Each read is one deferred `BEGIN` transaction on the
 * connection, so a read of several statements sees one WAL snapshot and never waits for a writer
 * of another process; none writes. Fixed texts come from `sqlite.sql.ts`, filtered ones are built
 * per call (and prepared once per shape). It shares its {@link SqliteConnection} with
 * {@link SqliteJobStore}, which owns the lifecycle.
 */
export class SqliteJobQueries implements DialectJobQueries {
  /** The fixed statements, by the name of the method they serve (`sqlite.sql.ts`). */
  private readonly sql: SQL.JobQueriesStatements;

  constructor(private readonly db: SqliteConnection) {
    this.sql = SQL.jobQueriesStatements(db.prefix);
  }

  // ---------------------------------------------------------------- reads

  /** @inheritdoc */
  async getJob(id: string): Promise<JobView | null> {
    // One read transaction: a job moving between pillars is seen exactly once (a WAL snapshot).
    return this.db.read('getJob', () => {
      const hot = this.db.get(this.sql.getJobHot, { id });
      if (hot) return mapJobView(hot, 'hot');
      const archived = this.db.get(this.sql.getJobArchive, { id });
      if (archived) return mapJobView(archived, 'archive');
      const dead = this.db.get(this.sql.getJobDlq, { id });
      return dead ? mapJobView(dead, 'dlq') : null;
    });
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

  /** One keyset page: one statement of `sqlite.sql.ts` (`listJobs`), no count. */
  private async list(name: string, table: string, request: ListRequest<object>): Promise<ListPage> {
    const where = SQL.listWhere(request as ListRequest<ActiveFilter & DlqFilter>);
    const sql = SQL.listJobs(table, request, where);
    const rows = await this.db.read(name, () =>
      this.db.all(sql, { ...where.indexed.params, limit: request.limit + 1 }),
    );
    return toListPage(request, rows);
  }

  /** @inheritdoc */
  async getSummary(): Promise<SummaryStats> {
    return this.db.read('getSummary', () => {
      const c = this.db.get(this.sql.getSummary)!;
      const byStatus = new Map(
        this.db.all(this.sql.getSummaryHot).map((r) => [Number(r.status), Number(r.n)]),
      );
      return {
        succeededTotal: Number(c.succeeded_total),
        failedTotal: Number(c.failed_total),
        cancelledTotal: Number(c.cancelled_total),
        retriedTotal: Number(c.retried_total),
        resurrectedTotal: Number(c.resurrected_total),
        pending: byStatus.get(0) ?? 0,
        fetched: byStatus.get(1) ?? 0,
        processing: byStatus.get(2) ?? 0,
        archived: Number(this.db.get(this.sql.getSummaryArchive)!.n),
        dlq: Number(this.db.get(this.sql.getSummaryDlq)!.n),
      };
    });
  }

  /** @inheritdoc */
  async getQueueStats(): Promise<QueueStats[]> {
    return this.db.read('getQueueStats', () => {
      const hot = new Map<string, number>();
      for (const r of this.db.all(this.sql.getQueueStatsHot))
        hot.set(`${r.status}:${r.queue}`, Number(r.n));
      const countsOf = (sql: string) =>
        new Map(this.db.all(sql).map((r) => [String(r.queue), Number(r.n)]));
      const archived = countsOf(this.sql.getQueueStatsArchive);
      const dead = countsOf(this.sql.getQueueStatsDlq);
      return this.db.all(this.sql.getQueueStats).map((r) => {
        const queue = String(r.queue);
        return {
          queue,
          pending: hot.get(`0:${queue}`) ?? 0,
          fetched: hot.get(`1:${queue}`) ?? 0,
          processing: hot.get(`2:${queue}`) ?? 0,
          archived: archived.get(queue) ?? 0,
          dlq: dead.get(queue) ?? 0,
          succeededTotal: Number(r.succeeded_total ?? 0),
          failedTotal: Number(r.failed_total ?? 0),
          cancelledTotal: Number(r.cancelled_total ?? 0),
          retriedTotal: Number(r.retried_total ?? 0),
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
    return rows.map((r) => {
      const active = Number(r.active);
      const maxWorkers = r.max_workers === null ? null : Number(r.max_workers);
      return {
        queue: String(r.queue),
        duePending: Number(r.due_pending),
        avgLagMs: Math.max(0, Math.round(Number(r.avg_lag_ms))),
        maxLagMs: Math.max(0, Number(r.max_lag_ms)),
        active,
        maxWorkers,
        saturation: maxWorkers === null ? null : maxWorkers > 0 ? active / maxWorkers : 1,
      };
    });
  }

  /** @inheritdoc */
  async getThroughput(queue?: string): Promise<ThroughputStats> {
    const rows = await this.db.read('getThroughput', () =>
      this.db.all(this.sql.getThroughput, { queue: queue ?? null }),
    );
    const by = (outcome: Outcome, key: 'n1m' | 'n5m') =>
      Number(rows.find((r) => Number(r.outcome) === outcome)?.[key] ?? 0);
    const sum = (key: 'n1m' | 'n5m') => rows.reduce((acc, r) => acc + Number(r[key]), 0);
    return {
      perSecond1m: sum('n1m') / 60,
      perSecond5m: sum('n5m') / 300,
      succeeded1m: by(Outcome.Succeeded, 'n1m'),
      failed1m: by(Outcome.Failed, 'n1m'),
      succeeded5m: by(Outcome.Succeeded, 'n5m'),
      failed5m: by(Outcome.Failed, 'n5m'),
    };
  }

  /**
   * Error families of the DLQ: the first line of `error_details` (≤ 200 chars), counted over the
   * most recent 10,000 matching rows so the read stays bounded.
   */
  async getTopDlqErrors(max: number, filter: Checked<DlqFilter>): Promise<DlqErrorFamily[]> {
    const where = SQL.dlqWhere(filter);
    const sql = SQL.getTopDlqErrors(this.sql.tables.dlq, where);
    const rows = await this.db.read('getTopDlqErrors', () =>
      this.db.all(sql, { ...where.params, limit: max, scan: TOP_ERRORS_SCAN }),
    );
    return rows.map((r) => ({
      error: String(r.error),
      count: Number(r.n),
      lastFailedAtUtc: toDate(r.last_failed_at_utc)!,
    }));
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
}
