import { logEvent } from '../../common/log-events';
import { ChokaQCompatibilityLevelError, ChokaQTransactionalHandlerError } from '../../errors';
import type { Checked } from '../../interfaces/checked.interface';
import { DlqFilter } from '../../interfaces/job-view.interface';
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
import type { SchemaStatus } from '../../interfaces/schema-status.interface';
import {
  CheckedDlqMove,
  CheckedRecurringDefinition,
  CheckedWorkerHeartbeat,
  chunk,
  isLeaseTarget,
} from '../../validation/validate-args';
import { ValidatedEdits, ValidatedJob } from '../../validation/validate-job';
import { Audit, DialectJobStore, ZombieSweep } from '../dialect-job-storage';
import type { HandlerTransactionSupport } from '../job-storage';
import { OWN_DATA_SOURCE_REASON, SqlHandlerTransaction } from '../shared/handler-transaction';
import { retentionDetails } from '../shared/audit-log';
import { mapHotRow, mapQueueRow, toDate } from '../shared/row-mapper';
import { isDuplicateKeyError } from './mssql-errors';
import { MssqlStatement } from './mssql-params';
import { bool, idsOf, MssqlConnection, num, Row } from './mssql.connection';
import { MSSQL_MIGRATIONS, MSSQL_SCHEMA_VERSION, mssqlSchemaDdl } from './mssql.schema';
import * as SQL from './mssql.sql';

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

/**
 * The write half of the SQL Server / Azure SQL dialect (`JobStore`), and its lifecycle. Every
 * statement lives in `mssql.sql.ts` (each names the lock and isolation it relies on), the DDL in
 * `mssql.schema.ts`, batch execution, the one multi-batch transaction and the transient retry in
 * `mssql.connection.ts`; the reads are {@link MssqlJobQueries}'s, on the same connection. This
 * class takes inputs the validating edge already checked, picks the statement, and maps rows.
 */
export class MssqlJobStore implements DialectJobStore {
  /** @inheritdoc */
  readonly dialect = 'mssql' as const;

  private readonly schema: string;

  constructor(private readonly db: MssqlConnection) {
    this.schema = db.schema;
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Refuses a database below compatibility level 130 ({@link ChokaQCompatibilityLevelError}):
   * there `OPENJSON`, which the claim and every move use, fails at run time, so a warning would
   * only postpone the failure to every poll. A level that cannot be read (0) is not refused.
   * @inheritdoc
   */
  async prepare(): Promise<void> {
    const rows = await this.db.query('prepare', SQL.prepare());
    const level = num(rows[0]?.CompatibilityLevel);
    if (level > 0 && level < MIN_COMPATIBILITY_LEVEL) {
      throw new ChokaQCompatibilityLevelError(
        String(rows[0]?.DatabaseName ?? ''),
        level,
        MIN_COMPATIBILITY_LEVEL,
      );
    }
  }

  /**
   * Runs the idempotent DDL script, which reports the versions it recorded: a migration is logged
   * once, after its commit, and a current schema (the usual start) logs nothing.
   * @inheritdoc
   */
  async ensureSchema(): Promise<void> {
    const rows = await this.db.query('ensureSchema', SQL.ensureSchema(this.schema));
    const applied = rows.map((r) => num(r.Version)).sort((a, b) => a - b);
    if (applied.length === 0) return;
    // The script applies every missing version at once, so the newest one before it ran is the
    // version just below the first it recorded.
    const from = applied[0] - 1;
    const to = applied[applied.length - 1];
    logEvent(
      this.db.logger,
      'SchemaMigrated',
      `SQL Server schema [${this.schema}] migrated from version ${from} to ${to} ` +
        `(applied ${applied.join(', ')})`,
      { dialect: 'mssql', schema: this.schema, fromVersion: from, toVersion: to, applied },
    );
  }

  /**
   * Reads the ledger without the schema's applock. SQL Server's script is idempotent and applies
   * every missing version at once, so the pending versions are those the ledger lacks and the
   * script is the whole of it.
   * @inheritdoc
   */
  async schemaStatus(): Promise<SchemaStatus> {
    const applied = (await this.db.query('schemaStatus', SQL.schemaStatus(this.schema))).map((r) =>
      num(r.Version),
    );
    const done = new Set(applied);
    const pending = MSSQL_MIGRATIONS.filter((m) => !done.has(m.version));
    return {
      dialect: 'mssql',
      schema: this.schema,
      currentVersion: Math.max(0, ...applied),
      latestVersion: MSSQL_SCHEMA_VERSION,
      pending: pending.map(({ version, description }) => ({ version, description })),
      script: pending.length === 0 ? '' : mssqlSchemaDdl(this.schema),
    };
  }

  /** @inheritdoc */
  async close(): Promise<void> {
    await this.db.close();
  }

  /** @inheritdoc */
  async now(): Promise<Date> {
    const rows = await this.db.query('now', SQL.now());
    return toDate(rows[0]?.NowUtc)!;
  }

  /**
   * SQL Server has no LISTEN/NOTIFY: same-process wake-ups and polling remain, and another
   * process's `cancel` reaches the owner of a running job on its next heartbeat.
   */
  async subscribe(): Promise<null> {
    return null;
  }

  // ---------------------------------------------------------------- producer

  /** @inheritdoc */
  async enqueue(job: Checked<ValidatedJob>, options?: EnqueueOptions): Promise<EnqueueResult> {
    const runner = this.db.callerTransaction(options?.transaction);
    const statement = SQL.enqueue(this.schema, job, { callerTransaction: !!runner });
    for (let attempt = 1; ; attempt++) {
      let rows: Row[];
      try {
        rows = runner
          ? await this.db.execute(statement, runner)
          : await this.db.query('enqueue', statement);
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
    const runner = this.db.callerTransaction(options?.transaction);
    const results: EnqueueResult[] = [];
    for (const part of enqueueChunks(jobs)) {
      const statement = SQL.enqueueMany(this.schema, part, { callerTransaction: !!runner });
      let rows: Row[] = [];
      for (let attempt = 1; ; attempt++) {
        try {
          rows = runner
            ? await this.db.execute(statement, runner)
            : await this.db.query('enqueueMany', statement);
          break;
        } catch (error) {
          if (!runner && isDuplicateKeyError(error) && attempt < ENQUEUE_RACE_ATTEMPTS) continue;
          throw error;
        }
      }
      const byOrd = new Map(rows.map((r) => [num(r.Ord), r]));
      part.forEach((job, i) => {
        const row = byOrd.get(i);
        results.push({
          id: row ? String(row.Id) : job.id,
          created: row ? num(row.Created) === 1 : false,
        });
      });
    }
    return results;
  }

  // ---------------------------------------------------------------- worker-owned transitions

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
    const claim = SQL.fetchNextBatch(this.schema, {
      workerId,
      leaseId,
      limit,
      queues,
      types,
      start,
    });
    const rows = await this.db.retry('fetchNextBatch', async (attempt) => {
      if (attempt > 1) {
        const already = await this.db.execute(
          SQL.fetchNextBatchClaimed(this.schema, workerId, leaseId),
        );
        if (already.length > 0) return already;
      }
      return this.db.execute(claim);
    });
    return rows.map(mapHotRow);
  }

  /** @inheritdoc */
  async markAsProcessing(list: readonly Checked<JobLease>[]): Promise<string[]> {
    return idsOf(await this.db.query('markAsProcessing', SQL.markAsProcessing(this.schema, list)));
  }

  /** @inheritdoc */
  async keepAlive(workerId: string, list: readonly Checked<JobLease>[]): Promise<KeepAliveResult> {
    const rows = await this.db.query('keepAlive', SQL.keepAlive(this.schema, workerId, list));
    return {
      touched: rows.length,
      cancelRequested: rows.filter((r) => num(r.CancelRequested) === 1).map((r) => String(r.Id)),
    };
  }

  /** @inheritdoc */
  async release(list: readonly Checked<JobLease>[], delay: number | null): Promise<number> {
    return this.affected('release', SQL.release(this.schema, list, delay));
  }

  /** @inheritdoc */
  async unstart(list: readonly Checked<JobLease>[], delay: number | null): Promise<number> {
    return this.affected('unstart', SQL.unstart(this.schema, list, delay));
  }

  /** @inheritdoc */
  async reportProgress(
    owned: Checked<JobLease>,
    value: number,
    note: string | null,
  ): Promise<number> {
    return this.affected('reportProgress', SQL.reportProgress(this.schema, owned, value, note));
  }

  /** @inheritdoc */
  async rescheduleForRetry(
    owned: Checked<JobLease>,
    delay: number,
    error: string,
  ): Promise<number> {
    return this.affected(
      'rescheduleForRetry',
      SQL.rescheduleForRetry(this.schema, owned, delay, error),
    );
  }

  /** @inheritdoc */
  async archiveSucceeded(list: readonly Checked<CompletedJob>[]): Promise<RunRef[]> {
    const moved: RunRef[] = [];
    for (const part of chunk(list, ARCHIVE_CHUNK)) {
      const rows = await this.db.query('archiveSucceeded', SQL.archiveSucceeded(this.schema, part));
      moved.push(...rows.map((r) => ({ id: String(r.Id), leaseId: String(r.LeaseId) })));
    }
    return moved;
  }

  /** @inheritdoc */
  handlerTransactions(): HandlerTransactionSupport {
    if (this.db.config.ownsDataSource) return { supported: false, reason: OWN_DATA_SOURCE_REASON };
    return { supported: true, poolSize: this.db.poolSize() };
  }

  /**
   * The move is `archiveSucceeded`'s batch with one run, without a transaction of its own, on the
   * handler's runner (see `SQL.archiveSucceeded`). SQL Server has no per-transaction statement
   * timeout, so `statementTimeoutMs` is not applied: the driver's `requestTimeout` bounds each
   * statement.
   */
  async beginHandlerTransaction(): Promise<SqlHandlerTransaction> {
    const support = this.handlerTransactions();
    if (!support.supported) throw new ChokaQTransactionalHandlerError([], support.reason);
    return this.db.handlerTransaction(async (runner, completed) => {
      const rows = await this.db.execute(
        SQL.archiveSucceeded(this.schema, [completed], { callerTransaction: true }),
        runner,
      );
      return rows.some(
        (r) => String(r.Id) === completed.id && String(r.LeaseId) === completed.leaseId,
      );
    });
  }

  /** @inheritdoc */
  async moveToDlq(
    target: Checked<JobLease> | Checked<{ id: string }>,
    move: Checked<CheckedDlqMove>,
  ): Promise<number> {
    const owned = isLeaseTarget(target);
    const { reason, error, actor, durationMs } = move;
    return this.affected(
      'moveToDlq',
      SQL.moveToDlq(
        this.schema,
        owned ? target : { id: target.id },
        reason,
        error,
        actor,
        durationMs,
      ),
    );
  }

  /** @inheritdoc */
  async cancel(
    unique: readonly string[],
    actor: string | null,
    error: string,
    audit: Audit,
  ): Promise<CancelResult> {
    const rows = await this.audited('cancel', audit, SQL.cancel(this.schema, unique, actor, error));
    return {
      cancelled: rows.filter((r) => num(r.Kind) === 0).map((r) => String(r.Id)),
      cancelRequested: rows.filter((r) => num(r.Kind) === 1).map((r) => String(r.Id)),
    };
  }

  // ---------------------------------------------------------------- DLQ → hot

  /** @inheritdoc */
  async resurrect(
    key: string,
    valid: Checked<ValidatedEdits>,
    actor: string | null,
    audit: Audit,
  ): Promise<number> {
    const statement = SQL.resurrect(this.schema, { ids: [key] }, valid, actor);
    return (await this.audited('resurrect', audit, statement)).length;
  }

  /** @inheritdoc */
  async resurrectMany(
    unique: readonly string[],
    actor: string | null,
    audit: Audit,
  ): Promise<string[]> {
    const statement = SQL.resurrect(this.schema, { ids: unique }, null, actor);
    return idsOf(await this.audited('resurrectMany', audit, statement));
  }

  /** @inheritdoc */
  async resurrectByFilter(
    valid: Checked<DlqFilter>,
    max: number,
    actor: string | null,
    audit: Audit,
  ): Promise<string[]> {
    let remaining = max;
    const moved: string[] = [];
    while (remaining > 0) {
      const batch = Math.min(BULK_BATCH, remaining);
      const got = idsOf(
        await this.audited(
          'resurrectByFilter',
          audit,
          SQL.resurrect(this.schema, { filter: valid, max: batch }, null, actor),
        ),
      );
      moved.push(...got);
      remaining -= got.length;
      if (got.length < batch) break;
    }
    return moved;
  }

  // ---------------------------------------------------------------- rescue

  /** @inheritdoc */
  async recoverAbandoned(timeout: number, max: number): Promise<number> {
    return this.affected('recoverAbandoned', SQL.recoverAbandoned(this.schema, timeout, max));
  }

  /** @inheritdoc */
  async archiveZombies(sweep: Checked<ZombieSweep>): Promise<ZombieRescueResult> {
    const rows = await this.db.query(
      'archiveZombies',
      SQL.archiveZombies(
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
      jobs: rows.map((r) => ({ pillar: num(r.Kind) === 0 ? 'dlq' : 'hot', job: mapHotRow(r) })),
    };
  }

  // ---------------------------------------------------------------- workers

  /** @inheritdoc */
  async upsertWorker(report: Checked<CheckedWorkerHeartbeat>): Promise<void> {
    await this.db.query('upsertWorker', SQL.upsertWorker(this.schema, report));
  }

  /** @inheritdoc */
  async markWorkerStopped(workerId: string): Promise<number> {
    return this.affected('markWorkerStopped', SQL.markWorkerStopped(this.schema, workerId));
  }

  // ---------------------------------------------------------------- queues

  /** @inheritdoc */
  async getQueues(): Promise<QueueInfo[]> {
    return (await this.db.query('getQueues', SQL.getQueues(this.schema))).map(mapQueueRow);
  }

  /** @inheritdoc */
  async updateQueue(queue: string, p: Checked<QueuePatch>, audit: Audit): Promise<QueueInfo> {
    const rows = await this.audited('updateQueue', audit, SQL.updateQueue(this.schema, queue, p));
    return mapQueueRow(rows[0]);
  }

  // ---------------------------------------------------------------- purge and retention

  /** @inheritdoc */
  async purgeDlq(unique: readonly string[], audit: Audit): Promise<number> {
    return this.affected('purgeDlq', SQL.purgeDlq(this.schema, unique), audit);
  }

  /** @inheritdoc */
  async purgeDlqByFilter(valid: Checked<DlqFilter>, max: number, audit: Audit): Promise<number> {
    let remaining = max;
    let deleted = 0;
    while (remaining > 0) {
      const batch = Math.min(BULK_BATCH, remaining);
      const n = await this.affected(
        'purgeDlqByFilter',
        SQL.purgeDlqByFilter(this.schema, valid, batch),
        audit,
      );
      deleted += n;
      remaining -= n;
      if (n < batch) break;
    }
    return deleted;
  }

  /**
   * Each table in batches of `batchSize`, each batch its own statement (= short transaction), or
   * with `audit` its own transaction of the batch and the run's audit row (rows removed so far).
   */
  async applyRetention(
    policy: Checked<Required<RetentionPolicy>>,
    audit: Audit,
  ): Promise<RetentionResult> {
    const batch = policy.batchSize;
    const done: RetentionResult = { archive: 0, dlq: 0, metricBuckets: 0, workers: 0, audit: 0 };
    const drain = async (
      table: keyof RetentionResult,
      step: (schema: string, ageMs: number, batch: number) => MssqlStatement,
      ageMs: number,
    ): Promise<void> => {
      for (;;) {
        const statement = step(this.schema, ageMs, batch);
        const deletedBy = (rows: Row[]) => num(rows[0]?.Affected);
        const rows = await this.audited('applyRetention', audit, statement, (batchRows) => {
          const deleted = deletedBy(batchRows);
          return [deleted, retentionDetails(audit, { ...done, [table]: done[table] + deleted })];
        });
        const n = deletedBy(rows);
        done[table] += n;
        if (n < batch) return;
      }
    };
    await drain('archive', SQL.applyRetentionArchive, policy.archiveMs);
    await drain('dlq', SQL.applyRetentionDlq, policy.dlqMs);
    await drain('metricBuckets', SQL.applyRetentionBuckets, policy.metricsMs);
    await drain('workers', SQL.applyRetentionWorkers, policy.workersMs);
    await drain('audit', SQL.applyRetentionAudit, policy.auditMs);
    return done;
  }

  // ---------------------------------------------------------------- audit log

  /** @inheritdoc */
  async confirmationSecret(candidate: string): Promise<string> {
    const rows = await this.db.query(
      'confirmationSecret',
      SQL.confirmationSecret(this.schema, candidate),
    );
    return String(rows[0].Value);
  }

  /**
   * Runs `statement` as an admin change: alone (its own short transaction), or with `audit` in one
   * READ COMMITTED transaction with the action's audit row, which counts what `count` reads from
   * the statement's rows (default: one row per row changed) and may bring details of its own.
   */
  private audited(
    name: string,
    audit: Audit,
    statement: MssqlStatement,
    count: (rows: Row[]) => number | [number, string | null] = (rows) => rows.length,
  ): Promise<Row[]> {
    if (audit === null) return this.db.query(name, statement);
    return this.db.transaction(name, async (tx) => {
      const rows = await tx.exec(statement);
      const counted = count(rows);
      const [n, details] = typeof counted === 'number' ? [counted, audit.details] : counted;
      await tx.exec(SQL.recordAudit(this.schema, audit, n, details));
      return rows;
    });
  }

  // ---------------------------------------------------------------- recurring jobs

  /** @inheritdoc */
  async upsertRecurringJob(d: Checked<CheckedRecurringDefinition>, audit: Audit): Promise<void> {
    // An upsert always writes its row: one row affected.
    await this.audited(
      'upsertRecurringJob',
      audit,
      SQL.upsertRecurringJob(this.schema, d),
      () => 1,
    );
  }

  /** @inheritdoc */
  async getRecurringJobs(): Promise<RecurringJobRecord[]> {
    const rows = await this.db.query('getRecurringJobs', SQL.getRecurringJobs(this.schema));
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
      source: String(r.Source) === 'runtime' ? 'runtime' : 'decorator',
      lastJobId: r.LastJobId === null || r.LastJobId === undefined ? null : String(r.LastJobId),
    }));
  }

  /** @inheritdoc */
  async setRecurringJobPaused(name: string, paused: boolean, audit: Audit): Promise<boolean> {
    const statement = SQL.setRecurringJobPaused(this.schema, name, paused);
    return (await this.affected('setRecurringJobPaused', statement, audit)) > 0;
  }

  /** @inheritdoc */
  async removeRecurringJob(name: string, audit: Audit): Promise<boolean> {
    const statement = SQL.removeRecurringJob(this.schema, name);
    return (await this.affected('removeRecurringJob', statement, audit)) > 0;
  }

  /**
   * The last run recorded and the job enqueued in ONE READ COMMITTED transaction; no row, no job.
   * @inheritdoc
   */
  async triggerRecurringJob(
    name: string,
    job: Checked<ValidatedJob>,
    audit: Audit,
  ): Promise<EnqueueResult | null> {
    return this.db.transaction('triggerRecurringJob', async (tx) => {
      const found = await tx.exec(SQL.triggerRecurringJob(this.schema, name, job.id));
      let result: EnqueueResult | null = null;
      // No row: nothing was changed, so the transaction commits just the audit row, if any.
      if (num(found[0]?.Affected) > 0) {
        const row = (await tx.exec(SQL.enqueue(this.schema, job)))[0] ?? {};
        result = enqueueOutcome(row, job.id) ?? { id: job.id, created: false };
      }
      if (audit !== null) {
        const rows = result?.created ? 1 : 0;
        await tx.exec(SQL.recordAudit(this.schema, audit, rows, audit.details));
      }
      return result;
    });
  }

  /**
   * The compare-and-set of `NextSlotUtc` and the slot's enqueue in ONE READ COMMITTED
   * transaction: either both happen or neither. A lost CAS rolls back and reports null.
   * @inheritdoc
   */
  async claimRecurringSlot(
    name: string,
    slotUtc: Date,
    nextSlotUtc: Date,
    job: Checked<ValidatedJob> | null,
  ): Promise<EnqueueResult | null> {
    return this.db.transaction('claimRecurringSlot', async (tx) => {
      const cas = await tx.exec(
        SQL.claimRecurringSlot(this.schema, name, slotUtc, nextSlotUtc, job?.id ?? null),
      );
      if (num(cas[0]?.Affected) === 0) {
        await tx.rollback();
        return null;
      }
      // Like the other dialects: a slot advanced without a job (nothing to enqueue) reports null.
      if (!job) return null;
      const row = (await tx.exec(SQL.enqueue(this.schema, job)))[0] ?? {};
      const result = enqueueOutcome(row, job.id) ?? { id: job.id, created: false };
      // The slot's idempotency key met a job already hot: that job is the slot's run.
      if (result.id !== job.id) {
        await tx.exec(SQL.triggerRecurringJob(this.schema, name, result.id));
      }
      return result;
    });
  }

  /** Runs one batch (with the transient retry) and reads the count it selected as `Affected`. */
  private async affected(
    name: string,
    statement: MssqlStatement,
    audit: Audit = null,
  ): Promise<number> {
    const count = (rows: Row[]) => num(rows[0]?.Affected);
    return count(await this.audited(name, audit, statement, count));
  }
}

// -------------------------------------------------------------------------------- helpers

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

/** Splits validated jobs into `enqueueMany` chunks bounded by items and JSON characters. */
function enqueueChunks<T extends SQL.MssqlNewJob>(jobs: readonly T[]): T[][] {
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
