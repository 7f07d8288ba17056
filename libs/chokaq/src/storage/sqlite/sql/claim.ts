/**
 * The claim (`fetchNextBatch`) and its steps, in one `BEGIN IMMEDIATE` transaction: the one writer
 * of the file makes every read inside it exact, so no row is claimed twice and no budget or rate is
 * overspent, with no row locks to take.
 */
import { GROUPED, SQLITE_NOW_MS, SqliteTables } from './fragments';

/**
 * A rate limit in SQL: `max` and `per` (ms) are its settings, `st` the alias of the row that holds
 * its window state (`rate_window_start`, `rate_window_count`, `rate_window_last`,
 * `rate_prev_count`, `rate_prev_last`): a queue's own, or a group's (`job_groups`).
 */
interface RateSql {
  max: string;
  per: string;
  st: string;
}

/** A queue's own rate limit, of the `Queues` row `q`. */
const QUEUE_RATE: RateSql = { max: 'q.rate_limit_max', per: 'q.rate_limit_per_ms', st: 'q' };

/**
 * Whether the rate window has rolled over at `t` (epoch ms): none yet, or its first start is at
 * least one window (`per`) old.
 */
const RATE_ROLLED = (t: string, r: RateSql = QUEUE_RATE): string =>
  `(${r.st}.rate_window_start IS NULL OR ${t} >= ${r.st}.rate_window_start + ${r.per})`;

/**
 * How many jobs may start now under the rate limit: `max` less the starts of the current window,
 * less those of the previous window while its last start is within one window of now (the rule of
 * `storage/shared/rate-window.ts`, which the library README explains).
 */
const rateAllowance = (r: RateSql): string => `MAX(0, ${r.max}
                          - CASE WHEN ${RATE_ROLLED(SQLITE_NOW_MS, r)}
                                 THEN CASE WHEN ${r.st}.rate_window_last > ${SQLITE_NOW_MS} - ${r.per}
                                           THEN COALESCE(${r.st}.rate_window_count, 0) ELSE 0 END
                                 ELSE COALESCE(${r.st}.rate_window_count, 0)
                                      + CASE WHEN ${r.st}.rate_prev_last > ${SQLITE_NOW_MS} - ${r.per}
                                             THEN COALESCE(${r.st}.rate_prev_count, 0) ELSE 0 END
                            END)`;

/** How many of `q`'s jobs may start now under its own rate limit ({@link rateAllowance}). */
const RATE_ALLOWANCE = rateAllowance(QUEUE_RATE);

/**
 * The SET list that spends `n` starts at `t` of the rate window held by `r.st` (the updated row's
 * own alias): a rolled-over window becomes the previous one and a new one starts at `t`. Every
 * expression reads the row as it was before the update.
 */
const rateSpend = (t: string, n: string, r: RateSql): string => {
  const rolled = RATE_ROLLED(t, r);
  return [
    `rate_prev_count = CASE WHEN ${rolled} THEN ${r.st}.rate_window_count ELSE ${r.st}.rate_prev_count END`,
    `rate_prev_last = CASE WHEN ${rolled} THEN ${r.st}.rate_window_last ELSE ${r.st}.rate_prev_last END`,
    `rate_window_count = CASE WHEN ${rolled} THEN ${n} ELSE ${r.st}.rate_window_count + ${n} END`,
    `rate_window_start = CASE WHEN ${rolled} THEN ${t} ELSE ${r.st}.rate_window_start END`,
    `rate_window_last = ${t}`,
  ].join(',\n        ');
};

/** A queue without group limits: the ordinary claim takes its rows. */
const UNGROUPED = (q: string): string =>
  `${q}.group_concurrency IS NULL AND ${q}.group_rate_max IS NULL`;

/**
 * The claim and its steps: the statement in its two variants, the grouped claim's steps, the rate
 * spend and the rate state.
 */
export function claimStatements(t: SqliteTables) {
  const { hot, queues, groups } = t;
  /**
   * A group's rate limit: the settings of the grouped queue `gq` (`@queue`'s row), the window
   * state of its `job_groups` row `g`.
   */
  const GROUP_RATE: RateSql = { max: 'gq.group_rate_max', per: 'gq.group_rate_per_ms', st: 'g' };
  /**
   * The first (byte-order) group key of `@queue` with a Pending row among the keys `keyTest`
   * admits (a test of `j.group_key`), through `jobs_hot_group_pending_ix`: one descent, however
   * long the groups' backlogs. `result` is what the subquery yields of the key it finds: the key
   * itself, or a CASE that yields NULL for a key past a bound (the walk ends there).
   */
  const firstGroup = (keyTest: string, result = 'j.group_key'): string => `(SELECT ${result}
          FROM ${hot} j
          WHERE j.status = 0 AND j.queue = @queue AND ${keyTest}
          ORDER BY j.group_key LIMIT 1)`;
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
     * counts as unpaused, active and unlimited. Queues with group limits are skipped too: the
     * grouped claim ({@link fetchNextGroupedBatch}) takes their rows, in the same transaction.
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
        WHERE COALESCE(q.is_paused, 0) = 0 AND COALESCE(q.is_active, 1) = 1 AND ${UNGROUPED('q')}
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
     * queue is skipped if its `Queues` row says paused, inactive, budgeted, rate limited or grouped at this
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
                                 OR q.rate_limit_max IS NOT NULL OR ${GROUPED('q')}))
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
     * fetchNextBatch, in the claim's transaction before its statements, when a handled queue may
     * have group limits (the caller's `budgetedQueues` hint names one, or there is no hint) and
     * the claim starts rows: which of the handled queues (`@queues`, a JSON array) are grouped,
     * in name order. Each is claimed by the grouped claim ({@link fetchNextGroupedBatch}).
     */
    fetchNextBatchGroupedQueues: `SELECT q.name FROM ${queues} q
      WHERE q.name IN (SELECT value FROM json_each(@queues)) AND ${GROUPED('q')}
      ORDER BY q.name`,

    /**
     * The grouped claim, step 1 for grouped queue `@queue`: whether it may start anything, and
     * where its walk begins. No row when it is paused, inactive or not grouped. Otherwise
     * `budget`: how many rows it may start, at most `@start`, within its `MaxWorkers` and its own
     * rate limit at this statement's 'now'; `cursor`: its `group_cursor`, the last group the
     * previous grouped claim visited ('' when none, so the shared group `''` comes last);
     * `after_cursor`: the first group with Pending rows after the cursor; `first_group`: the first
     * group of all, when it is not after the cursor (where the walk goes on when it wraps round);
     * `group_rated`: whether the queue has a group rate limit. Runs in the claim's BEGIN
     * IMMEDIATE, like every step of the grouped claim, so nothing changes between the steps.
     */
    fetchNextGroupedBatchStart: `SELECT COALESCE(q.group_cursor, '') AS cursor,
        MIN(@start,
            CASE WHEN q.max_workers IS NULL THEN @start
                 ELSE q.max_workers - (SELECT COUNT(*) FROM ${hot} a
                                        WHERE a.queue = @queue AND a.status IN (1, 2)) END,
            CASE WHEN q.rate_limit_max IS NULL THEN @start ELSE ${RATE_ALLOWANCE} END) AS budget,
        ${firstGroup(`j.group_key > COALESCE(q.group_cursor, '')`)} AS after_cursor,
        ${firstGroup('j.group_key IS NOT NULL', `CASE WHEN j.group_key <= COALESCE(q.group_cursor, '') THEN j.group_key END`)} AS first_group,
        q.group_rate_max IS NOT NULL AS group_rated
      FROM ${queues} q
      WHERE q.name = @queue AND q.is_paused = 0 AND q.is_active = 1 AND ${GROUPED('q')}`,

    /**
     * The grouped claim, step 2, once per group its walk visits (the walk itself is the store's
     * loop, `SqliteJobStore.claimGroupedQueue`): `first_id`, the group's first due Pending row of
     * a type this worker runs (`@types`, as in step 3) in its claim order (priority, due time, id:
     * the head of its range of `jobs_hot_group_pending_ix`); `room`, how many rows group `@group`
     * of `@queue` may start now: none without such a row (a group whose jobs are all scheduled
     * later is passed over, not counted as found), else at most `@budget` (the queue's), less what
     * the group concurrency leaves (its Fetched and Processing rows, `jobs_hot_group_active_ix`),
     * less what the group's rate window allows (no `job_groups` row: the whole of its max); and
     * `next_group`, the walk's next group after `@group` in byte order, which once the walk has
     * wrapped round (`@wrapped` 1) must not be past `@cursor` (NULL then: the walk is over).
     */
    fetchNextGroupedBatchVisit: `SELECT f.id AS first_id,
        CASE WHEN f.id IS NULL THEN 0
          ELSE MIN(@budget,
            CASE WHEN gq.group_concurrency IS NULL THEN @budget
                 ELSE gq.group_concurrency - (SELECT COUNT(*) FROM ${hot} a
                                               WHERE a.status IN (1, 2) AND a.queue = @queue
                                                 AND a.group_key = @group) END,
            CASE WHEN gq.group_rate_max IS NULL THEN @budget
                 ELSE COALESCE((SELECT ${rateAllowance(GROUP_RATE)}
                                FROM ${groups} g WHERE g.queue = @queue AND g.group_key = @group),
                               gq.group_rate_max) END) END AS room,
        ${firstGroup('j.group_key > @group', `CASE WHEN @wrapped = 0 OR j.group_key <= @cursor THEN j.group_key END`)} AS next_group
      FROM ${queues} gq
      LEFT JOIN (
        SELECT d.id FROM ${hot} d
        WHERE d.status = 0 AND d.queue = @queue AND d.group_key = @group
          AND (d.scheduled_at_utc IS NULL OR d.scheduled_at_utc <= ${SQLITE_NOW_MS})
          AND (@types IS NULL OR EXISTS (
            SELECT 1 FROM json_each(@types) t
            WHERE t.value ->> 'type' = d.type
              AND d.payload_version BETWEEN t.value ->> 'minVersion' AND t.value ->> 'maxVersion'))
        ORDER BY d.priority DESC, COALESCE(d.scheduled_at_utc, d.enqueued_at_utc), d.id
        LIMIT 1
      ) f ON 1
      WHERE gq.name = @queue`,

    /**
     * The grouped claim, step 3 when round-robin takes one row of each group with room (`@most`
     * 1 in {@link fetchNextGroupedBatch}: the walk found a group per row it may start): starts
     * the rows `@ids` (a JSON array), each group's first row as step 2 found it, in the same
     * transaction, so none of them has moved since.
     */
    fetchNextGroupedBatchFirsts: `UPDATE ${hot}
      SET status = 2, attempt_count = attempt_count + 1, started_at_utc = ${SQLITE_NOW_MS},
          heartbeat_utc = ${SQLITE_NOW_MS}, worker_id = @workerId, lease_id = @leaseId,
          last_updated_utc = ${SQLITE_NOW_MS}
      WHERE status = 0 AND id IN (SELECT value FROM json_each(@ids))
      RETURNING *`,

    /**
     * The grouped claim, step 3: starts up to `@budget` due Pending rows of `@queue` from the
     * groups the walk visited. `@visits`: a JSON array of `{group, n, room, …}` (visit order `n`,
     * only groups with room); each gives up to its room of rows in its own claim order (priority,
     * due time, id: a range of `jobs_hot_group_pending_ix`, read for at most `@most` rows), and
     * the rows are then taken round-robin, every group's first row, then every group's second,
     * in visit order, up to the budget. `@most` is the budget less the groups with room, plus one:
     * round-robin never takes more of one group (the PostgreSQL statement says why). Every row it takes starts (status 2, as
     * {@link markAsProcessing} sets it): a grouped queue never leaves rows Fetched. `@types`: the
     * `{type, minVersion, maxVersion}` the worker handles in this queue, NULL when it handles the
     * whole queue.
     */
    fetchNextGroupedBatch: `WITH
      visit(group_key, n, room) AS (
        SELECT value ->> 'group', value ->> 'n', value ->> 'room' FROM json_each(@visits)),
      handled_type(type, min_version, max_version) AS (
        SELECT value ->> 'type', value ->> 'minVersion', value ->> 'maxVersion'
        FROM json_each(@types)),
      candidate AS (
        SELECT h.id, v.n, v.room, h.priority, COALESCE(h.scheduled_at_utc, h.enqueued_at_utc) AS due
        FROM visit v CROSS JOIN ${hot} h
        WHERE h.id IN (
          SELECT c.id FROM ${hot} c
          WHERE c.status = 0 AND c.queue = @queue AND c.group_key = v.group_key
            AND (c.scheduled_at_utc IS NULL OR c.scheduled_at_utc <= ${SQLITE_NOW_MS})
            AND (@types IS NULL OR EXISTS (
              SELECT 1 FROM handled_type t
              WHERE t.type = c.type AND c.payload_version BETWEEN t.min_version AND t.max_version))
          ORDER BY c.priority DESC, COALESCE(c.scheduled_at_utc, c.enqueued_at_utc), c.id
          LIMIT @most)
      ),
      ranked AS (
        SELECT id, n, room, ROW_NUMBER() OVER (PARTITION BY n ORDER BY priority DESC, due, id) AS rn
        FROM candidate
      ),
      picked AS (
        SELECT id FROM ranked WHERE rn <= room ORDER BY rn, n LIMIT @budget
      )
      UPDATE ${hot} AS h
      SET status = 2, attempt_count = attempt_count + 1, started_at_utc = ${SQLITE_NOW_MS},
          heartbeat_utc = ${SQLITE_NOW_MS}, worker_id = @workerId, lease_id = @leaseId,
          last_updated_utc = ${SQLITE_NOW_MS}
      FROM picked p
      WHERE h.status = 0 AND h.id = p.id
      RETURNING *`,

    /**
     * The grouped claim, step 4: `@queue`'s cursor moves to `@cursor`, the last group its walk
     * visited, so the next grouped claim starts with the group after it: every group with due
     * rows and room is served within one round of the walk, however long another's backlog is.
     * The queue's own rate is spent by {@link fetchNextBatchSpendRate}, with the ordinary claim's.
     */
    fetchNextGroupedBatchTurn: `UPDATE ${queues} SET group_cursor = @cursor WHERE name = @queue`,

    /**
     * The grouped claim, step 5, when it started rows and `@queue` has a group rate limit: spends
     * them on their groups' rate windows (`job_groups`, a row made by a group's first start).
     * `@spent`: a JSON array of `{group, n, t}`, `t` the rows' `started_at_utc` (step 3's 'now');
     * the same rolling rule as a queue's window ({@link fetchNextBatchSpendRate}).
     */
    fetchNextGroupedBatchSpendGroups: `WITH spent(group_key, n, t) AS (
        SELECT value ->> 'group', value ->> 'n', value ->> 't' FROM json_each(@spent)
      )
      INSERT INTO ${groups} AS g (queue, group_key, rate_window_start, rate_window_count,
        rate_window_last)
      SELECT @queue, s.group_key, s.t, s.n, s.t FROM spent s
      WHERE EXISTS (SELECT 1 FROM ${queues} gq WHERE gq.name = @queue AND gq.group_rate_max IS NOT NULL)
      ORDER BY s.group_key
      ON CONFLICT (queue, group_key) DO UPDATE
      SET ${rateSpend('excluded.rate_window_last', 'excluded.rate_window_count', {
        ...GROUP_RATE,
        per: `(SELECT gq.group_rate_per_ms FROM ${queues} gq WHERE gq.name = @queue)`,
      })}`,

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
