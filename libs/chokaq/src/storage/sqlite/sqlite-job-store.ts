import { toError } from '../../common/error-text';
import { logEvent } from '../../common/log-events';
import { ChokaQDependencyNotFoundError, ChokaQTransactionalHandlerError } from '../../errors';
import type { Checked } from '../../interfaces/checked.interface';
import { FailureReason } from '../../interfaces/job-status.enum';
import {
  ClaimedJobs,
  CompletedJob,
  DependencyCheckResult,
  RunRef,
  EnqueueOptions,
  EnqueueResult,
  FetchRequest,
  HandledJobs,
  JobLease,
  KeepAliveResult,
  ZombieRescueResult,
} from '../../interfaces/job.interface';
import type { BatchEnqueued } from '../../interfaces/batch.interface';
import type { SchemaStatus } from '../../interfaces/schema-status.interface';
import {
  CheckedDlqMove,
  CheckedWorkerHeartbeat,
  isLeaseTarget,
} from '../../validation/validate-args';
import { ValidatedBatch, ValidatedJob } from '../../validation/validate-job';
import { DEPENDENCY_CHECK_BATCH } from '../../validation/limits';
import {
  Audit,
  DialectHandlerTransaction,
  DialectJobStore,
  ZombieSweep,
} from '../dialect-job-storage';
import type { HandlerTransactionSupport } from '../job-storage';
import { BATCH_CALLBACK_BITS, batchEnqueued } from '../shared/batches';
import {
  DependencyPillar,
  checkRounds,
  createdWaiting,
  dependencyIds,
  dependentsToCancel,
  planDependencies,
  takenEdges,
} from '../shared/dependencies';
import { NO_REASON, Outcome } from '../shared/outcome';
import { rateStateOf, shortestRateWait } from '../shared/rate-window';
import { hasResults } from '../shared/stored-results';
import { claimOrder } from '../shared/claim-order';
import { claimTurns, groupVisits, takeTurnsSync, typesOfQueue } from '../shared/groups';
import {
  DedupeSteps,
  dedupeColumns,
  enqueueManyKeyed,
  enqueueWithKeySync,
  mapDedupeHolder,
} from '../shared/dedupe';
import { mapClaimedRow, mapHotRow } from '../shared/row-mapper';
import { bucketsOf, claimedStartLag, countersByQueue, startBucketsOf } from './sqlite-counters';
import { SqliteChangeWatch } from './sqlite-change-watch';
import { yieldToEventLoop } from './sqlite-mutex';
import { Row, SqliteConnection, SqliteStatements } from './sqlite.connection';
import {
  SQLITE_MIGRATIONS,
  pendingSqliteMigrations,
  schemaMigrationsDdl,
  sqliteMigrationScript,
} from './sqlite.schema';
import { SqliteAdminStore } from './sqlite-admin-store';

/**
 * Why SQLite gives handlers no transaction: one connection and one writer serve the whole process
 * (every statement of ChokaQ goes through the same connection, under one mutex), so a handler's
 * transaction held open for its whole run would block every other ChokaQ statement of the process
 * meanwhile: claims, other handlers' completions, and the heartbeats that keep its own lease.
 */
export const SQLITE_HANDLER_TRANSACTION_REASON =
  'SQLite has one connection and one writer per process, so a transaction held open for a ' +
  "handler's whole run would block every other ChokaQ statement meanwhile, heartbeats included";

/** Rows per enqueue transaction: big enough to amortise the commit, small enough to keep the event loop moving. */
const ENQUEUE_CHUNK = 500;
/** ensureSchema may queue behind several starting processes: allow it more attempts than a normal call. */
const SCHEMA_RETRY_ATTEMPTS = 30;

/**
 * The write half of the SQLite dialect (`JobStore`), and its lifecycle (SPEC §3, "SQLite
 * specifics"): claims, worker transitions and moves, each one `BEGIN IMMEDIATE` transaction that
 * holds the file's single write lock from its first read to its COMMIT, so no row can be claimed,
 * moved or counted twice and no `FOR UPDATE` is needed. The SQL lives in `sql/`, the DDL
 * in `sqlite.schema.ts`; the connection, its settings, transactions and transient retry in
 * `sqlite.connection.ts`; the reads are {@link SqliteJobQueries}'s, on the same connection.
 *
 * Where an operation counts (counters, metric buckets), the rows it captured are grouped per queue
 * (`sqlite-counters.ts`) and written by one upsert each (`addCounters`, `addBuckets`), inside the
 * operation's transaction.
 */
export class SqliteJobStore extends SqliteAdminStore implements DialectJobStore {
  /** @inheritdoc */
  readonly dialect = 'sqlite' as const;
  /** The claim reads the rate state of a short claim's limited queues: see `fetchNextBatch`. */
  readonly reportsRateLimitWait = true;

  /** Change watches of {@link subscribe}, stopped by `close()`. */
  private readonly watchers = new Set<SqliteChangeWatch>();
  /** Whether the next claim that covers grouped queues claims them before the others. */
  private groupsFirst = false;

  constructor(db: SqliteConnection) {
    super(db);
  }

  // ---------------------------------------------------------------- lifecycle

  /** Sets `busy_timeout` (config.busyTimeoutMs) and WAL mode on the connection. */
  async prepare(): Promise<void> {
    await this.db.configure();
  }

  /**
   * Creates or migrates the schema under BEGIN IMMEDIATE: the first process to get the write lock
   * applies the missing versions and records them in `schema_migrations`; the others wait (retrying
   * SQLITE_BUSY) and then find nothing left to do. SQLite DDL is transactional, so a failed migration
   * leaves no half-created schema.
   */
  async ensureSchema(): Promise<void> {
    const p = this.db.prefix;
    const maxAttempts = Math.max(
      SCHEMA_RETRY_ATTEMPTS,
      this.db.config.transientRetry.maxAttempts ?? 0,
    );
    const { from, applied } = await this.db.write(
      'ensureSchema',
      () => {
        this.db.exec(schemaMigrationsDdl(p));
        const done = this.db.all(this.sql.selectAppliedVersions).map((r) => Number(r.version));
        const now: number[] = [];
        for (const migration of pendingSqliteMigrations(done)) {
          for (const statement of migration.statements(p)) this.db.exec(statement);
          this.db.run(this.sql.recordMigration, {
            version: migration.version,
            description: migration.description,
          });
          now.push(migration.version);
        }
        return { from: Math.max(0, ...done), applied: now };
      },
      { maxAttempts },
    );
    // Logged after the commit, once for the whole migration; a current schema says nothing.
    if (applied.length > 0) {
      const to = applied[applied.length - 1];
      logEvent(
        this.db.logger,
        'SchemaMigrated',
        `Schema '${p}*' migrated from version ${from} to ${to} (applied ${applied.join(', ')})`,
        { dialect: 'sqlite', schema: p, fromVersion: from, toVersion: to, applied },
      );
    }
  }

  /**
   * Reads the ledger (when it exists: the read creates nothing) outside the write lock; the
   * versions {@link ensureSchema} would apply are those {@link pendingSqliteMigrations} finds
   * missing, the same function it applies them by.
   */
  async schemaStatus(): Promise<SchemaStatus> {
    const p = this.db.prefix;
    const applied = await this.db.read('schemaStatus', () =>
      this.db.get(this.sql.selectLedgerExists, { name: `${p}schema_migrations` })
        ? this.db.all(this.sql.selectAppliedVersions).map((r) => Number(r.version))
        : [],
    );
    const pending = pendingSqliteMigrations(applied);
    return {
      dialect: 'sqlite',
      schema: p,
      currentVersion: Math.max(0, ...applied),
      latestVersion: SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1].version,
      pending: pending.map(({ version, description }) => ({ version, description })),
      script: pending.length === 0 ? '' : sqliteMigrationScript(p, pending),
    };
  }

  /** Stops change watchers, waits for the call in flight, then destroys an owned DataSource. */
  async close(): Promise<void> {
    for (const watch of this.watchers) watch.stop();
    this.watchers.clear();
    await this.db.close();
  }

  /** The database clock. */
  async now(): Promise<Date> {
    const row = await this.db.read('now', () => this.db.get(this.sql.now));
    return new Date(Number(row!.now_ms));
  }

  /**
   * SQLite has no notification channel, but `PRAGMA data_version` changes whenever another
   * connection (another process, or another storage on the same file) commits. A watch on the WAL
   * file says when to read it, and a read every `dataVersionPollMs` remains as the fallback
   * ({@link SqliteChangeWatch}); a change calls `listener` with no queue, so a job enqueued by
   * another process starts within milliseconds instead of the worker's `pollIntervalMs`. Commits
   * of this connection do not change it (same-process enqueues wake the worker directly). Null for
   * `:memory:` (no other connection can see it), `dataVersionPollMs: 0`, or a file not in WAL
   * mode: there the read needs a shared lock, and while another process writes, each read would
   * block the event loop for `busy_timeout`. Cancel requests are not reported here: another
   * process's `cancel` reaches the owner on its next heartbeat.
   */
  async subscribe(listener: (queue?: string) => void): Promise<(() => Promise<void>) | null> {
    const everyMs = this.db.config.dataVersionPollMs;
    const handle = this.db.handle();
    if (everyMs <= 0 || !this.db.wal || handle.memory) return null;
    const logger = this.db.logger;
    const walFile = `${handle.name}-wal`;
    const watch = new SqliteChangeWatch({
      readVersion: () => Number(this.db.get(this.sql.subscribe)!.data_version),
      walFile,
      pollMs: everyMs,
      onChange: () => listener(),
      onListenerError: (error) => {
        const message = toError(error).message;
        logEvent(logger, 'SqliteChangeListenerFailed', `Change listener threw: ${message}`, {
          error: message,
        });
      },
      onFileWatchLost: (error) => {
        const message = toError(error).message;
        logEvent(
          logger,
          'SqliteWalWatchLost',
          `No watch on ${walFile} (${message}): other processes' commits are noticed every ${everyMs} ms`,
          { file: walFile, error: message },
        );
      },
    });
    this.watchers.add(watch);
    return async () => {
      watch.stop();
      this.watchers.delete(watch);
    };
  }

  // ---------------------------------------------------------------- producer

  /** @inheritdoc */
  async enqueue(job: Checked<ValidatedJob>, options?: EnqueueOptions): Promise<EnqueueResult> {
    if (job.dependsOn !== null) return (await this.enqueueWaiting('enqueue', [job], options))[0];
    if (job.dedupe !== null) return this.enqueueKeyed('enqueue', job, options);
    const [result] = await this.insertJobs('enqueue', [job], options);
    return result;
  }

  /**
   * An enqueue with a dedupe key: its steps (`shared/dedupe.ts`) in one BEGIN IMMEDIATE
   * transaction, or in the caller's.
   */
  private enqueueKeyed(
    name: string,
    job: ValidatedJob,
    options: EnqueueOptions | undefined,
  ): Promise<EnqueueResult> {
    const run = (on: SqliteStatements) => enqueueWithKeySync(job, this.dedupeSteps(on));
    return options?.transaction !== undefined && options.transaction !== null
      ? this.db.inCallerTransaction(name, options.transaction, run)
      : this.db.write(name, () => run(this.db));
  }

  /** The keyed enqueue's steps on `on` (ChokaQ's connection or a caller's). */
  private dedupeSteps(on: SqliteStatements): DedupeSteps<ValidatedJob, true> {
    const key = (j: ValidatedJob) => {
      const { mode, states, windowMs } = dedupeColumns(j.dedupe!);
      return { key: j.dedupe!.key, job_id: j.id, mode, states, window_ms: windowMs };
    };
    const window = (j: ValidatedJob) => ({
      key: j.dedupe!.key,
      window_ms: dedupeColumns(j.dedupe!).windowMs,
    });
    return {
      take: (j) => on.get(this.sql.dedupeTake, key(j)) !== undefined,
      holder: (j) => {
        const row = on.get(this.sql.dedupeHolder, window(j));
        return row ? mapDedupeHolder(row) : null;
      },
      replace: (holder, j) => {
        const replaced = on.get(this.sql.dedupeReplace, {
          holder,
          payload: j.payload,
          payload_version: j.payloadVersion,
          trace_context: j.traceContext,
          window_ms: window(j).window_ms,
        });
        if (replaced) on.run(this.sql.dedupeRewindow, window(j));
        return replaced !== undefined;
      },
      insert: (j) => this.insertChunk([j], on)[0],
      move: (j) => void on.run(this.sql.dedupeMove, key(j)),
    };
  }

  /** @inheritdoc */
  async enqueueMany(
    jobs: readonly Checked<ValidatedJob>[],
    options?: EnqueueOptions,
  ): Promise<EnqueueResult[]> {
    if (jobs.some((j) => j.dependsOn !== null)) {
      return this.enqueueWaiting('enqueueMany', jobs, options);
    }
    return enqueueManyKeyed(
      jobs,
      (plain) => this.insertJobs('enqueueMany', plain, options),
      (job) => this.enqueueKeyed('enqueueMany', job, options),
    );
  }

  /**
   * Jobs of which some wait on others (`dependsOn`; they may wait on each other), all in one
   * BEGIN IMMEDIATE transaction, or in the caller's (under a savepoint, see
   * `SqliteConnection.inCallerTransaction`): the jobs chunk by chunk (those that wait inserted
   * Waiting, `enqueueWaiting`; a job with a dedupe key as `enqueue` inserts it), then where each
   * dependency is, marking it as waited on ({@link locate}), then the edges and counts of the
   * jobs this call created ({@link planDependencies}; SQLite's single writer means an edge to a
   * hot dependency needs no check: no move of it can be in flight). A dependency in no table fails
   * the call (`ChokaQDependencyNotFoundError`) and rolls it all back. As `enqueueBatch`, up to
   * `MAX_ENQUEUE_MANY` jobs hold the event loop and the write lock for the transaction. Once its
   * own transaction committed, the dependency check runs when an edge needs it (a dependency
   * found failed under `cancel`); inside a caller's transaction the rescue loop's next check
   * does that instead.
   */
  private async enqueueWaiting(
    name: string,
    jobs: readonly ValidatedJob[],
    options: EnqueueOptions | undefined,
  ): Promise<EnqueueResult[]> {
    const run = (on: SqliteStatements) => {
      const results = new Array<EnqueueResult>(jobs.length);
      const groups = [
        { text: this.sql.enqueue, pick: (j: ValidatedJob) => j.dependsOn === null },
        { text: this.sql.enqueueWaiting, pick: (j: ValidatedJob) => j.dependsOn !== null },
      ];
      for (const { text, pick } of groups) {
        const at = jobs.flatMap((j, i) => (pick(j) && j.dedupe === null ? [i] : []));
        const inserted = this.insertChunks(
          at.map((i) => jobs[i]),
          on,
          text,
        );
        inserted.forEach((r, k) => (results[at[k]] = r));
      }
      for (const [i, job] of jobs.entries()) {
        if (job.dedupe !== null) results[i] = enqueueWithKeySync(job, this.dedupeSteps(on));
      }
      const { made, waiting } = createdWaiting(jobs, results);
      if (waiting.length === 0) return { results, check: false };
      const plan = planDependencies(waiting, this.locate(on, waiting), made, false);
      if (plan.missing.length > 0) throw new ChokaQDependencyNotFoundError(plan.missing);
      on.run(this.sql.insertDependencies, {
        edges: JSON.stringify(
          plan.edges.map((e) => ({
            job_id: e.jobId,
            depends_on: e.dependsOn,
            on_failure: e.policy,
            state: e.state,
            needs_check: e.needsCheck ? 1 : 0,
          })),
        ),
      });
      const counts = new Map(plan.waits.map((w) => [w.jobId, w.waitingOn]));
      this.updateWaiting(on, this.sql.insertDependenciesWaits, counts);
      return { results, check: plan.needsCheck };
    };
    if (options?.transaction !== undefined && options.transaction !== null) {
      return (await this.db.inCallerTransaction(name, options.transaction, run)).results;
    }
    const { results, check } = await this.db.write(name, () => run(this.db));
    if (check) await this.checkDependencies(DEPENDENCY_CHECK_BATCH);
    return results;
  }

  /**
   * Where each dependency of `waiting` is, inside the enqueue's transaction: its hot and DLQ rows
   * marked as waited on (`locateDependenciesHot`, `locateDependenciesDlq`), then the archived
   * ones (`locateDependenciesArchive`). An id found nowhere is not in the map.
   */
  private locate(
    on: SqliteStatements,
    waiting: readonly ValidatedJob[],
  ): Map<string, DependencyPillar> {
    const ids = JSON.stringify(dependencyIds(waiting));
    const where = new Map<string, DependencyPillar>();
    const steps: [string, DependencyPillar][] = [
      [this.sql.locateDependenciesHot, 'hot'],
      [this.sql.locateDependenciesDlq, 'dlq'],
      [this.sql.locateDependenciesArchive, 'archive'],
    ];
    for (const [sql, pillar] of steps) {
      for (const row of on.all(sql, { ids })) where.set(String(row.id), pillar);
    }
    return where;
  }

  /**
   * The batch record, its callbacks, the queue and stats rows of the callbacks' queues (so the move
   * that fires a callback only inserts its hot row), then its jobs chunk by chunk as `enqueueMany`
   * inserts them, all in one BEGIN IMMEDIATE transaction, or in the caller's (under a savepoint,
   * see `SqliteConnection.inCallerTransaction`). Unlike `enqueueMany`, whose chunks commit one by
   * one, the whole batch is one transaction, so up to `MAX_ENQUEUE_MANY` jobs hold the event loop
   * and the write lock for its duration. The jobs are new (no id or key was allowed), so every one
   * is inserted.
   */
  async enqueueBatch(
    batch: Checked<ValidatedBatch>,
    options?: EnqueueOptions,
  ): Promise<BatchEnqueued> {
    const callbacks = JSON.stringify(
      batch.callbacks.map(({ kind, job }) => ({
        kind: BATCH_CALLBACK_BITS[kind],
        job_id: job.id,
        queue: job.queue,
        type: job.type,
        payload: job.payload,
        tags: job.tags,
        priority: job.priority,
        created_by: job.createdBy,
        trace_context: job.traceContext,
        payload_version: job.payloadVersion,
        group_key: job.group,
      })),
    );
    const run = (on: SqliteStatements) => {
      on.run(this.sql.insertBatch, {
        id: batch.id,
        createdBy: batch.createdBy,
        total: batch.jobs.length,
      });
      if (batch.callbacks.length > 0) {
        on.run(this.sql.insertBatchCallbacks, { id: batch.id, rows: callbacks });
        on.run(this.sql.enqueueQueues, { rows: callbacks });
        on.run(this.sql.enqueueStats, { rows: callbacks });
      }
      this.insertChunks(batch.jobs, on);
    };
    await (options?.transaction !== undefined && options.transaction !== null
      ? this.db.inCallerTransaction('enqueueBatch', options.transaction, run)
      : this.db.write('enqueueBatch', () => run(this.db)));
    return batchEnqueued(batch);
  }

  private async insertJobs(
    name: string,
    jobs: readonly ValidatedJob[],
    options: EnqueueOptions | undefined,
  ): Promise<EnqueueResult[]> {
    if (options?.transaction !== undefined && options.transaction !== null) {
      // Inside the caller's transaction on ChokaQ's own DataSource (under a savepoint, without
      // the mutex: see SqliteConnection.inCallerTransaction).
      return this.db.inCallerTransaction(name, options.transaction, (on) =>
        this.insertChunks(jobs, on),
      );
    }
    const results: EnqueueResult[] = [];
    for (let i = 0; i < jobs.length; i += ENQUEUE_CHUNK) {
      if (i > 0) await yieldToEventLoop();
      const chunk = jobs.slice(i, i + ENQUEUE_CHUNK);
      results.push(...(await this.db.write(name, () => this.insertChunk(chunk))));
    }
    return results;
  }

  /**
   * Inserts jobs chunk by chunk, all inside the one transaction `on` runs in (synchronously), with
   * the insert `text` ({@link insertChunk}).
   */
  private insertChunks(
    jobs: readonly ValidatedJob[],
    on: SqliteStatements,
    text = this.sql.enqueue,
  ): EnqueueResult[] {
    const results: EnqueueResult[] = [];
    for (let i = 0; i < jobs.length; i += ENQUEUE_CHUNK) {
      results.push(...this.insertChunk(jobs.slice(i, i + ENQUEUE_CHUNK), on, text));
    }
    return results;
  }

  /**
   * Inserts one chunk (synchronously, inside a transaction) and resolves each item's result; `on`
   * is ChokaQ's connection, or a caller's (see `SqliteConnection.inCallerTransaction`). `text` is
   * the insert: `enqueue` (Pending rows), or `enqueueWaiting` (Waiting rows, whose edges the
   * caller writes next).
   */
  private insertChunk(
    jobs: readonly ValidatedJob[],
    on: SqliteStatements = this.db,
    text = this.sql.enqueue,
  ): EnqueueResult[] {
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
        trace_context: j.traceContext,
        payload_version: j.payloadVersion,
        group_key: j.group,
        batch_id: j.batchId,
      })),
    );
    on.run(this.sql.enqueueQueues, { rows });
    on.run(this.sql.enqueueStats, { rows });
    const inserted = new Set(on.all(text, { rows }).map((r) => String(r.id)));
    return jobs.map((job) => {
      // delete(): with a duplicated id in one batch only the first item reports created.
      if (inserted.delete(job.id)) return { id: job.id, created: true };
      // Its own id first: a retry after an ambiguous commit whose job has since finished must not
      // report the key's new holder as its result.
      if (job.idempotencyKey !== null && !on.get(this.sql.enqueueIdExists, { id: job.id })?.found) {
        const holder = on.get(this.sql.enqueueKeyHolder, { key: job.idempotencyKey });
        if (holder) return { id: String(holder.id), created: false };
      }
      return { id: job.id, created: false };
    });
  }

  // ---------------------------------------------------------------- worker-owned transitions

  /**
   * Claims are serialised by BEGIN IMMEDIATE, so the `budgetedQueues` hint only selects the
   * statement: one handled queue (queue-wide) that the hint says is unbudgeted takes the cheaper
   * `fetchNextBatchOneQueue`, which skips the queue if it is budgeted or rate limited after all;
   * anything else takes `fetchNextBatch`, then spends the rows it started on their queues' rate
   * limits and, when it took fewer rows than asked, reads how long a rate limit holds them back.
   *
   * Queues with group limits: `fetchNextBatch` skips them; a claim that starts rows
   * (`start > 0`) and may cover one (the hint names a handled queue, or there is no hint) finds
   * them (`fetchNextBatchGroupedQueues`) and claims each with the grouped claim
   * ({@link claimGroupedQueue}), every row of which starts, in the same transaction. Grouped
   * queues and the others take turns at going first (`groupsFirst`), so neither can keep the
   * other's jobs waiting by filling every slot claim after claim.
   * @inheritdoc
   */
  async fetchNextBatch(request: Checked<FetchRequest & { start: number }>): Promise<ClaimedJobs> {
    const { workerId, leaseId, limit, handled, start, budgetedQueues } = request;
    const [only] = handled.queues;
    const oneQueue =
      budgetedQueues !== undefined &&
      handled.types.length === 0 &&
      handled.queues.every((q) => q === only) &&
      !budgetedQueues.includes(only);
    const [sql, params] = oneQueue
      ? [this.sql.fetchNextBatchOneQueue, { queue: only, limit, start, workerId, leaseId }]
      : [
          this.sql.fetchNextBatch,
          {
            queues: JSON.stringify(handled.queues),
            types: typesJson(handled.types),
            limit,
            start,
            workerId,
            leaseId,
          },
        ];
    // A claim commits without waiting for fsync (see SqliteConnection.writeUnsynced). The rows it
    // started are counted in the start bucket, with their lag, and spent on their queues' rate
    // limits, in the same transaction.
    // After a short claim, the wait of a rate limit is read only where the hint says a handled
    // queue may be limited (missing it costs a poll interval, nothing more). The spend, below, runs
    // whenever the general statement started rows: a stale hint must not let a start go uncounted.
    const queues = [...new Set([...handled.queues, ...handled.types.map((t) => t.queue)])];
    const mayBeLimited =
      !oneQueue && (budgetedQueues === undefined || queues.some((q) => budgetedQueues.includes(q)));
    const groupsFirst = this.groupsFirst;
    let coveredGroups = false;
    let waitMs: number | undefined;
    const rows = await this.db.writeUnsynced('fetchNextBatch', () => {
      waitMs = undefined;
      // The same hint says whether a handled queue may be grouped; only a claim that starts rows
      // may take a grouped queue's rows.
      const grouped =
        mayBeLimited && start > 0
          ? this.db
              .all(this.sql.fetchNextBatchGroupedQueues, { queues: JSON.stringify(queues) })
              .map((r) => String(r.name))
          : [];
      coveredGroups = grouped.length > 0;
      const turns = claimTurns<Row>({ limit, start }, grouped, {
        groupsFirst,
        // Every handled queue grouped: the ordinary claim has nothing to take.
        skipOrdinary: queues.every((q) => grouped.includes(q)),
        started: (r) => Number(r.status) === 2,
      });
      const claimed = takeTurnsSync(turns, (turn) =>
        turn.kind === 'ordinary'
          ? this.db.all(sql, { ...params, limit: turn.limit, start: turn.start })
          : this.claimGroupedQueue(request, turn.queue, turn.start),
      );
      const started = claimed.filter((r) => Number(r.status) === 2);
      if (started.length > 0) {
        this.addBuckets(
          startBucketsOf(started.map((r) => ({ queue: r.queue, lag_ms: claimedStartLag(r) }))),
        );
        if (!oneQueue) this.spendRate(started);
      }
      if (mayBeLimited && claimed.length < limit) {
        const states = this.db.all(this.sql.fetchNextBatchRateState, {
          queues: JSON.stringify(queues),
        });
        if (states.length > 0) {
          waitMs = shortestRateWait(states.map(rateStateOf), Number(states[0].now_ms));
        }
      }
      return claimed;
    });
    if (coveredGroups) this.groupsFirst = !groupsFirst;
    // RETURNING has no order: hand the rows back in claim order.
    const jobs: ClaimedJobs = rows.map(mapClaimedRow).sort(claimOrder);
    if (waitMs !== undefined) jobs.rateLimitWaitMs = waitMs;
    return jobs;
  }

  /**
   * The grouped claim of grouped queue `queue`, inside the claim's transaction: starts up to
   * `startable` of its due rows, taking turns across its groups, within each group's concurrency
   * and rate limit and the queue's own budget and rate.
   *
   * The walk: from the queue's `group_cursor` (the last group the previous grouped claim visited),
   * it visits the groups that have Pending rows in byte order, wrapping round once to the first
   * group and stopping at the cursor, one statement per group (`fetchNextGroupedBatchVisit`: the
   * group's room and the next group, one index descent each); it stops once it found as many
   * groups with room as the budget (each of them gets at least one row), or after
   * {@link groupVisits} visits. BEGIN IMMEDIATE holds the file's write lock throughout, so nothing
   * changes between these statements. Then the rows are taken round-robin from the groups with
   * room (`fetchNextGroupedBatch`), the cursor moves to the last group visited, and the started
   * rows are spent on their groups' rate windows. The caller counts them in the start bucket and
   * spends them on the queue's own rate, with the ordinary claim's rows.
   */
  private claimGroupedQueue(
    request: Checked<FetchRequest & { start: number }>,
    queue: string,
    startable: number,
  ): Row[] {
    const begin = this.db.get(this.sql.fetchNextGroupedBatchStart, { queue, start: startable });
    const budget = begin === undefined ? 0 : Number(begin.budget);
    if (begin === undefined || budget <= 0) return [];
    const cursor = String(begin.cursor);
    const firstGroup = begin.first_group === null ? null : String(begin.first_group);
    const { workerId, leaseId, handled } = request;
    const mine = typesOfQueue(handled, queue);
    const types = mine === null ? null : typesJson(mine);
    const maxVisits = groupVisits(startable);
    const visits: { group: string; n: number; room: number; first: string | null }[] = [];
    let wrapped = begin.after_cursor === null;
    let group = wrapped ? firstGroup : String(begin.after_cursor);
    let found = 0;
    while (group !== null && visits.length < maxVisits && found < budget) {
      const visit = this.db.get(this.sql.fetchNextGroupedBatchVisit, {
        queue,
        group,
        budget,
        wrapped: wrapped ? 1 : 0,
        cursor,
        types,
      })!;
      const room = Math.max(0, Number(visit.room));
      const first = visit.first_id === null ? null : String(visit.first_id);
      visits.push({ group, n: visits.length + 1, room, first });
      if (room > 0) found += 1;
      if (visit.next_group !== null) {
        group = String(visit.next_group);
      } else if (!wrapped) {
        wrapped = true;
        group = firstGroup;
      } else {
        group = null;
      }
    }
    if (visits.length === 0) return [];
    const withRoom = visits.filter((v) => v.room > 0);
    // Round-robin takes at most this many rows of one group; one: each group's first row, which
    // the walk already found.
    const most = budget - withRoom.length + 1;
    const rows =
      withRoom.length === 0
        ? []
        : most === 1
          ? this.db.all(this.sql.fetchNextGroupedBatchFirsts, {
              ids: JSON.stringify(withRoom.map((v) => v.first)),
              workerId,
              leaseId,
            })
          : this.db.all(this.sql.fetchNextGroupedBatch, {
              queue,
              budget,
              most,
              visits: JSON.stringify(withRoom),
              types,
              workerId,
              leaseId,
            });
    this.db.run(this.sql.fetchNextGroupedBatchTurn, {
      queue,
      cursor: visits[visits.length - 1].group,
    });
    if (rows.length > 0 && Number(begin.group_rated) === 1) {
      const spent = new Map<string, { group: string; n: number; t: number }>();
      for (const r of rows) {
        const key = String(r.group_key);
        const entry = spent.get(key) ?? { group: key, n: 0, t: Number(r.started_at_utc) };
        entry.n += 1;
        spent.set(key, entry);
      }
      this.db.run(this.sql.fetchNextGroupedBatchSpendGroups, {
        queue,
        spent: JSON.stringify([...spent.values()]),
      });
    }
    return rows;
  }

  /**
   * Spends the rows a claim started on their queues' rate limits (queues without one are left
   * alone by the statement): per queue, how many and their start time, which the claim statement
   * wrote once for all of them.
   */
  private spendRate(started: ReadonlyArray<Record<string, unknown>>): void {
    const spent = new Map<string, { queue: string; n: number; t: number }>();
    for (const r of started) {
      const queue = String(r.queue);
      const entry = spent.get(queue) ?? { queue, n: 0, t: Number(r.started_at_utc) };
      entry.n += 1;
      spent.set(queue, entry);
    }
    this.db.run(this.sql.fetchNextBatchSpendRate, { spent: JSON.stringify([...spent.values()]) });
  }

  /** @inheritdoc */
  async markAsProcessing(leases: readonly Checked<JobLease>[]): Promise<string[]> {
    const json = leasesJson(leases);
    const rows = await this.db.write('markAsProcessing', () => {
      // A retry after an ambiguous commit: already started under this lease, by this caller.
      const again = this.db.all(this.sql.markAsProcessingStarted, { leases: json });
      const started = this.db.all(this.sql.markAsProcessing, { leases: json });
      // Only the rows started now count as starts, with their lag, in this transaction.
      if (started.length > 0) this.addBuckets(startBucketsOf(started));
      return [...again, ...started];
    });
    return rows.map((r) => String(r.id));
  }

  /** @inheritdoc */
  async keepAlive(
    workerId: string,
    leases: readonly Checked<JobLease>[],
  ): Promise<KeepAliveResult> {
    const json = leasesJson(leases);
    const rows = await this.db.write('keepAlive', () =>
      this.db.all(this.sql.keepAlive, { workerId, leases: json }),
    );
    return {
      touched: rows.length,
      cancelRequested: rows.filter((r) => r.cancel_requested_utc !== null).map((r) => String(r.id)),
    };
  }

  /** @inheritdoc */
  async release(leases: readonly Checked<JobLease>[], delay: number | null): Promise<number> {
    return this.handBack('release', leases, delay);
  }

  /** @inheritdoc */
  async unstart(leases: readonly Checked<JobLease>[], delay: number | null): Promise<number> {
    return this.handBack('unstart', leases, delay);
  }

  /** Fetched (`release`) or started-but-unrun (`unstart`) rows back to Pending, in one write. */
  private handBack(
    statement: 'release' | 'unstart',
    leases: readonly Checked<JobLease>[],
    delay: number | null,
  ): Promise<number> {
    const json = leasesJson(leases);
    return this.db.write(statement, () => {
      const rows = this.db.all(this.sql[statement], { leases: json, delayMs: delay });
      // A delayed release is an open circuit's deferral (no attempt spent): count it.
      if (delay !== null && rows.length > 0) this.addCounters(countersByQueue(rows, 'deferred'));
      return rows.length;
    });
  }

  /** @inheritdoc */
  async reportProgress(
    lease: Checked<JobLease>,
    progress: number,
    note: string | null,
  ): Promise<number> {
    return this.db.write('reportProgress', () =>
      this.db.run(this.sql.reportProgress, {
        id: lease.id,
        workerId: lease.workerId,
        leaseId: lease.leaseId,
        progress,
        note,
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
    return this.db.write('rescheduleForRetry', () => {
      const rows = this.db.all(this.sql.rescheduleForRetry, params);
      if (rows.length > 0) {
        const run = { worker_id: lease.workerId, lease_id: lease.leaseId };
        this.recordAttempts(
          rows.map((r) => ({ ...r, ...run })),
          'retried',
          error,
        );
        this.addCounters(countersByQueue(rows, 'retried'));
        this.addBuckets(bucketsOf(rows, Outcome.Retried, NO_REASON));
      }
      return rows.length;
    });
  }

  /**
   * Hot → Archive in one BEGIN IMMEDIATE transaction: copy the exact owned rows into the archive
   * (`archiveSucceeded`), delete those rows from the hot table (`archiveSucceededDelete`), add
   * `SucceededTotal` once per queue, upsert one metric bucket per queue, count them as
   * succeeded in their batches (`settleBatches`, which may enqueue a batch's callbacks), and settle
   * the edges of the jobs waiting on them (`settleDependencies`, which may release them). Any error
   * (say, an archive row with the same id) rolls all of it back. A batch where some run records its result copies with
   * `archiveSucceededWithResults` instead, whose leases carry the results (the delete takes the
   * leases without them); a batch without results binds and runs exactly what it did before.
   */
  async archiveSucceeded(completed: readonly Checked<CompletedJob>[]): Promise<RunRef[]> {
    const lease = ({ id, workerId, leaseId, durationMs }: CompletedJob) => ({
      id,
      workerId,
      leaseId,
      durationMs,
    });
    const leases = JSON.stringify(completed.map(lease));
    const withResults = hasResults(completed);
    // `result: undefined` leaves the key out: its run stores NULL.
    const copied = withResults
      ? JSON.stringify(completed.map((c) => ({ ...lease(c), result: c.result })))
      : leases;
    const copy = withResults ? this.sql.archiveSucceededWithResults : this.sql.archiveSucceeded;
    return this.db.write('archiveSucceeded', () => {
      const moved = this.db.all(copy, { leases: copied });
      if (moved.length === 0) return [];
      // The SQLite archive keeps no lease, so the delete reports which lease each archived row had.
      const deleted = this.db.all(this.sql.archiveSucceededDelete, { leases });
      if (deleted.length !== moved.length) {
        // Cannot happen under BEGIN IMMEDIATE; if it ever did, the throw rolls both steps back.
        throw new Error(`BUG: archived ${moved.length} row(s) but deleted ${deleted.length}`);
      }
      this.addCounters(countersByQueue(moved, 'succeeded'));
      this.addBuckets(bucketsOf(moved, Outcome.Succeeded, NO_REASON));
      this.settleBatches(moved, true);
      this.settleDependencies(moved, true);
      return deleted.map((r) => ({ id: String(r.id), leaseId: String(r.lease_id) }));
    });
  }

  /** @inheritdoc */
  handlerTransactions(): HandlerTransactionSupport {
    return { supported: false, reason: SQLITE_HANDLER_TRANSACTION_REASON };
  }

  /** Refused: see {@link SQLITE_HANDLER_TRANSACTION_REASON}. */
  async beginHandlerTransaction(): Promise<DialectHandlerTransaction> {
    throw new ChokaQTransactionalHandlerError([], SQLITE_HANDLER_TRANSACTION_REASON);
  }

  /** @inheritdoc */
  async moveToDlq(
    target: Checked<JobLease> | Checked<{ id: string }>,
    move: Checked<CheckedDlqMove>,
  ): Promise<number> {
    const { reason, error, actor, durationMs } = move;
    const leases = isLeaseTarget(target) ? leasesJson([target]) : null;
    return this.db.write('moveToDlq', () => {
      const rows = leases
        ? this.db.all(this.sql.moveToDlq, { leases })
        : this.db.all(this.sql.moveToDlqById, { id: target.id });
      this.moveRowsToDlq(rows, reason, error, actor, durationMs);
      return rows.length;
    });
  }

  // ---------------------------------------------------------------- rescue

  /**
   * Up to a few rounds, each one BEGIN IMMEDIATE transaction: take the marked edges, oldest first
   * (`checkTake`), send each still-Waiting dependent of a failed or removed edge to the DLQ as
   * `DependencyFailed`, the error naming the dependency (`moveToDlqWaiting`, then the steps of
   * every Hot → DLQ move, whose settle step marks the `cancel` edges of the jobs waiting on it for
   * the next round), and unmark every edge taken (`checkDone`). SQLite never marks an open edge
   * (its single writer leaves no move in flight to re-read), so nothing here settles one:
   * `settled` stays 0, and an open edge taken would only be unmarked. The rounds as `checkRounds`
   * runs them, the event loop given a turn between two.
   * @inheritdoc
   */
  async checkDependencies(limit: number): Promise<DependencyCheckResult> {
    return checkRounds(limit, async (index) => {
      if (index > 0) await yieldToEventLoop();
      return this.db.write('checkDependencies', () => {
        const edges = takenEdges(this.db.all(this.sql.checkTake, { limit }));
        const cancelled: string[] = [];
        for (const { jobId, error } of dependentsToCancel(edges)) {
          const rows = this.db.all(this.sql.moveToDlqWaiting, { id: jobId });
          this.moveRowsToDlq(rows, FailureReason.DependencyFailed, error, null, null);
          if (rows.length > 0) cancelled.push(jobId);
        }
        if (edges.length > 0) {
          const done = edges.map((e) => ({ job_id: e.jobId, depends_on: e.dependsOn }));
          this.db.run(this.sql.checkDone, { edges: JSON.stringify(done) });
        }
        return { taken: edges.length, settled: 0, cancelled };
      });
    });
  }

  /** @inheritdoc */
  async recoverAbandoned(timeoutMs: number, max: number): Promise<number> {
    return this.db.write('recoverAbandoned', () =>
      this.db.run(this.sql.recoverAbandoned, { timeoutMs, limit: max }),
    );
  }

  /**
   * One BEGIN IMMEDIATE transaction: read the expired rows (step 1, which also says which to
   * retry), return those to Pending (step 2), move the others to the DLQ (step 3, then the DLQ
   * insert, counters and buckets). Nothing can change the rows between the steps, so every row
   * step 1 found is moved, and the result carries the rows as step 1 read them.
   * @inheritdoc
   */
  async archiveZombies(sweep: Checked<ZombieSweep>): Promise<ZombieRescueResult> {
    const { defaultTimeoutMs, limit: max, error } = sweep;
    const rules = JSON.stringify(sweep.rules.map((r) => ({ ...r, retry: r.retry ? 1 : 0 })));
    return this.db.write('archiveZombies', () => {
      const found = this.db.all(this.sql.archiveZombies, { defaultTimeoutMs, limit: max, rules });
      const retry = found.filter((r) => r.retry === 1);
      const dead = found.filter((r) => r.retry !== 1);
      if (retry.length > 0) {
        const retried = this.db.all(this.sql.archiveZombiesRetry, {
          error,
          ids: JSON.stringify(retry.map((r) => r.id)),
        });
        // The lost runs, as step 1 read them (the worker that lost each included).
        const back = new Set(retried.map((r) => String(r.id)));
        this.recordAttempts(
          retry.filter((r) => back.has(String(r.id))),
          'zombie',
          error,
        );
        this.addCounters(countersByQueue(retried, 'retried'));
        this.addBuckets(bucketsOf(retried, Outcome.Retried, FailureReason.Zombie));
      }
      if (dead.length > 0) {
        const moved = this.db.all(this.sql.archiveZombiesDelete, {
          ids: JSON.stringify(dead.map((r) => r.id)),
        });
        this.moveRowsToDlq(moved, FailureReason.Zombie, error, null, null);
      }
      return {
        dlq: dead.map((r) => String(r.id)),
        retried: retry.map((r) => String(r.id)),
        jobs: found.map((r) => ({
          pillar: r.retry === 1 ? ('hot' as const) : ('dlq' as const),
          job: mapHotRow(r),
        })),
      };
    });
  }

  // ---------------------------------------------------------------- workers

  /** @inheritdoc */
  async upsertWorker(w: Checked<CheckedWorkerHeartbeat>): Promise<void> {
    const params = {
      workerId: w.workerId,
      host: w.host,
      pid: w.pid,
      libraryVersion: w.libraryVersion,
      concurrency: w.concurrency,
      running: w.running,
      handled: w.handled,
      circuits: w.circuits,
      draining: w.draining ? 1 : 0,
      starting: w.starting ? 1 : 0,
    };
    await this.db.write('upsertWorker', () => this.db.run(this.sql.upsertWorker, params));
  }

  /** @inheritdoc */
  async markWorkerStopped(workerId: string): Promise<number> {
    return this.db.write('markWorkerStopped', () =>
      this.db.run(this.sql.markWorkerStopped, { workerId }),
    );
  }

  // ---------------------------------------------------------------- recurring slots

  /** The last run recorded and the job enqueued in one BEGIN IMMEDIATE transaction. */
  async triggerRecurringJob(
    name: string,
    validated: Checked<ValidatedJob>,
    audit: Audit,
  ): Promise<EnqueueResult | null> {
    return this.db.write('triggerRecurringJob', () => {
      const found = this.db.run(this.sql.triggerRecurringJob, { name, jobId: validated.id }) > 0;
      const result = found ? this.insertChunk([validated])[0] : null;
      this.recordAudit(audit, result?.created ? 1 : 0);
      return result;
    });
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
    const params = {
      name,
      slotUtc: slotUtc.getTime(),
      nextSlotUtc: nextSlotUtc.getTime(),
      jobId: validated?.id ?? null,
    };
    return this.db.write('claimRecurringSlot', () => {
      if (this.db.run(this.sql.claimRecurringSlot, params) === 0) return null;
      if (!validated) return null;
      const result = this.insertChunk([validated])[0];
      // The slot's idempotency key met a job already hot: that job is the slot's run.
      if (result.id !== validated.id) {
        this.db.run(this.sql.triggerRecurringJob, { name, jobId: result.id });
      }
      return result;
    });
  }
}

// -------------------------------------------------------------------------------- helpers

/** Validates leases (shared rules) and returns them as the JSON array the statements read. */
function leasesJson(leases: readonly Checked<JobLease>[]): string {
  return JSON.stringify(
    leases.map((l) => ({ id: l.id, workerId: l.workerId, leaseId: l.leaseId })),
  );
}

/**
 * The `(queue, type)` pairs a claim runs, as the JSON its statements read (`@types`): each with
 * its payload versions (1 when the handler gives none).
 */
function typesJson(pairs: HandledJobs['types']): string {
  return JSON.stringify(
    pairs.map((t) => ({
      queue: t.queue,
      type: t.type,
      minVersion: t.minVersion ?? 1,
      maxVersion: t.maxVersion ?? 1,
    })),
  );
}
