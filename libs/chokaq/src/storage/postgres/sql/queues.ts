/** The `Queues` rows: the controls every process reads, and the operator's upsert of them. */
import type { QueuePatch } from '../../../interfaces/job.interface';
import { GROUPED } from './fragments';

/** All queue rows. */
export const getQueues = (s: string): string => `SELECT * FROM ${s}.queues ORDER BY name`;

/**
 * Upserts a queue and applies the patch. $1 name; $2 is_paused, $3 is_active, $4 retry_zombies
 * (NULL = unchanged); nullable fields come as (set?, value) pairs: $5/$6 max_workers,
 * $7/$8 zombie_timeout_seconds, $9/$10 execution_timeout_ms, $11/$12/$13 the rate limit (max,
 * per ms), $14 group_concurrency (set?) and $15 its value, $16/$17/$18 the group rate limit
 * (set?, max, per ms). Clearing the rate limit clears its window state too; changing it keeps the
 * starts already counted. Clearing the group rate limit leaves the groups' windows to retention
 * (they no longer count).
 * A patch that leaves the queue with group limits puts its hot jobs that have no group into the
 * shared group `''` (see `STORED_GROUP`), so that the grouped claim reaches them.
 * Lock/isolation: `INSERT … ON CONFLICT DO UPDATE` is atomic under concurrency (no lost insert race);
 * it takes the same row lock that claims take on budgeted queues, so a budget change waits for an
 * in-flight claim.
 */
export const updateQueue = (s: string): string => `
WITH upserted AS (
INSERT INTO ${s}.queues AS q (
  name, is_paused, is_active, retry_zombies, max_workers, zombie_timeout_seconds,
  execution_timeout_ms, rate_limit_max, rate_limit_per_ms, group_concurrency, group_rate_max,
  group_rate_per_ms, last_updated_utc)
VALUES ($1, coalesce($2::boolean, false), coalesce($3::boolean, true), coalesce($4::boolean, false),
        CASE WHEN $5::boolean THEN $6::int END, CASE WHEN $7::boolean THEN $8::int END,
        CASE WHEN $9::boolean THEN $10::int END, CASE WHEN $11::boolean THEN $12::int END,
        CASE WHEN $11::boolean THEN $13::int END, CASE WHEN $14::boolean THEN $15::int END,
        CASE WHEN $16::boolean THEN $17::int END, CASE WHEN $16::boolean THEN $18::int END, now())
ON CONFLICT (name) DO UPDATE
SET is_paused = coalesce($2::boolean, q.is_paused),
    is_active = coalesce($3::boolean, q.is_active),
    retry_zombies = coalesce($4::boolean, q.retry_zombies),
    max_workers = CASE WHEN $5::boolean THEN $6::int ELSE q.max_workers END,
    rate_limit_max = CASE WHEN $11::boolean THEN $12::int ELSE q.rate_limit_max END,
    rate_limit_per_ms = CASE WHEN $11::boolean THEN $13::int ELSE q.rate_limit_per_ms END,
    rate_window_start = CASE WHEN $11::boolean AND $12::int IS NULL THEN NULL
                             ELSE q.rate_window_start END,
    rate_window_last = CASE WHEN $11::boolean AND $12::int IS NULL THEN NULL
                            ELSE q.rate_window_last END,
    rate_window_count = CASE WHEN $11::boolean AND $12::int IS NULL THEN NULL
                             ELSE q.rate_window_count END,
    rate_prev_last = CASE WHEN $11::boolean AND $12::int IS NULL THEN NULL ELSE q.rate_prev_last END,
    rate_prev_count = CASE WHEN $11::boolean AND $12::int IS NULL THEN NULL
                           ELSE q.rate_prev_count END,
    zombie_timeout_seconds = CASE WHEN $7::boolean THEN $8::int ELSE q.zombie_timeout_seconds END,
    execution_timeout_ms = CASE WHEN $9::boolean THEN $10::int ELSE q.execution_timeout_ms END,
    group_concurrency = CASE WHEN $14::boolean THEN $15::int ELSE q.group_concurrency END,
    group_rate_max = CASE WHEN $16::boolean THEN $17::int ELSE q.group_rate_max END,
    group_rate_per_ms = CASE WHEN $16::boolean THEN $18::int ELSE q.group_rate_per_ms END,
    last_updated_utc = now()
RETURNING *
),
joined AS (
  UPDATE ${s}.jobs_hot j SET group_key = ''
  FROM upserted u
  WHERE ($14::boolean OR $16::boolean)
    AND ${GROUPED('u')}
    AND j.queue = u.name AND j.group_key IS NULL
)
SELECT * FROM upserted`;

/**
 * Binds {@link updateQueue}: $1 name; $2 is_paused, $3 is_active, $4 retry_zombies (NULL =
 * unchanged); then (set?, value) pairs: $5/$6 max_workers, $7/$8 zombie_timeout_seconds,
 * $9/$10 execution_timeout_ms, $11/$12/$13 the rate limit (set?, max, per ms), $14/$15
 * group_concurrency, $16/$17/$18 the group rate limit (set?, max, per ms).
 */
export function updateQueueParams(name: string, p: QueuePatch): unknown[] {
  const has = (key: keyof QueuePatch): boolean => p[key] !== undefined;
  return [
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
    has('rateLimit'),
    p.rateLimit?.max ?? null,
    p.rateLimit?.perMs ?? null,
    has('groupConcurrency'),
    p.groupConcurrency ?? null,
    has('groupRateLimit'),
    p.groupRateLimit?.max ?? null,
    p.groupRateLimit?.perMs ?? null,
  ];
}
