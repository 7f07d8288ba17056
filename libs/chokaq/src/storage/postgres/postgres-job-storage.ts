import { Logger } from '@nestjs/common';
import type { Client, Pool } from 'pg';
import type { DataSource, QueryRunner } from 'typeorm';
import { isUuid } from '../../common/uuid';
import { ChokaQTransactionError, ChokaQUnsupportedServerError } from '../../errors';
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
import { dlqStatusFor, Outcome } from '../shared/outcome';
import { NormalizedPage } from '../shared/page';
import { mapHotRow, mapJobView, mapQueueRow, toDate } from '../shared/row-mapper';
import { withTransientRetry } from '../shared/transient-retry';
import { SqlStorageConfig } from '../storage-config';
import { PgListener } from './pg-listener';
import {
  bootstrapStatements,
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
} from './postgres.schema';
import * as SQL from './postgres.sql';
import { isStalePlanError, PreparedStatements } from './prepared-statements';

type Row = Record<string, unknown>;

/** Runs one statement on a connection and returns its rows. */
type Exec = (sql: string, params?: readonly unknown[]) => Promise<Row[]>;

/** Rows per multi-row insert statement of `enqueueMany`. */
const ENQUEUE_CHUNK_ROWS = 1_000;
/** Payload bytes per insert statement of `enqueueMany` (keeps one bind message far below 1 GB). */
const ENQUEUE_CHUNK_BYTES = 16 * 1024 * 1024;
/** Ids per statement of id-list operations (cancel, resurrectMany, purgeDlq). */
const ID_CHUNK = 1_000;
/** How often an enqueue retries when the holder of its idempotency key vanished mid-call. */
const MAX_HOLDER_ROUNDS = 5;
/** Oldest server this dialect supports (`hashtextextended`, LATERAL + SKIP LOCKED, MATERIALIZED CTEs). */
const MIN_SERVER_VERSION = 120_000;

/** SQLSTATEs retried as transient: serialization failure, deadlock, admin/crash shutdown, cannot connect now, connection exceptions (08xxx). */
const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '57P01', '57P02', '57P03']);
/** Node socket errors retried as transient. */
const TRANSIENT_NODE_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
]);
/** Driver messages of a lost connection (pg does not attach a code to them). */
const TRANSIENT_MESSAGE =
  /Connection terminated|connection timeout|Client has encountered a connection error|Connection is closed/i;

/**
 * True for PostgreSQL errors worth retrying (SPEC §3): 40001, 40P01, 57P01, 57P03, 08xxx and
 * dropped connections, plus a prepared statement made stale by DDL (it is prepared again under a
 * new name). Looks through TypeORM's `QueryFailedError` to the driver error.
 */
export function isTransientPostgresError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string') {
      if (TRANSIENT_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
      if (TRANSIENT_NODE_CODES.has(code)) return true;
    }
    if (typeof message === 'string' && TRANSIENT_MESSAGE.test(message)) return true;
    const next = e as { driverError?: unknown; cause?: unknown };
    e = next.driverError ?? next.cause;
  }
  return isStalePlanError(error);
}

function num(value: unknown): number {
  return value === null || value === undefined ? 0 : Number(value);
}

/**
 * The PostgreSQL dialect of {@link JobStorage}: all of ChokaQ's coordination through row locks,
 * `FOR UPDATE SKIP LOCKED` claims and single-statement atomic moves. The SQL lives in
 * `postgres.sql.ts` (each statement names the lock and isolation it relies on), the DDL in
 * `postgres.schema.ts`.
 *
 * Connections: each operation borrows a `QueryRunner` (a pooled connection) of the `DataSource`
 * and releases it in `finally`; multi-statement transactions run on one runner. `subscribe` uses
 * its own `pg.Client` (LISTEN holds a session, so it must not sit on a pool slot).
 */
export class PostgresJobStorage implements DialectJobStorage {
  readonly dialect = 'postgres' as const;

  private readonly logger = new Logger(PostgresJobStorage.name);
  private readonly dataSource: DataSource;
  private readonly schemaName: string;
  private readonly s: string;
  private readonly channel: string | null;
  private readonly cancelChannel: string | null;
  private readonly listeners = new Set<PgListener>();
  private closed = false;

  /** Statements that depend only on the schema, built once. */
  private readonly sql: {
    enqueue: string;
    lookupHolders: string;
    lockBudgets: string;
    claim: string;
    claimUnbudgeted: string;
    claimedByLease: string;
    markAsProcessing: string;
    keepAlive: string;
    release: string;
    reschedule: string;
    reportProgress: string;
    archive: string;
    cancelMove: string;
    cancelRequest: string;
    recoverAbandoned: string;
    archiveZombies: string;
  };

  /**
   * Named prepared statements for the fixed texts of {@link sql} (when `config.preparedStatements`).
   * Only fixed texts: statements built per call (filters, pages, DLQ move shapes) would leave an
   * unbounded number of prepared statements on each connection.
   */
  private readonly prepared: PreparedStatements | undefined;
  private readonly onPlansInvalidated = (): void =>
    this.logger.log(
      `The schema of "${this.schemaName}" changed under prepared statements; preparing them again`,
    );

  constructor(readonly config: SqlStorageConfig) {
    this.dataSource = config.dataSource;
    this.schemaName = config.schema;
    this.s = SQL.quoteSchema(config.schema);
    this.channel = config.notify ? SQL.enqueueChannel(config.schema) : null;
    this.cancelChannel = config.notify ? SQL.cancelChannel(config.schema) : null;
    const s = this.s;
    this.sql = {
      enqueue: SQL.enqueueChunk(s, this.channel),
      lookupHolders: SQL.lookupEnqueueHolders(s),
      lockBudgets: SQL.lockBudgetedQueues(s),
      claim: SQL.claimBatch(s),
      claimUnbudgeted: SQL.claimBatch(s, 'unbudgeted'),
      claimedByLease: SQL.selectClaimedByLease(s),
      markAsProcessing: SQL.markAsProcessing(s),
      keepAlive: SQL.keepAlive(s),
      release: SQL.releaseLeases(s),
      reschedule: SQL.rescheduleForRetry(s),
      reportProgress: SQL.reportProgress(s),
      archive: SQL.archiveSucceeded(s),
      cancelMove: SQL.cancelMove(s),
      cancelRequest: SQL.cancelRequest(s, this.cancelChannel),
      recoverAbandoned: SQL.recoverAbandoned(s),
      archiveZombies: SQL.archiveZombies(s),
    };
    this.prepared = config.preparedStatements
      ? new PreparedStatements(Object.values(this.sql))
      : undefined;
  }

  // ---------------------------------------------------------------- plumbing

  /** Retries transient failures of a whole operation (each attempt a fresh statement or transaction). */
  private retry<T>(name: string, operation: (attempt: number) => Promise<T>): Promise<T> {
    return withTransientRetry(
      name,
      operation,
      isTransientPostgresError,
      this.config.transientRetry,
    );
  }

  /** Borrows a pooled connection for `fn`, optionally inside one transaction; always releases it. */
  private async withConnection<T>(
    transaction: boolean,
    fn: (exec: Exec) => Promise<T>,
  ): Promise<T> {
    assertDataSourceOpen(this.dataSource, 'PostgreSQL');
    const runner = this.dataSource.createQueryRunner('master');
    try {
      const exec = execOn(runner, this.prepared, this.onPlansInvalidated);
      if (!transaction) return await fn(exec);
      // READ COMMITTED explicitly: every claim and move relies on a fresh snapshot per statement
      // (see postgres.sql.ts), whatever default_transaction_isolation the server or pool sets.
      // One statement, not TypeORM's startTransaction (START TRANSACTION, then SET TRANSACTION:
      // two round trips). If ROLLBACK itself fails the connection is broken, and pg's pool drops a
      // connection that is no longer queryable when it is released.
      await exec(SQL.BEGIN_READ_COMMITTED);
      try {
        const result = await fn(exec);
        await exec('COMMIT');
        return result;
      } catch (error) {
        await exec('ROLLBACK').catch(() => undefined);
        throw error;
      }
    } finally {
      await runner.release();
    }
  }

  /** One autocommit statement with transient retry. */
  private query(name: string, sql: string, params: readonly unknown[] = []): Promise<Row[]> {
    return this.retry(name, () => this.withConnection(false, (exec) => exec(sql, params)));
  }

  /** One transaction with transient retry; `fn` must be safe to repeat from scratch. */
  private transaction<T>(
    name: string,
    fn: (exec: Exec, attempt: number) => Promise<T>,
  ): Promise<T> {
    return this.retry(name, (attempt) => this.withConnection(true, (exec) => fn(exec, attempt)));
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Checks the connection and refuses a server older than PostgreSQL 12
   * ({@link ChokaQUnsupportedServerError}, the policy of every server dialect): there the claim
   * and the moves would fail at run time, on every poll.
   */
  async prepare(): Promise<void> {
    const [row] = await this.query('prepare', SQL.SELECT_SERVER_VERSION);
    const version = num(row?.version);
    if (version < MIN_SERVER_VERSION) {
      throw new ChokaQUnsupportedServerError(
        'postgres',
        version,
        MIN_SERVER_VERSION,
        `PostgreSQL server_version_num is ${version}; ChokaQ needs ${MIN_SERVER_VERSION} ` +
          `(PostgreSQL 12) or later. Upgrade the server.`,
      );
    }
  }

  /**
   * Creates or migrates the schema. Fast path without any lock or DDL privilege when the ledger
   * already has the newest version (the usual start of an app whose DBA applied the script). Else,
   * in ONE transaction under `pg_advisory_xact_lock` keyed by the schema: create schema and ledger,
   * re-read the ledger (another process may have finished meanwhile), apply the missing versions,
   * record them. Concurrent callers queue on the lock; the lock ends with the transaction.
   */
  async ensureSchema(): Promise<void> {
    if ((await this.appliedVersions()).includes(POSTGRES_SCHEMA_VERSION)) return;
    await this.transaction('ensureSchema', async (exec) => {
      await exec(SQL.LOCK_SCHEMA, [this.schemaName]);
      for (const statement of bootstrapStatements(this.s)) await exec(statement);
      const applied = new Set(
        (await exec(SQL.selectAppliedVersions(this.s))).map((r) => num(r.version)),
      );
      for (const migration of POSTGRES_MIGRATIONS) {
        if (applied.has(migration.version)) continue;
        for (const statement of migration.statements(this.s)) await exec(statement);
        await exec(SQL.recordMigration(this.s), [migration.version, migration.description]);
        this.logger.log(
          `Applied ChokaQ schema version ${migration.version} (${migration.description}) to "${this.schemaName}"`,
        );
      }
    });
  }

  private async appliedVersions(): Promise<number[]> {
    const [ledger] = await this.query('ensureSchema', SQL.SELECT_LEDGER_EXISTS, [
      `${this.s}.schema_migrations`,
    ]);
    if (ledger?.exists !== true) return [];
    return (await this.query('ensureSchema', SQL.selectAppliedVersions(this.s))).map((r) =>
      num(r.version),
    );
  }

  /** Ends every LISTEN client, then destroys the DataSource if ChokaQ created it. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const subscriptions = [...this.listeners];
    this.listeners.clear();
    await Promise.all(subscriptions.map((subscription) => subscription.stop()));
    if (this.config.ownsDataSource && this.dataSource.isInitialized)
      await this.dataSource.destroy();
  }

  /** The database clock. */
  async now(): Promise<Date> {
    const [row] = await this.query('now', SQL.SELECT_NOW);
    return toDate(row.now)!;
  }

  /**
   * LISTENs on the schema's channel, and with `onCancelRequested` on its cancel channel too, in one
   * session on a dedicated `pg.Client` (same connection options as the pool), so the session that
   * holds the LISTEN never occupies a pool slot. A lost session is re-established with backoff on
   * both channels ({@link PgListener}), and `listener` is then called once with no queue, since
   * notifications sent meanwhile are gone; cancellations missed meanwhile reach their owner through
   * its next `keepAlive`. Returns an unsubscribe function that UNLISTENs and ends the client;
   * `close()` ends any left. Null with `notify: false` (PgBouncer transaction pooling cannot carry
   * LISTEN). Rejects if the first connection fails.
   */
  async subscribe(
    listener: (queue?: string) => void,
    onCancelRequested?: (ids: string[]) => void,
  ): Promise<(() => Promise<void>) | null> {
    if (this.channel === null || this.cancelChannel === null || this.closed) return null;
    const channels = new Map<string, (payload: string) => void>([[this.channel, listener]]);
    if (onCancelRequested) {
      // `cancelRequest` sends one notification per job, its id as the payload (a list of ids would
      // outgrow NOTIFY's 8000-byte payload limit). So the work per notification is one id; anything
      // else on the channel (a hand-made NOTIFY) is ignored rather than parsed.
      channels.set(this.cancelChannel, (payload) => {
        if (isUuid(payload)) onCancelRequested([payload]);
      });
    }
    const driver = this.dataSource.driver as unknown as {
      postgres: { Client: new (options: unknown) => Client };
      master: Pool & { options: Record<string, unknown> };
    };
    const subscription = new PgListener({
      channels,
      newClient: () => new driver.postgres.Client({ ...driver.master.options }),
      onReconnected: () => listener(),
      reconnectMs: this.config.notifyReconnectMs,
      logger: this.logger,
      label: this.schemaName,
    });
    await subscription.start();
    this.listeners.add(subscription);
    return async () => {
      if (!this.listeners.delete(subscription)) return;
      await subscription.stop();
    };
  }

  // ---------------------------------------------------------------- producer

  /** @inheritdoc */
  async enqueue(
    validated: Checked<ValidatedJob>,
    options?: EnqueueOptions,
  ): Promise<EnqueueResult> {
    const runner = this.callerTransaction(options);
    const [result] = runner
      ? await this.insertJobs(execOn(runner), [validated])
      : await this.retry('enqueue', () =>
          this.withConnection(false, (exec) => this.insertJobs(exec, [validated])),
        );
    return result;
  }

  /**
   * Inserts in chunks of at most 1,000 rows (and 16 MB of payload),
   * each chunk one statement (atomic by itself). Inside a caller's transaction every chunk runs on
   * its runner and commits with it.
   */
  async enqueueMany(
    validated: readonly Checked<ValidatedJob>[],
    options?: EnqueueOptions,
  ): Promise<EnqueueResult[]> {
    const runner = this.callerTransaction(options);
    const results: EnqueueResult[] = [];
    for (const part of chunkByBytes(validated)) {
      const partResults = runner
        ? await this.insertJobs(execOn(runner), part)
        : await this.retry('enqueueMany', () =>
            this.withConnection(false, (exec) => this.insertJobs(exec, part)),
          );
      results.push(...partResults);
    }
    return results;
  }

  /** The caller's QueryRunner when `options.transaction` is a usable one; throws when it is not. */
  private callerTransaction(options: EnqueueOptions | undefined): QueryRunner | null {
    const tx = options?.transaction;
    if (tx === undefined || tx === null) return null;
    const runner = tx as Partial<QueryRunner>;
    if (
      typeof tx !== 'object' ||
      typeof runner.query !== 'function' ||
      !('isTransactionActive' in runner)
    ) {
      throw new ChokaQTransactionError('it is not a TypeORM QueryRunner');
    }
    if (queryRunnerDataSource(runner) !== this.dataSource) {
      throw new ChokaQTransactionError('the QueryRunner belongs to another DataSource');
    }
    if (runner.isReleased) throw new ChokaQTransactionError('the QueryRunner was released');
    if (!runner.isTransactionActive) {
      throw new ChokaQTransactionError(
        'the QueryRunner has no open transaction (call startTransaction first)',
      );
    }
    return tx as QueryRunner;
  }

  /**
   * Inserts validated jobs and resolves each one to its id: inserted → created; id already stored
   * (any pillar) → that id; active idempotency key held → the holder's id. When a holder vanished
   * between the insert and the lookup (it finished meanwhile), the item is inserted again.
   */
  private async insertJobs(exec: Exec, jobs: readonly ValidatedJob[]): Promise<EnqueueResult[]> {
    const results = new Array<EnqueueResult | undefined>(jobs.length);
    let pending = jobs.map((job, index) => ({ job, index }));
    for (let round = 0; pending.length > 0; round++) {
      if (round >= MAX_HOLDER_ROUNDS) {
        throw new Error(
          `enqueue could not settle idempotency keys after ${MAX_HOLDER_ROUNDS} rounds (holders kept finishing)`,
        );
      }
      const batch = pending.map((p) => p.job);
      const insertedRows = await exec(this.sql.enqueue, [
        batch.map((j) => j.id),
        batch.map((j) => j.queue),
        batch.map((j) => j.type),
        batch.map((j) => j.payload),
        batch.map((j) => j.tags),
        batch.map((j) => j.idempotencyKey),
        batch.map((j) => j.priority),
        batch.map((j) => j.delayMs),
        batch.map((j) => j.runAt),
        batch.map((j) => j.createdBy),
      ]);
      const inserted = new Set(insertedRows.filter((r) => r.id !== null).map((r) => String(r.id)));
      const claimedIds = new Set<string>();
      const rest: typeof pending = [];
      for (const p of pending) {
        // The first item with a given id wins; a repeat of that id in the same call is "not created".
        if (inserted.has(p.job.id) && !claimedIds.has(p.job.id)) {
          claimedIds.add(p.job.id);
          results[p.index] = { id: p.job.id, created: true };
        } else {
          rest.push(p);
        }
      }
      if (rest.length === 0) break;
      const holders = await exec(this.sql.lookupHolders, [
        rest.map((p) => p.job.id),
        rest.map((p) => p.job.idempotencyKey).filter((k): k is string => k !== null),
      ]);
      const ids = new Set(holders.filter((h) => h.kind === 'id').map((h) => String(h.id)));
      const keys = new Map(
        holders
          .filter((h) => h.kind === 'key')
          .map((h) => [String(h.idempotency_key), String(h.id)] as const),
      );
      pending = [];
      for (const p of rest) {
        if (ids.has(p.job.id)) {
          results[p.index] = { id: p.job.id, created: false };
        } else if (p.job.idempotencyKey !== null && keys.has(p.job.idempotencyKey)) {
          results[p.index] = { id: keys.get(p.job.idempotencyKey)!, created: false };
        } else {
          pending.push(p);
        }
      }
    }
    return results as EnqueueResult[];
  }

  // ---------------------------------------------------------------- worker-owned transitions

  /**
   * One short transaction: lock the budgeted queues' rows (serialises claims that spend a budget),
   * then the claim statement with a fresh snapshot. When `budgetedQueues` says no handled queue is
   * budgeted, the claim is one autocommit statement that skips budgeted queues instead (one round
   * trip, not four). A retry after an ambiguous failure first returns whatever an earlier attempt
   * with this lease already committed.
   */
  async fetchNextBatch(request: Checked<FetchRequest & { start: number }>): Promise<HotJob[]> {
    const { workerId, leaseId, limit, handled, start, budgetedQueues } = request;
    const wide = [...new Set(handled.queues)];
    const wideSet = new Set(wide);
    const pairs = handled.types.filter((p) => !wideSet.has(p.queue));
    if (limit === 0 || (wide.length === 0 && pairs.length === 0)) return [];
    const queues = [...new Set([...wide, ...pairs.map((p) => p.queue)])];
    const params = [
      workerId,
      leaseId,
      wide,
      pairs.map((p) => p.queue),
      pairs.map((p) => p.type),
      limit,
      start,
    ];
    // A retry after an ambiguous failure first returns what an earlier attempt with this lease
    // already committed (the caller never saw those rows).
    const claimed = async (exec: Exec, attempt: number) =>
      attempt > 1 ? exec(this.sql.claimedByLease, [workerId, leaseId]) : [];
    const rows =
      budgetedQueues && !queues.some((q) => budgetedQueues.includes(q))
        ? await this.retry('fetchNextBatch', async (attempt) =>
            this.withConnection(false, async (exec) => {
              const already = await claimed(exec, attempt);
              return already.length > 0 ? already : exec(this.sql.claimUnbudgeted, params);
            }),
          )
        : await this.transaction('fetchNextBatch', async (exec, attempt) => {
            const already = await claimed(exec, attempt);
            if (already.length > 0) return already;
            await exec(this.sql.lockBudgets, [queues]);
            return exec(this.sql.claim, params);
          });
    return rows.map(mapHotRow).sort(byPriorityThenDue);
  }

  /** @inheritdoc */
  async markAsProcessing(leases: readonly Checked<JobLease>[]): Promise<string[]> {
    const l = leaseArrays(leases);
    const rows = await this.query('markAsProcessing', this.sql.markAsProcessing, [
      l.ids,
      l.workers,
      l.leases,
    ]);
    return rows.map((r) => String(r.id));
  }

  /** @inheritdoc */
  async keepAlive(
    workerId: string,
    leases: readonly Checked<JobLease>[],
  ): Promise<KeepAliveResult> {
    const l = leaseArrays(leases);
    const rows = await this.query('keepAlive', this.sql.keepAlive, [
      l.ids,
      l.workers,
      l.leases,
      workerId,
    ]);
    return {
      touched: rows.length,
      cancelRequested: rows.filter((r) => r.cancel_requested === true).map((r) => String(r.id)),
    };
  }

  /** @inheritdoc */
  async release(leases: readonly Checked<JobLease>[], delayMs: number | null): Promise<number> {
    const l = leaseArrays(leases);
    const [row] = await this.query('release', this.sql.release, [
      l.ids,
      l.workers,
      l.leases,
      delayMs,
    ]);
    return num(row?.n);
  }

  /** @inheritdoc */
  async reportProgress(lease: Checked<JobLease>, percent: number): Promise<number> {
    const rows = await this.query('reportProgress', this.sql.reportProgress, [
      lease.id,
      lease.workerId,
      lease.leaseId,
      percent,
    ]);
    return rows.length;
  }

  /** @inheritdoc */
  async rescheduleForRetry(
    lease: Checked<JobLease>,
    delayMs: number,
    error: string,
  ): Promise<number> {
    const [row] = await this.query('rescheduleForRetry', this.sql.reschedule, [
      lease.id,
      lease.workerId,
      lease.leaseId,
      delayMs,
      error,
    ]);
    return num(row?.n);
  }

  /** @inheritdoc */
  async archiveSucceeded(completed: readonly Checked<CompletedJob>[]): Promise<RunRef[]> {
    const l = leaseArrays(completed);
    const durations = completed.map((c) => c.durationMs);
    const rows = await this.query('archiveSucceeded', this.sql.archive, [
      l.ids,
      l.workers,
      l.leases,
      durations,
    ]);
    return rows.map((r) => ({ id: String(r.id), leaseId: String(r.lease_id) }));
  }

  /** @inheritdoc */
  async moveToDlq(
    target: Checked<JobLease> | Checked<{ id: string }>,
    move: Checked<CheckedDlqMove>,
  ): Promise<number> {
    const { reason, error, actor, durationMs: duration } = move;
    const status = dlqStatusFor(reason) as 4 | 5 | 6;
    const cancelled = reason === FailureReason.Cancelled;
    const shape: SQL.DlqMoveShape = {
      status,
      outcome: cancelled ? Outcome.Cancelled : Outcome.Failed,
      counter: cancelled ? 'cancelled_total' : 'failed_total',
    };
    const owned = isLeaseTarget(target);
    let params: unknown[];
    if (owned) {
      params = [target.id, target.workerId, target.leaseId, reason, error, actor, duration];
    } else {
      params = [target.id, reason, error, actor, duration];
    }
    const rows = await this.query('moveToDlq', SQL.moveToDlq(this.s, shape, owned), params);
    return rows.length;
  }

  /**
   * One transaction of two statements: move Pending/Fetched rows to the DLQ, then flag Processing
   * rows. The second statement takes a new snapshot, so a row that became Processing while the
   * first ran is flagged rather than missed.
   */
  async cancel(
    unique: readonly string[],
    who: string | null,
    error: string,
  ): Promise<CancelResult> {
    const result: CancelResult = { cancelled: [], cancelRequested: [] };
    for (const part of chunk(unique, ID_CHUNK)) {
      const [moved, requested] = await this.transaction('cancel', async (exec) => [
        await exec(this.sql.cancelMove, [part, error, who]),
        await exec(this.sql.cancelRequest, [part, who]),
      ]);
      result.cancelled.push(...moved.map((r) => String(r.id)));
      result.cancelRequested.push(...requested.map((r) => String(r.id)));
    }
    return result;
  }

  // ---------------------------------------------------------------- DLQ → hot

  /** @inheritdoc */
  async resurrect(
    jobId: string,
    e: Checked<ValidatedEdits>,
    actor: string | null,
  ): Promise<number> {
    const rows = await this.query('resurrect', SQL.resurrect(this.s, SQL.CHOOSE_DLQ_BY_IDS), [
      e.payload,
      e.tags !== undefined,
      e.tags ?? null,
      e.priority,
      actor,
      [jobId],
    ]);
    return rows.length;
  }

  /** @inheritdoc */
  async resurrectMany(unique: readonly string[], who: string | null): Promise<string[]> {
    const moved: string[] = [];
    const sql = SQL.resurrect(this.s, SQL.CHOOSE_DLQ_BY_IDS);
    for (const part of chunk(unique, ID_CHUNK)) {
      const rows = await this.query('resurrectMany', sql, [null, false, null, null, who, part]);
      moved.push(...rows.map((r) => String(r.id)));
    }
    return moved;
  }

  /** Bounded batches (oldest failure first, skipping rows other bulk actions hold), each its own statement. */
  async resurrectByFilter(
    f: Checked<DlqFilter>,
    max: number,
    who: string | null,
  ): Promise<string[]> {
    const moved: string[] = [];
    while (moved.length < max) {
      const batch = Math.min(ID_CHUNK, max - moved.length);
      const params: unknown[] = [null, false, null, null, who];
      const where = SQL.filterClause('dlq', f, params, 'f');
      params.push(batch);
      const selection = SQL.chooseDlqByFilter(this.s, where, `$${params.length}`);
      const rows = await this.query('resurrectByFilter', SQL.resurrect(this.s, selection), params);
      moved.push(...rows.map((r) => String(r.id)));
      if (rows.length < batch) break;
    }
    return moved;
  }

  // ---------------------------------------------------------------- rescue

  /** @inheritdoc */
  async recoverAbandoned(fetchedTimeoutMs: number, limit: number): Promise<number> {
    const rows = await this.query('recoverAbandoned', this.sql.recoverAbandoned, [
      fetchedTimeoutMs,
      limit,
    ]);
    return rows.length;
  }

  /** @inheritdoc */
  async archiveZombies(sweep: Checked<ZombieSweep>): Promise<ZombieRescueResult> {
    const { rules } = sweep;
    const rows = await this.query('archiveZombies', this.sql.archiveZombies, [
      sweep.defaultTimeoutMs,
      sweep.limit,
      sweep.error,
      rules.map((r) => r.queue),
      rules.map((r) => r.type),
      rules.map((r) => r.retry),
    ]);
    return {
      dlq: rows.filter((r) => r.kind === 'dlq').map((r) => String(r.id)),
      retried: rows.filter((r) => r.kind === 'retried').map((r) => String(r.id)),
    };
  }

  // ---------------------------------------------------------------- queues

  /** @inheritdoc */
  async getQueues(): Promise<QueueInfo[]> {
    return (await this.query('getQueues', SQL.selectQueues(this.s))).map(mapQueueRow);
  }

  /** @inheritdoc */
  async updateQueue(name: string, p: Checked<QueuePatch>): Promise<QueueInfo> {
    const has = (key: keyof QueuePatch): boolean => p[key] !== undefined;
    const [row] = await this.query('updateQueue', SQL.upsertQueue(this.s), [
      name,
      p.isPaused ?? null,
      p.isActive ?? null,
      p.retryZombies ?? null,
      has('maxWorkers'),
      p.maxWorkers ?? null,
      has('zombieTimeoutSeconds'),
      p.zombieTimeoutSeconds ?? null,
      has('executionTimeoutMs'),
      p.executionTimeoutMs ?? null,
    ]);
    return mapQueueRow(row);
  }

  // ---------------------------------------------------------------- purge and retention

  /** @inheritdoc */
  async purgeDlq(ids: readonly string[]): Promise<number> {
    let deleted = 0;
    for (const part of chunk(ids, ID_CHUNK)) {
      deleted += (await this.query('purgeDlq', SQL.purgeDlqByIds(this.s), [part])).length;
    }
    return deleted;
  }

  /** @inheritdoc */
  async purgeDlqByFilter(f: Checked<DlqFilter>, max: number): Promise<number> {
    let deleted = 0;
    while (deleted < max) {
      const batch = Math.min(ID_CHUNK, max - deleted);
      const params: unknown[] = [];
      const where = SQL.filterClause('dlq', f, params, 'f');
      params.push(batch);
      const selection = SQL.chooseDlqByFilter(this.s, where, `$${params.length}`);
      const rows = await this.query(
        'purgeDlqByFilter',
        SQL.purgeDlqChosen(this.s, selection),
        params,
      );
      deleted += rows.length;
      if (rows.length < batch) break;
    }
    return deleted;
  }

  /** Each pillar in batches of `batchSize`, each batch its own statement (= short transaction). */
  async applyRetention(policy: Checked<Required<RetentionPolicy>>): Promise<RetentionResult> {
    const batch = policy.batchSize;
    const drain = async (name: string, sql: string, ageMs: number): Promise<number> => {
      let total = 0;
      for (;;) {
        const n = (await this.query(name, sql, [ageMs, batch])).length;
        total += n;
        if (n < batch) return total;
      }
    };
    return {
      archive: await drain('retention.archive', SQL.retainArchive(this.s), policy.archiveMs),
      dlq: await drain('retention.dlq', SQL.retainDlq(this.s), policy.dlqMs),
      metricBuckets: await drain('retention.buckets', SQL.retainBuckets(this.s), policy.metricsMs),
    };
  }

  // ---------------------------------------------------------------- reads

  /**
   * Hot first, then archive, then DLQ: three primary-key reads on one pooled connection, not one
   * snapshot. Forward moves (hot → archive/DLQ) between the reads are still found; a resurrect
   * (DLQ → hot) landing exactly between the first and the last read can make one call miss the job.
   */
  async getJob(id: string): Promise<JobView | null> {
    const lookups = [
      ['hot', SQL.selectHotById(this.s)],
      ['archive', SQL.selectArchiveById(this.s)],
      ['dlq', SQL.selectDlqById(this.s)],
    ] as const;
    for (const [pillar, sql] of lookups) {
      const [row] = await this.query('getJob', sql, [id]);
      if (row) return mapJobView(row, pillar);
    }
    return null;
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
    pillar: 'hot' | 'archive' | 'dlq',
    n: NormalizedPage<F>,
  ): Promise<Page<JobView>> {
    const params: unknown[] = [];
    const where = SQL.filterClause(pillar, n.filter as ActiveFilter & DlqFilter, params, 'x');
    const pageParams = [...params, n.pageSize, n.offset];
    const [rows, [count]] = await Promise.all([
      this.query(
        'page',
        SQL.selectPage(
          this.s,
          pillar,
          where,
          n.sortColumn,
          n.sortDir,
          `$${params.length + 1}`,
          `$${params.length + 2}`,
        ),
        pageParams,
      ),
      this.query('page.count', SQL.countPage(this.s, pillar, where), params),
    ]);
    return {
      items: rows.map((r) => mapJobView(r, pillar)),
      total: num(count?.total),
      page: n.page,
      pageSize: n.pageSize,
    };
  }

  /** @inheritdoc */
  async getSummary(): Promise<SummaryStats> {
    const [r] = await this.query('getSummary', SQL.selectSummary(this.s));
    return {
      succeededTotal: num(r.succeeded_total),
      failedTotal: num(r.failed_total),
      cancelledTotal: num(r.cancelled_total),
      retriedTotal: num(r.retried_total),
      resurrectedTotal: num(r.resurrected_total),
      pending: num(r.pending),
      fetched: num(r.fetched),
      processing: num(r.processing),
      archived: num(r.archived),
      dlq: num(r.dlq),
    };
  }

  /** @inheritdoc */
  async getQueueStats(): Promise<QueueStats[]> {
    const rows = await this.query('getQueueStats', SQL.selectQueueStats(this.s));
    return rows.map((r) => ({
      queue: String(r.queue),
      pending: num(r.pending),
      fetched: num(r.fetched),
      processing: num(r.processing),
      archived: num(r.archived),
      dlq: num(r.dlq),
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
    const rows = await this.query('getQueueHealth', SQL.selectQueueHealth(this.s));
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
      };
    });
  }

  /** @inheritdoc */
  async getThroughput(queue?: string): Promise<ThroughputStats> {
    const [r] = await this.query('getThroughput', SQL.selectThroughput(this.s), [queue ?? null]);
    return {
      perSecond1m: num(r.total_1m) / 60,
      perSecond5m: num(r.total_5m) / 300,
      succeeded1m: num(r.succeeded_1m),
      failed1m: num(r.failed_1m),
      succeeded5m: num(r.succeeded_5m),
      failed5m: num(r.failed_5m),
    };
  }

  /** Groups at most the newest 10,000 matching DLQ rows (a bounded read). */
  async getTopDlqErrors(limit: number, f: Checked<DlqFilter>): Promise<DlqErrorFamily[]> {
    const params: unknown[] = [];
    const where = SQL.filterClause('dlq', f, params, 'x');
    params.push(limit);
    const rows = await this.query(
      'getTopDlqErrors',
      SQL.selectTopDlqErrors(this.s, where, `$${params.length}`),
      params,
    );
    return rows.map((r) => ({
      error: String(r.error),
      count: num(r.count),
      lastFailedAtUtc: toDate(r.last_failed_at_utc)!,
    }));
  }

  /** Matched count, `min(matched, max)`, and up to 20 sample ids in the order bulk actions take them. */
  async previewDlqFilter(f: Checked<DlqFilter>, max: number): Promise<BulkPreview> {
    const params: unknown[] = [];
    const where = SQL.filterClause('dlq', f, params, 'x');
    const [[count], sample] = await Promise.all([
      this.query('previewDlqFilter', SQL.countPage(this.s, 'dlq', where), params),
      this.query('previewDlqFilter', SQL.selectDlqSample(this.s, where, `$${params.length + 1}`), [
        ...params,
        Math.min(PREVIEW_SAMPLE, max),
      ]),
    ]);
    const matched = num(count?.total);
    return {
      matched,
      willAffect: Math.min(matched, max),
      sampleIds: sample.map((r) => String(r.id)),
    };
  }

  // ---------------------------------------------------------------- recurring jobs

  /** @inheritdoc */
  async upsertRecurringJob(d: Checked<CheckedRecurringDefinition>): Promise<void> {
    await this.query('upsertRecurringJob', SQL.upsertRecurring(this.s), [
      d.name,
      d.cron,
      d.timeZone,
      d.queue,
      d.type,
      d.payload,
      d.misfirePolicy,
      d.nextSlotUtc,
    ]);
  }

  /** @inheritdoc */
  async getRecurringJobs(): Promise<RecurringJobRecord[]> {
    const rows = await this.query('getRecurringJobs', SQL.selectRecurring(this.s));
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
      isPaused: r.is_paused === true,
    }));
  }

  /**
   * CAS on `next_slot_utc` and the slot's enqueue in ONE transaction: either both happen or
   * neither. Null when the CAS lost (another process took the slot). With `job` null (a slot that
   * is skipped, e.g. misfire `none`) the slot still advances and the result is null too (nothing was
   * enqueued), as on SQLite.
   */
  async claimRecurringSlot(
    name: string,
    slotUtc: Date,
    nextSlotUtc: Date,
    validated: Checked<ValidatedJob> | null,
  ): Promise<EnqueueResult | null> {
    return this.transaction('claimRecurringSlot', async (exec) => {
      const won = await exec(SQL.casRecurringSlot(this.s), [name, slotUtc, nextSlotUtc]);
      if (won.length === 0) return null;
      if (validated === null) return null;
      const [result] = await this.insertJobs(exec, [validated]);
      return result;
    });
  }
}

// -------------------------------------------------------------------------------- helpers

/**
 * Runs statements on one QueryRunner and returns their rows. A text `prepared` knows runs as a
 * named prepared statement on the runner's `pg` client (parsed and planned once per connection;
 * `pg` remembers which names each connection has prepared); any other text goes through TypeORM's
 * `query(sql, params, true)`. A stale plan (DDL changed the statement's row shape) moves the
 * names on, calls `onInvalidated` once, and fails as a transient error, so the operation is
 * retried from scratch under the new names.
 */
function execOn(
  runner: QueryRunner,
  prepared?: PreparedStatements,
  onInvalidated?: () => void,
): Exec {
  return async (sql, params = []) => {
    const prepare = prepared?.nameOf(sql);
    if (prepare !== undefined) {
      const client = (await runner.connect()) as Client;
      try {
        const result = await client.query({ name: prepare.name, text: sql, values: [...params] });
        return result.rows as Row[];
      } catch (error) {
        if (isStalePlanError(error) && prepared!.invalidate(prepare.generation)) onInvalidated?.();
        throw error;
      }
    }
    const result = await runner.query(sql, [...params], true);
    return (result?.records ?? []) as Row[];
  };
}

/** Splits validated jobs into insert chunks bounded by rows and payload bytes. */
function chunkByBytes(jobs: readonly ValidatedJob[]): ValidatedJob[][] {
  const out: ValidatedJob[][] = [];
  let current: ValidatedJob[] = [];
  let bytes = 0;
  for (const job of jobs) {
    const size = Buffer.byteLength(job.payload, 'utf8');
    if (
      current.length > 0 &&
      (current.length >= ENQUEUE_CHUNK_ROWS || bytes + size > ENQUEUE_CHUNK_BYTES)
    ) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(job);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** Claimed rows in claim order: priority desc, then due time. */
function byPriorityThenDue(a: HotJob, b: HotJob): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  const due = (j: HotJob): number => (j.scheduledAtUtc ?? j.enqueuedAtUtc).getTime();
  return due(a) - due(b) || a.id.localeCompare(b.id);
}

/** Validates leases (shared rules; exact duplicates collapse to the first) as parallel arrays. */
function leaseArrays(valid: readonly Checked<JobLease>[]): {
  ids: string[];
  workers: string[];
  leases: string[];
} {
  return {
    ids: valid.map((l) => l.id),
    workers: valid.map((l) => l.workerId),
    leases: valid.map((l) => l.leaseId),
  };
}
