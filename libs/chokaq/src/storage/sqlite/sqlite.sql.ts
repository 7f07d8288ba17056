import {
  ActiveFilter,
  DlqFilter,
  HistoryFilter,
  Pillar,
} from '../../interfaces/job-view.interface';
import type { ListRequest } from '../../validation/validate-list';
import { MAX_ATTEMPT_ERROR, METRIC_BUCKET_MS } from '../../validation/limits';
import { HOT_COLUMNS, hotColumnsExcept } from '../shared/columns';
import { escapeLike } from '../shared/escape-like';
import { ERROR_PREFIX_CHARS, LIST_SORT_KEY } from '../shared/page';

/**
 * All SQL text of the SQLite dialect, built once per table prefix (the prefix is validated
 * configuration, never user input). Each statement is named after the `JobStorage` method it serves,
 * with a suffix for a step (`archiveSucceeded`, `archiveSucceededDelete`), the names PostgreSQL uses
 * where the operation is the same; the sections follow the interface. {@link jobStoreStatements}
 * are the write half's (`sqlite-job-store.ts`), {@link jobQueriesStatements} the reads'
 * (`sqlite-job-queries.ts`); the statements built per filter come last. Each text is prepared once
 * per connection and kept (`sqlite.connection.ts`).
 *
 * Conventions:
 * - Every value from outside is a named parameter (`@name`); status codes are literals so the partial
 *   indexes of `sqlite.schema.ts` apply.
 * - Lists travel as one JSON array parameter read with `json_each(@x)`: the SQL text stays fixed
 *   whatever the list length (one prepared statement, no 32,766-variable limit), and a JSON array of
 *   captured rows plays the role of SQL Server's `@Moved` table variable in the move transactions.
 * - Locking: SQLite has one writer per database file. Every write below runs inside `BEGIN IMMEDIATE`,
 *   which takes the RESERVED (write) lock at BEGIN, so from the first read of a transaction to its
 *   COMMIT no other connection or process can write: reads made inside it are exact, and no row can be
 *   claimed, moved or counted twice. There is no `FOR UPDATE`/`SKIP LOCKED`, and none is needed.
 *   Readers are never blocked (WAL) and see only committed data.
 * - Times are INTEGER epoch milliseconds from {@link SQLITE_NOW_MS}; relative inputs are added in SQL.
 */

/**
 * The database clock in epoch milliseconds. `unixepoch('subsec')` has millisecond precision; ROUND
 * avoids `…999.9999` truncating one millisecond low. Within one statement 'now' is stable.
 */
export const SQLITE_NOW_MS = "CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)";

/** The current metric bucket: epoch ms floored to the minute (`METRIC_BUCKET_MS`). */
const BUCKET_NOW = `((${SQLITE_NOW_MS} / ${METRIC_BUCKET_MS}) * ${METRIC_BUCKET_MS})`;

/**
 * Whether the rate window of `q` has rolled over at `t` (epoch ms): none yet, or its first start is
 * at least one window (`rate_limit_per_ms`) old.
 */
const RATE_ROLLED = (t: string): string =>
  `(q.rate_window_start IS NULL OR ${t} >= q.rate_window_start + q.rate_limit_per_ms)`;

/**
 * How many of `q`'s jobs may start now under its rate limit: `max` less the starts of the current
 * window, less those of the previous window while its last start is within one window of now (the
 * rule of `storage/shared/rate-window.ts`, which the library README explains).
 */
const RATE_ALLOWANCE = `MAX(0, q.rate_limit_max
                          - CASE WHEN ${RATE_ROLLED(SQLITE_NOW_MS)}
                                 THEN CASE WHEN q.rate_window_last > ${SQLITE_NOW_MS} - q.rate_limit_per_ms
                                           THEN COALESCE(q.rate_window_count, 0) ELSE 0 END
                                 ELSE COALESCE(q.rate_window_count, 0)
                                      + CASE WHEN q.rate_prev_last > ${SQLITE_NOW_MS} - q.rate_limit_per_ms
                                             THEN COALESCE(q.rate_prev_count, 0) ELSE 0 END
                            END)`;

/** `{id, workerId, leaseId}` leases from `@leases` (a JSON array) as a relation. */
const LEASE_CTE = `lease(id, worker_id, lease_id) AS (
    SELECT value ->> 'id', value ->> 'workerId', value ->> 'leaseId' FROM json_each(@leases)
  )`;

/** The fencing token: id, worker and lease all match one of `@leases`. */
const OWNED = `(id, worker_id, lease_id) IN (SELECT id, worker_id, lease_id FROM lease)`;

/** Ids from `@ids` (a JSON array of strings). */
const IDS = `(SELECT value FROM json_each(@ids))`;

/**
 * archiveZombies: whether the expired row `h` (its queue row `q` LEFT JOINed) returns to Pending:
 * the queue's RetryZombies, or the rescuing process's handler rules in `@rules` (a JSON array of
 * `{queue, type, retry}`, type null for a queue-wide handler, retry 1/0, one rule per slot),
 * resolved as a claim resolves a handler: the exact `(queue, type)` rule, else the queue-wide one.
 */
const ZOMBIE_RETRY = `(COALESCE(q.retry_zombies, 0) = 1 OR COALESCE(
          (SELECT r.value ->> 'retry' FROM json_each(@rules) r
           WHERE r.value ->> 'queue' = h.queue AND r.value ->> 'type' = h.type),
          (SELECT r.value ->> 'retry' FROM json_each(@rules) r
           WHERE r.value ->> 'queue' = h.queue AND r.value ->> 'type' IS NULL),
          0) = 1)`;

/** The columns `archiveZombies` returns of each rescued row: all but the payload. */
const ZOMBIE_COLUMNS = hotColumnsExcept('payload');

/** Hot columns copied into the archive (besides `finished_at_utc`, `duration_ms`): the SQLite archive keeps no lease, heartbeat, update time or cancel flag. */
const ARCHIVE_COPIED = hotColumnsExcept(
  'status',
  'lease_id',
  'heartbeat_utc',
  'last_updated_utc',
  'cancel_requested_utc',
);

/** `m.value ->> 'col'` for each column: reads a captured row of `json_each(@moved) AS m`. */
function fromMoved(columns: readonly string[]): string {
  return columns.map((c) => `m.value ->> '${c}'`).join(', ');
}

/** The table names of one prefix. */
export function sqliteTables(p: string) {
  return {
    hot: `${p}jobs_hot`,
    archive: `${p}jobs_archive`,
    dlq: `${p}jobs_dlq`,
    stats: `${p}stats_summary`,
    buckets: `${p}metric_buckets`,
    queues: `${p}queues`,
    recurring: `${p}recurring_jobs`,
    migrations: `${p}schema_migrations`,
    workers: `${p}workers`,
    rowCounts: `${p}row_counts`,
    audit: `${p}audit_log`,
    settings: `${p}settings`,
    attempts: `${p}job_attempts`,
  };
}

/**
 * The fixed statements of the write half and the lifecycle, in the order of `JobStore`, for one
 * table prefix.
 */
export function jobStoreStatements(p: string) {
  const tables = sqliteTables(p);
  const { hot, archive, dlq, stats, buckets, queues, recurring, migrations, workers } = tables;
  const { audit, settings, attempts } = tables;
  const dlqColumns = [...HOT_COLUMNS, 'failure_reason', 'error_details'];

  /**
   * The claims' final step: `picked(id, claim_rn)` rows become Fetched, or Processing for the first
   * `@start` (exactly what markAsProcessing sets), under the claim's worker and lease.
   */
  const claimUpdate = `UPDATE ${hot} AS h
      SET status = CASE WHEN p.claim_rn <= @start THEN 2 ELSE 1 END,
          attempt_count = attempt_count + CASE WHEN p.claim_rn <= @start THEN 1 ELSE 0 END,
          started_at_utc = CASE WHEN p.claim_rn <= @start THEN ${SQLITE_NOW_MS}
                                ELSE started_at_utc END,
          heartbeat_utc = CASE WHEN p.claim_rn <= @start THEN ${SQLITE_NOW_MS}
                               ELSE heartbeat_utc END,
          worker_id = @workerId, lease_id = @leaseId, last_updated_utc = ${SQLITE_NOW_MS}
      FROM picked p
      WHERE h.status = 0 AND h.id = p.id
      RETURNING *`;
  return {
    tables,

    // ------------------------------------------------------------------ lifecycle

    /** ensureSchema: the versions the ledger records. */
    selectAppliedVersions: `SELECT version FROM ${migrations}`,
    /** schemaStatus: whether the ledger exists yet (@name: its table name), read without creating it. */
    selectLedgerExists: `SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = @name`,
    /** ensureSchema: records one applied version. */
    recordMigration: `INSERT INTO ${migrations} (version, description, applied_at_utc)
      VALUES (@version, @description, ${SQLITE_NOW_MS}) ON CONFLICT (version) DO NOTHING`,

    /** The database clock (`now`). */
    now: `SELECT ${SQLITE_NOW_MS} AS now_ms`,
    /**
     * subscribe: changes whenever another connection commits to the file (cross-process wake-ups).
     */
    subscribe: 'PRAGMA data_version',

    // ------------------------------------------------------------------ producer

    /**
     * enqueue, step 1: ensures a `Queues` row per queue of `@rows`; existing controls are left alone.
     */
    enqueueQueues: `INSERT INTO ${queues} (name, is_paused, is_active, retry_zombies, last_updated_utc)
      SELECT DISTINCT value ->> 'queue', 0, 1, 0, ${SQLITE_NOW_MS} FROM json_each(@rows) WHERE true
      ON CONFLICT (name) DO NOTHING`,

    /** enqueue, step 2: ensures a `StatsSummary` row per queue of `@rows`. */
    enqueueStats: `INSERT INTO ${stats} (queue)
      SELECT DISTINCT value ->> 'queue' FROM json_each(@rows) WHERE true
      ON CONFLICT (queue) DO NOTHING`,

    /**
     * enqueue, step 3: inserts Pending rows from `@rows` in input order. Runs under BEGIN IMMEDIATE
     * (or inside the caller's transaction). `ON CONFLICT DO NOTHING` (no target) skips a row whose
     * id exists or whose idempotency key an active row holds (unique partial index), so a retried
     * insert never duplicates and one key yields one row; the NOT EXISTS guards keep a retried
     * insert from re-creating a job that already finished (archive) or failed (DLQ). Returns the
     * inserted ids.
     */
    enqueue: `INSERT INTO ${hot} (id, queue, type, payload, tags, idempotency_key, priority, status,
        attempt_count, scheduled_at_utc, created_at_utc, enqueued_at_utc, last_updated_utc, created_by,
        trace_context, payload_version)
      SELECT r.value ->> 'id', r.value ->> 'queue', r.value ->> 'type', r.value ->> 'payload',
        r.value ->> 'tags', r.value ->> 'idempotency_key', r.value ->> 'priority', 0, 0,
        CASE WHEN r.value ->> 'delay_ms' IS NOT NULL THEN ${SQLITE_NOW_MS} + (r.value ->> 'delay_ms')
             ELSE r.value ->> 'run_at' END,
        ${SQLITE_NOW_MS}, ${SQLITE_NOW_MS}, ${SQLITE_NOW_MS}, r.value ->> 'created_by',
        r.value ->> 'trace_context', r.value ->> 'payload_version'
      FROM json_each(@rows) AS r
      WHERE NOT EXISTS (SELECT 1 FROM ${archive} a WHERE a.id = r.value ->> 'id')
        AND NOT EXISTS (SELECT 1 FROM ${dlq} d WHERE d.id = r.value ->> 'id')
      ORDER BY r.key
      ON CONFLICT DO NOTHING
      RETURNING id`,

    /**
     * enqueue, for an item that was not inserted: whether its id is in any pillar (three
     * primary-key lookups).
     */
    enqueueIdExists: `SELECT EXISTS (SELECT 1 FROM ${hot} WHERE id = @id)
      OR EXISTS (SELECT 1 FROM ${archive} WHERE id = @id)
      OR EXISTS (SELECT 1 FROM ${dlq} WHERE id = @id) AS found`,

    /**
     * enqueue, for an item that was not inserted and whose id is nowhere: the active job holding
     * its idempotency key (served by the unique partial index).
     */
    enqueueKeyHolder: `SELECT id FROM ${hot} WHERE idempotency_key = @key`,

    // ------------------------------------------------------------------ worker-owned transitions

    /**
     * fetchNextBatch: claim and return in one statement (UPDATE … RETURNING).
     *
     * Lock/isolation: runs alone inside BEGIN IMMEDIATE, so no other writer exists between reading
     * the candidates and the budgets and updating them; two claimers cannot take one row or spend
     * one budget (SPEC §8.1, §8.4).
     *
     * Cost is O(queues × limit), not O(backlog): for each wanted queue (CROSS JOIN keeps `budget` the
     * outer loop) a correlated subquery reads at most `@limit` due rows from the pending index in claim
     * order. ROW_NUMBER then applies `MaxWorkers − active` within that small set, so one claim cannot
     * exceed a budget either. `@queues`: queues with a queue-wide handler; `@types`: exact
     * `{queue, type, minVersion, maxVersion}` pairs: a row of a pair is a candidate only when its
     * `payload_version` is within the pair's range, so a process never claims a payload its handler
     * cannot run (a newer one stays Pending for a process that can). Like the type test, the
     * version test is a residual predicate of the ordered index scan: rows it rejects are stepped
     * over and the scan goes on to the due rows behind them (O(rows it cannot run ahead of them)
     * more reads, no lock: BEGIN IMMEDIATE already excludes every other writer). Paused and inactive queues are skipped; a queue without a `Queues` row
     * counts as unpaused, active and unlimited.
     *
     * `@start`: the first `@start` picked rows in claim order (`claim_rn`) go straight to
     * Processing, set as {@link markAsProcessing} sets them; the rest become Fetched (all with 0).
     *
     * Rate limits: a queue with `rate_limit_max` gets at most its allowance at this statement's
     * 'now' ({@link RATE_ALLOWANCE}), the instant its started rows record as `started_at_utc`, and
     * only when the claim starts every row it takes (`@start >= @limit`: a rate-limited row is
     * never buffered Fetched). The same transaction then spends the started rows
     * ({@link fetchNextBatchSpendRate}); BEGIN IMMEDIATE serialises it with every other claim.
     */
    fetchNextBatch: `WITH
      handled_queue(queue) AS (SELECT value FROM json_each(@queues)),
      handled_type(queue, type, min_version, max_version) AS (
        SELECT value ->> 'queue', value ->> 'type', value ->> 'minVersion', value ->> 'maxVersion'
        FROM json_each(@types)),
      wanted(queue) AS (SELECT queue FROM handled_queue UNION SELECT queue FROM handled_type),
      budget(queue, any_type, remaining) AS (
        SELECT w.queue,
               w.queue IN (SELECT queue FROM handled_queue),
               MIN(CASE WHEN q.max_workers IS NULL THEN @limit
                        ELSE q.max_workers - (SELECT COUNT(*) FROM ${hot} a
                                               WHERE a.queue = w.queue AND a.status IN (1, 2)) END,
                   CASE WHEN q.rate_limit_max IS NULL THEN @limit
                        WHEN @start < @limit THEN 0
                        ELSE ${RATE_ALLOWANCE} END)
        FROM wanted w LEFT JOIN ${queues} q ON q.name = w.queue
        WHERE COALESCE(q.is_paused, 0) = 0 AND COALESCE(q.is_active, 1) = 1
      ),
      candidate AS (
        SELECT h.id, h.queue, h.priority, COALESCE(h.scheduled_at_utc, h.enqueued_at_utc) AS due,
               b.remaining
        FROM budget b CROSS JOIN ${hot} h
        WHERE b.remaining > 0
          AND h.id IN (
            SELECT c.id FROM ${hot} c
            WHERE c.status = 0 AND c.queue = b.queue
              AND (c.scheduled_at_utc IS NULL OR c.scheduled_at_utc <= ${SQLITE_NOW_MS})
              AND (b.any_type OR EXISTS (
                SELECT 1 FROM handled_type t
                WHERE t.queue = b.queue AND t.type = c.type
                  AND c.payload_version BETWEEN t.min_version AND t.max_version))
            ORDER BY c.priority DESC, COALESCE(c.scheduled_at_utc, c.enqueued_at_utc), c.id
            LIMIT @limit)
      ),
      ranked AS (
        SELECT id, priority, due, remaining,
               ROW_NUMBER() OVER (PARTITION BY queue ORDER BY priority DESC, due, id) AS rn
        FROM candidate
      ),
      picked AS (
        SELECT id, ROW_NUMBER() OVER (ORDER BY priority DESC, due, id) AS claim_rn
        FROM ranked WHERE rn <= remaining ORDER BY priority DESC, due, id LIMIT @limit
      )
      ${claimUpdate}`,

    /**
     * fetchNextBatch for the most common worker: one queue, a queue-wide handler, and a caller
     * that believes the queue has no budget (`budgetedQueues`). One ordered scan of the pending
     * index, no JSON, no per-queue budget: about a third cheaper than {@link fetchNextBatch}. The
     * queue is skipped if its `Queues` row says paused, inactive, budgeted or rate limited at this
     * moment (a stale hint cannot overspend a budget or a rate); a queue without a row counts as unpaused, active and
     * unlimited, as in {@link fetchNextBatch}. Same BEGIN IMMEDIATE, same `@start`, same UPDATE.
     * (PostgreSQL's `fetchNextBatchUnbudgeted` takes any set of queues; this one takes one.)
     */
    fetchNextBatchOneQueue: `WITH
      picked AS (
        SELECT c.id,
               ROW_NUMBER() OVER (ORDER BY c.priority DESC,
                                  COALESCE(c.scheduled_at_utc, c.enqueued_at_utc), c.id) AS claim_rn
        FROM ${hot} c
        WHERE c.status = 0 AND c.queue = @queue
          AND (c.scheduled_at_utc IS NULL OR c.scheduled_at_utc <= ${SQLITE_NOW_MS})
          AND NOT EXISTS (SELECT 1 FROM ${queues} q WHERE q.name = @queue
                            AND (q.is_paused <> 0 OR q.is_active = 0 OR q.max_workers IS NOT NULL
                                 OR q.rate_limit_max IS NOT NULL))
        ORDER BY c.priority DESC, COALESCE(c.scheduled_at_utc, c.enqueued_at_utc), c.id
        LIMIT @limit
      )
      ${claimUpdate}`,

    /**
     * fetchNextBatch, in the claim's transaction after its statement: spends the rows it started
     * on each rate-limited queue. `@spent`: a JSON array of `{queue, n, t}`, `t` the rows'
     * `started_at_utc` (the claim statement's 'now', at which it computed the allowance). The
     * window rolls over when its first start is one window older than `t`; the rolled-over window
     * becomes the previous one. Queues without a limit are left alone.
     */
    fetchNextBatchSpendRate: `WITH spent(queue, n, t) AS (
        SELECT value ->> 'queue', value ->> 'n', value ->> 't' FROM json_each(@spent)
      )
      UPDATE ${queues} AS q
      SET rate_prev_count = CASE WHEN ${RATE_ROLLED('s.t')} THEN q.rate_window_count
                                 ELSE q.rate_prev_count END,
          rate_prev_last = CASE WHEN ${RATE_ROLLED('s.t')} THEN q.rate_window_last
                                ELSE q.rate_prev_last END,
          rate_window_count = CASE WHEN ${RATE_ROLLED('s.t')} THEN s.n
                                   ELSE q.rate_window_count + s.n END,
          rate_window_start = CASE WHEN ${RATE_ROLLED('s.t')} THEN s.t ELSE q.rate_window_start END,
          rate_window_last = s.t
      FROM spent s
      WHERE q.name = s.queue AND q.rate_limit_max IS NOT NULL`,

    /**
     * fetchNextBatch, when the claim took fewer rows than asked: the rate state of the handled
     * queues (`@queues`, a JSON array) that have a rate limit, and the database clock, from which
     * the store computes how long until the first of them may start a job again
     * (`storage/shared/rate-window.ts`). In the claim's transaction.
     */
    fetchNextBatchRateState: `SELECT rate_limit_max AS max, rate_limit_per_ms AS per_ms,
        rate_window_count AS window_count, rate_prev_count AS prev_count,
        rate_window_start AS window_start_ms, rate_window_last AS window_last_ms,
        rate_prev_last AS prev_last_ms, ${SQLITE_NOW_MS} AS now_ms
      FROM ${queues}
      WHERE name IN (SELECT value FROM json_each(@queues)) AND rate_limit_max IS NOT NULL`,

    /**
     * Rows already Processing under the very same lease: a retry after an ambiguous commit (only
     * the caller can have started them). Read in markAsProcessing's transaction, before its UPDATE.
     */
    markAsProcessingStarted: `WITH ${LEASE_CTE}
      SELECT id FROM ${hot} WHERE status = 2 AND ${OWNED}`,

    /**
     * Fetched → Processing; the last stale-prefetch guard (lease matches AND status = 1). Returns
     * each started row's queue and start lag (from due to now, ms), which the same transaction
     * adds to the start bucket ({@link addBuckets}).
     */
    markAsProcessing: `WITH ${LEASE_CTE}
      UPDATE ${hot}
      SET status = 2, attempt_count = attempt_count + 1, started_at_utc = ${SQLITE_NOW_MS},
          heartbeat_utc = ${SQLITE_NOW_MS}, last_updated_utc = ${SQLITE_NOW_MS}
      WHERE status = 1 AND ${OWNED}
      RETURNING id, queue,
        MAX(0, started_at_utc - COALESCE(scheduled_at_utc, enqueued_at_utc)) AS lag_ms`,

    /** One statement per process: heartbeat for Processing rows, LastUpdatedUtc for Fetched rows. */
    keepAlive: `WITH ${LEASE_CTE}
      UPDATE ${hot}
      SET heartbeat_utc = CASE WHEN status = 2 THEN ${SQLITE_NOW_MS} ELSE heartbeat_utc END,
          last_updated_utc = CASE WHEN status = 1 THEN ${SQLITE_NOW_MS} ELSE last_updated_utc END
      WHERE status IN (1, 2) AND worker_id = @workerId AND ${OWNED}
      RETURNING id, cancel_requested_utc`,

    /** Fetched → Pending for owned rows; with `@delayMs`, not eligible before now + delay. */
    release: `WITH ${LEASE_CTE}
      UPDATE ${hot}
      SET status = 0, worker_id = NULL, lease_id = NULL, last_updated_utc = ${SQLITE_NOW_MS},
          scheduled_at_utc = CASE WHEN @delayMs IS NULL THEN scheduled_at_utc
                                  ELSE ${SQLITE_NOW_MS} + @delayMs END
      WHERE status = 1 AND ${OWNED}
      RETURNING queue`,

    /**
     * Processing → Pending for owned rows whose handler never ran (started ahead, handed back):
     * the attempt the claim counted is refunded and the start cleared; `@delayMs` as `release`.
     */
    unstart: `WITH ${LEASE_CTE}
      UPDATE ${hot}
      SET status = 0, attempt_count = attempt_count - 1, started_at_utc = NULL, heartbeat_utc = NULL,
          worker_id = NULL, lease_id = NULL, last_updated_utc = ${SQLITE_NOW_MS},
          scheduled_at_utc = CASE WHEN @delayMs IS NULL THEN scheduled_at_utc
                                  ELSE ${SQLITE_NOW_MS} + @delayMs END
      WHERE status = 2 AND ${OWNED}
      RETURNING queue`,

    /**
     * Progress and its note of an owned Processing row (lease matches AND status = 2); a NULL
     * `@note` clears the note (a note describes the progress it came with).
     */
    reportProgress: `UPDATE ${hot}
      SET progress = @progress, progress_note = @note, last_updated_utc = ${SQLITE_NOW_MS}
      WHERE id = @id AND worker_id = @workerId AND lease_id = @leaseId AND status = 2`,

    /**
     * Processing → Pending after a retryable failure (lease matches AND status = 2). Returns the
     * queue, and what the run's attempt row needs of the columns the UPDATE leaves as they were
     * (the worker and lease are the fence's).
     */
    rescheduleForRetry: `UPDATE ${hot}
      SET status = 0, worker_id = NULL, lease_id = NULL, heartbeat_utc = NULL,
          scheduled_at_utc = ${SQLITE_NOW_MS} + @delayMs, last_error = @error,
          last_updated_utc = ${SQLITE_NOW_MS}
      WHERE id = @id AND worker_id = @workerId AND lease_id = @leaseId AND status = 2
      RETURNING id, queue, attempt_count, started_at_utc`,

    /**
     * Step 1 of archiveSucceeded: copy the owned rows (Status 1 or 2) of `@leases` (which carry
     * `durationMs`) into the archive, straight from the hot table, and return (id, queue,
     * duration_ms) for the counters. Step 2 deletes exactly those rows
     * ({@link archiveSucceededDelete}): inside BEGIN IMMEDIATE nothing can change between the two,
     * and any error rolls both back.
     * Insert-then-delete in SQL, rather than delete-returning-then-insert through JSON, keeps the
     * payloads out of JavaScript: the archive is the hottest move.
     */
    archiveSucceeded: `WITH completed(id, worker_id, lease_id, duration_ms) AS (
        SELECT value ->> 'id', value ->> 'workerId', value ->> 'leaseId', value ->> 'durationMs'
        FROM json_each(@leases)
      )
      INSERT INTO ${archive} (${ARCHIVE_COPIED.join(', ')}, finished_at_utc, duration_ms)
      SELECT ${ARCHIVE_COPIED.map((c) => `h.${c}`).join(', ')}, ${SQLITE_NOW_MS}, c.duration_ms
      FROM completed c
      JOIN ${hot} h ON h.id = c.id AND h.worker_id = c.worker_id AND h.lease_id = c.lease_id
      WHERE h.status IN (1, 2)
      RETURNING id, queue, duration_ms`,

    /**
     * Step 2 of archiveSucceeded: delete the rows step 1 archived (same `@leases`, same test) and
     * return which run each was, `(id, lease_id)`.
     */
    archiveSucceededDelete: `WITH ${LEASE_CTE}
      DELETE FROM ${hot} WHERE status IN (1, 2) AND ${OWNED}
      RETURNING id, lease_id`,

    /**
     * Step 1 of moveToDlq with a lease: delete the exact owned rows (Status 1 or 2)
     * and capture them. Inside BEGIN IMMEDIATE with the inserts and counters that follow; any error
     * before COMMIT rolls the delete back.
     */
    moveToDlq: `WITH ${LEASE_CTE}
      DELETE FROM ${hot} WHERE status IN (1, 2) AND ${OWNED} RETURNING *`,

    /** Step 1 of an admin/rescue moveToDlq by id: any hot row. Same transaction shape. */
    moveToDlqById: `DELETE FROM ${hot} WHERE id = @id RETURNING *`,

    /**
     * Step 2 of every Hot → DLQ move: insert the captured rows (`@moved`, whose `status` already holds
     * the DLQ status and which carry `failure_reason` and `error_details`); a conflict aborts the move.
     */
    moveToDlqInsert: `INSERT INTO ${dlq} (${dlqColumns.join(', ')}, failed_at_utc)
      SELECT ${fromMoved(dlqColumns)}, ${SQLITE_NOW_MS}
      FROM json_each(@moved) AS m ORDER BY m.key`,

    /** Step 1 of cancel: Pending and Fetched rows among `@ids`. Same transaction shape. */
    cancel: `DELETE FROM ${hot} WHERE status IN (0, 1) AND id IN ${IDS} RETURNING *`,

    /** Processing rows get CancelRequestedUtc; their owner aborts them and moves them to the DLQ. */
    cancelRequest: `UPDATE ${hot}
      SET cancel_requested_utc = COALESCE(cancel_requested_utc, ${SQLITE_NOW_MS}),
          last_modified_by = COALESCE(@actor, last_modified_by)
      WHERE status = 2 AND id IN ${IDS}
      RETURNING id`,

    /**
     * The attempt rows of runs a move ends (the rules: `storage/shared/attempts.ts`), in that
     * move's BEGIN IMMEDIATE transaction, after its update or delete: `@attempts` is a JSON array
     * of `{id, attempt_count, worker_id, lease_id, started_at_utc, outcome, error}` read from the
     * hot rows the move changed. `seq` is one more than the job's last row (a range of the primary
     * key); the write lock held since BEGIN means no other writer can add one meanwhile. The error
     * keeps its first `MAX_ATTEMPT_ERROR` characters; the duration is finish minus start.
     */
    recordAttempts: `INSERT INTO ${attempts} (job_id, seq, attempt, worker_id, lease_id,
        started_at_utc, finished_at_utc, outcome, error, duration_ms)
      SELECT a.value ->> 'id',
        COALESCE((SELECT MAX(x.seq) FROM ${attempts} x WHERE x.job_id = a.value ->> 'id'), 0) + 1,
        a.value ->> 'attempt_count', a.value ->> 'worker_id', a.value ->> 'lease_id',
        a.value ->> 'started_at_utc', ${SQLITE_NOW_MS}, a.value ->> 'outcome',
        substr(a.value ->> 'error', 1, ${MAX_ATTEMPT_ERROR}),
        CASE WHEN a.value ->> 'started_at_utc' IS NOT NULL
             THEN MAX(0, ${SQLITE_NOW_MS} - (a.value ->> 'started_at_utc')) END
      FROM json_each(@attempts) AS a ORDER BY a.key`,

    /**
     * The attempt rows of the jobs `@ids` (archive or DLQ rows deleted in the same transaction by
     * purge or retention): their history goes with them. One primary-key range per job.
     */
    deleteAttempts: `DELETE FROM ${attempts} WHERE job_id IN ${IDS}`,

    // ------------------------------------------------------------------ counters and buckets
    // Shared last steps of every operation that counts (the starts of a claim and of
    // markAsProcessing, a delayed release, rescheduleForRetry, the moves, the resurrects,
    // archiveZombies), inside that operation's transaction.

    /**
     * Lifetime counters: one row per queue per batch (`@deltas` is already grouped by queue), so a
     * batch of n jobs updates each stats row once, not n times.
     */
    addCounters: `INSERT INTO ${stats} (queue, succeeded_total, failed_total, cancelled_total,
        retried_total, resurrected_total, last_activity_utc)
      SELECT value ->> 'queue', value ->> 'succeeded', value ->> 'failed', value ->> 'cancelled',
        value ->> 'retried', value ->> 'resurrected', ${SQLITE_NOW_MS}
      FROM json_each(@deltas) WHERE true
      ON CONFLICT (queue) DO UPDATE SET
        succeeded_total = succeeded_total + excluded.succeeded_total,
        failed_total = failed_total + excluded.failed_total,
        cancelled_total = cancelled_total + excluded.cancelled_total,
        retried_total = retried_total + excluded.retried_total,
        resurrected_total = resurrected_total + excluded.resurrected_total,
        last_activity_utc = excluded.last_activity_utc`,

    /**
     * Metric buckets of the current minute; `@buckets` is grouped by (queue, outcome, reason). The
     * start rows (outcome 4) carry the start lag, the others zeros there.
     */
    addBuckets: `INSERT INTO ${buckets} (bucket_utc, queue, outcome, failure_reason, completed_count,
        duration_count, total_duration_ms, max_duration_ms, lag_count, lag_sum_ms, lag_max_ms)
      SELECT ${BUCKET_NOW}, value ->> 'queue', value ->> 'outcome', value ->> 'failure_reason',
        value ->> 'completed', value ->> 'duration_count', value ->> 'total_duration_ms',
        value ->> 'max_duration_ms', value ->> 'lag_count', value ->> 'lag_sum_ms',
        value ->> 'lag_max_ms'
      FROM json_each(@buckets) WHERE true
      ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE SET
        completed_count = completed_count + excluded.completed_count,
        duration_count = duration_count + excluded.duration_count,
        total_duration_ms = total_duration_ms + excluded.total_duration_ms,
        max_duration_ms = MAX(max_duration_ms, excluded.max_duration_ms),
        lag_count = lag_count + excluded.lag_count,
        lag_sum_ms = lag_sum_ms + excluded.lag_sum_ms,
        lag_max_ms = MAX(lag_max_ms, excluded.lag_max_ms)`,

    // ------------------------------------------------------------------ DLQ → hot

    /**
     * Step 1 of resurrect and resurrectMany: delete from the DLQ first and capture. Under BEGIN
     * IMMEDIATE two operators are serialised, and the second finds nothing to delete (SPEC §8.9).
     */
    resurrect: `DELETE FROM ${dlq} WHERE id IN ${IDS} RETURNING *`,

    /**
     * Step 2 of every resurrect (by id, many, by filter): the captured rows return as Pending,
     * attempts 0, EnqueuedAtUtc = now, CreatedAtUtc, the producer's trace context and the payload
     * version kept, no
     * idempotency key, the DLQ error kept as LastError. Edits: `@payload` (null = keep),
     * `@setTags` 1 with `@tags`, `@priority` (null = keep). No ON CONFLICT: if the insert fails,
     * the whole transaction, DLQ delete included, rolls back.
     */
    resurrectInsert: `INSERT INTO ${hot} (id, queue, type, payload, tags, idempotency_key, priority,
        status, attempt_count, scheduled_at_utc, created_at_utc, enqueued_at_utc, last_updated_utc,
        created_by, last_modified_by, last_error, trace_context, payload_version)
      SELECT m.value ->> 'id', m.value ->> 'queue', m.value ->> 'type',
        COALESCE(@payload, m.value ->> 'payload'),
        CASE WHEN @setTags = 1 THEN @tags ELSE m.value ->> 'tags' END,
        NULL, COALESCE(@priority, m.value ->> 'priority'), 0, 0, NULL,
        m.value ->> 'created_at_utc', ${SQLITE_NOW_MS}, ${SQLITE_NOW_MS},
        m.value ->> 'created_by', COALESCE(@actor, m.value ->> 'last_modified_by'),
        COALESCE(m.value ->> 'error_details', m.value ->> 'last_error'),
        m.value ->> 'trace_context', m.value ->> 'payload_version'
      FROM json_each(@moved) AS m ORDER BY m.key`,

    // ------------------------------------------------------------------ rescue

    /**
     * recoverAbandoned: Fetched rows untouched for `@timeoutMs` → Pending (no user code ran).
     * Lock: BEGIN IMMEDIATE; `status = 1` is re-checked by the UPDATE itself. Bounded by `@limit`.
     */
    recoverAbandoned: `UPDATE ${hot}
      SET status = 0, worker_id = NULL, lease_id = NULL, last_updated_utc = ${SQLITE_NOW_MS}
      WHERE status = 1 AND id IN (
        SELECT id FROM ${hot}
        WHERE status = 1 AND last_updated_utc < ${SQLITE_NOW_MS} - @timeoutMs
        ORDER BY last_updated_utc LIMIT @limit)`,

    /**
     * archiveZombies, step 1: the expired Processing rows, oldest heartbeat first, at most
     * `@limit`, as they are now (every column but the payload, which the result does not carry),
     * each with `retry`: the queue's RetryZombies, or the rescuer's handler rules in `@rules` (see
     * {@link ZOMBIE_RETRY}). Lock: BEGIN IMMEDIATE, in one transaction with steps 2 and 3, so
     * nothing changes these rows in between.
     */
    archiveZombies: `SELECT ${ZOMBIE_COLUMNS.map((c) => `h.${c}`).join(', ')}, ${ZOMBIE_RETRY} AS retry
      FROM ${hot} h LEFT JOIN ${queues} q ON q.name = h.queue
      WHERE h.status = 2
        AND COALESCE(h.heartbeat_utc, h.started_at_utc, h.last_updated_utc)
            < ${SQLITE_NOW_MS} - COALESCE(q.zombie_timeout_seconds * 1000, @defaultTimeoutMs)
      ORDER BY h.heartbeat_utc LIMIT @limit`,

    /**
     * archiveZombies, step 2: the rows of step 1 to retry (`@ids`) → Pending with LastError,
     * attempt kept. Same transaction as step 1.
     */
    archiveZombiesRetry: `UPDATE ${hot}
      SET status = 0, worker_id = NULL, lease_id = NULL, heartbeat_utc = NULL,
          last_error = @error, last_updated_utc = ${SQLITE_NOW_MS}
      WHERE status = 2 AND id IN ${IDS}
      RETURNING id, queue`,

    /**
     * archiveZombies, step 3: the other rows of step 1 (`@ids`), step 1 of the Hot → DLQ (Zombie)
     * move: delete and capture them. Same transaction, with the inserts and counters.
     */
    archiveZombiesDelete: `DELETE FROM ${hot} WHERE status = 2 AND id IN ${IDS} RETURNING *`,

    // ------------------------------------------------------------------ queues

    /** getQueues. */
    getQueues: `SELECT * FROM ${queues} ORDER BY name`,

    /**
     * updateQueue: upserts a queue with the fields present in `@patch` (a JSON object; `json_type` is NULL for an
     * absent key and 'null' for an explicit null, so "leave as is" and "clear" differ). One statement
     * under BEGIN IMMEDIATE: concurrent upserts serialise. Clearing the rate limit clears its window
     * state too; changing it keeps the starts already counted.
     */
    updateQueue: `INSERT INTO ${queues} (name, is_paused, is_active, max_workers, zombie_timeout_seconds,
        execution_timeout_ms, retry_zombies, rate_limit_max, rate_limit_per_ms, last_updated_utc)
      VALUES (@name, COALESCE(@patch ->> 'isPaused', 0), COALESCE(@patch ->> 'isActive', 1),
        @patch ->> 'maxWorkers', @patch ->> 'zombieTimeoutSeconds', @patch ->> 'executionTimeoutMs',
        COALESCE(@patch ->> 'retryZombies', 0), @patch ->> '$.rateLimit.max',
        @patch ->> '$.rateLimit.perMs', ${SQLITE_NOW_MS})
      ON CONFLICT (name) DO UPDATE SET
        is_paused = CASE WHEN json_type(@patch, '$.isPaused') IS NULL THEN is_paused
                         ELSE excluded.is_paused END,
        is_active = CASE WHEN json_type(@patch, '$.isActive') IS NULL THEN is_active
                         ELSE excluded.is_active END,
        max_workers = CASE WHEN json_type(@patch, '$.maxWorkers') IS NULL THEN max_workers
                           ELSE excluded.max_workers END,
        zombie_timeout_seconds = CASE WHEN json_type(@patch, '$.zombieTimeoutSeconds') IS NULL
                                      THEN zombie_timeout_seconds
                                      ELSE excluded.zombie_timeout_seconds END,
        execution_timeout_ms = CASE WHEN json_type(@patch, '$.executionTimeoutMs') IS NULL
                                    THEN execution_timeout_ms ELSE excluded.execution_timeout_ms END,
        retry_zombies = CASE WHEN json_type(@patch, '$.retryZombies') IS NULL THEN retry_zombies
                             ELSE excluded.retry_zombies END,
        rate_limit_max = CASE WHEN json_type(@patch, '$.rateLimit') IS NULL THEN rate_limit_max
                              ELSE excluded.rate_limit_max END,
        rate_limit_per_ms = CASE WHEN json_type(@patch, '$.rateLimit') IS NULL THEN rate_limit_per_ms
                                 ELSE excluded.rate_limit_per_ms END,
        rate_window_start = CASE WHEN json_type(@patch, '$.rateLimit') = 'null' THEN NULL
                                 ELSE rate_window_start END,
        rate_window_last = CASE WHEN json_type(@patch, '$.rateLimit') = 'null' THEN NULL
                                ELSE rate_window_last END,
        rate_window_count = CASE WHEN json_type(@patch, '$.rateLimit') = 'null' THEN NULL
                                 ELSE rate_window_count END,
        rate_prev_last = CASE WHEN json_type(@patch, '$.rateLimit') = 'null' THEN NULL
                              ELSE rate_prev_last END,
        rate_prev_count = CASE WHEN json_type(@patch, '$.rateLimit') = 'null' THEN NULL
                               ELSE rate_prev_count END,
        last_updated_utc = excluded.last_updated_utc
      RETURNING *`,

    // ------------------------------------------------------------------ purge and retention

    /** purgeDlq: by id; counters untouched. Returns the ids, whose attempt rows go next. */
    purgeDlq: `DELETE FROM ${dlq} WHERE id IN ${IDS} RETURNING id`,

    /**
     * applyRetention batch: archive rows finished before `@cutoff`; each batch its own
     * transaction, which deletes the returned ids' attempt rows too ({@link deleteAttempts}).
     */
    applyRetentionArchive: `DELETE FROM ${archive} WHERE id IN (
        SELECT id FROM ${archive} WHERE finished_at_utc < @cutoff ORDER BY finished_at_utc LIMIT @limit)
      RETURNING id`,
    /** applyRetention batch: DLQ rows failed before `@cutoff`; as the archive's. */
    applyRetentionDlq: `DELETE FROM ${dlq} WHERE id IN (
        SELECT id FROM ${dlq} WHERE failed_at_utc < @cutoff ORDER BY failed_at_utc LIMIT @limit)
      RETURNING id`,
    /** applyRetention batch: metric buckets older than `@cutoff` (primary key leads with bucket_utc). */
    applyRetentionBuckets: `DELETE FROM ${buckets} WHERE rowid IN (
        SELECT rowid FROM ${buckets} WHERE bucket_utc < @cutoff ORDER BY bucket_utc LIMIT @limit)`,
    /**
     * applyRetention batch: Workers rows last seen before `@cutoff` (stopped or lost workers: a
     * live one reports every heartbeat). A worker that reports again writes its row anew.
     */
    applyRetentionWorkers: `DELETE FROM ${workers} WHERE worker_id IN (
        SELECT worker_id FROM ${workers} WHERE last_seen_utc < @cutoff
        ORDER BY last_seen_utc LIMIT @limit)`,

    /** applyRetention batch: audit log entries recorded before `@cutoff`. */
    applyRetentionAudit: `DELETE FROM ${audit} WHERE id IN (
        SELECT id FROM ${audit} WHERE at_utc < @cutoff ORDER BY at_utc LIMIT @limit)`,

    // ------------------------------------------------------------------ audit log

    /**
     * recordAudit: the audit row of an action, in the BEGIN IMMEDIATE transaction of the change it
     * records. A later batch of the same action (same id) adds its rows and, when it brings
     * details, replaces them (a retention run's counts so far).
     */
    recordAudit: `INSERT INTO ${audit} (id, at_utc, actor, action, target, rows_affected, details)
      VALUES (@id, ${SQLITE_NOW_MS}, @actor, @action, @target, @rows, @details)
      ON CONFLICT (id) DO UPDATE SET
        rows_affected = rows_affected + excluded.rows_affected,
        details = coalesce(excluded.details, details)`,
    /** confirmationSecret, step 1: stores the candidate unless a secret exists. */
    confirmationSecretInsert: `INSERT INTO ${settings} (name, value)
      VALUES ('confirmation-secret', @candidate) ON CONFLICT (name) DO NOTHING`,
    /** confirmationSecret, step 2 (same transaction): the stored secret. */
    confirmationSecret: `SELECT value FROM ${settings} WHERE name = 'confirmation-secret'`,

    // ------------------------------------------------------------------ workers

    /**
     * upsertWorker: the reporting worker's row, every time from the database clock. `@starting`
     * 1 sets `started_at_utc` and clears `stopped_at_utc` (a new run of the process); a later
     * report keeps both. One statement under BEGIN IMMEDIATE.
     */
    upsertWorker: `INSERT INTO ${workers} (worker_id, host, pid, library_version, started_at_utc,
        last_seen_utc, concurrency, running, handled, circuits, is_draining, stopped_at_utc)
      VALUES (@workerId, @host, @pid, @libraryVersion, ${SQLITE_NOW_MS}, ${SQLITE_NOW_MS},
        @concurrency, @running, @handled, @circuits, @draining, NULL)
      ON CONFLICT (worker_id) DO UPDATE SET
        host = excluded.host, pid = excluded.pid, library_version = excluded.library_version,
        started_at_utc = CASE WHEN @starting = 1 THEN excluded.started_at_utc
                              ELSE started_at_utc END,
        last_seen_utc = excluded.last_seen_utc,
        concurrency = excluded.concurrency, running = excluded.running,
        handled = excluded.handled, circuits = excluded.circuits,
        is_draining = excluded.is_draining,
        stopped_at_utc = CASE WHEN @starting = 1 THEN NULL ELSE stopped_at_utc END`,

    /** markWorkerStopped: a clean stop; stop and last-seen times now, nothing running. */
    markWorkerStopped: `UPDATE ${workers}
      SET stopped_at_utc = ${SQLITE_NOW_MS}, last_seen_utc = ${SQLITE_NOW_MS}, running = 0
      WHERE worker_id = @workerId AND stopped_at_utc IS NULL`,

    // ------------------------------------------------------------------ recurring

    /**
     * upsertRecurringJob: keeps LastSlotUtc, LastJobId and IsPaused; resets NextSlotUtc only when
     * the cron or the zone changed.
     */
    upsertRecurringJob: `INSERT INTO ${recurring} (name, cron, time_zone, queue, type, payload,
        next_slot_utc, misfire_policy, is_paused, source)
      VALUES (@name, @cron, @timeZone, @queue, @type, @payload, @nextSlotUtc, @misfirePolicy, 0, @source)
      ON CONFLICT (name) DO UPDATE SET
        next_slot_utc = CASE WHEN cron IS NOT excluded.cron OR time_zone IS NOT excluded.time_zone
                             THEN excluded.next_slot_utc ELSE next_slot_utc END,
        cron = excluded.cron, time_zone = excluded.time_zone, queue = excluded.queue,
        type = excluded.type, payload = excluded.payload, misfire_policy = excluded.misfire_policy,
        source = excluded.source`,
    /** getRecurringJobs. */
    getRecurringJobs: `SELECT * FROM ${recurring} ORDER BY name`,
    /** setRecurringJobPaused: the changed-row count says whether the job exists. */
    setRecurringJobPaused: `UPDATE ${recurring} SET is_paused = @paused WHERE name = @name`,
    /** removeRecurringJob: the changed-row count says whether the job existed. */
    removeRecurringJob: `DELETE FROM ${recurring} WHERE name = @name`,
    /**
     * triggerRecurringJob: records the triggered job as the last run, slots untouched; in the same
     * BEGIN IMMEDIATE transaction as its enqueue. Also corrects the claim's LastJobId when the
     * slot's idempotency key met a job already hot.
     */
    triggerRecurringJob: `UPDATE ${recurring} SET last_job_id = @jobId WHERE name = @name`,

    /**
     * claimRecurringSlot: compare-and-set of NextSlotUtc; records the slot's job (when one is
     * enqueued) as LastJobId. Lock: BEGIN IMMEDIATE, in the same transaction as the enqueue, so
     * each slot is enqueued once across all processes.
     */
    claimRecurringSlot: `UPDATE ${recurring}
      SET next_slot_utc = @nextSlotUtc, last_slot_utc = @slotUtc,
          last_job_id = coalesce(@jobId, last_job_id)
      WHERE name = @name AND next_slot_utc = @slotUtc`,
  };
}

/** The write half's statements of one prefix. */
export type JobStoreStatements = ReturnType<typeof jobStoreStatements>;

/** The fixed statements of the reads (`JobQueries`), in the order of the interface, for one prefix. */
export function jobQueriesStatements(p: string) {
  const tables = sqliteTables(p);
  const { hot, archive, dlq, stats, buckets, queues, workers, rowCounts, audit } = tables;
  /** The claim's index of Pending rows (schema version 1), which the hot counts read. */
  const pendingIndex = `${p}jobs_hot_pending_ix`;
  return {
    tables,

    /** getJob: hot first, then archive, then DLQ (primary-key reads). */
    getJobHot: `SELECT * FROM ${hot} WHERE id = @id`,
    getJobArchive: `SELECT * FROM ${archive} WHERE id = @id`,
    getJobDlq: `SELECT * FROM ${dlq} WHERE id = @id`,
    /** getJob with attempts: the job's attempt rows, oldest first (a range of the primary key). */
    getJobAttempts: `SELECT * FROM ${tables.attempts} WHERE job_id = @id ORDER BY seq`,

    /**
     * getSummary: lifetime counters summed over queues, then the hot counts by status (the hot
     * table is small by design), then the archive's and the DLQ's row counts, which the triggers
     * of schema version 2 keep exact with every insert and delete (`row_counts`): two rows read,
     * never a count of the history tables.
     */
    getSummary: `SELECT COALESCE(SUM(succeeded_total), 0) AS succeeded_total,
        COALESCE(SUM(failed_total), 0) AS failed_total,
        COALESCE(SUM(cancelled_total), 0) AS cancelled_total,
        COALESCE(SUM(retried_total), 0) AS retried_total,
        COALESCE(SUM(resurrected_total), 0) AS resurrected_total
      FROM ${stats}`,
    getSummaryHot: `SELECT status, COUNT(*) AS n FROM ${hot} GROUP BY status`,
    getSummaryRetained: `SELECT pillar, row_count FROM ${rowCounts}`,

    /**
     * getQueueStats: every queue known to `Queues` or `StatsSummary`, with its counters and
     * controls; then the hot counts per queue and status (`getQueueStatsHot`). No archive or DLQ
     * count per queue.
     */
    getQueueStats: `WITH names(queue) AS (SELECT name FROM ${queues} UNION SELECT queue FROM ${stats})
      SELECT n.queue, s.succeeded_total, s.failed_total, s.cancelled_total, s.retried_total,
        s.resurrected_total, s.last_activity_utc, q.is_paused, q.is_active, q.max_workers
      FROM names n
      LEFT JOIN ${stats} s ON s.queue = n.queue
      LEFT JOIN ${queues} q ON q.name = n.queue
      ORDER BY n.queue`,
    /**
     * getQueueStats, hot counts: the Pending rows of each queue counted in the claim's index
     * `jobs_hot_pending_ix` (led by the queue, partial on `status = 0`, so it covers the count),
     * and the Fetched and Processing rows, as many as the workers run, through
     * `jobs_hot_active_ix`. A `GROUP BY queue, status` over the whole table read every row
     * (admin-reads bench, 100,000 pending rows: p95 7.5 ms, was 65 ms). `INDEXED BY`
     * requires the index: with the statistics of `ANALYZE`, the planner otherwise prefers the
     * active list's `(queue, enqueued_at_utc, id)` for its order and reads each row for its
     * status. SQLite keeps `INDEXED BY` for a time-sensitive statement whose plan must not change,
     * a statement that cannot use the index failing instead of scanning
     * (https://www.sqlite.org/lang_indexedby.html); the gentler means its planner checklist names
     * first, a unary `+` on the grouped column, gave a full scan here.
     */
    getQueueStatsHot: `SELECT queue, 0 AS status, COUNT(*) AS n
        FROM ${hot} INDEXED BY ${pendingIndex} WHERE status = 0 GROUP BY queue
      UNION ALL
      SELECT queue, status, COUNT(*) AS n FROM ${hot} WHERE status IN (1, 2) GROUP BY queue, status`,

    /**
     * getQueueHealth: due Pending rows, their average wait and the age of the oldest, from
     * `COALESCE(scheduled_at_utc, enqueued_at_utc)`, the pending index's own expression, which
     * SQLite reads from the index entry (https://www.sqlite.org/expridx.html), so one pass over
     * `jobs_hot_pending_ix` serves the due test and the waits without reading a row; active
     * counts; and the start lag of the current minute bucket and the five before it (start rows,
     * outcome 4). `INDEXED BY` pins the pending index, as in `getQueueStatsHot`: with the
     * statistics of `ANALYZE` the planner took the active list's index and read every row
     * (admin-reads bench, 100,000 pending rows: p95 14 ms, was 60 ms).
     */
    getQueueHealth: `WITH names(queue) AS (SELECT name FROM ${queues} UNION SELECT DISTINCT queue FROM ${hot}),
      due AS (
        SELECT queue, COUNT(*) AS due_pending,
          AVG(${SQLITE_NOW_MS} - COALESCE(scheduled_at_utc, enqueued_at_utc)) AS avg_lag_ms,
          ${SQLITE_NOW_MS} - MIN(COALESCE(scheduled_at_utc, enqueued_at_utc)) AS max_lag_ms
        FROM ${hot} INDEXED BY ${pendingIndex}
        WHERE status = 0 AND COALESCE(scheduled_at_utc, enqueued_at_utc) <= ${SQLITE_NOW_MS}
        GROUP BY queue),
      active AS (SELECT queue, COUNT(*) AS n FROM ${hot} WHERE status IN (1, 2) GROUP BY queue),
      lag AS (
        SELECT queue, SUM(lag_count) AS lag_count, SUM(lag_sum_ms) AS lag_sum_ms,
          MAX(lag_max_ms) AS lag_max_ms
        FROM ${buckets}
        WHERE outcome = 4 AND bucket_utc >= ${BUCKET_NOW} - ${5 * METRIC_BUCKET_MS}
        GROUP BY queue)
      SELECT n.queue, COALESCE(d.due_pending, 0) AS due_pending, COALESCE(d.avg_lag_ms, 0) AS avg_lag_ms,
        COALESCE(d.max_lag_ms, 0) AS max_lag_ms, COALESCE(a.n, 0) AS active, q.max_workers,
        COALESCE(l.lag_count, 0) AS lag_count, COALESCE(l.lag_sum_ms, 0) AS lag_sum_ms,
        COALESCE(l.lag_max_ms, 0) AS lag_max_ms
      FROM names n
      LEFT JOIN due d ON d.queue = n.queue
      LEFT JOIN active a ON a.queue = n.queue
      LEFT JOIN lag l ON l.queue = n.queue
      LEFT JOIN ${queues} q ON q.name = n.queue
      ORDER BY n.queue`,

    /**
     * getQueueOutcomes: how each queue's runs ended since `@minutes` whole minutes before the
     * current minute, from the buckets of outcomes 0–3, a range of the primary key (bucket_utc
     * first) summed per queue in one pass, joined to every `queues` row (zeros for a queue without
     * buckets). At most (`@minutes` + 1) × queues × outcomes rows are read (failures split by
     * reason add a few). The window's start is computed once (`MATERIALIZED`): SQLite's "now" is
     * fixed within one step of a statement only (https://www.sqlite.org/lang_datefunc.html), and
     * each returned row is a step. The unary `+` on the grouped column (the planner checklist's
     * first means, https://www.sqlite.org/queryplanner-ng.html#howtofix) keeps the planner from
     * reading `metric_buckets_queue_ix` for the grouping's order: without statistics it chose that
     * index and read every bucket of the table (retention keeps days of them) to save a sort of
     * the window's rows. An expression offers no index order, so the window's range of the
     * primary key is read instead, and its rows grouped in a temporary B-tree.
     */
    getQueueOutcomes: `WITH w(from_utc) AS MATERIALIZED (
        SELECT ${BUCKET_NOW} - @minutes * ${METRIC_BUCKET_MS})
      SELECT q.name AS queue, w.from_utc,
        COALESCE(o.succeeded, 0) AS succeeded, COALESCE(o.failed, 0) AS failed,
        COALESCE(o.cancelled, 0) AS cancelled, COALESCE(o.retried, 0) AS retried
      FROM ${queues} q
      CROSS JOIN w
      LEFT JOIN (
        SELECT b.queue,
          SUM(CASE WHEN b.outcome = 0 THEN b.completed_count ELSE 0 END) AS succeeded,
          SUM(CASE WHEN b.outcome = 1 THEN b.completed_count ELSE 0 END) AS failed,
          SUM(CASE WHEN b.outcome = 2 THEN b.completed_count ELSE 0 END) AS cancelled,
          SUM(CASE WHEN b.outcome = 3 THEN b.completed_count ELSE 0 END) AS retried
        FROM ${buckets} b
        WHERE b.bucket_utc >= (SELECT from_utc FROM w) AND b.outcome IN (0, 1, 2, 3)
        GROUP BY +b.queue) o ON o.queue = q.name
      ORDER BY q.name`,

    /**
     * getThroughput: completions by outcome over the current minute and the previous one, and over
     * the current minute and the five before it (NULL `@queue` = all queues).
     */
    getThroughput: `SELECT outcome,
        COALESCE(SUM(CASE WHEN bucket_utc >= ${BUCKET_NOW} - ${METRIC_BUCKET_MS} THEN completed_count END), 0) AS n1m,
        COALESCE(SUM(completed_count), 0) AS n5m
      FROM ${buckets}
      WHERE bucket_utc >= ${BUCKET_NOW} - ${5 * METRIC_BUCKET_MS} AND outcome IN (0, 1, 2)
        AND (@queue IS NULL OR queue = @queue)
      GROUP BY outcome`,
    /** getThroughput: how long each window covers so far (from its first bucket to now), in ms. */
    getThroughputSpans: `SELECT ${SQLITE_NOW_MS} - (${BUCKET_NOW} - ${METRIC_BUCKET_MS}) AS span_1m_ms,
        ${SQLITE_NOW_MS} - (${BUCKET_NOW} - ${5 * METRIC_BUCKET_MS}) AS span_5m_ms`,

    /**
     * getThroughputSeries, all queues: the buckets of [@from, @to) summed per step (`slot`) and
     * outcome, a range of the primary key (bucket_utc first).
     */
    getThroughputSeries: seriesStatement(buckets, false),
    /** getThroughputSeries, one queue: a range of `metric_buckets_queue_ix (queue, bucket_utc)`. */
    getThroughputSeriesQueue: seriesStatement(buckets, true),

    /**
     * listWorkers: the Workers table, most recently seen first, at most `@limit` rows, each with
     * `is_lost`: not stopped and not seen for more than `@lostAfterMs` by the database clock.
     */
    listWorkers: `SELECT *, (stopped_at_utc IS NULL
          AND last_seen_utc < ${SQLITE_NOW_MS} - @lostAfterMs) AS is_lost
      FROM ${workers}
      ORDER BY last_seen_utc DESC, worker_id
      LIMIT @limit`,

    /**
     * getAuditLog: newest first from the cursor (`@at`, `@id`; null for the first page), filtered
     * by actor, action and time, at most `@limit` rows, backwards along
     * `audit_log_at_ix (at_utc, id)`.
     */
    getAuditLog: auditLogStatement(audit, false),
    /**
     * getAuditLog by target: the entries whose target is `@target`, as {@link getAuditLog},
     * backwards along `audit_log_target_ix (target, at_utc, id)` (schema version 7) from the
     * cursor. Its own text: SQLite plans a statement once, before any value is bound, so an
     * `@target IS NULL OR …` term could not use the index.
     */
    getAuditLogByTarget: auditLogStatement(audit, true),
  };
}

/** The audit page of `getAuditLog`, with or without the exact-target condition. */
function auditLogStatement(audit: string, byTarget: boolean): string {
  return `SELECT * FROM ${audit}
      WHERE (@at IS NULL OR (at_utc, id) < (@at, @id))
        AND (@actor IS NULL OR actor = @actor)
        AND (@action IS NULL OR action = @action)
        AND (@from IS NULL OR at_utc >= @from)
        AND (@to IS NULL OR at_utc < @to)${byTarget ? '\n        AND target = @target' : ''}
      ORDER BY at_utc DESC, id DESC
      LIMIT @limit`;
}

/**
 * The series read of `getThroughputSeries`; steps without buckets have no row. The slot is cast:
 * better-sqlite3 binds a JavaScript number as REAL, and REAL division does not truncate.
 */
function seriesStatement(buckets: string, queue: boolean): string {
  return `SELECT CAST((bucket_utc - @from) / @step AS INTEGER) AS slot, outcome,
        SUM(completed_count) AS count, SUM(duration_count) AS duration_count,
        SUM(total_duration_ms) AS total_duration_ms, SUM(lag_count) AS lag_count,
        SUM(lag_sum_ms) AS lag_sum_ms, MAX(lag_max_ms) AS lag_max_ms
      FROM ${buckets}
      WHERE bucket_utc >= @from AND bucket_utc < @to${queue ? ' AND queue = @queue' : ''}
      GROUP BY slot, outcome`;
}

/** The reads' statements of one prefix. */
export type JobQueriesStatements = ReturnType<typeof jobQueriesStatements>;

// -------------------------------------------------------------------- statements built per filter

/** A WHERE clause and its named parameters. */
export interface SqlWhere {
  sql: string;
  params: Record<string, unknown>;
}

/** Hot-table status filters as literals (validated 0/1/2), so the partial indexes stay usable. */
const STATUS_LITERAL: Record<number, string> = {
  0: 'status = 0',
  1: 'status = 1',
  2: 'status = 2',
};

/** Error text columns a search looks in: the DLQ error and the last retry error. */
const ERROR_COLUMNS = {
  hot: ['last_error'],
  archive: ['last_error'],
  dlq: ['error_details', 'last_error'],
} as const;

/** The tag filter: one tag, exactly, between the commas of the stored `,a,b,` string. */
function tagPredicate(tag: string, params: Record<string, unknown>): string {
  params.f_tag = escapeLike(tag);
  return `tags LIKE '%,' || @f_tag || ',%' ESCAPE '\\'`;
}

/**
 * The search filter: a substring of the id, the type, the payload or the error text, `%`, `_`,
 * `[` matched literally; LIKE is case-insensitive for ASCII letters only.
 */
function searchPredicate(pillar: Pillar, search: string, params: Record<string, unknown>): string {
  params.f_search = `%${escapeLike(search)}%`;
  const columns = ['id', 'type', 'payload', ...ERROR_COLUMNS[pillar]];
  return `(${columns.map((c) => `${c} LIKE @f_search ESCAPE '\\'`).join(' OR ')})`;
}

function commonFilter(
  pillar: Pillar,
  filter: { queue?: string; type?: string; tag?: string; search?: string },
  where: string[],
  params: Record<string, unknown>,
): void {
  if (filter.queue !== undefined) {
    where.push('queue = @f_queue');
    params.f_queue = filter.queue;
  }
  if (filter.type !== undefined) {
    where.push('type = @f_type');
    params.f_type = filter.type;
  }
  if (filter.tag !== undefined) where.push(tagPredicate(filter.tag, params));
  if (filter.search !== undefined && filter.search !== '') {
    where.push(searchPredicate(pillar, filter.search, params));
  }
}

function finish(where: string[], params: Record<string, unknown>): SqlWhere {
  return { sql: where.length > 0 ? where.join(' AND ') : '1 = 1', params };
}

/** WHERE clause of a bulk DLQ action, its preview or the error families (dates on `failed_at_utc`). */
export function dlqWhere(filter: DlqFilter): SqlWhere {
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  commonFilter('dlq', filter, where, params);
  dateRange('failed_at_utc', filter, where, params);
  if (filter.reason !== undefined) {
    where.push('failure_reason = @f_reason');
    params.f_reason = filter.reason;
  }
  if (filter.ids !== undefined) {
    where.push('id IN (SELECT value FROM json_each(@f_ids))');
    params.f_ids = JSON.stringify(filter.ids);
  }
  return finish(where, params);
}

function dateRange(
  column: 'enqueued_at_utc' | 'finished_at_utc' | 'failed_at_utc',
  filter: HistoryFilter,
  where: string[],
  params: Record<string, unknown>,
): void {
  if (filter.from !== undefined) {
    where.push(`${column} >= @f_from`);
    params.f_from = filter.from.getTime();
  }
  if (filter.to !== undefined) {
    where.push(`${column} < @f_to`);
    params.f_to = filter.to.getTime();
  }
}

/** The DLQ rows a bulk action takes next: oldest failure first, at most `@limit`. */
function chooseDlqByFilter(dlqTable: string, where: SqlWhere): string {
  return `SELECT id FROM ${dlqTable} WHERE ${where.sql} ORDER BY failed_at_utc, id LIMIT @limit`;
}

/** resurrectByFilter step 1: delete and capture one batch (BEGIN IMMEDIATE, delete first). */
export function resurrectByFilter(dlqTable: string, where: SqlWhere): string {
  return `DELETE FROM ${dlqTable} WHERE id IN (${chooseDlqByFilter(dlqTable, where)}) RETURNING *`;
}

/**
 * purgeDlqByFilter: one batch, its own transaction; counters untouched. Returns the ids, whose
 * attempt rows the same transaction deletes next.
 */
export function purgeDlqByFilter(dlqTable: string, where: SqlWhere): string {
  return `DELETE FROM ${dlqTable} WHERE id IN (${chooseDlqByFilter(dlqTable, where)}) RETURNING id`;
}

/** The rows a bulk DLQ filter matches: the matched count of `previewDlqFilter`. */
export function previewDlqFilterCount(dlqTable: string, where: SqlWhere): string {
  return `SELECT COUNT(*) AS n FROM ${dlqTable} WHERE ${where.sql}`;
}

/**
 * The window of getTopDlqErrors: the first line of the error (at most `@prefix` characters; the
 * rest is never read out) of the newest `@rows` DLQ rows matching `where` that failed within the
 * last `@window` ms (database clock), through `jobs_dlq_failed_ix` (or the queue's or the
 * reason's index) newest first, stopped by the row bound. The families are grouped in
 * `shared/error-family.ts`.
 */
export function getTopDlqErrors(dlqTable: string, where: SqlWhere): string {
  return `SELECT substr(CASE WHEN instr(COALESCE(error_details, ''), char(10)) > 0
                          THEN substr(error_details, 1, instr(error_details, char(10)) - 1)
                          ELSE COALESCE(error_details, '') END, 1, @prefix) AS line,
        failed_at_utc
      FROM ${dlqTable}
      WHERE ${where.sql} AND failed_at_utc >= ${SQLITE_NOW_MS} - @window
      ORDER BY failed_at_utc DESC LIMIT @rows`;
}

/**
 * WHERE clause of `countExactly`: the filter of the pillar's list (the time range on its sort key)
 * without a cursor; the DLQ's takes `ids` too, as its bulk actions do.
 */
export function countWhere(pillar: Pillar, filter: ActiveFilter & DlqFilter): SqlWhere {
  if (pillar === 'dlq') return dlqWhere(filter);
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  commonFilter(pillar, filter, where, params);
  if (pillar === 'hot' && filter.status !== undefined) where.push(STATUS_LITERAL[filter.status]);
  dateRange(LIST_SORT_KEY[pillar], filter, where, params);
  return finish(where, params);
}

/** countExactly: the rows of one pillar matching `where` (a plain COUNT, on request only). */
export function countExactly(table: string, where: SqlWhere): string {
  return `SELECT COUNT(*) AS n FROM ${table} WHERE ${where.sql}`;
}

/** previewDlqFilter: the ids a bulk action would take first. */
export function previewDlqFilterSample(dlqTable: string, where: SqlWhere): string {
  return chooseDlqByFilter(dlqTable, where);
}

// -------------------------------------------------------------------------------------- lists

/**
 * What a list item reads of each pillar: no payload and no full error text. `payload_bytes` is
 * `octet_length(payload)`: "the number of bytes in the encoding of text string X"
 * (https://www.sqlite.org/lang_corefunc.html#octet_length), which SQLite reads from the record
 * header, not from the value: `OP_Column` skips the content of a column it reads only for
 * `octet_length()` (`OPFLAG_BYTELENARG`), so a 1 MB payload's overflow pages are not loaded for
 * it. The columns stored after the payload (most of them: the tables' column order is version
 * 1's) still sit behind it in the record, so reading them follows the chain of its overflow pages
 * (read, not copied): about 1.5 ms per MB of payload on a warm page cache.
 */
const LIST_COLUMNS: Record<Pillar, string> = {
  hot:
    'id, queue, type, status, attempt_count, priority, tags, created_at_utc, enqueued_at_utc, ' +
    'scheduled_at_utc, started_at_utc, worker_id, progress, ' +
    `substr(last_error, 1, ${ERROR_PREFIX_CHARS}) AS error_prefix, octet_length(payload) AS payload_bytes`,
  archive:
    'id, queue, type, attempt_count, priority, tags, created_at_utc, enqueued_at_utc, ' +
    'scheduled_at_utc, started_at_utc, finished_at_utc, duration_ms, worker_id, progress, ' +
    `substr(last_error, 1, ${ERROR_PREFIX_CHARS}) AS error_prefix, octet_length(payload) AS payload_bytes`,
  dlq:
    'id, queue, type, status, failure_reason, attempt_count, priority, tags, created_at_utc, ' +
    'enqueued_at_utc, scheduled_at_utc, started_at_utc, failed_at_utc, worker_id, progress, ' +
    `substr(COALESCE(error_details, last_error), 1, ${ERROR_PREFIX_CHARS}) AS error_prefix, ` +
    'octet_length(payload) AS payload_bytes',
};

/** The conditions of a list page: `indexed` (on index keys) and `unindexed` (tag, search) or null. */
export interface ListWhere {
  indexed: SqlWhere;
  unindexed: string | null;
}

/**
 * The conditions of a list page. `indexed`: queue, type, status, failure reason, ids, the time
 * range on the sort key and the cursor, the last a row-value comparison
 * `(key, id) < (@after_at, @after_id)` (newest first) or `>` (oldest first), which SQLite reads
 * as one range of an index on `(key, id)` ("scrolling window queries",
 * https://www.sqlite.org/rowvalue.html#scrolling_window_queries). `unindexed`: the tag and the
 * search, whose parameters join `indexed.params`.
 */
export function listWhere(request: ListRequest<ActiveFilter & DlqFilter>): ListWhere {
  const { pillar, filter } = request;
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  if (filter.queue !== undefined) {
    where.push('queue = @f_queue');
    params.f_queue = filter.queue;
  }
  if (filter.type !== undefined) {
    where.push('type = @f_type');
    params.f_type = filter.type;
  }
  if (pillar === 'hot' && filter.status !== undefined) where.push(STATUS_LITERAL[filter.status]);
  if (pillar === 'dlq') {
    if (filter.reason !== undefined) {
      where.push('failure_reason = @f_reason');
      params.f_reason = filter.reason;
    }
    if (filter.ids !== undefined) {
      where.push('id IN (SELECT value FROM json_each(@f_ids))');
      params.f_ids = JSON.stringify(filter.ids);
    }
  }
  dateRange(LIST_SORT_KEY[pillar], filter, where, params);
  if (request.after !== null) {
    where.push(
      `(${LIST_SORT_KEY[pillar]}, id) ${request.order === 'newest' ? '<' : '>'} (@after_at, @after_id)`,
    );
    params.after_at = request.after.atMs;
    params.after_id = request.after.id;
  }
  const unindexed: string[] = [];
  if (filter.tag !== undefined) unindexed.push(tagPredicate(filter.tag, params));
  if (filter.search !== undefined && filter.search !== '') {
    unindexed.push(searchPredicate(pillar, filter.search, params));
  }
  return {
    indexed: finish(where, params),
    unindexed: unindexed.length === 0 ? null : unindexed.join(' AND '),
  };
}

/**
 * One page of a list (`listActive`, `listArchive`, `listDlq`) of `table`, `@limit` being
 * `limit + 1`; see `shared/page.ts` for the two shapes. A read (deferred `BEGIN`): one WAL
 * snapshot, no lock a writer waits for.
 */
export function listJobs(table: string, request: ListRequest<unknown>, where: ListWhere): string {
  const dir = request.order === 'newest' ? 'DESC' : 'ASC';
  const key = LIST_SORT_KEY[request.pillar];
  const columns = LIST_COLUMNS[request.pillar];
  if (request.scanBound === null || where.unindexed === null) {
    return `SELECT ${columns} FROM ${table} WHERE ${where.indexed.sql}
      ORDER BY ${key} ${dir}, id ${dir} LIMIT @limit`;
  }
  const bound = request.scanBound;
  const inOrder = `ORDER BY w.${key} ${dir}, w.id ${dir}`;
  return `SELECT r.* FROM (
      SELECT w.*, row_number() OVER (${inOrder}) AS rn,
        sum(w.hit) OVER (${inOrder} ROWS UNBOUNDED PRECEDING) AS hit_rank
      FROM (
        SELECT ${columns}, CASE WHEN ${where.unindexed} THEN 1 ELSE 0 END AS hit
        FROM ${table} WHERE ${where.indexed.sql}
        ORDER BY ${key} ${dir}, id ${dir} LIMIT ${bound + 1}) AS w
    ) AS r
    WHERE (r.hit = 1 AND r.hit_rank <= @limit AND r.rn <= ${bound}) OR r.rn >= ${bound}
    ORDER BY r.rn`;
}
