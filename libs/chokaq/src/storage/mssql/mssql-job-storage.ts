import { Logger } from '@nestjs/common';
import type { DataSource, QueryRunner } from 'typeorm';
import { ChokaQCompatibilityLevelError, ChokaQTransactionError } from '../../errors';
import type { Checked } from '../../interfaces/checked.interface';
import {
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
  ActiveFilter,
} from '../../interfaces/job-view.interface';
import {
  CancelResult,
  CompletedJob,
  RunRef,
  EnqueueOptions,
  EnqueueResult,
  FetchRequest,
  HotJob,
  JobLease,
  KeepAliveResult,
  QueueInfo,
  QueuePatch,
  RetentionPolicy,
  RetentionResult,
  ZombieRescueResult,
} from '../../interfaces/job.interface';
import { RecurringJobRecord } from '../../interfaces/recurring-job.interface';
import { PREVIEW_SAMPLE } from '../../validation/limits';
import {
  CheckedDlqMove,
  CheckedRecurringDefinition,
  chunk,
  isLeaseTarget,
} from '../../validation/validate-args';
import { ValidatedEdits, ValidatedJob } from '../../validation/validate-job';
import { DialectJobStorage, ZombieSweep } from '../dialect-job-storage';
import { assertDataSourceOpen, queryRunnerDataSource } from '../shared/data-source';
import { NormalizedPage } from '../shared/page';
import { mapHotRow, mapJobView, mapQueueRow, toDate } from '../shared/row-mapper';
import { withTransientRetry } from '../shared/transient-retry';
import { SqlStorageConfig } from '../storage-config';
import { isDuplicateKeyError, isTransientMssqlError } from './mssql-errors';
import { MssqlStatement } from './mssql-params';
import * as SQL from './mssql.sql';

type Row = Record<string, unknown>;

/** Items per `enqueueMany` statement (one JSON parameter, one transaction). */
const ENQUEUE_CHUNK = 1_000;
/** Upper bound of the JSON text of one `enqueueMany` chunk, to keep each transaction short. */
const ENQUEUE_CHUNK_CHARS = 8_000_000;
/** Leases per archive transaction. */
const ARCHIVE_CHUNK = 1_000;
/** Rows per bulk DLQ action statement (resurrect / purge by filter). */
const BULK_BATCH = 500;
/** Attempts of an enqueue whose key holder vanished between the insert and the read-back. */
const ENQUEUE_RACE_ATTEMPTS = 5;
/** Lowest compatibility level with OPENJSON. */
const MIN_COMPATIBILITY_LEVEL = 130;

function num(value: unknown): number {
  return typeof value === 'number' ? value : Number(value ?? 0);
}

function numOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

function bool(value: unknown): boolean {
  return value === true || value === 1 || value === '1';
}

function ids(rows: readonly Row[], column = 'Id'): string[] {
  return rows.map((r) => String(r[column]));
}

/**
 * What one enqueue's read-back means: created; else the id already stored in any pillar (a retry
 * after an ambiguous commit), checked before the key's holder because the job that retry created
 * may have finished since and freed its key for another job; else the key's active holder.
 * Undefined when none applies: the holder left between the insert and the read-back.
 */
function enqueueOutcome(row: Row, id: string): EnqueueResult | undefined {
  if (num(row.Created) === 1) return { id, created: true };
  if (num(row.IdExists) === 1) return { id, created: false };
  if (row.HolderId !== null && row.HolderId !== undefined) {
    return { id: String(row.HolderId), created: false };
  }
  return undefined;
}

/**
 * The SQL Server / Azure SQL dialect of {@link JobStorage}. Every statement lives in
 * `mssql.sql.ts`; this class takes inputs the validating edge already checked, runs statements
 * through TypeORM's mssql driver (`QueryRunner.query(sql, params, true)`: positional `@0…`
 * parameters, first result set in `records`), retries transient errors, and maps rows.
 *
 * Row counts never come from the driver: every batch runs with `SET NOCOUNT ON` and selects what
 * it changed (ids from `OUTPUT … INTO` table variables, or `@@ROWCOUNT`).
 */
export class MssqlJobStorage implements DialectJobStorage {
  /** @inheritdoc */
  readonly dialect = 'mssql' as const;

  private readonly logger = new Logger(MssqlJobStorage.name);
  private readonly dataSource: DataSource;
  private readonly schema: string;

  constructor(private readonly config: SqlStorageConfig) {
    this.dataSource = config.dataSource;
    this.schema = config.schema;
  }

  // -------------------------------------------------------------------------------- plumbing

  /** Runs one statement on `runner`, or on a pooled runner of its own that it releases. */
  private async execute(statement: MssqlStatement, runner?: QueryRunner): Promise<Row[]> {
    if (!runner) assertDataSourceOpen(this.dataSource, 'SQL Server');
    const own = runner ?? this.dataSource.createQueryRunner();
    try {
      const result = await own.query(statement.sql, [...statement.params], true);
      return (result?.records ?? []) as Row[];
    } finally {
      if (!runner) await own.release();
    }
  }

  /**
   * Runs one statement with the transient retry. Safe to repeat: every statement is one batch
   * whose failure rolled back everything it did (`XACT_ABORT`), and worker-owned statements are
   * fenced, so a repeat after an ambiguous commit changes nothing.
   */
  private run(name: string, statement: MssqlStatement): Promise<Row[]> {
    return this.retry(name, () => this.execute(statement));
  }

  /** The transient retry of one operation (`operation` is told its attempt, 1 for the first). */
  private retry<T>(name: string, operation: (attempt: number) => Promise<T>): Promise<T> {
    return withTransientRetry(name, operation, isTransientMssqlError, this.config.transientRetry);
  }

  private callerRunner(transaction: unknown): QueryRunner {
    const runner = transaction as QueryRunner;
    if (!runner || typeof runner !== 'object' || typeof runner.query !== 'function') {
      throw new ChokaQTransactionError('the transaction option is not a TypeORM QueryRunner');
    }
    if (queryRunnerDataSource(runner) !== this.dataSource) {
      throw new ChokaQTransactionError('the QueryRunner belongs to another DataSource');
    }
    if (runner.isReleased) throw new ChokaQTransactionError('the QueryRunner was already released');
    if (!runner.isTransactionActive) {
      throw new ChokaQTransactionError('no transaction is open on the QueryRunner');
    }
    return runner;
  }

  // -------------------------------------------------------------------------------- lifecycle

  /**
   * Refuses a database below compatibility level 130 ({@link ChokaQCompatibilityLevelError}):
   * there `OPENJSON`, which the claim and every move use, fails at run time, so a warning would
   * only postpone the failure to every poll. A level that cannot be read (0) is not refused.
   * @inheritdoc
   */
  async prepare(): Promise<void> {
    const rows = await this.run('prepare', SQL.compatibilityLevelSql());
    const level = num(rows[0]?.CompatibilityLevel);
    if (level > 0 && level < MIN_COMPATIBILITY_LEVEL) {
      throw new ChokaQCompatibilityLevelError(
        String(rows[0]?.DatabaseName ?? ''),
        level,
        MIN_COMPATIBILITY_LEVEL,
      );
    }
  }

  /** @inheritdoc */
  async ensureSchema(): Promise<void> {
    await this.run('ensureSchema', SQL.ensureSchemaSql(this.schema));
    this.logger.log(`SQL Server schema [${this.schema}] is ready`);
  }

  /** @inheritdoc */
  async close(): Promise<void> {
    if (this.config.ownsDataSource && this.dataSource.isInitialized)
      await this.dataSource.destroy();
  }

  /** @inheritdoc */
  async now(): Promise<Date> {
    const rows = await this.run('now', SQL.nowSql());
    return toDate(rows[0]?.NowUtc)!;
  }

  /**
   * SQL Server has no LISTEN/NOTIFY: same-process wake-ups and polling remain, and another
   * process's `cancel` reaches the owner of a running job on its next heartbeat.
   */
  async subscribe(): Promise<null> {
    return null;
  }

  // -------------------------------------------------------------------------------- producer

  /** @inheritdoc */
  async enqueue(job: Checked<ValidatedJob>, options?: EnqueueOptions): Promise<EnqueueResult> {
    const runner =
      options?.transaction !== undefined ? this.callerRunner(options.transaction) : undefined;
    const statement = SQL.enqueueSql(this.schema, job, { callerTransaction: !!runner });
    for (let attempt = 1; ; attempt++) {
      let rows: Row[];
      try {
        rows = runner
          ? await this.execute(statement, runner)
          : await this.run('enqueue', statement);
      } catch (error) {
        // The unique index caught a same-key (or same-id) insert that the range lock did not
        // (e.g. SNAPSHOT isolation); running the statement again returns the holder.
        if (isDuplicateKeyError(error) && attempt < ENQUEUE_RACE_ATTEMPTS) continue;
        throw error;
      }
      const result = enqueueOutcome(rows[0] ?? {}, job.id);
      if (result) return result;
      // The key's holder left the hot table between our insert attempt and the read-back: the
      // key is free again, so try again.
      if (attempt >= ENQUEUE_RACE_ATTEMPTS) {
        throw new Error(`ChokaQ mssql: enqueue of ${job.id} kept racing on its idempotency key`);
      }
    }
  }

  /**
   * With `options.transaction` each chunk runs in the caller's transaction without a transaction,
   * `XACT_ABORT` or session settings of its own, and nothing is retried there: a deadlock (1205)
   * has already rolled back the caller's whole transaction, which the caller retries as a unit.
   * @inheritdoc
   */
  async enqueueMany(
    jobs: readonly Checked<ValidatedJob>[],
    options?: EnqueueOptions,
  ): Promise<EnqueueResult[]> {
    const runner =
      options?.transaction !== undefined ? this.callerRunner(options.transaction) : undefined;
    const results: EnqueueResult[] = [];
    for (const chunk of this.enqueueChunks(jobs)) {
      const statement = SQL.enqueueManySql(this.schema, chunk, { callerTransaction: !!runner });
      let rows: Row[] = [];
      for (let attempt = 1; ; attempt++) {
        try {
          rows = runner
            ? await this.execute(statement, runner)
            : await this.run('enqueueMany', statement);
          break;
        } catch (error) {
          if (!runner && isDuplicateKeyError(error) && attempt < ENQUEUE_RACE_ATTEMPTS) continue;
          throw error;
        }
      }
      const byOrd = new Map(rows.map((r) => [num(r.Ord), r]));
      chunk.forEach((job, i) => {
        const row = byOrd.get(i);
        results.push({
          id: row ? String(row.Id) : job.id,
          created: row ? num(row.Created) === 1 : false,
        });
      });
    }
    return results;
  }

  private enqueueChunks<T extends SQL.MssqlNewJob>(jobs: readonly T[]): T[][] {
    const out: T[][] = [];
    let current: T[] = [];
    let chars = 0;
    for (const job of jobs) {
      const size = job.payload.length + 512;
      if (
        current.length > 0 &&
        (current.length >= ENQUEUE_CHUNK || chars + size > ENQUEUE_CHUNK_CHARS)
      ) {
        out.push(current);
        current = [];
        chars = 0;
      }
      current.push(job);
      chars += size;
    }
    if (current.length > 0) out.push(current);
    return out;
  }

  // -------------------------------------------------------------------------------- worker-owned

  /**
   * Ignores the `budgetedQueues` hint: this claim is already one round trip (one batch). A retry
   * after an ambiguous failure first returns whatever an earlier attempt with this lease already
   * committed; the first attempt skips that read.
   * @inheritdoc
   */
  async fetchNextBatch(request: Checked<FetchRequest & { start: number }>): Promise<HotJob[]> {
    const { workerId, leaseId, limit, handled, start } = request;
    const queues = [...new Set(handled.queues)];
    const types = handled.types;
    const claim = SQL.claimSql(this.schema, { workerId, leaseId, limit, queues, types, start });
    const rows = await this.retry('fetchNextBatch', async (attempt) => {
      if (attempt > 1) {
        const already = await this.execute(
          SQL.selectClaimedByLeaseSql(this.schema, workerId, leaseId),
        );
        if (already.length > 0) return already;
      }
      return this.execute(claim);
    });
    return rows.map(mapHotRow);
  }

  /** @inheritdoc */
  async markAsProcessing(list: readonly Checked<JobLease>[]): Promise<string[]> {
    return ids(await this.run('markAsProcessing', SQL.markAsProcessingSql(this.schema, list)));
  }

  /** @inheritdoc */
  async keepAlive(workerId: string, list: readonly Checked<JobLease>[]): Promise<KeepAliveResult> {
    const rows = await this.run('keepAlive', SQL.keepAliveSql(this.schema, workerId, list));
    return {
      touched: rows.length,
      cancelRequested: rows.filter((r) => num(r.CancelRequested) === 1).map((r) => String(r.Id)),
    };
  }

  /** @inheritdoc */
  async release(list: readonly Checked<JobLease>[], delay: number | null): Promise<number> {
    const rows = await this.run('release', SQL.releaseSql(this.schema, list, delay));
    return num(rows[0]?.Affected);
  }

  /** @inheritdoc */
  async reportProgress(owned: Checked<JobLease>, value: number): Promise<number> {
    const rows = await this.run('reportProgress', SQL.reportProgressSql(this.schema, owned, value));
    return num(rows[0]?.Affected);
  }

  /** @inheritdoc */
  async rescheduleForRetry(
    owned: Checked<JobLease>,
    delay: number,
    error: string,
  ): Promise<number> {
    const rows = await this.run(
      'rescheduleForRetry',
      SQL.rescheduleSql(this.schema, owned, delay, error),
    );
    return num(rows[0]?.Affected);
  }

  /** @inheritdoc */
  async archiveSucceeded(list: readonly Checked<CompletedJob>[]): Promise<RunRef[]> {
    const moved: RunRef[] = [];
    for (const part of chunk(list, ARCHIVE_CHUNK)) {
      const rows = await this.run('archiveSucceeded', SQL.archiveSucceededSql(this.schema, part));
      moved.push(...rows.map((r) => ({ id: String(r.Id), leaseId: String(r.LeaseId) })));
    }
    return moved;
  }

  /** @inheritdoc */
  async moveToDlq(
    target: Checked<JobLease> | Checked<{ id: string }>,
    move: Checked<CheckedDlqMove>,
  ): Promise<number> {
    const owned = isLeaseTarget(target);
    const { reason, error, actor, durationMs } = move;
    const rows = await this.run(
      'moveToDlq',
      SQL.moveToDlqSql(
        this.schema,
        owned ? target : { id: target.id },
        reason,
        error,
        actor,
        durationMs,
      ),
    );
    return num(rows[0]?.Affected);
  }

  /** @inheritdoc */
  async cancel(
    unique: readonly string[],
    actor: string | null,
    error: string,
  ): Promise<CancelResult> {
    const rows = await this.run('cancel', SQL.cancelSql(this.schema, unique, actor, error));
    return {
      cancelled: rows.filter((r) => num(r.Kind) === 0).map((r) => String(r.Id)),
      cancelRequested: rows.filter((r) => num(r.Kind) === 1).map((r) => String(r.Id)),
    };
  }

  // -------------------------------------------------------------------------------- DLQ → hot

  /** @inheritdoc */
  async resurrect(
    key: string,
    valid: Checked<ValidatedEdits>,
    actor: string | null,
  ): Promise<number> {
    const rows = await this.run(
      'resurrect',
      SQL.resurrectSql(this.schema, { ids: [key] }, valid, actor),
    );
    return rows.length;
  }

  /** @inheritdoc */
  async resurrectMany(unique: readonly string[], actor: string | null): Promise<string[]> {
    return ids(
      await this.run('resurrectMany', SQL.resurrectSql(this.schema, { ids: unique }, null, actor)),
    );
  }

  /** @inheritdoc */
  async resurrectByFilter(
    valid: Checked<DlqFilter>,
    max: number,
    actor: string | null,
  ): Promise<string[]> {
    let remaining = max;
    const moved: string[] = [];
    while (remaining > 0) {
      const batch = Math.min(BULK_BATCH, remaining);
      const got = ids(
        await this.run(
          'resurrectByFilter',
          SQL.resurrectSql(this.schema, { filter: valid, max: batch }, null, actor),
        ),
      );
      moved.push(...got);
      remaining -= got.length;
      if (got.length < batch) break;
    }
    return moved;
  }

  // -------------------------------------------------------------------------------- rescue

  /** @inheritdoc */
  async recoverAbandoned(timeout: number, max: number): Promise<number> {
    const rows = await this.run(
      'recoverAbandoned',
      SQL.recoverAbandonedSql(this.schema, timeout, max),
    );
    return num(rows[0]?.Affected);
  }

  /** @inheritdoc */
  async archiveZombies(sweep: Checked<ZombieSweep>): Promise<ZombieRescueResult> {
    const rows = await this.run(
      'archiveZombies',
      SQL.archiveZombiesSql(
        this.schema,
        sweep.defaultTimeoutMs,
        sweep.limit,
        sweep.rules,
        sweep.error,
      ),
    );
    return {
      dlq: rows.filter((r) => num(r.Kind) === 0).map((r) => String(r.Id)),
      retried: rows.filter((r) => num(r.Kind) === 1).map((r) => String(r.Id)),
    };
  }

  // -------------------------------------------------------------------------------- queues

  /** @inheritdoc */
  async getQueues(): Promise<QueueInfo[]> {
    return (await this.run('getQueues', SQL.getQueuesSql(this.schema))).map(mapQueueRow);
  }

  /** @inheritdoc */
  async updateQueue(queue: string, p: Checked<QueuePatch>): Promise<QueueInfo> {
    const rows = await this.run('updateQueue', SQL.updateQueueSql(this.schema, queue, p));
    return mapQueueRow(rows[0]);
  }

  // -------------------------------------------------------------------------------- purge / retention

  /** @inheritdoc */
  async purgeDlq(unique: readonly string[]): Promise<number> {
    const rows = await this.run('purgeDlq', SQL.purgeDlqSql(this.schema, unique));
    return num(rows[0]?.Affected);
  }

  /** @inheritdoc */
  async purgeDlqByFilter(valid: Checked<DlqFilter>, max: number): Promise<number> {
    let remaining = max;
    let deleted = 0;
    while (remaining > 0) {
      const batch = Math.min(BULK_BATCH, remaining);
      const rows = await this.run(
        'purgeDlqByFilter',
        SQL.purgeDlqBatchSql(this.schema, valid, batch),
      );
      const n = num(rows[0]?.Affected);
      deleted += n;
      remaining -= n;
      if (n < batch) break;
    }
    return deleted;
  }

  /** @inheritdoc */
  async applyRetention(policy: Checked<Required<RetentionPolicy>>): Promise<RetentionResult> {
    const batch = policy.batchSize;
    const sweep = async (target: SQL.MssqlRetentionTarget, age: number): Promise<number> => {
      let total = 0;
      for (;;) {
        const rows = await this.run(
          'applyRetention',
          SQL.retentionBatchSql(this.schema, target, age, batch),
        );
        const n = num(rows[0]?.Affected);
        total += n;
        if (n < batch) return total;
      }
    };
    return {
      archive: await sweep('archive', policy.archiveMs),
      dlq: await sweep('dlq', policy.dlqMs),
      metricBuckets: await sweep('buckets', policy.metricsMs),
    };
  }

  // -------------------------------------------------------------------------------- reads

  /** @inheritdoc */
  async getJob(key: string): Promise<JobView | null> {
    const rows = await this.run('getJob', SQL.getJobSql(this.schema, key));
    return rows[0] ? mapJobView(rows[0], String(rows[0].Pillar) as Pillar) : null;
  }

  private async page<F extends object>(
    pillar: Pillar,
    page: NormalizedPage<F>,
  ): Promise<Page<JobView>> {
    const filter = page.filter as ActiveFilter & HistoryFilter & DlqFilter;
    const [countRows, rows] = [
      await this.run('page.count', SQL.pageCountSql(this.schema, pillar, filter)),
      await this.run('page', SQL.pageSql(this.schema, pillar, { ...page, filter })),
    ];
    return {
      items: rows.map((r) => mapJobView(r, pillar)),
      total: num(countRows[0]?.Total),
      page: page.page,
      pageSize: page.pageSize,
    };
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

  /** @inheritdoc */
  async getSummary(): Promise<SummaryStats> {
    const r = (await this.run('getSummary', SQL.summarySql(this.schema)))[0] ?? {};
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
    const rows = await this.run('getQueueStats', SQL.queueStatsSql(this.schema));
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
    const rows = await this.run('getQueueHealth', SQL.queueHealthSql(this.schema));
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
    const name = queue;
    const r = (await this.run('getThroughput', SQL.throughputSql(this.schema, name)))[0] ?? {};
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
    const rows = await this.run('getTopDlqErrors', SQL.topDlqErrorsSql(this.schema, top, filter));
    return rows.map((r) => ({
      error: String(r.Family ?? ''),
      count: num(r.FamilyCount),
      lastFailedAtUtc: toDate(r.LastFailedAtUtc)!,
    }));
  }

  /** @inheritdoc */
  async previewDlqFilter(valid: Checked<DlqFilter>, bound: number): Promise<BulkPreview> {
    const matched = num(
      (await this.run('previewDlqFilter', SQL.previewCountSql(this.schema, valid)))[0]?.Total,
    );
    const sample = Math.min(PREVIEW_SAMPLE, bound);
    const sampleIds =
      sample === 0
        ? []
        : ids(await this.run('previewDlqFilter', SQL.previewSampleSql(this.schema, valid, sample)));
    return { matched, willAffect: Math.min(matched, bound), sampleIds };
  }

  // -------------------------------------------------------------------------------- recurring

  /** @inheritdoc */
  async upsertRecurringJob(d: Checked<CheckedRecurringDefinition>): Promise<void> {
    await this.run('upsertRecurringJob', SQL.upsertRecurringSql(this.schema, d));
  }

  /** @inheritdoc */
  async getRecurringJobs(): Promise<RecurringJobRecord[]> {
    const rows = await this.run('getRecurringJobs', SQL.getRecurringSql(this.schema));
    return rows.map((r) => ({
      name: String(r.Name),
      cron: String(r.Cron),
      timeZone: String(r.TimeZone),
      queue: String(r.Queue),
      type: String(r.Type),
      payload: r.Payload === null || r.Payload === undefined ? null : JSON.parse(String(r.Payload)),
      misfirePolicy: String(r.MisfirePolicy) === 'none' ? 'none' : 'skip',
      nextSlotUtc: toDate(r.NextSlotUtc)!,
      lastSlotUtc: toDate(r.LastSlotUtc),
      isPaused: bool(r.IsPaused),
    }));
  }

  /** @inheritdoc */
  async claimRecurringSlot(
    name: string,
    slotUtc: Date,
    nextSlotUtc: Date,
    job: Checked<ValidatedJob> | null,
  ): Promise<EnqueueResult | null> {
    return this.retry('claimRecurringSlot', async () => {
      assertDataSourceOpen(this.dataSource, 'SQL Server');
      const runner = this.dataSource.createQueryRunner();
      try {
        // Explicit: without a level TypeORM begins at the DataSource option `isolationLevel`, and
        // a borrowed DataSource may set SERIALIZABLE or SNAPSHOT there.
        await runner.startTransaction('READ COMMITTED');
        const cas = await this.execute(
          SQL.claimRecurringSlotSql(this.schema, name, slotUtc, nextSlotUtc),
          runner,
        );
        if (num(cas[0]?.Affected) === 0) {
          await runner.rollbackTransaction();
          return null;
        }
        // Like the other dialects: a slot advanced without a job (nothing to enqueue) reports null.
        let result: EnqueueResult | null = null;
        if (job) {
          const row = (await this.execute(SQL.enqueueSql(this.schema, job), runner))[0] ?? {};
          result = enqueueOutcome(row, job.id) ?? { id: job.id, created: false };
        }
        await runner.commitTransaction();
        return result;
      } catch (error) {
        if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
        throw error;
      } finally {
        await runner.release();
      }
    });
  }
}
