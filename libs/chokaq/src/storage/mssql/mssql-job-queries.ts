import type { Checked } from '../../interfaces/checked.interface';
import {
  ActiveFilter,
  BulkPreview,
  DlqErrorFamily,
  DlqFilter,
  HistoryFilter,
  JobView,
  Page,
  Pillar,
  QueueHealth,
  QueueStats,
  SummaryStats,
  ThroughputStats,
} from '../../interfaces/job-view.interface';
import type { WorkerInfo } from '../../interfaces/worker.interface';
import { PREVIEW_SAMPLE } from '../../validation/limits';
import type { CheckedWorkerQuery } from '../../validation/validate-args';
import { DialectJobQueries } from '../dialect-job-storage';
import { NormalizedPage } from '../shared/page';
import { mapJobView, mapWorkerRow, toDate } from '../shared/row-mapper';
import { bool, idsOf, MssqlConnection, num, numOrNull } from './mssql.connection';
import * as SQL from './mssql.sql';

/**
 * The read half of the SQL Server dialect ({@link JobQueries}): one job, pages, stats, health,
 * throughput, top errors and previews. Every read is one batch of `mssql.sql.ts` (or two, for a
 * page and its count), with the transient retry; none takes an update lock, and the telemetry
 * reads are `NOLOCK` (approximate by design). It shares its {@link MssqlConnection} with
 * {@link MssqlJobStore}, which owns the lifecycle.
 */
export class MssqlJobQueries implements DialectJobQueries {
  private readonly schema: string;

  constructor(private readonly db: MssqlConnection) {
    this.schema = db.schema;
  }

  // ---------------------------------------------------------------- reads

  /** @inheritdoc */
  async getJob(key: string): Promise<JobView | null> {
    const rows = await this.db.query('getJob', SQL.getJob(this.schema, key));
    return rows[0] ? mapJobView(rows[0], String(rows[0].Pillar) as Pillar) : null;
  }

  /** @inheritdoc */
  listActive(page: Checked<NormalizedPage<ActiveFilter>>): Promise<Page<JobView>> {
    return this.page('hot', page);
  }

  /** @inheritdoc */
  getArchivePage(page: Checked<NormalizedPage<HistoryFilter>>): Promise<Page<JobView>> {
    return this.page('archive', page);
  }

  /** @inheritdoc */
  getDlqPage(page: Checked<NormalizedPage<DlqFilter>>): Promise<Page<JobView>> {
    return this.page('dlq', page);
  }

  private async page<F extends object>(
    pillar: Pillar,
    page: NormalizedPage<F>,
  ): Promise<Page<JobView>> {
    const filter = page.filter as ActiveFilter & HistoryFilter & DlqFilter;
    const [countRows, rows] = [
      await this.db.query('page.count', SQL.countPage(this.schema, pillar, filter)),
      await this.db.query('page', SQL.selectPage(this.schema, pillar, { ...page, filter })),
    ];
    return {
      items: rows.map((r) => mapJobView(r, pillar)),
      total: num(countRows[0]?.Total),
      page: page.page,
      pageSize: page.pageSize,
    };
  }

  /** @inheritdoc */
  async getSummary(): Promise<SummaryStats> {
    const r = (await this.db.query('getSummary', SQL.getSummary(this.schema)))[0] ?? {};
    return {
      succeededTotal: num(r.SucceededTotal),
      failedTotal: num(r.FailedTotal),
      cancelledTotal: num(r.CancelledTotal),
      retriedTotal: num(r.RetriedTotal),
      resurrectedTotal: num(r.ResurrectedTotal),
      pending: num(r.Pending),
      fetched: num(r.Fetched),
      processing: num(r.Processing),
      archived: num(r.Archived),
      dlq: num(r.Dlq),
    };
  }

  /** @inheritdoc */
  async getQueueStats(): Promise<QueueStats[]> {
    const rows = await this.db.query('getQueueStats', SQL.getQueueStats(this.schema));
    return rows.map((r) => ({
      queue: String(r.Queue),
      pending: num(r.Pending),
      fetched: num(r.Fetched),
      processing: num(r.Processing),
      archived: num(r.Archived),
      dlq: num(r.Dlq),
      succeededTotal: num(r.SucceededTotal),
      failedTotal: num(r.FailedTotal),
      cancelledTotal: num(r.CancelledTotal),
      retriedTotal: num(r.RetriedTotal),
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
    return rows.map((r) => {
      const maxWorkers = numOrNull(r.MaxWorkers);
      const active = num(r.Active);
      return {
        queue: String(r.Queue),
        duePending: num(r.DuePending),
        avgLagMs: Math.round(num(r.AvgLagMs)),
        maxLagMs: num(r.MaxLagMs),
        active,
        maxWorkers,
        saturation: maxWorkers === null ? null : maxWorkers === 0 ? 1 : active / maxWorkers,
      };
    });
  }

  /** @inheritdoc */
  async getThroughput(queue?: string): Promise<ThroughputStats> {
    const r =
      (await this.db.query('getThroughput', SQL.getThroughput(this.schema, queue)))[0] ?? {};
    return {
      perSecond1m: num(r.Completed1m) / 60,
      perSecond5m: num(r.Completed5m) / 300,
      succeeded1m: num(r.Succeeded1m),
      failed1m: num(r.Failed1m),
      succeeded5m: num(r.Succeeded5m),
      failed5m: num(r.Failed5m),
    };
  }

  /** @inheritdoc */
  async getTopDlqErrors(top: number, filter: Checked<DlqFilter>): Promise<DlqErrorFamily[]> {
    const rows = await this.db.query(
      'getTopDlqErrors',
      SQL.getTopDlqErrors(this.schema, top, filter),
    );
    return rows.map((r) => ({
      error: String(r.Family ?? ''),
      count: num(r.FamilyCount),
      lastFailedAtUtc: toDate(r.LastFailedAtUtc)!,
    }));
  }

  /** @inheritdoc */
  async previewDlqFilter(valid: Checked<DlqFilter>, bound: number): Promise<BulkPreview> {
    const matched = num(
      (await this.db.query('previewDlqFilter', SQL.countPage(this.schema, 'dlq', valid)))[0]?.Total,
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
}
