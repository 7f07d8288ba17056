/** The `Queues` rows: the controls every process reads, and the operator's upsert of them. */
import { GROUPED, SQLITE_NOW_MS, SqliteTables } from './fragments';

/** The `Queues` rows: read them all, upsert one. */
export function queueStatements(t: SqliteTables) {
  const { hot, queues } = t;
  return {
    /** getQueues. */
    getQueues: `SELECT * FROM ${queues} ORDER BY name`,

    /**
     * updateQueue: upserts a queue with the fields present in `@patch` (a JSON object; `json_type` is NULL for an
     * absent key and 'null' for an explicit null, so "leave as is" and "clear" differ). One statement
     * under BEGIN IMMEDIATE: concurrent upserts serialise. Clearing the rate limit clears its window
     * state too; changing it keeps the starts already counted. The group limits
     * (`groupConcurrency`, `groupRateLimit`) are set the same way; clearing the group rate limit
     * leaves the groups' windows to retention (they no longer count). A patch that names a group
     * limit is followed by {@link updateQueueSharedGroup} in the same transaction.
     */
    updateQueue: `INSERT INTO ${queues} (name, is_paused, is_active, max_workers, zombie_timeout_seconds,
        execution_timeout_ms, retry_zombies, rate_limit_max, rate_limit_per_ms, group_concurrency,
        group_rate_max, group_rate_per_ms, last_updated_utc)
      VALUES (@name, COALESCE(@patch ->> 'isPaused', 0), COALESCE(@patch ->> 'isActive', 1),
        @patch ->> 'maxWorkers', @patch ->> 'zombieTimeoutSeconds', @patch ->> 'executionTimeoutMs',
        COALESCE(@patch ->> 'retryZombies', 0), @patch ->> '$.rateLimit.max',
        @patch ->> '$.rateLimit.perMs', @patch ->> 'groupConcurrency',
        @patch ->> '$.groupRateLimit.max', @patch ->> '$.groupRateLimit.perMs', ${SQLITE_NOW_MS})
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
        group_concurrency = CASE WHEN json_type(@patch, '$.groupConcurrency') IS NULL
                                 THEN group_concurrency ELSE excluded.group_concurrency END,
        group_rate_max = CASE WHEN json_type(@patch, '$.groupRateLimit') IS NULL THEN group_rate_max
                              ELSE excluded.group_rate_max END,
        group_rate_per_ms = CASE WHEN json_type(@patch, '$.groupRateLimit') IS NULL
                                 THEN group_rate_per_ms ELSE excluded.group_rate_per_ms END,
        last_updated_utc = excluded.last_updated_utc
      RETURNING *`,

    /**
     * updateQueue, after {@link updateQueue} when the patch names a group limit: if queue `@name`
     * now has group limits, its hot rows without a group join the shared group `''` (see
     * `STORED_GROUP`), so that the grouped claim reaches them. Same transaction; reads the
     * queue's hot rows through `jobs_hot_queue_enqueued_ix`.
     */
    updateQueueSharedGroup: `UPDATE ${hot} SET group_key = ''
      WHERE queue = @name AND group_key IS NULL
        AND EXISTS (SELECT 1 FROM ${queues} q WHERE q.name = @name AND ${GROUPED('q')})`,
  };
}
