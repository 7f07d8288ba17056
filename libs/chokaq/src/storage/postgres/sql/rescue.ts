/** The rescue loop's statements: abandoned Fetched rows back to Pending, zombies out of Processing. */
import type { ZombieSweep } from '../../dialect-job-storage';
import { hotColumnsExcept } from '../../shared/columns';
import { batchSettle } from './batches';
import { dependencySettle } from './dependencies';
import { MS, attemptInsert, bucketUpsert, cols, dlqInsert } from './fragments';

/**
 * Fetched rows untouched for $1 ms → Pending (no user code ran, so this is always safe). At most
 * $2 rows, oldest first. Returns the ids.
 * Lock/isolation: READ COMMITTED; candidates come from `ix_jobs_hot_fetched` with
 * `FOR UPDATE SKIP LOCKED` in a MATERIALIZED CTE (evaluated once, see {@link fetchNextBatch}); a row
 * being heartbeated or started right now is skipped, and a row that changed after the statement's
 * snapshot is re-checked against the staleness condition when it is locked.
 */
export const recoverAbandoned = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT c.id FROM ${s}.jobs_hot c
  WHERE c.status = 1 AND c.last_updated_utc < now() - $1::float8 ${MS}
  ORDER BY c.last_updated_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED
)
UPDATE ${s}.jobs_hot j
SET status = 0, worker_id = NULL, lease_id = NULL, last_updated_utc = now()
FROM chosen c
WHERE j.id = c.id AND j.status = 1
RETURNING j.id`;

/** Binds {@link recoverAbandoned}: $1 the Fetched timeout in ms, $2 the most rows. */
export function recoverAbandonedParams(fetchedTimeoutMs: number, limit: number): unknown[] {
  return [fetchedTimeoutMs, limit];
}

/** The columns `archiveZombies` returns of each rescued row: all but the payload. */
const RESCUED = hotColumnsExcept('payload');

/**
 * Processing rows whose heartbeat is older than their queue's `zombie_timeout_seconds` (or the
 * default $1 ms) → DLQ as Zombie (status 6, reason 2, outcome failed), or → Pending with
 * `last_error` (attempt kept) where the queue has `retry_zombies` or the rescuer's handler rules
 * say so. At most $2 rows; $3 is the error text; the rules are `unnest($4 queue, $5 type, $6 retry)`
 * (type NULL for a queue-wide handler, one rule per slot), resolved as a claim resolves a handler:
 * the exact `(queue, type)` rule, else the queue-wide one. Returns `kind` ('dlq' or 'retried') and
 * each rescued row as the rescue found it, every column but the payload (the worker that lost it
 * included): `candidates` read those values from the row it locked, and nothing else can change
 * the row before the statement ends.
 *
 * Lock/isolation: one READ COMMITTED statement. Candidates are locked `FOR UPDATE OF j SKIP LOCKED`
 * (a row its owner is finalising right now is skipped; if we lock first, the owner's fenced
 * statement finds nothing and reports "not applied"); the outer-joined queue row and rules are only
 * read. The range `heartbeat_utc < now() − shortest timeout` bounds the scan of
 * `ix_jobs_hot_processing`. Both the failed and the retried counts go into ONE `stats_summary`
 * upsert: two CTEs must never update the same row in one statement. The two bucket upserts touch
 * different rows (outcome 1 failed, outcome 3 retried, both with reason 2 Zombie). Every rescued
 * run, dead or retried, gets its attempt row (outcome `zombie`, the worker that lost it as
 * `candidates` read it) in the same statement ({@link attemptInsert}).
 */
export const archiveZombies = (s: string): string => `
WITH rule (queue, type, retry) AS (
  SELECT * FROM unnest($4::text[], $5::text[], $6::boolean[])
),
candidates AS MATERIALIZED (
  SELECT ${cols(RESCUED, 'j')},
         coalesce(q.retry_zombies, false) OR coalesce(e.retry, w.retry, false) AS retry
  FROM ${s}.jobs_hot j
  LEFT JOIN ${s}.queues q ON q.name = j.queue
  LEFT JOIN rule e ON e.queue = j.queue AND e.type = j.type
  LEFT JOIN rule w ON w.queue = j.queue AND w.type IS NULL
  WHERE j.status = 2
    AND j.heartbeat_utc < now() - (
          SELECT least($1::float8, min(zombie_timeout_seconds) * 1000.0) FROM ${s}.queues) ${MS}
    AND j.heartbeat_utc < now() - coalesce(q.zombie_timeout_seconds * 1000.0, $1::float8) ${MS}
  ORDER BY j.heartbeat_utc
  LIMIT $2
  FOR UPDATE OF j SKIP LOCKED
),
moved AS (
  DELETE FROM ${s}.jobs_hot j
  USING candidates c
  WHERE j.id = c.id AND NOT c.retry AND j.status = 2
  RETURNING j.*
),
${dlqInsert(s, 6, '2', '$3::text', 'NULL::text')}
retried AS (
  UPDATE ${s}.jobs_hot j
  SET status = 0, worker_id = NULL, lease_id = NULL, heartbeat_utc = NULL, held_since_utc = NULL,
      last_error = $3::text, last_updated_utc = now()
  FROM candidates c
  WHERE j.id = c.id AND c.retry AND j.status = 2
  RETURNING j.id, j.queue
),
attempt AS (${attemptInsert(s, `SELECT c.id, c.attempt_count, c.worker_id, c.lease_id, c.started_at_utc, 'zombie' AS outcome, $3::text AS error FROM candidates c WHERE c.id IN (SELECT id FROM src UNION ALL SELECT id FROM retried)`)}
),
counted AS (
  INSERT INTO ${s}.stats_summary AS t (queue, failed_total, retried_total, last_activity_utc)
  SELECT queue, count(*) FILTER (WHERE kind = 'dlq'), count(*) FILTER (WHERE kind = 'retried'), now()
  FROM (SELECT 'dlq' AS kind, queue FROM src UNION ALL SELECT 'retried', queue FROM retried) x
  GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET failed_total = t.failed_total + EXCLUDED.failed_total,
      retried_total = t.retried_total + EXCLUDED.retried_total,
      last_activity_utc = EXCLUDED.last_activity_utc
),
bucket AS (${bucketUpsert(s, 1, '2', '(SELECT queue, NULL::bigint AS duration_ms FROM src)')}
),
retried_bucket AS (${bucketUpsert(s, 3, '2', '(SELECT queue, NULL::bigint AS duration_ms FROM retried)')}
)${batchSettle(s, 'SELECT id, batch_id, false AS ok FROM moved')}${dependencySettle(s, 'SELECT id, has_dependents, false AS ok FROM moved')}
SELECT x.kind, ${cols(RESCUED, 'c')}
FROM (SELECT 'dlq' AS kind, id FROM src UNION ALL SELECT 'retried', id FROM retried) x
JOIN candidates c ON c.id = x.id`;

/**
 * Binds {@link archiveZombies}: $1 the default zombie timeout in ms, $2 the most rows, $3 the
 * stored error text, $4/$5/$6 the retry rules' queue, type (NULL: queue-wide) and verdict.
 */
export function archiveZombiesParams(sweep: ZombieSweep): unknown[] {
  const { rules } = sweep;
  return [
    sweep.defaultTimeoutMs,
    sweep.limit,
    sweep.error,
    rules.map((r) => r.queue),
    rules.map((r) => r.type),
    rules.map((r) => r.retry),
  ];
}
