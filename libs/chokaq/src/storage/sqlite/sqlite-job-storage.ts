import { Logger } from '@nestjs/common';
import type BetterSqlite3 from 'better-sqlite3';
import type { QueryRunner } from 'typeorm';
import { toError } from '../../common/error-text';
import { ChokaQError, ChokaQStorageUnavailableError, ChokaQTransactionError } from '../../errors';
import type { Checked } from '../../interfaces/checked.interface';
import { FailureReason } from '../../interfaces/job-status.enum';
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
import { TransientRetryOptions } from '../../interfaces/storage-options.interface';
import { PREVIEW_SAMPLE } from '../../validation/limits';
import {
  CheckedDlqMove,
  CheckedRecurringDefinition,
  isLeaseTarget,
} from '../../validation/validate-args';
import { ValidatedEdits, ValidatedJob, assertNonNegativeInt } from '../../validation/validate-job';
import { DialectJobStorage, ZombieSweep } from '../dialect-job-storage';
import { assertDataSourceOpen, queryRunnerDataSource } from '../shared/data-source';
import { Outcome, dlqStatusFor } from '../shared/outcome';
import { NormalizedPage } from '../shared/page';
import { mapHotRow, mapJobView, mapQueueRow, toDate } from '../shared/row-mapper';
import { withTransientRetry } from '../shared/transient-retry';
import { SqlStorageConfig } from '../storage-config';
import { SqliteConnectionInUseError, isSqliteTransient } from './sqlite-errors';
import { SqliteMutex, yieldToEventLoop } from './sqlite-mutex';
import { SQLITE_MIGRATIONS, schemaMigrationsDdl } from './sqlite.schema';
import {
  SqlWhere,
  SqliteStatements,
  activeWhere,
  archiveWhere,
  dlqBatchSql,
  dlqCountSql,
  dlqWhere,
  pageSql,
  sqliteStatements,
  topDlqErrorsSql,
} from './sqlite.sql';

type Row = Record<string, unknown>;
type Params = Record<string, unknown>;

/** Rows per enqueue transaction: big enough to amortise the commit, small enough to keep the event loop moving. */
const ENQUEUE_CHUNK = 500;
/** Rows per resurrect / purge transaction of the bulk operations. */
const BULK_CHUNK = 500;
/** DLQ rows scanned (most recent first) by getTopDlqErrors. */
const TOP_ERRORS_SCAN = 10_000;
/** Prepared statements kept per storage; the fixed statements plus the common filter shapes fit easily. */
const STATEMENT_CACHE_SIZE = 256;
/** ensureSchema may queue behind several starting processes: allow it more attempts than a normal call. */
const SCHEMA_RETRY_ATTEMPTS = 30;

/** Per-queue counter increments of one batch. */
interface CounterDelta {
  queue: string;
  succeeded: number;
  failed: number;
  cancelled: number;
  retried: number;
  resurrected: number;
}

/** Per-(queue, outcome, reason) metric increments of one batch. */
interface BucketDelta {
  queue: string;
  outcome: Outcome;
  failure_reason: number;
  completed: number;
  duration_count: number;
  total_duration_ms: number;
  max_duration_ms: number;
}

/**
 * The SQLite dialect of {@link JobStorage} (SPEC §3, "SQLite specifics").
 *
 * **Connection.** TypeORM's better-sqlite3 driver has one connection per `DataSource`. ChokaQ uses the
 * driver's better-sqlite3 handle directly, not `QueryRunner.query`: better-sqlite3 is synchronous, so a
 * whole transaction (BEGIN IMMEDIATE … COMMIT) runs inside one turn of the event loop and nothing else
 * in the process — not the application sharing the `DataSource`, not another ChokaQ call — can
 * interleave a statement into it. The handle also gives exact `changes` counts and the SQLite error
 * codes. An async {@link SqliteMutex} still serialises ChokaQ's own calls, one at a time per storage.
 *
 * **Locking.** Every write runs in `BEGIN IMMEDIATE`, which takes the database's single write lock at
 * BEGIN: correctness across storages and processes sharing one file comes from that, not from the
 * mutex. `busy_timeout` is short (default 50 ms) because the wait blocks the event loop; SQLITE_BUSY and
 * SQLITE_LOCKED are retried asynchronously by `withTransientRetry`, with the mutex released between
 * attempts. A failed transaction is rolled back before the mutex is released. WAL lets readers run
 * while one process writes.
 *
 * **Shared DataSource.** If the application holds a transaction on the shared connection, ChokaQ backs
 * off (never joins it) — except for `enqueue(…, { transaction })`, which deliberately writes into it.
 */
export class SqliteJobStorage implements DialectJobStorage {
  /** @inheritdoc */
  readonly dialect = 'sqlite' as const;

  private readonly logger = new Logger(SqliteJobStorage.name);
  private readonly mutex = new SqliteMutex();
  private readonly sql: SqliteStatements;
  private readonly statements = new Map<string, BetterSqlite3.Statement>();
  /** The handle the cached statements belong to (a borrowed DataSource may be re-initialised). */
  private statementsOf: BetterSqlite3.Database | undefined;
  /** `data_version` watchers of {@link subscribe}, cleared by `close()`. */
  private readonly watchers = new Set<NodeJS.Timeout>();
  /** The file is in WAL mode (set by `prepare`): reads never wait for another process's writer. */
  private wal = false;

  constructor(private readonly config: SqlStorageConfig) {
    this.sql = sqliteStatements(config.schema);
  }

  // ================================================================== lifecycle

  /** Sets `busy_timeout` (config.busyTimeoutMs) and WAL mode on the connection. */
  async prepare(): Promise<void> {
    const busyTimeoutMs = assertNonNegativeInt(this.config.busyTimeoutMs, 'busyTimeoutMs', 60_000);
    await this.retry('prepare', () =>
      this.mutex.runExclusive(() => {
        const db = this.db();
        // Set first, so the journal-mode switch below waits briefly instead of 5 s (TypeORM's default).
        // On a borrowed DataSource this also shortens the application's own busy wait on the shared
        // connection: a long synchronous wait would freeze the whole process either way.
        db.pragma(`busy_timeout = ${busyTimeoutMs}`);
        const mode = String(db.pragma('journal_mode = WAL', { simple: true }));
        this.wal = mode === 'wal';
        // Durable commits: better-sqlite3 opens an existing WAL file with synchronous = NORMAL
        // (its build sets SQLITE_DEFAULT_WAL_SYNCHRONOUS=1), where a power failure can lose the
        // last commits. ChokaQ's own connection syncs every commit except claims (see
        // claimTransaction); a borrowed DataSource keeps the application's choice.
        if (this.config.ownsDataSource) db.pragma('synchronous = FULL');
        if (mode !== 'wal' && mode !== 'memory') {
          this.logger.warn(
            `SQLite journal_mode is '${mode}', not WAL: readers will block the writer`,
          );
        }
      }),
    );
  }

  /**
   * Creates or migrates the schema under BEGIN IMMEDIATE: the first process to get the write lock
   * applies the missing versions and records them in `schema_migrations`; the others wait (retrying
   * SQLITE_BUSY) and then find nothing left to do. SQLite DDL is transactional, so a failed migration
   * leaves no half-created schema.
   */
  async ensureSchema(): Promise<void> {
    const p = this.config.schema;
    const applied = await this.write(
      'ensureSchema',
      () => {
        const db = this.db();
        db.exec(schemaMigrationsDdl(p));
        const done = new Set(this.all(this.sql.appliedVersions).map((r) => Number(r.version)));
        const now: number[] = [];
        for (const migration of SQLITE_MIGRATIONS) {
          if (done.has(migration.version)) continue;
          for (const statement of migration.statements(p)) db.exec(statement);
          this.run(this.sql.recordVersion, {
            version: migration.version,
            description: migration.description,
          });
          now.push(migration.version);
        }
        return now;
      },
      { maxAttempts: Math.max(SCHEMA_RETRY_ATTEMPTS, this.config.transientRetry.maxAttempts ?? 0) },
    );
    if (applied.length > 0) {
      this.logger.log(`Schema '${p}*' migrated to version ${applied.join(', ')}`);
    }
  }

  /** Stops change watchers, waits for the call in flight, then destroys an owned DataSource. */
  async close(): Promise<void> {
    for (const timer of this.watchers) clearInterval(timer);
    this.watchers.clear();
    await this.mutex.runExclusive(() => undefined);
    this.statements.clear();
    this.statementsOf = undefined;
    if (this.config.ownsDataSource && this.config.dataSource.isInitialized) {
      await this.config.dataSource.destroy();
    }
  }

  /** The database clock. */
  async now(): Promise<Date> {
    const row = await this.read('now', () => this.get(this.sql.now));
    return new Date(Number(row!.now_ms));
  }

  /**
   * SQLite has no notification channel, but `PRAGMA data_version` changes whenever another
   * connection (another process, or another storage on the same file) commits. Reading it every
   * `dataVersionPollMs` is a few microseconds of work, and a change calls `listener` with no queue,
   * so a job enqueued by another process starts within about that interval instead of the worker's
   * `pollIntervalMs`. Commits of this connection do not change it (same-process enqueues wake the
   * worker directly). Null for `:memory:` (no other connection can see it), `dataVersionPollMs: 0`,
   * or a file not in WAL mode: there the read needs a shared lock, and while another process
   * writes, each poll would block the event loop for `busy_timeout`. Cancel requests are not
   * reported here: another process's `cancel` reaches the owner on its next heartbeat.
   */
  async subscribe(listener: (queue?: string) => void): Promise<(() => Promise<void>) | null> {
    const everyMs = this.config.dataVersionPollMs;
    if (everyMs <= 0 || !this.wal || this.db().memory) return null;
    const read = () => Number(this.get(this.sql.dataVersion)!.data_version);
    let seen = read();
    const timer = setInterval(() => {
      let now: number;
      try {
        now = read();
      } catch {
        return; // closed or busy: the next tick tries again, and the worker's own poll remains
      }
      if (now === seen) return;
      seen = now;
      try {
        listener();
      } catch (error) {
        this.logger.warn(`Change listener threw: ${toError(error).message}`);
      }
    }, everyMs);
    timer.unref();
    this.watchers.add(timer);
    return async () => {
      clearInterval(timer);
      this.watchers.delete(timer);
    };
  }

  // ================================================================== producer

  /** @inheritdoc */
  async enqueue(job: Checked<ValidatedJob>, options?: EnqueueOptions): Promise<EnqueueResult> {
    const [result] = await this.insertJobs('enqueue', [job], options);
    return result;
  }

  /** @inheritdoc */
  async enqueueMany(
    jobs: readonly Checked<ValidatedJob>[],
    options?: EnqueueOptions,
  ): Promise<EnqueueResult[]> {
    return this.insertJobs('enqueueMany', jobs, options);
  }

  private async insertJobs(
    name: string,
    jobs: readonly ValidatedJob[],
    options: EnqueueOptions | undefined,
  ): Promise<EnqueueResult[]> {
    if (options?.transaction !== undefined && options.transaction !== null) {
      return this.insertInCallerTransaction(name, jobs, options.transaction);
    }
    const results: EnqueueResult[] = [];
    for (let i = 0; i < jobs.length; i += ENQUEUE_CHUNK) {
      if (i > 0) await yieldToEventLoop();
      const chunk = jobs.slice(i, i + ENQUEUE_CHUNK);
      results.push(...(await this.write(name, () => this.insertChunk(chunk))));
    }
    return results;
  }

  /**
   * Enqueue inside the caller's open transaction on ChokaQ's own DataSource. Deliberately without the
   * mutex: the caller owns the connection's transaction right now, and a ChokaQ call holding the mutex
   * would be waiting (asynchronously, see {@link SqliteConnectionInUseError}) for that very transaction
   * to end — taking the mutex here could deadlock the caller against ChokaQ. Running synchronously on
   * the handle needs no lock anyway. A savepoint makes the inserts all-or-nothing inside the caller's
   * transaction; the caller's COMMIT or ROLLBACK decides the rest.
   */
  private insertInCallerTransaction(
    name: string,
    jobs: readonly ValidatedJob[],
    transaction: unknown,
  ): EnqueueResult[] {
    const runner = transaction as Partial<QueryRunner>;
    if (
      typeof runner !== 'object' ||
      queryRunnerDataSource(runner) === undefined ||
      !('isTransactionActive' in runner)
    ) {
      throw new ChokaQTransactionError('the transaction option is not a TypeORM QueryRunner');
    }
    if (queryRunnerDataSource(runner) !== this.config.dataSource) {
      throw new ChokaQTransactionError('the QueryRunner belongs to another DataSource');
    }
    if (runner.isReleased) throw new ChokaQTransactionError('the QueryRunner was released');
    const db = this.db();
    if (!runner.isTransactionActive || !db.inTransaction) {
      throw new ChokaQTransactionError('the QueryRunner has no open transaction');
    }
    this.statement('SAVEPOINT chokaq_enqueue').run();
    try {
      const results: EnqueueResult[] = [];
      for (let i = 0; i < jobs.length; i += ENQUEUE_CHUNK) {
        results.push(...this.insertChunk(jobs.slice(i, i + ENQUEUE_CHUNK)));
      }
      this.statement('RELEASE chokaq_enqueue').run();
      return results;
    } catch (error) {
      this.statement('ROLLBACK TO chokaq_enqueue').run();
      this.statement('RELEASE chokaq_enqueue').run();
      // A busy file inside someone else's transaction cannot be retried here: the caller must retry
      // its whole transaction, so it gets the typed, retryable error.
      if (isSqliteTransient(error)) throw new ChokaQStorageUnavailableError(name, 1, error);
      throw error;
    }
  }

  /** Inserts one chunk (synchronously, inside a transaction) and resolves each item's result. */
  private insertChunk(jobs: readonly ValidatedJob[]): EnqueueResult[] {
    const rows = JSON.stringify(
      jobs.map((j) => ({
        id: j.id,
        queue: j.queue,
        type: j.type,
        payload: j.payload,
        tags: j.tags,
        idempotency_key: j.idempotencyKey,
        priority: j.priority,
        delay_ms: j.delayMs,
        run_at: j.runAt ? j.runAt.getTime() : null,
        created_by: j.createdBy,
      })),
    );
    this.run(this.sql.ensureQueues, { rows });
    this.run(this.sql.ensureStats, { rows });
    const inserted = new Set(this.all(this.sql.insertJobs, { rows }).map((r) => String(r.id)));
    return jobs.map((job) => {
      // delete(): with a duplicated id in one batch only the first item reports created.
      if (inserted.delete(job.id)) return { id: job.id, created: true };
      // Its own id first: a retry after an ambiguous commit whose job has since finished must not
      // report the key's new holder as its result.
      if (job.idempotencyKey !== null && !this.get(this.sql.idExists, { id: job.id })?.found) {
        const holder = this.get(this.sql.idByIdempotencyKey, { key: job.idempotencyKey });
        if (holder) return { id: String(holder.id), created: false };
      }
      return { id: job.id, created: false };
    });
  }

  // ================================================================== worker-owned transitions

  /**
   * Claims are serialised by BEGIN IMMEDIATE, so the `budgetedQueues` hint only selects the
   * statement: one handled queue (queue-wide) that the hint says is unbudgeted takes the cheaper
   * `claimOneQueue`, which skips the queue if it is budgeted after all; anything else takes `claim`.
   * @inheritdoc
   */
  async fetchNextBatch(request: Checked<FetchRequest & { start: number }>): Promise<HotJob[]> {
    const { workerId, leaseId, limit, handled, start, budgetedQueues } = request;
    const [only] = handled.queues;
    const oneQueue =
      budgetedQueues !== undefined &&
      handled.types.length === 0 &&
      handled.queues.every((q) => q === only) &&
      !budgetedQueues.includes(only);
    const [sql, params] = oneQueue
      ? [this.sql.claimOneQueue, { queue: only, limit, start, workerId, leaseId }]
      : [
          this.sql.claim,
          {
            queues: JSON.stringify(handled.queues),
            types: JSON.stringify(handled.types.map((t) => ({ queue: t.queue, type: t.type }))),
            limit,
            start,
            workerId,
            leaseId,
          },
        ];
    const rows = await this.retry('fetchNextBatch', () =>
      this.mutex.runExclusive(() => this.claimTransaction(() => this.all(sql, params))),
    );
    // RETURNING has no order: hand the rows back in claim order.
    return rows.map(mapHotRow).sort(claimOrder);
  }

  /** @inheritdoc */
  async markAsProcessing(leases: readonly Checked<JobLease>[]): Promise<string[]> {
    const json = leasesJson(leases);
    const rows = await this.write('markAsProcessing', () => [
      // A retry after an ambiguous commit: already started under this lease, by this caller.
      ...this.all(this.sql.startedByLease, { leases: json }),
      ...this.all(this.sql.markAsProcessing, { leases: json }),
    ]);
    return rows.map((r) => String(r.id));
  }

  /** @inheritdoc */
  async keepAlive(
    workerId: string,
    leases: readonly Checked<JobLease>[],
  ): Promise<KeepAliveResult> {
    const json = leasesJson(leases);
    const rows = await this.write('keepAlive', () =>
      this.all(this.sql.keepAlive, { workerId, leases: json }),
    );
    return {
      touched: rows.length,
      cancelRequested: rows.filter((r) => r.cancel_requested_utc !== null).map((r) => String(r.id)),
    };
  }

  /** @inheritdoc */
  async release(leases: readonly Checked<JobLease>[], delay: number | null): Promise<number> {
    const json = leasesJson(leases);
    return this.write('release', () => {
      const rows = this.all(this.sql.release, { leases: json, delayMs: delay });
      // A delayed release is a retry that spends no attempt (open circuit): count it.
      if (delay !== null && rows.length > 0) this.addCounters(countersByQueue(rows, 'retried'));
      return rows.length;
    });
  }

  /** @inheritdoc */
  async reportProgress(lease: Checked<JobLease>, progress: number): Promise<number> {
    return this.write('reportProgress', () =>
      this.run(this.sql.reportProgress, {
        id: lease.id,
        workerId: lease.workerId,
        leaseId: lease.leaseId,
        progress,
      }),
    );
  }

  /** @inheritdoc */
  async rescheduleForRetry(
    lease: Checked<JobLease>,
    delayMs: number,
    error: string,
  ): Promise<number> {
    const params = {
      id: lease.id,
      workerId: lease.workerId,
      leaseId: lease.leaseId,
      delayMs,
      error,
    };
    return this.write('rescheduleForRetry', () => {
      const rows = this.all(this.sql.rescheduleForRetry, params);
      if (rows.length > 0) this.addCounters(countersByQueue(rows, 'retried'));
      return rows.length;
    });
  }

  /**
   * Hot → Archive in one BEGIN IMMEDIATE transaction: copy the exact owned rows into the archive
   * (`archiveOwned`), delete those rows from the hot table, add `SucceededTotal` once per queue and
   * upsert one metric bucket per queue. Any error (say, an archive row with the same id) rolls all
   * of it back.
   */
  async archiveSucceeded(completed: readonly Checked<CompletedJob>[]): Promise<RunRef[]> {
    const leases = JSON.stringify(
      completed.map((c) => ({
        id: c.id,
        workerId: c.workerId,
        leaseId: c.leaseId,
        durationMs: c.durationMs,
      })),
    );
    return this.write('archiveSucceeded', () => {
      const moved = this.all(this.sql.archiveOwned, { leases });
      if (moved.length === 0) return [];
      // The SQLite archive keeps no lease, so the delete reports which lease each archived row had.
      const deleted = this.all(this.sql.deleteArchived, { leases });
      if (deleted.length !== moved.length) {
        // Cannot happen under BEGIN IMMEDIATE; if it ever did, the throw rolls both steps back.
        throw new Error(`BUG: archived ${moved.length} row(s) but deleted ${deleted.length}`);
      }
      this.addCounters(countersByQueue(moved, 'succeeded'));
      this.addBuckets(bucketsOf(moved, Outcome.Succeeded, -1));
      return deleted.map((r) => ({ id: String(r.id), leaseId: String(r.lease_id) }));
    });
  }

  /** @inheritdoc */
  async moveToDlq(
    target: Checked<JobLease> | Checked<{ id: string }>,
    move: Checked<CheckedDlqMove>,
  ): Promise<number> {
    const { reason, error, actor, durationMs } = move;
    const leases = isLeaseTarget(target) ? leasesJson([target]) : null;
    return this.write('moveToDlq', () => {
      const rows = leases
        ? this.all(this.sql.deleteOwned, { leases })
        : this.all(this.sql.deleteHotById, { id: target.id });
      this.moveRowsToDlq(rows, reason, error, actor, durationMs);
      return rows.length;
    });
  }

  /** @inheritdoc */
  async cancel(unique: readonly string[], by: string | null, text: string): Promise<CancelResult> {
    const json = JSON.stringify(unique);
    return this.write('cancel', () => {
      const rows = this.all(this.sql.deleteCancellable, { ids: json });
      this.moveRowsToDlq(rows, FailureReason.Cancelled, text, by, null);
      const requested = this.all(this.sql.requestCancel, { ids: json, actor: by });
      return {
        cancelled: rows.map((r) => String(r.id)),
        cancelRequested: requested.map((r) => String(r.id)),
      };
    });
  }

  /**
   * Steps 2–4 of every Hot → DLQ move, on rows already deleted and captured in this transaction:
   * insert them with the DLQ status and reason, add `FailedTotal` (or `CancelledTotal`) once per
   * queue, and upsert the metric buckets.
   */
  private moveRowsToDlq(
    rows: Row[],
    reason: FailureReason,
    error: string,
    actor: string | null,
    durationMs: number | null,
  ): void {
    if (rows.length === 0) return;
    const cancelled = reason === FailureReason.Cancelled;
    const moved = rows.map((r) => ({
      ...r,
      status: dlqStatusFor(reason),
      failure_reason: reason,
      error_details: error,
      last_modified_by: actor ?? r.last_modified_by ?? null,
      duration_ms: durationMs,
    }));
    this.run(this.sql.insertDlq, { moved: JSON.stringify(moved) });
    this.addCounters(countersByQueue(moved, cancelled ? 'cancelled' : 'failed'));
    this.addBuckets(bucketsOf(moved, cancelled ? Outcome.Cancelled : Outcome.Failed, reason));
  }

  // ================================================================== DLQ → hot

  /** @inheritdoc */
  async resurrect(
    id: string,
    validated: Checked<ValidatedEdits>,
    by: string | null,
  ): Promise<number> {
    const params = {
      payload: validated.payload,
      setTags: validated.tags === undefined ? 0 : 1,
      tags: validated.tags ?? null,
      priority: validated.priority,
      actor: by,
    };
    return this.write('resurrect', () => {
      const rows = this.all(this.sql.deleteDlqByIds, { ids: JSON.stringify([id]) });
      this.insertResurrected(rows, params);
      return rows.length;
    });
  }

  /** @inheritdoc */
  async resurrectMany(unique: readonly string[], by: string | null): Promise<string[]> {
    const moved: string[] = [];
    for (let i = 0; i < unique.length; i += BULK_CHUNK) {
      if (i > 0) await yieldToEventLoop();
      const chunk = JSON.stringify(unique.slice(i, i + BULK_CHUNK));
      const rows = await this.write('resurrectMany', () => {
        const deleted = this.all(this.sql.deleteDlqByIds, { ids: chunk });
        this.insertResurrected(deleted, noEdits(by));
        return deleted;
      });
      moved.push(...rows.map((r) => String(r.id)));
    }
    return moved;
  }

  /** @inheritdoc */
  async resurrectByFilter(
    filter: Checked<DlqFilter>,
    limit: number,
    by: string | null,
  ): Promise<string[]> {
    const where = dlqWhere(filter);
    const { del } = dlqBatchSql(this.sql.tables.dlq, where);
    const moved: string[] = [];
    while (moved.length < limit) {
      if (moved.length > 0) await yieldToEventLoop();
      const batch = Math.min(BULK_CHUNK, limit - moved.length);
      const rows = await this.write('resurrectByFilter', () => {
        const deleted = this.all(del, { ...where.params, limit: batch });
        this.insertResurrected(deleted, noEdits(by));
        return deleted;
      });
      moved.push(...rows.map((r) => String(r.id)));
      if (rows.length < batch) break;
    }
    return moved;
  }

  /** Step 2–3 of DLQ → hot on rows already deleted from the DLQ in this transaction. */
  private insertResurrected(rows: Row[], params: Params): void {
    if (rows.length === 0) return;
    this.run(this.sql.insertResurrected, { ...params, moved: JSON.stringify(rows) });
    this.addCounters(countersByQueue(rows, 'resurrected'));
  }

  // ================================================================== rescue

  /** @inheritdoc */
  async recoverAbandoned(timeoutMs: number, max: number): Promise<number> {
    return this.write('recoverAbandoned', () =>
      this.run(this.sql.recoverAbandoned, { timeoutMs, limit: max }),
    );
  }

  /** @inheritdoc */
  async archiveZombies(sweep: Checked<ZombieSweep>): Promise<ZombieRescueResult> {
    const { defaultTimeoutMs, limit: max, error } = sweep;
    const rules = JSON.stringify(sweep.rules.map((r) => ({ ...r, retry: r.retry ? 1 : 0 })));
    return this.write('archiveZombies', () => {
      const retried = this.all(this.sql.retryZombies, {
        error,
        defaultTimeoutMs,
        limit: max,
        rules,
      });
      if (retried.length > 0) this.addCounters(countersByQueue(retried, 'retried'));
      let dead: Row[] = [];
      if (retried.length < max) {
        dead = this.all(this.sql.deleteZombies, {
          defaultTimeoutMs,
          limit: max - retried.length,
          rules,
        });
        this.moveRowsToDlq(dead, FailureReason.Zombie, error, null, null);
      }
      return { dlq: dead.map((r) => String(r.id)), retried: retried.map((r) => String(r.id)) };
    });
  }

  // ================================================================== queues

  /** @inheritdoc */
  async getQueues(): Promise<QueueInfo[]> {
    const rows = await this.read('getQueues', () => this.all(this.sql.listQueues));
    return rows.map(mapQueueRow);
  }

  /** @inheritdoc */
  async updateQueue(name: string, patch: Checked<QueuePatch>): Promise<QueueInfo> {
    const json = JSON.stringify(patch);
    const row = await this.write('updateQueue', () =>
      this.get(this.sql.upsertQueue, { name, patch: json }),
    );
    return mapQueueRow(row!);
  }

  // ================================================================== purge and retention

  /** @inheritdoc */
  async purgeDlq(unique: readonly string[]): Promise<number> {
    let purged = 0;
    for (let i = 0; i < unique.length; i += BULK_CHUNK) {
      if (i > 0) await yieldToEventLoop();
      const chunk = JSON.stringify(unique.slice(i, i + BULK_CHUNK));
      purged += await this.write('purgeDlq', () =>
        this.run(this.sql.purgeDlqByIds, { ids: chunk }),
      );
    }
    return purged;
  }

  /** @inheritdoc */
  async purgeDlqByFilter(filter: Checked<DlqFilter>, limit: number): Promise<number> {
    const where = dlqWhere(filter);
    const { purge } = dlqBatchSql(this.sql.tables.dlq, where);
    let purged = 0;
    while (purged < limit) {
      if (purged > 0) await yieldToEventLoop();
      const batch = Math.min(BULK_CHUNK, limit - purged);
      const n = await this.write('purgeDlqByFilter', () =>
        this.run(purge, { ...where.params, limit: batch }),
      );
      purged += n;
      if (n < batch) break;
    }
    return purged;
  }

  /** @inheritdoc */
  async applyRetention(policy: Checked<Required<RetentionPolicy>>): Promise<RetentionResult> {
    const { archiveMs, dlqMs, metricsMs, batchSize: batch } = policy;
    // One cutoff per call: rows that age past it while the batches run wait for the next call.
    const now = (await this.now()).getTime();
    const drain = async (name: string, sql: string, cutoff: number): Promise<number> => {
      let total = 0;
      for (;;) {
        const n = await this.write(name, () => this.run(sql, { cutoff, limit: batch }));
        total += n;
        if (n < batch) return total;
        await yieldToEventLoop();
      }
    };
    return {
      archive: await drain('retention.archive', this.sql.retainArchive, now - archiveMs),
      dlq: await drain('retention.dlq', this.sql.retainDlq, now - dlqMs),
      metricBuckets: await drain('retention.buckets', this.sql.retainBuckets, now - metricsMs),
    };
  }

  // ================================================================== reads

  /** @inheritdoc */
  async getJob(id: string): Promise<JobView | null> {
    // One read transaction: a job moving between pillars is seen exactly once (a WAL snapshot).
    return this.read('getJob', () => {
      const hot = this.get(this.sql.hotById, { id });
      if (hot) return mapJobView(hot, 'hot');
      const archived = this.get(this.sql.archiveById, { id });
      if (archived) return mapJobView(archived, 'archive');
      const dead = this.get(this.sql.dlqById, { id });
      return dead ? mapJobView(dead, 'dlq') : null;
    });
  }

  /** @inheritdoc */
  async listActive(page: Checked<NormalizedPage<ActiveFilter>>): Promise<Page<JobView>> {
    return this.page('listActive', 'hot', this.sql.tables.hot, page, activeWhere(page.filter));
  }

  /** @inheritdoc */
  async getArchivePage(page: Checked<NormalizedPage<HistoryFilter>>): Promise<Page<JobView>> {
    return this.page(
      'getArchivePage',
      'archive',
      this.sql.tables.archive,
      page,
      archiveWhere(page.filter),
    );
  }

  /** @inheritdoc */
  async getDlqPage(page: Checked<NormalizedPage<DlqFilter>>): Promise<Page<JobView>> {
    return this.page('getDlqPage', 'dlq', this.sql.tables.dlq, page, dlqWhere(page.filter));
  }

  private async page<F>(
    name: string,
    pillar: Pillar,
    table: string,
    page: NormalizedPage<F>,
    where: SqlWhere,
  ): Promise<Page<JobView>> {
    const sql = pageSql(table, where, page.sortColumn, page.sortDir);
    return this.read(name, () => {
      const total = Number(this.get(sql.count, where.params)!.n);
      const rows = this.all(sql.page, {
        ...where.params,
        limit: page.pageSize,
        offset: page.offset,
      });
      return {
        items: rows.map((r) => mapJobView(r, pillar)),
        total,
        page: page.page,
        pageSize: page.pageSize,
      };
    });
  }

  /** @inheritdoc */
  async getSummary(): Promise<SummaryStats> {
    return this.read('getSummary', () => {
      const c = this.get(this.sql.summaryCounters)!;
      const byStatus = new Map(
        this.all(this.sql.hotCountsByStatus).map((r) => [Number(r.status), Number(r.n)]),
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
        archived: Number(this.get(this.sql.archiveCount)!.n),
        dlq: Number(this.get(this.sql.dlqCount)!.n),
      };
    });
  }

  /** @inheritdoc */
  async getQueueStats(): Promise<QueueStats[]> {
    return this.read('getQueueStats', () => {
      const hot = new Map<string, number>();
      for (const r of this.all(this.sql.hotCountsByQueue))
        hot.set(`${r.status}:${r.queue}`, Number(r.n));
      const countsOf = (sql: string) =>
        new Map(this.all(sql).map((r) => [String(r.queue), Number(r.n)]));
      const archived = countsOf(this.sql.archiveCountsByQueue);
      const dead = countsOf(this.sql.dlqCountsByQueue);
      return this.all(this.sql.queueStats).map((r) => {
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
    const rows = await this.read('getQueueHealth', () => this.all(this.sql.queueHealth));
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
    const rows = await this.read('getThroughput', () =>
      this.all(this.sql.throughput, { queue: queue ?? null }),
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
    const where = dlqWhere(filter);
    const sql = topDlqErrorsSql(this.sql.tables.dlq, where);
    const rows = await this.read('getTopDlqErrors', () =>
      this.all(sql, { ...where.params, limit: max, scan: TOP_ERRORS_SCAN }),
    );
    return rows.map((r) => ({
      error: String(r.error),
      count: Number(r.n),
      lastFailedAtUtc: toDate(r.last_failed_at_utc)!,
    }));
  }

  /** What a bulk DLQ action would touch; `sampleIds` are the first ids it would take (oldest failure first). */
  async previewDlqFilter(filter: Checked<DlqFilter>, limit: number): Promise<BulkPreview> {
    const where = dlqWhere(filter);
    const { ids } = dlqBatchSql(this.sql.tables.dlq, where);
    const countSql = dlqCountSql(this.sql.tables.dlq, where);
    return this.read('previewDlqFilter', () => {
      const matched = Number(this.get(countSql, where.params)!.n);
      const sample = this.all(ids, { ...where.params, limit: Math.min(limit, PREVIEW_SAMPLE) });
      return {
        matched,
        willAffect: Math.min(matched, limit),
        sampleIds: sample.map((r) => String(r.id)),
      };
    });
  }

  // ================================================================== recurring jobs

  /** @inheritdoc */
  async upsertRecurringJob(d: Checked<CheckedRecurringDefinition>): Promise<void> {
    const params = { ...d, nextSlotUtc: d.nextSlotUtc.getTime() };
    await this.write('upsertRecurringJob', () => this.run(this.sql.upsertRecurring, params));
  }

  /** @inheritdoc */
  async getRecurringJobs(): Promise<RecurringJobRecord[]> {
    const rows = await this.read('getRecurringJobs', () => this.all(this.sql.listRecurring));
    return rows.map((r) => ({
      name: String(r.name),
      cron: String(r.cron),
      timeZone: String(r.time_zone),
      queue: String(r.queue),
      type: String(r.type),
      payload: JSON.parse(String(r.payload)) as unknown,
      misfirePolicy: r.misfire_policy === 'none' ? 'none' : 'skip',
      nextSlotUtc: toDate(r.next_slot_utc)!,
      lastSlotUtc: toDate(r.last_slot_utc),
      isPaused: r.is_paused === 1,
    }));
  }

  /**
   * Compare-and-set of `next_slot_utc` and the enqueue in one BEGIN IMMEDIATE transaction. Returns
   * null when the CAS lost (another process took the slot) — and also when `job` is null (the slot
   * was advanced and, by the caller's choice, nothing was enqueued).
   */
  async claimRecurringSlot(
    name: string,
    slotUtc: Date,
    nextSlotUtc: Date,
    validated: Checked<ValidatedJob> | null,
  ): Promise<EnqueueResult | null> {
    const params = { name, slotUtc: slotUtc.getTime(), nextSlotUtc: nextSlotUtc.getTime() };
    return this.write('claimRecurringSlot', () => {
      if (this.run(this.sql.advanceRecurringSlot, params) === 0) return null;
      return validated ? this.insertChunk([validated])[0] : null;
    });
  }

  // ================================================================== plumbing

  /** The better-sqlite3 handle behind the DataSource's single connection. */
  private db(): BetterSqlite3.Database {
    const driver = this.config.dataSource.driver as unknown as {
      databaseConnection?: BetterSqlite3.Database;
    };
    const db = driver.databaseConnection;
    assertDataSourceOpen(this.config.dataSource, 'SQLite');
    if (!db || !db.open) {
      throw new ChokaQError(
        'ChokaQ SQLite storage: the DataSource is not initialised (or was destroyed)',
      );
    }
    return db;
  }

  /** A cached prepared statement (FIFO-bounded; statements are re-prepared after a reconnect). */
  private statement(sql: string): BetterSqlite3.Statement {
    const db = this.db();
    if (this.statementsOf !== db) {
      this.statements.clear();
      this.statementsOf = db;
    }
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      this.statements.set(sql, statement);
      if (this.statements.size > STATEMENT_CACHE_SIZE) {
        this.statements.delete(this.statements.keys().next().value!);
      }
    }
    return statement;
  }

  private all(sql: string, params: Params = {}): Row[] {
    return this.statement(sql).all(params) as Row[];
  }

  private get(sql: string, params: Params = {}): Row | undefined {
    return this.statement(sql).get(params) as Row | undefined;
  }

  /** Runs a statement without result rows; returns the number of rows it changed. */
  private run(sql: string, params: Params = {}): number {
    return this.statement(sql).run(params).changes;
  }

  private addCounters(deltas: CounterDelta[]): void {
    if (deltas.length > 0) this.run(this.sql.addCounters, { deltas: JSON.stringify(deltas) });
  }

  private addBuckets(deltas: BucketDelta[]): void {
    if (deltas.length > 0) this.run(this.sql.addBuckets, { buckets: JSON.stringify(deltas) });
  }

  /** A write: one BEGIN IMMEDIATE transaction per attempt, under the mutex, retried when busy. */
  private write<T>(name: string, work: () => T, retry?: TransientRetryOptions): Promise<T> {
    return this.retry(
      name,
      () => this.mutex.runExclusive(() => this.transaction('BEGIN IMMEDIATE', work)),
      retry,
    );
  }

  /** A read: one deferred transaction, so multi-statement reads see one WAL snapshot. */
  private read<T>(name: string, work: () => T): Promise<T> {
    return this.retry(name, () => this.mutex.runExclusive(() => this.transaction('BEGIN', work)));
  }

  private retry<T>(
    name: string,
    attempt: () => Promise<T>,
    retry?: TransientRetryOptions,
  ): Promise<T> {
    return withTransientRetry(`sqlite.${name}`, attempt, isSqliteTransient, {
      ...this.config.transientRetry,
      ...retry,
    });
  }

  /**
   * Runs `work` synchronously between `begin` and COMMIT; on any error rolls back before returning
   * (so before the mutex is released). `work` must not be async: the whole transaction has to finish
   * within this turn of the event loop so nothing else can use the connection in the middle of it.
   */
  private transaction<T>(begin: 'BEGIN' | 'BEGIN IMMEDIATE', work: () => T): T {
    const db = this.db();
    if (db.inTransaction) throw new SqliteConnectionInUseError();
    this.statement(begin).run();
    return this.inTransaction(db, work);
  }

  /**
   * A claim: a write transaction whose COMMIT does not wait for fsync (`synchronous = NORMAL` for
   * this one transaction when the connection runs FULL or EXTRA; restored right after, in the same
   * synchronous turn, so nothing else sees it). In WAL mode the commit is atomic and survives a
   * process crash; only a power or OS failure can lose it, and then its rows are Pending again as
   * if never claimed (a started job may run again: at-least-once, as after any crash). Every later
   * FULL commit (a start, a finalising move) syncs the WAL up to and including the claim, so no
   * later state can survive without it.
   */
  private claimTransaction<T>(work: () => T): T {
    // Cached statements: db.pragma() would prepare a new statement three times per claim.
    const level = Number(this.get('PRAGMA synchronous')?.synchronous);
    if (level < 2) return this.transaction('BEGIN IMMEDIATE', work);
    this.run('PRAGMA synchronous = NORMAL');
    try {
      return this.transaction('BEGIN IMMEDIATE', work);
    } finally {
      this.run(`PRAGMA synchronous = ${level}`);
    }
  }

  private inTransaction<T>(db: BetterSqlite3.Database, work: () => T): T {
    try {
      const result = work();
      if (result instanceof Promise)
        throw new Error('BUG: a SQLite transaction body must be synchronous');
      this.statement('COMMIT').run();
      return result;
    } catch (error) {
      if (db.inTransaction) {
        try {
          this.statement('ROLLBACK').run();
        } catch (rollbackError) {
          this.logger.error(`ROLLBACK failed after ${String(error)}: ${String(rollbackError)}`);
        }
      }
      throw error;
    }
  }
}

// ==================================================================== helpers

/** Claim order: priority desc, then due time, then id. */
function claimOrder(a: HotJob, b: HotJob): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  const dueA = (a.scheduledAtUtc ?? a.enqueuedAtUtc).getTime();
  const dueB = (b.scheduledAtUtc ?? b.enqueuedAtUtc).getTime();
  if (dueA !== dueB) return dueA - dueB;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Validates leases (shared rules) and returns them as the JSON array the statements read. */
function leasesJson(leases: readonly Checked<JobLease>[]): string {
  return JSON.stringify(
    leases.map((l) => ({ id: l.id, workerId: l.workerId, leaseId: l.leaseId })),
  );
}

function noEdits(actor: string | null): Params {
  return { payload: null, setTags: 0, tags: null, priority: null, actor };
}

/** Counter increments grouped by queue: each stats row is updated once per batch. */
function countersByQueue(rows: Row[], field: Exclude<keyof CounterDelta, 'queue'>): CounterDelta[] {
  const byQueue = new Map<string, CounterDelta>();
  for (const row of rows) {
    const queue = String(row.queue);
    let delta = byQueue.get(queue);
    if (!delta) {
      delta = { queue, succeeded: 0, failed: 0, cancelled: 0, retried: 0, resurrected: 0 };
      byQueue.set(queue, delta);
    }
    delta[field] += 1;
  }
  return [...byQueue.values()];
}

/** Metric increments grouped by queue (one outcome and reason per batch). */
function bucketsOf(rows: Row[], outcome: Outcome, failureReason: number): BucketDelta[] {
  const byQueue = new Map<string, BucketDelta>();
  for (const row of rows) {
    const queue = String(row.queue);
    let delta = byQueue.get(queue);
    if (!delta) {
      delta = {
        queue,
        outcome,
        failure_reason: failureReason,
        completed: 0,
        duration_count: 0,
        total_duration_ms: 0,
        max_duration_ms: 0,
      };
      byQueue.set(queue, delta);
    }
    delta.completed += 1;
    const duration = row.duration_ms;
    if (typeof duration === 'number') {
      delta.duration_count += 1;
      delta.total_duration_ms += duration;
      delta.max_duration_ms = Math.max(delta.max_duration_ms, duration);
    }
  }
  return [...byQueue.values()];
}
