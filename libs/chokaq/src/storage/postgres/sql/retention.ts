/**
 * Purges and retention: bounded batches, each its own short statement, that skip rows other
 * actions hold. Counters are lifetime and never touched here.
 */
import type { DlqFilter } from '../../../interfaces/job-view.interface';
import { filterClause } from './filters';
import { chooseDlqByFilter } from './moves';
import { GROUPED, METRIC_SEAL_SETTING, MS, attemptsDelete } from './fragments';
import { dependencyRemove } from './dependencies';

/**
 * Deletes DLQ rows by id ($1, one bounded chunk). Lock/isolation: READ COMMITTED; rows another
 * transaction holds (e.g. being resurrected) are skipped, not waited for. Counters untouched.
 */
export const purgeDlq = (s: string): string =>
  purgeDlqByFilter(
    s,
    `SELECT f.id FROM ${s}.jobs_dlq f WHERE f.id = ANY ($1::text[]) FOR UPDATE SKIP LOCKED`,
  );

/** Binds {@link purgeDlq}: $1 the ids (one bounded chunk). */
export function purgeDlqParams(ids: readonly string[]): unknown[] {
  return [ids];
}

/**
 * Deletes the DLQ rows whose ids `chosen` yields (evaluated once, see {@link fetchNextBatch}) and
 * their attempt rows ({@link attemptsDelete}), in one statement.
 */
export const purgeDlqByFilter = (s: string, chosen: string): string => `
WITH chosen AS MATERIALIZED (${chosen}),
gone AS (DELETE FROM ${s}.jobs_dlq d USING chosen c WHERE d.id = c.id
         RETURNING d.id, d.has_dependents, d.waiting_on),
history AS (${attemptsDelete(s, 'gone')}
)${dependencyRemove(s, 'gone')}
SELECT id FROM gone`;

/**
 * One batch of a purge by filter: {@link purgeDlqByFilter} over {@link chooseDlqByFilter}, with its
 * values (the filter's, then the batch size).
 */
export function purgeDlqByFilterQuery(
  s: string,
  filter: DlqFilter,
  batch: number,
): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const where = filterClause('dlq', filter, values, 'f');
  values.push(batch);
  return { text: purgeDlqByFilter(s, chooseDlqByFilter(s, where, `$${values.length}`)), values };
}

/**
 * Retention, one bounded batch: archive rows finished more than $1 ms ago, at most $2, oldest
 * first, and their attempt rows ({@link attemptsDelete}). `table` is the Archive, or one partition
 * of a partitioned Archive that retention does not drop whole (see `./partitions`).
 * Lock/isolation: each batch its own short transaction (one statement); the batch is picked once
 * in a MATERIALIZED CTE with SKIP LOCKED, so it never waits on row locks of a concurrent purge or
 * retention run. Counters untouched (they are lifetime).
 */
export const applyRetentionArchive = (s: string, table = 'jobs_archive'): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.id FROM ${s}.${table} r
  WHERE r.finished_at_utc < now() - $1::float8 ${MS}
  ORDER BY r.finished_at_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
gone AS (DELETE FROM ${s}.${table} a USING chosen c WHERE a.id = c.id
         RETURNING a.id, a.has_dependents, a.waiting_on),
history AS (${attemptsDelete(s, 'gone')}
)${dependencyRemove(s, 'gone')}
SELECT id FROM gone`;

/**
 * Retention batch of batches settled more than $1 ms ago (the longer of the Archive's and the
 * DLQ's retention: their jobs' rows are gone or going), at most $2, oldest first, with their
 * callbacks' rows, in one statement. Rows a move is settling or a resurrect reopening are skipped
 * (SKIP LOCKED), and a batch reopened after the read is re-checked under its lock (READ
 * COMMITTED: `FOR UPDATE` evaluates the condition again on the row it locks), so a batch with a
 * job back in the hot table is never removed. A job of a removed batch that a resurrect brings
 * back later still carries its `batch_id`, whose settle and reopen steps then find no row and
 * write nothing.
 */
export const applyRetentionBatches = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT b.id FROM ${s}.batches b
  WHERE b.settled_at_utc < now() - $1::float8 ${MS}
  ORDER BY b.settled_at_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
callbacks AS (DELETE FROM ${s}.batch_callbacks c USING chosen x WHERE c.batch_id = x.id)
DELETE FROM ${s}.batches b USING chosen c WHERE b.id = c.id
RETURNING b.id`;

/** Binds every `applyRetention…` batch: $1 the age in ms past which rows go, $2 the batch size. */
export function applyRetentionParams(ageMs: number, batch: number): unknown[] {
  return [ageMs, batch];
}

/**
 * Retention batch of the DLQ (failed more than $1 ms ago, at most $2) and their attempt rows; as
 * {@link applyRetentionArchive} (`table`: the DLQ or one of its partitions).
 */
export const applyRetentionDlq = (s: string, table = 'jobs_dlq'): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.id FROM ${s}.${table} r
  WHERE r.failed_at_utc < now() - $1::float8 ${MS}
  ORDER BY r.failed_at_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
gone AS (DELETE FROM ${s}.${table} d USING chosen c WHERE d.id = c.id
         RETURNING d.id, d.has_dependents, d.waiting_on),
history AS (${attemptsDelete(s, 'gone')}
)${dependencyRemove(s, 'gone')}
SELECT id FROM gone`;

/**
 * Retention batch of `table`'s minutes older than $1 ms (`bucket_utc`, at most $2 rows), by its
 * primary key `keys`; as {@link applyRetentionArchive}.
 */
const minutesRetention = (s: string, table: string, keys: readonly string[]): string => `
WITH chosen AS MATERIALIZED (
  SELECT ${keys.map((k) => `r.${k}`).join(', ')} FROM ${s}.${table} r
  WHERE r.bucket_utc < now() - $1::float8 ${MS}
  ORDER BY r.bucket_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED)
DELETE FROM ${s}.${table} b USING chosen c
WHERE ${keys.map((k) => `b.${k} = c.${k}`).join(' AND ')}
RETURNING 1 AS deleted`;

/** Retention batch of metric buckets older than $1 ms (at most $2), by primary key. */
export const applyRetentionBuckets = (s: string): string =>
  minutesRetention(s, 'metric_buckets', ['bucket_utc', 'queue', 'outcome', 'failure_reason']);

/**
 * The first statement of a seal (`sealMetricTotals`): takes the seal's mark under a row lock,
 * making it (unsealed: `-Infinity`) on the first pass, and returns it. Two processes sealing at
 * once take turns here; the second reads the mark the first committed.
 */
export const lockMetricSeal = (s: string): string => `
INSERT INTO ${s}.settings AS t (name, value) VALUES ('${METRIC_SEAL_SETTING}', '-Infinity')
ON CONFLICT (name) DO UPDATE SET value = t.value
RETURNING t.value`;

/**
 * The seal's horizon (`upto`, NULL when unknown) over `activity`, rows shaped as
 * `pg_stat_activity`'s (datname, usesysid, state, xact_start): {@link sealMetricTotals} reads the
 * view itself, the tests rows of their own.
 */
export const metricSealHorizon = (s: string, activity: string): string => `
  SELECT CASE WHEN bool_or(a.state IS NULL AND NOT (
                     pg_has_role(current_user, 'pg_read_all_stats', 'USAGE')
                     OR pg_has_role(current_user, a.usesysid, 'USAGE'))) THEN NULL
              ELSE date_trunc('minute', least(now(), min(a.xact_start))) - interval '1 minute'
         END AS upto
  FROM ${activity} a
  WHERE a.datname = current_database() AND a.usesysid IS NOT NULL
    AND has_table_privilege(a.usesysid, '${s}.metric_buckets', 'INSERT')`;

/**
 * The second statement of a seal, in the transaction of {@link lockMetricSeal}: sums the metric
 * buckets of every queue per minute and outcome into `metric_totals`, for the minutes from the mark
 * ($1, epoch seconds) to the horizon, and moves the mark there.
 *
 * The horizon is the first minute a transaction may still write. A bucket's minute is its writer's
 * `now()`, the start of its transaction (`bucketUpsert`, `startLagUpsert`), so no bucket of a minute
 * before the oldest open transaction's start can appear any more; that start is `xact_start` in
 * `pg_stat_activity` (https://www.postgresql.org/docs/15/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW),
 * read over the sessions of this database whose role may insert buckets (so autovacuum and other
 * databases' sessions never hold it back), and a minute more for the instant between a
 * transaction's start and its entry there. A session this role may not see (another role, without
 * `pg_read_all_stats`: its `state` and `xact_start` read as NULL) leaves the horizon unknown, and
 * nothing is sealed; one it may see whose `state` is NULL is a connection still starting, with no
 * transaction yet (any it opens starts after the horizon), and is passed over. A long
 * transaction holds the seal back; the reads then take the buckets of the minutes after the mark,
 * so a seal that falls behind costs read time, never a count. A re-sealed minute is replaced.
 */
export const sealMetricTotals = (s: string): string => `
WITH horizon AS (${metricSealHorizon(s, 'pg_stat_activity')}),
span AS (
  SELECT to_timestamp($1::float8) AS from_utc, h.upto AS to_utc FROM horizon h
  WHERE h.upto > to_timestamp($1::float8)),
rolled AS (
  INSERT INTO ${s}.metric_totals AS t (
    bucket_utc, outcome, completed_count, duration_count, total_duration_ms,
    lag_count, lag_sum_ms, lag_max_ms)
  SELECT b.bucket_utc, b.outcome, sum(b.completed_count), sum(b.duration_count),
         sum(b.total_duration_ms), sum(b.lag_count), sum(b.lag_sum_ms), max(b.lag_max_ms)
  FROM span p
  JOIN ${s}.metric_buckets b ON b.bucket_utc >= p.from_utc AND b.bucket_utc < p.to_utc
  GROUP BY b.bucket_utc, b.outcome
  ON CONFLICT (bucket_utc, outcome) DO UPDATE
  SET completed_count = EXCLUDED.completed_count, duration_count = EXCLUDED.duration_count,
      total_duration_ms = EXCLUDED.total_duration_ms, lag_count = EXCLUDED.lag_count,
      lag_sum_ms = EXCLUDED.lag_sum_ms, lag_max_ms = EXCLUDED.lag_max_ms)
UPDATE ${s}.settings t SET value = extract(epoch FROM p.to_utc)::text
FROM span p WHERE t.name = '${METRIC_SEAL_SETTING}'`;

/** Retention batch of `metric_totals`: minutes older than $1 ms (at most $2), as the buckets'. */
export const applyRetentionTotals = (s: string): string =>
  minutesRetention(s, 'metric_totals', ['bucket_utc', 'outcome']);

/**
 * Retention batch of the Workers table: rows last seen more than $1 ms ago (stopped or lost
 * workers: a live one reports every heartbeat), at most $2; as {@link applyRetentionArchive}. A
 * worker that reports again after its row was removed writes it anew.
 */
export const applyRetentionWorkers = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.worker_id FROM ${s}.workers r
  WHERE r.last_seen_utc < now() - $1::float8 ${MS}
  ORDER BY r.last_seen_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED)
DELETE FROM ${s}.workers w USING chosen c WHERE w.worker_id = c.worker_id
RETURNING w.worker_id`;

/** Retention batch of the audit log: entries older than $1 ms, at most $2; as {@link applyRetentionArchive}. */
export const applyRetentionAudit = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.id FROM ${s}.audit_log r
  WHERE r.at_utc < now() - $1::float8 ${MS}
  ORDER BY r.at_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED)
DELETE FROM ${s}.audit_log a USING chosen c WHERE a.id = c.id
RETURNING a.id`;

/**
 * Retention batch of group rate windows that no longer count, at most $2 ($1, the age, is
 * unused): the group's last start is at least one window old (its allowance is the whole of the
 * limit again), or its queue has no group rate limit. Rows a grouped claim is writing are skipped
 * (SKIP LOCKED), and a row that claim moved on is re-checked under the lock (READ COMMITTED), so
 * a window that counts is never removed; a later start makes the row again.
 */
export const applyRetentionGroups = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT g.queue, g.group_key FROM ${s}.job_groups g
  LEFT JOIN ${s}.queues q ON q.name = g.queue
  WHERE $1::float8 >= 0
    AND (q.group_rate_per_ms IS NULL OR g.rate_window_last IS NULL
         OR g.rate_window_last <= now() - q.group_rate_per_ms ${MS})
  LIMIT $2
  FOR UPDATE OF g SKIP LOCKED)
DELETE FROM ${s}.job_groups d USING chosen c
WHERE d.queue = c.queue AND d.group_key = c.group_key
RETURNING d.group_key`;

/**
 * A batch of at most $2 hot jobs without a group in a queue with group limits ($1, the age, is
 * unused), put into the queue's shared group `''` so that its grouped claim reaches them. Setting
 * a limit does this for the rows it sees (`updateQueue`); this catches a job whose enqueue read
 * the queue before the limit was set and committed after it. Rows another transaction holds are
 * left for the next run (SKIP LOCKED).
 */
export const applyRetentionGroupless = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT h.ctid AS tid, h.id FROM ${s}.jobs_hot h
  JOIN ${s}.queues q ON q.name = h.queue
  WHERE $1::float8 >= 0 AND h.group_key IS NULL
    AND ${GROUPED('q')}
  LIMIT $2
  FOR UPDATE OF h SKIP LOCKED)
UPDATE ${s}.jobs_hot j SET group_key = ''
FROM chosen c
WHERE j.ctid = c.tid AND j.id = c.id AND j.group_key IS NULL
RETURNING j.id`;
