import type { AuditLogPage } from '../../interfaces/audit.interface';
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
import type { WorkerInfo } from '../../interfaces/worker.interface';
import {
  METRIC_BUCKET_MS,
  PREVIEW_SAMPLE,
  TOP_ERRORS_WINDOW_MS,
  TOP_ERRORS_WINDOW_ROWS,
} from '../../validation/limits';
import type { CheckedWorkerQuery } from '../../validation/validate-args';
import type { CheckedAuditQuery } from '../../validation/validate-audit';
import type { ListRequest } from '../../validation/validate-list';
import type {
  CheckedCountQuery,
  CheckedOutcomesQuery,
  CheckedSeriesQuery,
} from '../../validation/validate-reads';
import { DialectJobQueries } from '../dialect-job-storage';
import { mapAttemptRow } from '../shared/attempts';
import { toAuditPage } from '../shared/audit-log';
import { ERROR_LINE_PREFIX, topErrorFamilies } from '../shared/error-family';
import { ErrorFamilyMemo } from '../shared/error-family-memo';
import { toListPage } from '../shared/page';
import { mapJobView, mapOutcomesRow, mapWorkerRow, toDate } from '../shared/row-mapper';
import { startLagOf, throughputSeries } from '../shared/throughput-series';
import { num, PostgresConnection } from './postgres.connection';
import * as SQL from './postgres.sql';

/**
 * The read half of the PostgreSQL dialect ({@link JobQueries}): one job, lists, stats, health,
 * throughput, top errors and previews. Every read is one autocommit statement (or a few, on one
 * pooled connection each) of `postgres.sql.ts`; none takes a row lock, and none is prepared by
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
   * the two reads shows its attempt with the row from before it).
   */
  async getJob(id: string, attempts: boolean): Promise<JobView | null> {
    const lookups = [
      ['hot', SQL.getJobHot(this.db.s)],
      ['archive', SQL.getJobArchive(this.db.s)],
      ['dlq', SQL.getJobDlq(this.db.s)],
    ] as const;
    for (const [pillar, sql] of lookups) {
      const [row] = await this.db.query('getJob', sql, [id]);
      if (!row) continue;
      const view = mapJobView(row, pillar);
      if (!attempts) return view;
      const history = await this.db.query('getJob', SQL.getJobAttempts(this.db.s), [id]);
      return { ...view, attempts: history.map(mapAttemptRow) };
    }
    return null;
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

  /** One keyset page: one statement of `postgres.sql.ts` (`listJobs`), no count. */
  private async list(name: string, request: ListRequest<object>): Promise<ListPage> {
    const params: unknown[] = [];
    const where = SQL.listWhere(request as ListRequest<ActiveFilter & DlqFilter>, params);
    params.push(request.limit + 1);
    const rows = await this.db.query(
      name,
      SQL.listJobs(this.db.s, request, where, `$${params.length}`),
      params,
    );
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
      resurrectedTotal: num(r.resurrected_total),
      pending: num(r.pending),
      fetched: num(r.fetched),
      processing: num(r.processing),
      archived: Math.max(0, num(r.archived)),
      dlq: Math.max(0, num(r.dlq)),
      estimated: { archived: true, dlq: true },
    };
  }

  /** @inheritdoc */
  async getQueueStats(): Promise<QueueStats[]> {
    const rows = await this.db.query('getQueueStats', SQL.getQueueStats(this.db.s));
    return rows.map((r) => ({
      queue: String(r.queue),
      pending: num(r.pending),
      fetched: num(r.fetched),
      processing: num(r.processing),
      succeededTotal: num(r.succeeded_total),
      failedTotal: num(r.failed_total),
      cancelledTotal: num(r.cancelled_total),
      retriedTotal: num(r.retried_total),
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
    return rows.map((r) => {
      const maxWorkers = r.max_workers === null ? null : num(r.max_workers);
      const active = num(r.active);
      return {
        queue: String(r.queue),
        duePending: num(r.due_pending),
        avgLagMs: Math.round(num(r.avg_lag_ms)),
        maxLagMs: Math.round(num(r.max_lag_ms)),
        active,
        maxWorkers,
        // A zero budget that is in use (or not) counts as fully saturated: nothing more can start.
        saturation: maxWorkers === null ? null : maxWorkers === 0 ? 1 : active / maxWorkers,
        startLag: startLagOf(num(r.lag_count), num(r.lag_sum_ms), num(r.lag_max_ms)),
      };
    });
  }

  /** @inheritdoc */
  async getQueueOutcomes(query: Checked<CheckedOutcomesQuery>): Promise<QueueOutcomes[]> {
    const rows = await this.db.query('getQueueOutcomes', SQL.getQueueOutcomes(this.db.s), [
      query.minutes,
    ]);
    return rows.map((r) => mapOutcomesRow(r, query.minutes));
  }

  /** @inheritdoc */
  async getThroughput(queue?: string): Promise<ThroughputStats> {
    const [r] = await this.db.query('getThroughput', SQL.getThroughput(this.db.s), [queue ?? null]);
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
  async getThroughputSeries(query: Checked<CheckedSeriesQuery>): Promise<ThroughputPoint[]> {
    const params: unknown[] = [query.from, query.to, query.stepMs];
    if (query.queue !== null) params.push(query.queue);
    const rows = await this.db.query(
      'getThroughputSeries',
      SQL.getThroughputSeries(this.db.s, query.queue !== null, query.stepMs === METRIC_BUCKET_MS),
      params,
    );
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
    const params: unknown[] = [];
    const where = SQL.filterClause('dlq', f, params, 'x');
    params.push(TOP_ERRORS_WINDOW_MS, TOP_ERRORS_WINDOW_ROWS);
    const rows = await this.db.query(
      'getTopDlqErrors',
      SQL.getTopDlqErrors(
        this.db.s,
        where,
        `$${params.length - 1}`,
        `$${params.length}`,
        ERROR_LINE_PREFIX,
      ),
      params,
    );
    return topErrorFamilies(
      rows.map((r) => ({ line: String(r.line ?? ''), failedAtUtc: toDate(r.failed_at_utc)! })),
      limit,
      (line) => this.families.familyOf(line),
    );
  }

  /** @inheritdoc */
  async countExactly(query: Checked<CheckedCountQuery>): Promise<number> {
    const params: unknown[] = [];
    const where = SQL.filterClause(query.pillar, query.filter, params, 'x');
    const [row] = await this.db.query(
      'countExactly',
      SQL.countExactly(this.db.s, query.pillar, where),
      params,
    );
    return num(row?.total);
  }

  /** Matched count, `min(matched, max)`, and up to 20 sample ids in the order bulk actions take them. */
  async previewDlqFilter(f: Checked<DlqFilter>, max: number): Promise<BulkPreview> {
    const params: unknown[] = [];
    const where = SQL.filterClause('dlq', f, params, 'x');
    const [[count], sample] = await Promise.all([
      this.db.query('previewDlqFilter', SQL.previewDlqFilterCount(this.db.s, where), params),
      this.db.query(
        'previewDlqFilter',
        SQL.previewDlqFilterSample(this.db.s, where, `$${params.length + 1}`),
        [...params, Math.min(PREVIEW_SAMPLE, max)],
      ),
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
    const rows = await this.db.query('listWorkers', SQL.listWorkers(this.db.s), [
      query.lostAfterMs,
      query.limit,
    ]);
    return rows.map(mapWorkerRow);
  }

  /** @inheritdoc */
  async getAuditLog(query: Checked<CheckedAuditQuery>): Promise<AuditLogPage> {
    const params: unknown[] = [
      query.after?.at ?? null,
      query.after?.id ?? null,
      query.actor,
      query.action,
      query.from,
      query.to,
      query.limit + 1,
    ];
    if (query.target !== null) params.push(query.target);
    const rows = await this.db.query(
      'getAuditLog',
      SQL.getAuditLog(this.db.s, query.target !== null),
      params,
    );
    return toAuditPage(query, rows);
  }
}
