import { logEvent } from '../../common/log-events';
import {
  ChokaQCompatibilityLevelError,
  ChokaQDependencyNotFoundError,
  ChokaQTransactionalHandlerError,
} from '../../errors';
import type { BatchEnqueued } from '../../interfaces/batch.interface';
import type { Checked } from '../../interfaces/checked.interface';
import { FailureReason } from '../../interfaces/job-status.enum';
import {
  CompletedJob,
  DependencyCheckResult,
  RunRef,
  EnqueueOptions,
  EnqueueResult,
  FetchRequest,
  HotJob,
  JobLease,
  KeepAliveResult,
  ZombieRescueResult,
} from '../../interfaces/job.interface';
import type { SchemaStatus } from '../../interfaces/schema-status.interface';
import {
  CheckedDlqMove,
  CheckedWorkerHeartbeat,
  isLeaseTarget,
} from '../../validation/validate-args';
import { DEPENDENCY_CHECK_BATCH } from '../../validation/limits';
import { ValidatedBatch, ValidatedJob } from '../../validation/validate-job';
import { Audit, DialectJobStore, ZombieSweep } from '../dialect-job-storage';
import type { HandlerTransactionSupport } from '../job-storage';
import { batchEnqueued } from '../shared/batches';
import { OWN_DATA_SOURCE_REASON, SqlHandlerTransaction } from '../shared/handler-transaction';
import { DedupeSteps, enqueueManyKeyed, enqueueWithKey, mapDedupeHolder } from '../shared/dedupe';
import {
  DependencyPillar,
  checkRounds,
  createdWaiting,
  dependentsToCancel,
  findDependencies,
  planDependencies,
  takenEdges,
} from '../shared/dependencies';
import { mapHotRow, toDate } from '../shared/row-mapper';
import { isDuplicateKeyError } from './mssql-errors';
import { Exec, idsOf, MssqlConnection, num, Row } from './mssql.connection';
import {
  BINARY_KEY_COLLATION,
  MSSQL_MIGRATIONS,
  MSSQL_SCHEMA_VERSION,
  mssqlSchemaDdl,
} from './mssql.schema';
import { MssqlAdminStore } from './mssql-admin-store';
import * as SQL from './sql';

/** Items per `enqueueMany` statement (one JSON parameter, one transaction). */
const ENQUEUE_CHUNK = 1_000;
/** Upper bound of the JSON text of one `enqueueMany` chunk, to keep each transaction short. */
const ENQUEUE_CHUNK_CHARS = 8_000_000;
/** Leases per archive transaction. */
const ARCHIVE_CHUNK = 1_000;
/**
 * Upper bound of the stored results' JSON text in one archive transaction, as for `enqueueMany`: a
 * batch of runs that record large results is split so each transaction stays short. Runs without a
 * result count a few hundred characters each, so a batch of them is split by `ARCHIVE_CHUNK` alone.
 */
const ARCHIVE_CHUNK_CHARS = 8_000_000;
/** Attempts of an enqueue whose key holder vanished between the insert and the read-back. */
const ENQUEUE_RACE_ATTEMPTS = 5;
/** Lowest compatibility level with OPENJSON. */
const MIN_COMPATIBILITY_LEVEL = 130;

/**
 * The write half of the SQL Server / Azure SQL dialect (`JobStore`), and its lifecycle. Every
 * statement lives in `sql/` (each names the lock and isolation it relies on), the DDL in
 * `mssql.schema.ts`, batch execution, the one multi-batch transaction and the transient retry in
 * `mssql.connection.ts`; the reads are {@link MssqlJobQueries}'s, on the same connection. This
 * class takes inputs the validating edge already checked, picks the statement, and maps rows.
 * The operator's writes (cancel, DLQ → hot, queue controls, purges, retention, recurring definitions) are
 * {@link MssqlAdminStore}'s, which this class extends: one dialect object, two readable files.
 */
export class MssqlJobStore extends MssqlAdminStore implements DialectJobStore {
  /** @inheritdoc */
  readonly dialect = 'mssql' as const;

  /**
   * Whether the next claim that starts rows claims the grouped queues before the others: they take
   * turns from claim to claim, so neither can keep the other's jobs waiting by filling every slot.
   */
  private groupsFirst = false;

  constructor(db: MssqlConnection) {
    super(db);
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Refuses a database below compatibility level 130 ({@link ChokaQCompatibilityLevelError}):
   * there `OPENJSON`, which the claim and every move use, fails at run time, so a warning would
   * only postpone the failure to every poll. A level that cannot be read (0) is not refused.
   * @inheritdoc
   */
  async prepare(): Promise<void> {
    const rows = await this.db.query('prepare', SQL.prepare(this.db.schema));
    this.db.observeKeyCollation(
      rows[0]?.KeyCollation == null ? null : String(rows[0].KeyCollation),
    );
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
    await this.migrate();
    // After the versions: `storage.partitioning` converts the plain Archive and DLQ (once) and
    // makes the boundaries ahead (docs/storage.md, "A partitioned Archive").
    const partitioning = this.db.config.partitioning;
    if (partitioning !== null) await this.partitions.ensure(partitioning.period);
  }

  /** The versioned migrations of {@link ensureSchema}: the idempotent DDL script. */
  private async migrate(): Promise<void> {
    const rows = await this.db.schemaQuery('ensureSchema', SQL.ensureSchema(this.db.schema));
    const applied = rows.map((r) => num(r.Version)).sort((a, b) => a - b);
    if (applied.length === 0) return;
    // The script applies every missing version at once, so the newest one before it ran is the
    // version just below the first it recorded.
    const from = applied[0] - 1;
    const to = applied[applied.length - 1];
    logEvent(
      this.db.logger,
      'SchemaMigrated',
      `SQL Server schema [${this.db.schema}] migrated from version ${from} to ${to} ` +
        `(applied ${applied.join(', ')})`,
      { dialect: 'mssql', schema: this.db.schema, fromVersion: from, toVersion: to, applied },
    );
  }

  /**
   * Runs `mssqlBinaryKeysScript` (one transaction under the schema's applock, nothing to do on an
   * install whose keys are binary already), under the schema batch's timeout; the statements of
   * this storage then declare their key columns in the binary collation.
   * @inheritdoc
   */
  async convertKeysToBinary(): Promise<boolean> {
    const rows = await this.db.schemaQuery(
      'convertKeysToBinary',
      SQL.convertKeysToBinary(this.db.schema),
    );
    this.db.observeKeyCollation(BINARY_KEY_COLLATION);
    return num(rows[0]?.Converted) === 1;
  }

  /**
   * Reads the ledger without the schema's applock. SQL Server's script is idempotent and applies
   * every missing version at once, so the pending versions are those the ledger lacks and the
   * script is the whole of it.
   * @inheritdoc
   */
  async schemaStatus(): Promise<SchemaStatus> {
    const applied = (await this.db.query('schemaStatus', SQL.schemaStatus(this.db.schema))).map(
      (r) => num(r.Version),
    );
    const done = new Set(applied);
    const pending = MSSQL_MIGRATIONS.filter((m) => !done.has(m.version));
    return {
      dialect: 'mssql',
      schema: this.db.schema,
      currentVersion: Math.max(0, ...applied),
      latestVersion: MSSQL_SCHEMA_VERSION,
      pending: pending.map(({ version, description }) => ({ version, description })),
      script: pending.length === 0 ? '' : mssqlSchemaDdl(this.db.schema),
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

  /**
   * A job that waits on others goes through {@link enqueueWaiting}, one with a dedupe key through
   * {@link enqueueKeyed}; any other is one batch, on ChokaQ's pool with the transient retry or in
   * the caller's transaction.
   * @inheritdoc
   */
  async enqueue(job: Checked<ValidatedJob>, options?: EnqueueOptions): Promise<EnqueueResult> {
    if (job.dependsOn !== null) return (await this.enqueueWaiting([job], options))[0];
    const caller = await this.db.callerExecutor(options?.transaction);
    if (job.dedupe !== null) return this.enqueueKeyed(caller, job);
    return this.insertOne(caller ?? ((statement) => this.db.query('enqueue', statement)), job, {
      callerTransaction: !!caller,
    });
  }

  /**
   * The keyless enqueue batch (`SQL.enqueue`) of one job on `run`, read back: again after a
   * duplicate-key error (the batch has no `XACT_ABORT`, so the error ended only its INSERT), and
   * again when the idempotency key's holder left between the insert and the read-back.
   */
  private async insertOne(
    run: Exec,
    job: ValidatedJob,
    options: { callerTransaction: boolean },
  ): Promise<EnqueueResult> {
    const statement = SQL.enqueue(this.schema, job, options);
    for (let attempt = 1; ; attempt++) {
      let rows: Row[];
      try {
        rows = await run(statement);
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
   * An enqueue with a dedupe key: its steps (`shared/dedupe.ts`, statements in `sql/dedupe.ts`) on
   * ONE transaction, the caller's (nothing retried: a deadlock has already rolled back the caller's
   * whole transaction, which the caller retries as a unit), or one of ChokaQ's own
   * (`MssqlConnection.transaction`: READ COMMITTED, rolled back on any error, run again from
   * scratch on a transient one). The key's row stays update-locked from the first step to COMMIT,
   * so concurrent enqueues of one key, from any process, decide one after the other. A
   * duplicate-key error that ends ChokaQ's transaction (the primary key of `DedupeKeys` as the
   * backstop of the take's range lock) runs the enqueue again, which then finds the key held.
   */
  private async enqueueKeyed(caller: Exec | undefined, job: ValidatedJob): Promise<EnqueueResult> {
    if (caller) return enqueueWithKey(job, this.dedupeSteps(caller, true));
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.transaction('enqueue', (tx) =>
          enqueueWithKey(job, this.dedupeSteps(tx.exec, false)),
        );
      } catch (error) {
        if (isDuplicateKeyError(error) && attempt < ENQUEUE_RACE_ATTEMPTS) continue;
        throw error;
      }
    }
  }

  /**
   * The keyed enqueue's steps on `exec`, one transaction's. The job is inserted by the keyless
   * enqueue's batch, exactly as an enqueue without a key: in ChokaQ's transaction as
   * `triggerRecurringJob` runs it there (its session prologue pins what the transaction already
   * is; it has no `XACT_ABORT` and no transaction of its own), in a caller's without the prologue.
   * The key's batches run with `XACT_ABORT` in ChokaQ's transaction and without it in a caller's
   * (see `sql/dedupe.ts`).
   */
  private dedupeSteps(exec: Exec, callerTransaction: boolean): DedupeSteps<ValidatedJob> {
    const options = { callerTransaction };
    return {
      take: async (j) => {
        try {
          return (await exec(SQL.dedupeTake(this.schema, j, options))).length > 0;
        } catch (error) {
          // In a caller's transaction (no XACT_ABORT) a duplicate key ended only the INSERT: the
          // key is held, and the next step reads its holder. In ChokaQ's, enqueueKeyed retries.
          if (callerTransaction && isDuplicateKeyError(error)) return false;
          throw error;
        }
      },
      holder: async (j) => {
        const [row] = await exec(SQL.dedupeHolder(this.schema, j, options));
        return row ? mapDedupeHolder(row) : null;
      },
      replace: async (holder, j) =>
        (await exec(SQL.dedupeReplace(this.schema, holder, j, options))).length > 0,
      insert: (j) => this.insertOne(exec, j, options),
      move: async (j) => void (await exec(SQL.dedupeMove(this.schema, j, options))),
    };
  }

  /**
   * Jobs of which some wait on others go through {@link enqueueWaiting}. Otherwise the jobs
   * without a dedupe key in chunks (one batch, one transaction each); then each job with one, in
   * key order (`splitKeyed`), as `enqueue` would, each in its own transaction; the results in input
   * order. With `options.transaction` each chunk and keyed job runs in the caller's transaction
   * without a transaction, `XACT_ABORT` or session settings of its own, and nothing is retried
   * there: a deadlock (1205) has already rolled back the caller's whole transaction, which the
   * caller retries as a unit.
   * @inheritdoc
   */
  async enqueueMany(
    jobs: readonly Checked<ValidatedJob>[],
    options?: EnqueueOptions,
  ): Promise<EnqueueResult[]> {
    if (jobs.some((j) => j.dependsOn !== null)) return this.enqueueWaiting(jobs, options);
    const caller = await this.db.callerExecutor(options?.transaction);
    const insertPlain = async (plain: readonly ValidatedJob[]) => {
      const results: EnqueueResult[] = [];
      for (const part of enqueueChunks(plain)) {
        const statement = SQL.enqueueMany(this.schema, part, { callerTransaction: !!caller });
        let rows: Row[] = [];
        for (let attempt = 1; ; attempt++) {
          try {
            rows = caller ? await caller(statement) : await this.db.query('enqueueMany', statement);
            break;
          } catch (error) {
            if (!caller && isDuplicateKeyError(error) && attempt < ENQUEUE_RACE_ATTEMPTS) continue;
            throw error;
          }
        }
        results.push(...chunkResults(part, rows));
      }
      return results;
    };
    return enqueueManyKeyed(jobs, insertPlain, (job) => this.enqueueKeyed(caller, job));
  }

  /**
   * Jobs of which some wait on others (`dependsOn`; they may wait on each other), all in ONE
   * transaction, the caller's (nothing retried, as `enqueueMany` there) or one of ChokaQ's own
   * (`MssqlConnection.transaction`: READ COMMITTED, rolled back on any error, run again from
   * scratch on a transient one or, as `enqueueKeyed`, on a duplicate key): the jobs that wait on
   * none (`SQL.enqueueMany` chunks), those that wait, inserted Waiting (the same batch with status
   * 7), each job with a dedupe key through the keyed enqueue's steps; then where each dependency of
   * the waiting jobs this call created is ({@link locate}: marked as waited on, and locked until
   * commit), then their edges and counts (`SQL.insertDependencies`, from `planDependencies`; SQL
   * Server marks no edge to a hot dependency for the check pass, see `sql/dependencies.ts`). A
   * dependency in no table fails the call (`ChokaQDependencyNotFoundError`) and rolls it all back.
   * In ChokaQ's own transaction each batch is the one it runs on the pool, whose `BEGIN TRAN …
   * COMMIT` nests in the open transaction, as in `enqueueBatch`. Once that transaction committed,
   * the dependency check runs when an edge needs it (a dependency found in the DLQ under
   * `cancel`); inside a caller's transaction the rescue loop's next check does that instead.
   */
  private async enqueueWaiting(
    jobs: readonly ValidatedJob[],
    options?: EnqueueOptions,
  ): Promise<EnqueueResult[]> {
    const caller = await this.db.callerExecutor(options?.transaction);
    const inCaller = { callerTransaction: !!caller };
    let check = false;
    const run = async (exec: Exec): Promise<EnqueueResult[]> => {
      check = false;
      const results = new Array<EnqueueResult>(jobs.length);
      for (const waiting of [false, true]) {
        const at = jobs.flatMap((j, i) =>
          (j.dependsOn !== null) === waiting && j.dedupe === null ? [i] : [],
        );
        let done = 0;
        for (const part of enqueueChunks(at.map((i) => jobs[i]))) {
          const rows = await exec(SQL.enqueueMany(this.schema, part, inCaller, waiting));
          chunkResults(part, rows).forEach((r, k) => (results[at[done + k]] = r));
          done += part.length;
        }
      }
      for (const [i, job] of jobs.entries()) {
        if (job.dedupe !== null) {
          results[i] = await enqueueWithKey(job, this.dedupeSteps(exec, !!caller));
        }
      }
      const { made, waiting } = createdWaiting(jobs, results);
      if (waiting.length > 0) {
        const where = await findDependencies(waiting, async (ids) =>
          (await exec(SQL.locateDependencies(this.schema, ids, inCaller))).map(
            (row) => [String(row.Id), String(row.Pillar) as DependencyPillar] as const,
          ),
        );
        const plan = planDependencies(waiting, where, made, false);
        if (plan.missing.length > 0) throw new ChokaQDependencyNotFoundError(plan.missing);
        await exec(SQL.insertDependencies(this.schema, plan, inCaller));
        check = plan.needsCheck;
      }
      return results;
    };
    if (caller) return run(caller);
    let results: EnqueueResult[];
    for (let attempt = 1; ; attempt++) {
      try {
        results = await this.db.transaction('enqueue', (tx) => run(tx.exec));
        break;
      } catch (error) {
        if (isDuplicateKeyError(error) && attempt < ENQUEUE_RACE_ATTEMPTS) continue;
        throw error;
      }
    }
    if (check) await this.checkDependencies(DEPENDENCY_CHECK_BATCH);
    return results;
  }

  /**
   * The batch's row, its callbacks and their queues (`SQL.insertBatch`), then its jobs in the
   * chunks of `enqueueMany` (`SQL.enqueueMany`), all in ONE transaction: the caller's, where no
   * batch has a prologue, `XACT_ABORT` or transaction of its own and nothing is retried (a deadlock
   * has already rolled back the caller's whole transaction, which the caller retries as a unit);
   * or one of ChokaQ's own (`MssqlConnection.transaction`: READ COMMITTED, rolled back on any
   * error, run again from scratch on a transient one). There each chunk is the batch `enqueueMany`
   * runs on ChokaQ's pool, whose `BEGIN TRAN … COMMIT` nests in the open transaction: the inner
   * COMMIT only decrements `@@TRANCOUNT`, and nothing is committed before the outer one
   * (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/commit-transaction-transact-sql);
   * its `XACT_ABORT` rolls the whole batch back on an error. The jobs are new (the edge refused
   * ids and keys), so every one is inserted.
   * @inheritdoc
   */
  async enqueueBatch(
    batch: Checked<ValidatedBatch>,
    options?: EnqueueOptions,
  ): Promise<BatchEnqueued> {
    const caller = await this.db.callerExecutor(options?.transaction);
    const inCaller = { callerTransaction: !!caller };
    const run = async (exec: Exec) => {
      await exec(SQL.insertBatch(this.schema, batch, inCaller));
      for (const part of enqueueChunks(batch.jobs)) {
        await exec(SQL.enqueueMany(this.schema, part, inCaller));
      }
    };
    await (caller ? run(caller) : this.db.transaction('enqueueBatch', (tx) => run(tx.exec)));
    return batchEnqueued(batch);
  }

  // ---------------------------------------------------------------- worker-owned transitions

  /**
   * Ignores the `budgetedQueues` hint: this claim is already one round trip (one batch), which
   * finds the grouped queues itself and claims them in its transaction when it starts rows; the
   * grouped queues and the others take turns at going first (`groupsFirst`). A retry after an
   * ambiguous failure first returns whatever an earlier attempt with this lease already committed
   * (grouped rows too: they carry the lease); the first attempt skips that read.
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
      groupsFirst: this.groupsFirst,
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
    // Flipped once the claim committed. The batch does not say whether it found a grouped queue
    // (PostgreSQL flips only then), so every committed claim that starts rows flips it: for a
    // worker without grouped queues the turn means nothing.
    if (start > 0) this.groupsFirst = !this.groupsFirst;
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

  /**
   * @inheritdoc
   * A chunk in which some run records its result writes the results with the rows (see
   * `SQL.archiveSucceeded`); any other chunk is the batch of a release without stored results.
   */
  async archiveSucceeded(list: readonly Checked<CompletedJob>[]): Promise<RunRef[]> {
    const moved: RunRef[] = [];
    for (const part of archiveChunks(list)) {
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
   * The move is `archiveSucceeded`'s batch with one run (and its result, when the run records
   * one), without a transaction of its own, on the handler's runner (see `SQL.archiveSucceeded`),
   * so the result commits with the handler's work and the row. SQL Server has no per-transaction
   * statement timeout, so `statementTimeoutMs` is not applied: the driver's `requestTimeout` bounds
   * each statement.
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

  // ---------------------------------------------------------------- rescue

  /**
   * Up to a few rounds, each one READ COMMITTED transaction of ChokaQ's
   * (`MssqlConnection.transaction`, run again from scratch on a transient error): take the marked
   * edges (`SQL.checkTake`, skipping those another pass holds), send each dependent of a failed or
   * removed edge that still waits to the DLQ as `DependencyFailed` (`SQL.moveToDlq` of a Waiting
   * row, naming the dependency; its own settle step settles the edges of the jobs waiting on it,
   * marking theirs under `cancel` for the next round), and unmark what was taken
   * (`SQL.checkDone`); the rounds as `checkRounds` runs them.
   * SQL Server marks no edge to a hot dependency, so no edge is settled here (`settled` is 0): see
   * `sql/dependencies.ts`.
   * @inheritdoc
   */
  async checkDependencies(limit: number): Promise<DependencyCheckResult> {
    return checkRounds(limit, () =>
      this.db.transaction('checkDependencies', async (tx) => {
        const edges = takenEdges(await tx.exec(SQL.checkTake(this.schema, limit)));
        const cancelled: string[] = [];
        for (const { jobId, error } of dependentsToCancel(edges)) {
          const statement = SQL.moveToDlq(
            this.schema,
            { id: jobId },
            FailureReason.DependencyFailed,
            error,
            null,
            null,
            true,
          );
          if (num((await tx.exec(statement))[0]?.Affected) > 0) cancelled.push(jobId);
        }
        if (edges.length > 0) await tx.exec(SQL.checkDone(this.schema, edges));
        return { taken: edges.length, settled: 0, cancelled };
      }),
    );
  }

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

  // ---------------------------------------------------------------- recurring slots

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
}

// -------------------------------------------------------------------------------- helpers

/**
 * The results of one `SQL.enqueueMany` chunk in its input order, from the rows it selected (one
 * per item, by `Ord`): created, or the id already stored or the key's holder.
 */
function chunkResults(part: readonly SQL.MssqlNewJob[], rows: readonly Row[]): EnqueueResult[] {
  const byOrd = new Map(rows.map((r) => [num(r.Ord), r]));
  return part.map((job, i) => {
    const row = byOrd.get(i);
    return { id: row ? String(row.Id) : job.id, created: row ? num(row.Created) === 1 : false };
  });
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

/** Splits validated jobs into `enqueueMany` chunks bounded by items and JSON characters. */
function enqueueChunks<T extends SQL.MssqlNewJob>(jobs: readonly T[]): T[][] {
  return boundedChunks(jobs, ENQUEUE_CHUNK, ENQUEUE_CHUNK_CHARS, (job) => job.payload.length + 512);
}

/** Splits completed runs into `archiveSucceeded` chunks bounded by items and result characters. */
function archiveChunks<T extends SQL.MssqlCompleted>(runs: readonly T[]): T[][] {
  return boundedChunks(
    runs,
    ARCHIVE_CHUNK,
    ARCHIVE_CHUNK_CHARS,
    (run) => (run.result?.length ?? 0) + 256,
  );
}

/**
 * `items` in order, in chunks of at most `maxItems` whose `sizeOf` adds up to at most `maxChars`
 * (an item larger than that alone in its chunk).
 */
function boundedChunks<T>(
  items: readonly T[],
  maxItems: number,
  maxChars: number,
  sizeOf: (item: T) => number,
): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let chars = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (current.length > 0 && (current.length >= maxItems || chars + size > maxChars)) {
      out.push(current);
      current = [];
      chars = 0;
    }
    current.push(item);
    chars += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}
