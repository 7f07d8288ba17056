import { isUuid } from '../../common/uuid';
import { logEvent } from '../../common/log-events';
import {
  ChokaQDependencyNotFoundError,
  ChokaQTransactionalHandlerError,
  ChokaQUnsupportedServerError,
} from '../../errors';
import type { Checked } from '../../interfaces/checked.interface';
import {
  ClaimedJobs,
  CompletedJob,
  RunRef,
  EnqueueOptions,
  EnqueueResult,
  FetchRequest,
  JobLease,
  KeepAliveResult,
  ZombieRescueResult,
  DependencyCheckResult,
} from '../../interfaces/job.interface';
import { FailureReason } from '../../interfaces/job-status.enum';
import { DEPENDENCY_CHECK_BATCH } from '../../validation/limits';
import type { SchemaStatus } from '../../interfaces/schema-status.interface';
import {
  CheckedDlqMove,
  CheckedWorkerHeartbeat,
  isLeaseTarget,
} from '../../validation/validate-args';
import { ValidatedBatch, ValidatedJob } from '../../validation/validate-job';
import type { BatchEnqueued } from '../../interfaces/batch.interface';
import { batchEnqueued } from '../shared/batches';
import {
  DependencyPillar,
  EdgeState,
  checkRounds,
  createdWaiting,
  dependentsToCancel,
  findDependencies,
  planDependencies,
  takenEdges,
} from '../shared/dependencies';
import { Audit, DialectJobStore, ZombieSweep } from '../dialect-job-storage';
import type { HandlerTransactionSupport } from '../job-storage';
import { OWN_DATA_SOURCE_REASON, SqlHandlerTransaction } from '../shared/handler-transaction';
import { rateStateOf, shortestRateWait } from '../shared/rate-window';
import { hasResults } from '../shared/stored-results';
import { claimOrder } from '../shared/claim-order';
import { claimTurns, groupVisits, takeTurns } from '../shared/groups';
import { enqueueManyKeyed, enqueueWithKey, mapDedupeHolder } from '../shared/dedupe';
import { mapClaimedRow, mapHotRow, toDate } from '../shared/row-mapper';
import { Exec, num, PostgresConnection, Row } from './postgres.connection';
import {
  bootstrapStatements,
  byteWiseJobIds,
  JOB_ID_COLUMNS,
  pendingPostgresMigrations,
  POSTGRES_SCHEMA_VERSION,
  postgresSchemaScript,
} from './postgres.schema';
import { PostgresAdminStore } from './postgres-admin-store';
import * as SQL from './sql';

/** Rows per multi-row insert statement of `enqueueMany`. */
const ENQUEUE_CHUNK_ROWS = 1_000;
/** Payload bytes per insert statement of `enqueueMany` (keeps one bind message far below 1 GB). */
const ENQUEUE_CHUNK_BYTES = 16 * 1024 * 1024;
/** How often an enqueue retries when the holder of its idempotency key vanished mid-call. */
const MAX_HOLDER_ROUNDS = 5;
/** Oldest server this dialect supports (`hashtextextended`, LATERAL + SKIP LOCKED, MATERIALIZED CTEs). */
const MIN_SERVER_VERSION = 120_000;

/** How long a short claim's rate-limited queues hold it back, from their rate state (`fetchNextBatchRateState`). */
const rateLimitWaitOf = (states: readonly Row[]): number | undefined =>
  shortestRateWait(states.map(rateStateOf), num(states[0]?.now_ms));

/**
 * The write half of the PostgreSQL dialect (`JobStore`), and its lifecycle: all of ChokaQ's
 * coordination through row locks, `FOR UPDATE SKIP LOCKED` claims and single-statement atomic
 * moves. The SQL lives in `sql/` (each statement names the lock and isolation it relies
 * on), the DDL in `postgres.schema.ts`, the connection, transactions and transient retry in
 * `postgres.connection.ts`; the reads are {@link PostgresJobQueries}'s, on the same connection.
 * The operator's writes (cancel, DLQ → hot, queue controls, purges, retention, recurring definitions) are
 * {@link PostgresAdminStore}'s, which this class extends: one dialect object, two readable files.
 *
 * `subscribe` uses its own `pg.Client` (LISTEN holds a session, so it must not sit on a pool slot).
 */
export class PostgresJobStore extends PostgresAdminStore implements DialectJobStore {
  readonly dialect = 'postgres' as const;
  /** The claim reads the rate state of a short claim's limited queues: see `fetchNextBatch`. */
  readonly reportsRateLimitWait = true;
  /** A claim with `ahead` takes the fast path, which skips budgeted and rate-limited queues. */
  readonly startsAhead = true;

  private readonly logger: PostgresConnection['logger'];
  private readonly schemaName: string;
  /** Whether the next claim that covers grouped queues claims them before the others. */
  private groupsFirst = false;
  /**
   * The queues the last claims found grouped (step 1's `grouped`), each with whether its next claim
   * alone may try the one-statement claim: false after that claim found itself overtaken, so under
   * contention every other claim goes straight to the transaction.
   */
  private readonly groupedAlone = new Map<string, boolean>();

  constructor(db: PostgresConnection) {
    super(db);
    this.logger = db.logger;
    this.schemaName = db.schemaName;
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Checks the connection and refuses a server older than PostgreSQL 12
   * ({@link ChokaQUnsupportedServerError}, the policy of every server dialect): there the claim
   * and the moves would fail at run time, on every poll.
   */
  async prepare(): Promise<void> {
    const [row] = await this.db.query('prepare', SQL.SELECT_SERVER_VERSION);
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
    await this.migrate();
    // After the versions: `storage.partitioning` converts the plain Archive and DLQ (once) and
    // makes the partitions ahead (docs/storage.md, "A partitioned Archive").
    const partitioning = this.db.config.partitioning;
    if (partitioning !== null) await this.partitions.ensure(partitioning.period);
  }

  /** The versioned migrations of {@link ensureSchema}. */
  private async migrate(): Promise<void> {
    if ((await this.appliedVersions('ensureSchema')).includes(POSTGRES_SCHEMA_VERSION)) return;
    const { from, applied } = await this.db.transaction('ensureSchema', async (exec) => {
      await exec(SQL.LOCK_SCHEMA, SQL.lockSchemaParams(this.schemaName));
      for (const statement of bootstrapStatements(this.s)) await exec(statement);
      const done = (await exec(SQL.selectAppliedVersions(this.s))).map((r) => num(r.version));
      const now: number[] = [];
      for (const migration of pendingPostgresMigrations(done)) {
        for (const statement of migration.statements(this.s)) await exec(statement);
        const record = SQL.recordMigrationParams(migration.version, migration.description);
        await exec(SQL.recordMigration(this.s), record);
        now.push(migration.version);
      }
      return { from: Math.max(0, ...done), applied: now };
    });
    // Logged after the commit (a rolled-back migration applied nothing), once for the whole
    // migration; another process that got the lock first leaves nothing to apply and to log.
    if (applied.length > 0) {
      const to = applied[applied.length - 1];
      logEvent(
        this.logger,
        'SchemaMigrated',
        `Schema "${this.schemaName}" migrated from version ${from} to ${to} ` +
          `(applied ${applied.join(', ')})`,
        { dialect: 'postgres', schema: this.schemaName, fromVersion: from, toVersion: to, applied },
      );
    }
  }

  /**
   * PostgreSQL's `chokaq migrate --binary-keys`: gives the job-id columns ({@link JOB_ID_COLUMNS})
   * of an install that already held jobs at schema version 23 the byte-wise collation a new install
   * has (`COLLATE "C"`), all of them in one transaction under the schema's advisory lock, so one
   * install's job-id columns never have two collations. Equality does not change (it is byte
   * equality under every deterministic collation); each comparison becomes a `memcmp` instead of the
   * locale's collation function. Migrates first, so every table it names exists. Each `ALTER`
   * rewrites its table and indexes under an ACCESS EXCLUSIVE lock: run it with the workers stopped.
   * False, changing nothing, when every column is "C" already.
   * @inheritdoc
   */
  async convertKeysToBinary(): Promise<boolean> {
    await this.migrate();
    return this.db.transaction('convertKeysToBinary', async (exec) => {
      await exec(SQL.LOCK_SCHEMA, SQL.lockSchemaParams(this.schemaName));
      const columns = await exec(
        SQL.SELECT_JOB_ID_COLUMNS_NOT_BYTE_WISE,
        SQL.selectJobIdColumnsNotByteWiseParams(this.schemaName, JOB_ID_COLUMNS),
      );
      for (const c of columns) {
        await exec(byteWiseJobIds(this.s, String(c.table_name), String(c.column_name)));
      }
      return columns.length > 0;
    });
  }

  /**
   * Reads the ledger outside any transaction and lock: the versions {@link ensureSchema} would
   * apply now are those {@link pendingPostgresMigrations} finds missing, the same function it
   * applies them by.
   */
  async schemaStatus(): Promise<SchemaStatus> {
    const applied = await this.appliedVersions('schemaStatus');
    const pending = pendingPostgresMigrations(applied);
    return {
      dialect: 'postgres',
      schema: this.schemaName,
      currentVersion: Math.max(0, ...applied),
      latestVersion: POSTGRES_SCHEMA_VERSION,
      pending: pending.map(({ version, description }) => ({ version, description })),
      script:
        pending.length === 0 ? '' : `${postgresSchemaScript(this.s, this.schemaName, pending)}\n`,
    };
  }

  /**
   * The versions the ledger records (none while it does not exist), as two autocommit reads named
   * after the `operation` they serve: the name is what a transient failure reports
   * (`ChokaQStorageUnavailableError.operation`), and a health check shows it.
   */
  private async appliedVersions(operation: 'ensureSchema' | 'schemaStatus'): Promise<number[]> {
    const ledgerParams = SQL.selectTableExistsParams(this.s, 'schema_migrations');
    const [ledger] = await this.db.query(operation, SQL.SELECT_TABLE_EXISTS, ledgerParams);
    if (ledger?.exists !== true) return [];
    return (await this.db.query(operation, SQL.selectAppliedVersions(this.s))).map((r) =>
      num(r.version),
    );
  }

  /** Ends every LISTEN client, then destroys the DataSource if ChokaQ created it. Idempotent. */
  async close(): Promise<void> {
    await this.db.close();
  }

  /** The database clock. */
  async now(): Promise<Date> {
    const [row] = await this.db.query('now', SQL.SELECT_NOW);
    return toDate(row.now)!;
  }

  /**
   * LISTENs on the schema's channel, and with `onCancelRequested` on its cancel channel too, in one
   * session on a dedicated `pg.Client` (same connection options as the pool), so the session that
   * holds the LISTEN never occupies a pool slot. A lost session is re-established with backoff on
   * both channels (`PgListener`), and `listener` is then called once with no queue, since
   * notifications sent meanwhile are gone; cancellations missed meanwhile reach their owner through
   * its next `keepAlive`. Returns an unsubscribe function that UNLISTENs and ends the client;
   * `close()` ends any left. Null with `notify: false` (PgBouncer transaction pooling cannot carry
   * LISTEN). Rejects if the first connection fails.
   */
  async subscribe(
    listener: (queue?: string) => void,
    onCancelRequested?: (ids: string[]) => void,
  ): Promise<(() => Promise<void>) | null> {
    if (this.channel === null || this.cancelChannel === null || this.db.closed) return null;
    const channels = new Map<string, (payload: string) => void>([[this.channel, listener]]);
    if (onCancelRequested) {
      // `cancelRequest` sends one notification per job, its id as the payload (a list of ids would
      // outgrow NOTIFY's 8000-byte payload limit). So the work per notification is one id; anything
      // else on the channel (a hand-made NOTIFY) is ignored rather than parsed.
      channels.set(this.cancelChannel, (payload) => {
        if (isUuid(payload)) onCancelRequested([payload]);
      });
    }
    return this.db.listen(channels, () => listener());
  }

  // ---------------------------------------------------------------- producer

  /** @inheritdoc */
  async enqueue(
    validated: Checked<ValidatedJob>,
    options?: EnqueueOptions,
  ): Promise<EnqueueResult> {
    if (validated.dependsOn !== null) return (await this.enqueueWaiting([validated], options))[0];
    const caller = await this.db.callerExec(options?.transaction);
    if (validated.dedupe !== null) return this.enqueueKeyed(caller, validated);
    const [result] = caller
      ? await this.insertJobs(caller, [validated])
      : await this.insertRetried('enqueue', [validated]);
    return result;
  }

  /**
   * An enqueue with a dedupe key: its steps (`shared/dedupe.ts`) in the caller's transaction, or in
   * one of its own, retried from scratch on a transient failure.
   */
  private enqueueKeyed(caller: Exec | null, job: ValidatedJob): Promise<EnqueueResult> {
    const run = (exec: Exec) =>
      enqueueWithKey(job, {
        take: async (j) => (await exec(this.sql.dedupeTake, SQL.dedupeTakeParams(j))).length > 0,
        holder: async (j) => {
          const [row] = await exec(this.sql.dedupeHolder, SQL.dedupeHolderParams(j));
          return row ? mapDedupeHolder(row) : null;
        },
        replace: async (holder, j) =>
          (await exec(this.sql.dedupeReplace, SQL.dedupeReplaceParams(holder, j))).length > 0,
        insert: async (j) => (await this.insertJobs(exec, [j]))[0],
        move: async (j) => void (await exec(this.sql.dedupeMove, SQL.dedupeTakeParams(j))),
      });
    return caller ? run(caller) : this.db.transaction('enqueue', run);
  }

  /**
   * Inserts in chunks of at most 1,000 rows (and 16 MB of payload),
   * each chunk one statement (atomic by itself); then each job with a dedupe key, in key order, as
   * `enqueue` would, each in its own transaction. Inside a caller's transaction every chunk and
   * keyed job runs on its runner and commits with it.
   */
  async enqueueMany(
    validated: readonly Checked<ValidatedJob>[],
    options?: EnqueueOptions,
  ): Promise<EnqueueResult[]> {
    if (validated.some((j) => j.dependsOn !== null)) return this.enqueueWaiting(validated, options);
    const caller = await this.db.callerExec(options?.transaction);
    const insertPlain = async (plain: readonly ValidatedJob[]) => {
      const results: EnqueueResult[] = [];
      for (const part of chunkByBytes(plain)) {
        const partResults = caller
          ? await this.insertJobs(caller, part)
          : await this.insertRetried('enqueueMany', part);
        results.push(...partResults);
      }
      return results;
    };
    return enqueueManyKeyed(validated, insertPlain, (job) => this.enqueueKeyed(caller, job));
  }

  /**
   * The batch record with its callbacks, then its jobs in chunks as `enqueueMany` inserts them, all
   * in one transaction: the caller's, or one of its own retried from scratch on a transient
   * failure. The jobs are new (no id or key was allowed), so every one is inserted.
   */
  async enqueueBatch(
    batch: Checked<ValidatedBatch>,
    options?: EnqueueOptions,
  ): Promise<BatchEnqueued> {
    const caller = await this.db.callerExec(options?.transaction);
    const run = async (exec: Exec) => {
      await exec(SQL.insertBatch(this.s), SQL.insertBatchParams(batch));
      for (const part of chunkByBytes(batch.jobs)) await this.insertJobs(exec, part);
    };
    await (caller ? run(caller) : this.db.transaction('enqueueBatch', run));
    return batchEnqueued(batch);
  }

  /**
   * Jobs of which some wait on others (`dependsOn`; they may wait on each other), all in one
   * transaction, the caller's or one of its own retried from scratch: the jobs (those that wait
   * inserted Waiting; a job with a dedupe key as `enqueue` inserts it), then where each
   * dependency is (marking it as waited on, and locking it until commit), then the edges and
   * counts of the jobs this call created ({@link planDependencies}). A dependency in no table
   * fails the call (`ChokaQDependencyNotFoundError`) and rolls it all back. Once its own
   * transaction committed, the dependency check runs when an edge needs it: a dependency found
   * failed under `cancel`, or one found hot whose move may have started before the commit.
   * Inside a caller's transaction the rescue loop's next check does that instead.
   */
  private async enqueueWaiting(
    jobs: readonly ValidatedJob[],
    options?: EnqueueOptions,
  ): Promise<EnqueueResult[]> {
    const caller = await this.db.callerExec(options?.transaction);
    let check = false;
    const run = async (exec: Exec): Promise<EnqueueResult[]> => {
      const results = new Array<EnqueueResult>(jobs.length);
      const groups = [
        { text: this.sql.enqueue, pick: (j: ValidatedJob) => j.dependsOn === null },
        { text: this.sql.enqueueWaiting, pick: (j: ValidatedJob) => j.dependsOn !== null },
      ];
      for (const { text, pick } of groups) {
        const at = jobs.flatMap((j, i) => (pick(j) && j.dedupe === null ? [i] : []));
        let done = 0;
        for (const part of chunkByBytes(at.map((i) => jobs[i]))) {
          const partResults = await this.insertJobs(exec, part, text);
          partResults.forEach((r, k) => (results[at[done + k]] = r));
          done += part.length;
        }
      }
      for (const [i, job] of jobs.entries()) {
        if (job.dedupe !== null) results[i] = await this.enqueueKeyed(exec, job);
      }
      const { made, waiting } = createdWaiting(jobs, results);
      if (waiting.length > 0) {
        const where = await findDependencies(waiting, async (ids) =>
          (await exec(SQL.locateDependencies(this.s), SQL.locateDependenciesParams(ids))).map(
            (row) => [String(row.id), String(row.pillar) as DependencyPillar] as const,
          ),
        );
        const plan = planDependencies(waiting, where, made, true);
        if (plan.missing.length > 0) throw new ChokaQDependencyNotFoundError(plan.missing);
        await exec(SQL.insertDependencies(this.s), SQL.insertDependenciesParams(plan));
        check = plan.needsCheck;
      }
      return results;
    };
    if (caller) return run(caller);
    const results = await this.db.transaction('enqueue', run);
    if (check) await this.checkDependencies(DEPENDENCY_CHECK_BATCH);
    return results;
  }

  /**
   * {@link insertJobs} on a connection of ChokaQ's own, retried from scratch on a transient failure.
   * Each attempt tells the statement how long ago the first began, plus
   * `SQL.ENQUEUE_PROBE_MARGIN_MS`: a job whose id the library made can be in the Archive or the DLQ
   * only if an earlier attempt stored it, so only rows finished since then are probed for it
   * (`SQL.enqueue`), which on a partitioned Archive and DLQ prunes all but their newest partitions.
   */
  private insertRetried(name: string, jobs: readonly ValidatedJob[]): Promise<EnqueueResult[]> {
    const began = performance.now();
    return this.db.retry(name, () =>
      this.db.withConnection(false, (exec) =>
        this.insertJobs(
          exec,
          jobs,
          this.sql.enqueue,
          performance.now() - began + SQL.ENQUEUE_PROBE_MARGIN_MS,
        ),
      ),
    );
  }

  /**
   * Inserts validated jobs and resolves each one to its id: inserted → created; id already stored
   * (any pillar) → that id; active idempotency key held → the holder's id. When a holder vanished
   * between the insert and the lookup (it finished meanwhile), the item is inserted again.
   * `probeBackMs`: see {@link insertRetried} (null: the probes read every partition).
   */
  private async insertJobs(
    exec: Exec,
    jobs: readonly ValidatedJob[],
    text = this.sql.enqueue,
    probeBackMs: number | null = null,
  ): Promise<EnqueueResult[]> {
    const results = new Array<EnqueueResult | undefined>(jobs.length);
    let pending = jobs.map((job, index) => ({ job, index }));
    for (let round = 0; pending.length > 0; round++) {
      if (round >= MAX_HOLDER_ROUNDS) {
        throw new Error(
          `enqueue could not settle idempotency keys after ${MAX_HOLDER_ROUNDS} rounds (holders kept finishing)`,
        );
      }
      const batch = pending.map((p) => p.job);
      const insertedRows = await exec(text, SQL.enqueueParams(batch, probeBackMs));
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
      const holders = await exec(
        this.sql.enqueueHolders,
        SQL.enqueueHoldersParams(rest.map((p) => p.job)),
      );
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
   * One short transaction: lock the budgeted and rate-limited queues' rows (serialises claims that
   * spend a budget or a rate), then the claim statement with a fresh snapshot; when it took fewer
   * rows than asked and a locked queue is rate limited, a third read tells the caller how long that
   * queue is held back (`rateLimitWaitMs`). When `budgetedQueues` says no handled queue is budgeted
   * or limited, the claim is one autocommit statement that skips such queues instead (one round
   * trip, not four); so is the claim of one grouped queue, when it checks that no claim committed
   * between its snapshot and its lock ({@link claimGroupedAlone}). A retry after an ambiguous
   * failure first returns whatever an earlier attempt with this lease already committed.
   */
  async fetchNextBatch(request: Checked<FetchRequest & { start: number }>): Promise<ClaimedJobs> {
    const { workerId, leaseId, limit, handled, budgetedQueues, ahead } = request;
    const queues = SQL.claimedQueues(handled);
    const params = SQL.fetchNextBatchParams(request);
    // A retry after an ambiguous failure first returns what an earlier attempt with this lease
    // already committed (the caller never saw those rows).
    const claimedBefore = SQL.fetchNextBatchClaimedParams(workerId, leaseId);
    const claimed = async (exec: Exec, attempt: number) =>
      attempt > 1 ? exec(this.sql.fetchNextBatchClaimed, claimedBefore) : [];
    let waitMs: number | undefined;
    let coveredGroups = false;
    // A claim ahead always takes the fast path: it skips every queue with a budget or a rate
    // limit at that moment, so rows waiting for a slot never hold a budget or spend a rate.
    const unbudgeted =
      ahead === true || (budgetedQueues && !queues.some((q) => budgetedQueues.includes(q)));
    const alone = unbudgeted ? undefined : await this.claimGroupedAlone(request, queues, claimed);
    if (alone !== undefined) {
      this.groupsFirst = !this.groupsFirst;
      return alone;
    }
    const rows = unbudgeted
      ? await this.claimInAutocommit(this.sql.fetchNextBatchUnbudgeted, params, claimed)
      : await this.db.transaction('fetchNextBatch', async (exec, attempt) => {
          waitMs = undefined;
          const already = await claimed(exec, attempt);
          if (already.length > 0) return already;
          const locked = await exec(
            this.sql.fetchNextBatchLockBudgets,
            SQL.fetchNextBatchLockBudgetsParams(queues),
          );
          const lockedNames = locked.map((r) => String(r.name));
          const grouped = locked.filter((r) => r.grouped === true).map((r) => String(r.name));
          for (const q of queues) {
            if (grouped.includes(q)) this.groupedAlone.set(q, true);
            else this.groupedAlone.delete(q);
          }
          coveredGroups = grouped.length > 0;
          const turns = claimTurns<Row>(request, grouped, {
            groupsFirst: this.groupsFirst,
            // Every handled queue grouped: the ordinary claim has nothing to take.
            skipOrdinary: queues.every((q) => grouped.includes(q)),
            started: (r) => Number(r.status) === 2,
          });
          const taken = await takeTurns(turns, (turn) =>
            turn.kind === 'ordinary'
              ? exec(
                  this.sql.fetchNextBatch,
                  SQL.fetchNextBatchBudgetedParams(
                    { ...request, limit: turn.limit, start: turn.start },
                    lockedNames,
                  ),
                )
              : exec(
                  this.sql.fetchNextGroupedBatch,
                  SQL.fetchNextGroupedBatchParams(
                    request,
                    turn.queue,
                    turn.start,
                    groupVisits(turn.start),
                  ),
                ),
          );
          const limited = locked.filter((r) => r.rate_limited === true).map((r) => String(r.name));
          if (taken.length < limit && limited.length > 0) {
            const states = await exec(
              this.sql.fetchNextBatchRateState,
              SQL.fetchNextBatchRateStateParams(limited),
            );
            waitMs = rateLimitWaitOf(states);
          }
          return taken;
        });
    // Flipped once the claim committed, and only by a claim that covered grouped queues.
    if (coveredGroups) this.groupsFirst = !this.groupsFirst;
    const jobs: ClaimedJobs = rows.map(mapClaimedRow).sort(claimOrder);
    if (waitMs !== undefined) jobs.rateLimitWaitMs = waitMs;
    return jobs;
  }

  /**
   * The claim of one grouped queue as one autocommit statement (`fetchNextGroupedBatchAlone`),
   * when it is the only queue the claim covers and the last claim found it grouped: the claimed
   * jobs, or undefined when the transaction must claim instead — the statement found the queue's
   * row changed since its snapshot (another claim committed meanwhile; it wrote nothing), or the
   * queue no longer grouped or gone. The rate state of a short claim is read after the commit.
   */
  private async claimGroupedAlone(
    request: Checked<FetchRequest & { start: number }>,
    queues: readonly string[],
    claimed: (exec: Exec, attempt: number) => Promise<Row[]>,
  ): Promise<ClaimedJobs | undefined> {
    const queue = queues.length === 1 ? queues[0] : undefined;
    if (queue === undefined || this.groupedAlone.get(queue) !== true) return undefined;
    const params = SQL.fetchNextGroupedBatchParams(
      request,
      queue,
      request.start,
      groupVisits(request.start),
    );
    const rows = await this.claimInAutocommit(this.sql.fetchNextGroupedBatchAlone, params, claimed);
    const [first] = rows;
    if (first === undefined || first.grouped === false) {
      this.groupedAlone.delete(queue);
      return undefined;
    }
    if (first.current === false) {
      this.groupedAlone.set(queue, false);
      return undefined;
    }
    const jobs: ClaimedJobs = rows
      .filter((r) => r.id !== null)
      .map(mapClaimedRow)
      .sort(claimOrder);
    if (jobs.length < request.limit && rows.some((r) => r.rate_limited === true)) {
      const states = await this.db.query(
        'fetchNextBatch',
        this.sql.fetchNextBatchRateState,
        SQL.fetchNextBatchRateStateParams([queue]),
      );
      jobs.rateLimitWaitMs = rateLimitWaitOf(states);
    }
    return jobs;
  }

  /**
   * One claim statement in autocommit, retried after a transient failure; a retry first returns
   * what an earlier attempt with this lease already committed (`claimed`: the caller never saw
   * those rows).
   */
  private claimInAutocommit(
    sql: string,
    params: unknown[],
    claimed: (exec: Exec, attempt: number) => Promise<Row[]>,
  ): Promise<Row[]> {
    return this.db.retry('fetchNextBatch', async (attempt) =>
      this.db.withConnection(false, async (exec) => {
        const already = await claimed(exec, attempt);
        return already.length > 0 ? already : exec(sql, params);
      }),
    );
  }

  /** @inheritdoc */
  async markAsProcessing(leases: readonly Checked<JobLease>[]): Promise<string[]> {
    const params = SQL.markAsProcessingParams(leases);
    const rows = await this.db.query('markAsProcessing', this.sql.markAsProcessing, params);
    return rows.map((r) => String(r.id));
  }

  /** @inheritdoc */
  async keepAlive(
    workerId: string,
    leases: readonly Checked<JobLease>[],
  ): Promise<KeepAliveResult> {
    const params = SQL.keepAliveParams(workerId, leases);
    const rows = await this.db.query('keepAlive', this.sql.keepAlive, params);
    return {
      touched: rows.length,
      cancelRequested: rows.filter((r) => r.cancel_requested === true).map((r) => String(r.id)),
    };
  }

  /** @inheritdoc */
  async release(leases: readonly Checked<JobLease>[], delayMs: number | null): Promise<number> {
    const params = SQL.releaseParams(leases, delayMs);
    const [row] = await this.db.query('release', this.sql.release, params);
    return num(row?.n);
  }

  /** @inheritdoc */
  async unstart(leases: readonly Checked<JobLease>[], delayMs: number | null): Promise<number> {
    const params = SQL.unstartParams(leases, delayMs);
    const [row] = await this.db.query('unstart', this.sql.unstart, params);
    return num(row?.n);
  }

  /** @inheritdoc */
  async reportProgress(
    lease: Checked<JobLease>,
    percent: number,
    note: string | null,
  ): Promise<number> {
    const params = SQL.reportProgressParams(lease, percent, note);
    const rows = await this.db.query('reportProgress', this.sql.reportProgress, params);
    return rows.length;
  }

  /** @inheritdoc */
  async rescheduleForRetry(
    lease: Checked<JobLease>,
    delayMs: number,
    error: string,
  ): Promise<number> {
    const params = SQL.rescheduleForRetryParams(lease, delayMs, error);
    const [row] = await this.db.query('rescheduleForRetry', this.sql.rescheduleForRetry, params);
    return num(row?.n);
  }

  /** @inheritdoc */
  async archiveSucceeded(completed: readonly Checked<CompletedJob>[]): Promise<RunRef[]> {
    const withResults = hasResults(completed);
    const params = SQL.archiveSucceededParams(completed, withResults);
    const sql = withResults ? this.sql.archiveSucceededWithResults : this.sql.archiveSucceeded;
    const rows = await this.db.query('archiveSucceeded', sql, params);
    return rows.map((r) => ({ id: String(r.id), leaseId: String(r.lease_id) }));
  }

  /** @inheritdoc */
  handlerTransactions(): HandlerTransactionSupport {
    if (this.db.config.ownsDataSource) return { supported: false, reason: OWN_DATA_SOURCE_REASON };
    return { supported: true, poolSize: this.db.poolSize() };
  }

  /**
   * The move is `archiveSucceeded`'s statement with one run, on the handler's connection: inside
   * the open transaction, its DELETE locks the job's row until COMMIT (a heartbeat's UPDATE waits
   * that long), and a row whose lease changed meanwhile is not deleted, so the caller rolls back.
   */
  async beginHandlerTransaction(
    statementTimeoutMs: number | undefined,
  ): Promise<SqlHandlerTransaction> {
    const support = this.handlerTransactions();
    if (!support.supported) throw new ChokaQTransactionalHandlerError([], support.reason);
    return this.db.handlerTransaction(statementTimeoutMs, async (exec, completed) => {
      const withResults = hasResults([completed]);
      const rows = await exec(
        withResults ? this.sql.archiveSucceededWithResults : this.sql.archiveSucceeded,
        SQL.archiveSucceededParams([completed], withResults),
      );
      return rows.some(
        (r) => String(r.id) === completed.id && String(r.lease_id) === completed.leaseId,
      );
    });
  }

  /** @inheritdoc */
  async moveToDlq(
    target: Checked<JobLease> | Checked<{ id: string }>,
    move: Checked<CheckedDlqMove>,
  ): Promise<number> {
    const sql = SQL.moveToDlq(this.s, SQL.moveToDlqShape(move.reason), isLeaseTarget(target));
    const rows = await this.db.query('moveToDlq', sql, SQL.moveToDlqParams(target, move));
    return rows.length;
  }

  // ---------------------------------------------------------------- rescue

  /**
   * Up to a few rounds, each one transaction: take the marked edges (`SQL.checkTake`, which waits
   * for the moves in flight of their hot dependencies), settle the open ones whose dependency left
   * the hot table (`SQL.checkSettle`), send each dependent of a failed or removed edge that still
   * waits to the DLQ as `DependencyFailed` (its own move settles the edges of the jobs waiting on
   * it, marking theirs under `cancel` for the next round), and unmark the edges taken that are
   * still as they were taken (`SQL.checkDone`); the rounds as `checkRounds` runs them.
   */
  async checkDependencies(limit: number): Promise<DependencyCheckResult> {
    const reason = FailureReason.DependencyFailed;
    const move = SQL.moveToDlq(this.s, SQL.moveToDlqShape(reason), false, true);
    return checkRounds(limit, () =>
      this.db.transaction('checkDependencies', async (exec) => {
        const edges = takenEdges(await exec(SQL.checkTake(this.s), SQL.checkTakeParams(limit)));
        const open = edges.filter((e) => e.state === EdgeState.Waiting);
        if (open.length > 0) await exec(SQL.checkSettle(this.s), SQL.checkSettleParams(open));
        const cancelled: string[] = [];
        for (const { jobId, error } of dependentsToCancel(edges)) {
          const moveParams = { reason, error, actor: null, durationMs: null };
          const moved = await exec(move, SQL.moveToDlqParams({ id: jobId }, moveParams));
          if (moved.length > 0) cancelled.push(jobId);
        }
        if (edges.length > 0) await exec(SQL.checkDone(this.s), SQL.checkDoneParams(edges));
        return { taken: edges.length, settled: open.length, cancelled };
      }),
    );
  }

  /** @inheritdoc */
  async recoverAbandoned(fetchedTimeoutMs: number, limit: number): Promise<number> {
    const params = SQL.recoverAbandonedParams(fetchedTimeoutMs, limit);
    const rows = await this.db.query('recoverAbandoned', this.sql.recoverAbandoned, params);
    return rows.length;
  }

  /** @inheritdoc */
  async archiveZombies(sweep: Checked<ZombieSweep>): Promise<ZombieRescueResult> {
    const params = SQL.archiveZombiesParams(sweep);
    const rows = await this.db.query('archiveZombies', this.sql.archiveZombies, params);
    return {
      dlq: rows.filter((r) => r.kind === 'dlq').map((r) => String(r.id)),
      retried: rows.filter((r) => r.kind === 'retried').map((r) => String(r.id)),
      jobs: rows.map((r) => ({ pillar: r.kind === 'dlq' ? 'dlq' : 'hot', job: mapHotRow(r) })),
    };
  }

  // ---------------------------------------------------------------- workers

  /** @inheritdoc */
  async upsertWorker(w: Checked<CheckedWorkerHeartbeat>): Promise<void> {
    await this.db.query('upsertWorker', this.sql.upsertWorker, SQL.upsertWorkerParams(w));
  }

  /** @inheritdoc */
  async markWorkerStopped(workerId: string): Promise<number> {
    const sql = SQL.markWorkerStopped(this.s);
    return (await this.db.query('markWorkerStopped', sql, SQL.markWorkerStoppedParams(workerId)))
      .length;
  }

  // ---------------------------------------------------------------- recurring slots

  /** The row's `last_job_id` first (its lock orders a concurrent remove), then the enqueue. */
  async triggerRecurringJob(
    name: string,
    validated: Checked<ValidatedJob>,
    audit: Audit,
  ): Promise<EnqueueResult | null> {
    return this.db.transaction('triggerRecurringJob', async (exec) => {
      const trigger = SQL.triggerRecurringJobParams(name, validated.id);
      const found = await exec(SQL.triggerRecurringJob(this.s), trigger);
      const [result] = found.length === 0 ? [null] : await this.insertJobs(exec, [validated]);
      await this.recordAudit(exec, audit, result?.created ? 1 : 0);
      return result;
    });
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
    return this.db.transaction('claimRecurringSlot', async (exec) => {
      const slot = SQL.claimRecurringSlotParams(name, slotUtc, nextSlotUtc, validated?.id ?? null);
      const won = await exec(SQL.claimRecurringSlot(this.s), slot);
      if (won.length === 0) return null;
      if (validated === null) return null;
      const [result] = await this.insertJobs(exec, [validated]);
      // The slot's idempotency key met a job already hot: that job is the slot's run.
      if (result.id !== validated.id) {
        await exec(SQL.triggerRecurringJob(this.s), SQL.triggerRecurringJobParams(name, result.id));
      }
      return result;
    });
  }
}

// -------------------------------------------------------------------------------- helpers

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
