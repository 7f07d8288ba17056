/**
 * The claim (`fetchNextBatch`) and its steps, in one `BEGIN IMMEDIATE` transaction: the one writer
 * of the file makes every read inside it exact, so no row is claimed twice and no budget or rate is
 * overspent, with no row locks to take.
 */
import { SQLITE_NOW_MS, SqliteTables } from './fragments';

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

/** The claim and its steps: the statement in its two variants, the rate spend and the rate state. */
export function claimStatements(t: SqliteTables) {
  const { hot, queues } = t;
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
  };
}
