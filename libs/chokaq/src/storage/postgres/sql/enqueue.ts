/** The producer's statements: the insert of a batch of jobs and the lookup of what it did not insert. */
import type { ValidatedJob } from '../../../validation/validate-job';
import { GROUPED_QUEUES, MS, STORED_GROUP, literal } from './fragments';

/**
 * The margin of an enqueue's probes for the ids the library made, on both sides of the time its
 * job can have finished: before the first attempt (the time from measuring the attempts to the
 * statement's start) and past `now()` (a step of the database's clock). An hour, so a job stored by
 * an earlier attempt is found whatever happened meanwhile; on a partitioned Archive the probes
 * still read only the current period's partition and the default (and a neighbour's within an
 * hour of a boundary). The caller adds it to the attempts' time (`probeBackMs` of
 * {@link enqueueParams}).
 */
export const ENQUEUE_PROBE_MARGIN_MS = 3_600_000;

/**
 * Inserts a chunk of validated jobs ($1..$12 are parallel arrays: id, queue, type, payload, tags,
 * idempotency_key, priority, delay_ms, run_at, created_by, trace_context, payload_version),
 * $13 group_key and $14 batch_id, and returns the ids actually inserted.
 *
 * Lock/isolation: READ COMMITTED, one statement. `ON CONFLICT DO NOTHING` (no conflict target) covers
 * both the primary key (a retried insert with the same id) and the partial unique index on active
 * idempotency keys. A concurrent inserter of the same key waits for the first transaction on the
 * unique index, then skips: no error, no deadlock for single-key callers. Rows are inserted in
 * (idempotency_key, id) order so that two multi-key batches take the index locks in the same order.
 * Ids already in the archive or the DLQ are skipped too, so a retry after an ambiguous commit of a
 * job that has meanwhile finished does not resurrect it as a duplicate. An id the library made
 * (`id_given` false) can be there only if an earlier attempt of this enqueue stored it, and a job
 * finishes after it was stored, and no later than the database's clock says now: with $16, how
 * long ago (ms, the attempts' time plus a margin) the first attempt began, the probes look only at
 * rows finished since (`finished_from`) and up to now, plus the same margin for a step of the
 * clock ({@link ENQUEUE_PROBE_MARGIN_MS}, `finished_to`). On a partitioned Archive and DLQ that is
 * what prunes their partitions, at execution, to the current period's and the default (each probe
 * is one index descent per partition it cannot prune: 55 with a month of 'day'); on plain tables
 * it is a filter on the row the primary key finds. A given id, or $16 NULL, is probed in every
 * partition.
 *
 * A job without a group enqueued into a queue with group limits gets the shared group `''`
 * ({@link STORED_GROUP}).
 *
 * `Queues` and `StatsSummary` rows are created only when missing (the NOT EXISTS probe avoids the
 * speculative-insertion path on the hot `StatsSummary` row). With `notify`, `pg_notify` runs in the
 * same statement, so listeners hear about it only after commit.
 *
 * `waiting`: the rows are inserted Waiting (status 7), jobs that wait on others; the same
 * transaction then writes their edges and counts (`insertDependencies`), which make the ones with
 * nothing to wait for Pending.
 */
export const enqueue = (s: string, notifyChannel: string | null, waiting = false): string => `
WITH input AS (
  SELECT i.*,
         CASE WHEN i.id_given OR $16::float8 IS NULL THEN '-infinity'::timestamptz
              ELSE now() - $16::float8 ${MS} END AS finished_from,
         CASE WHEN i.id_given OR $16::float8 IS NULL THEN 'infinity'::timestamptz
              ELSE now() + ${ENQUEUE_PROBE_MARGIN_MS} ${MS} END AS finished_to
  FROM unnest(
    $1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
    $6::text[], $7::int[], $8::float8[], $9::timestamptz[], $10::text[], $11::text[], $12::int[],
    $13::text[], $14::text[], $15::boolean[]
  ) AS i(id, queue, type, payload, tags, idempotency_key, priority, delay_ms, run_at, created_by,
         trace_context, payload_version, group_key, batch_id, id_given)
),
new_queues AS (
  INSERT INTO ${s}.queues (name, last_updated_utc)
  SELECT DISTINCT i.queue, now() FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM ${s}.queues q WHERE q.name = i.queue)
  ON CONFLICT (name) DO NOTHING
),
new_stats AS (
  INSERT INTO ${s}.stats_summary (queue)
  SELECT DISTINCT i.queue FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM ${s}.stats_summary t WHERE t.queue = i.queue)
  ON CONFLICT (queue) DO NOTHING
),
inserted AS (
  INSERT INTO ${s}.jobs_hot (
    id, queue, type, payload, tags, idempotency_key, priority, status, attempt_count,
    scheduled_at_utc, created_at_utc, enqueued_at_utc, last_updated_utc, created_by, trace_context,
    payload_version, group_key, batch_id)
  SELECT i.id, i.queue, i.type, i.payload, i.tags, i.idempotency_key, i.priority, ${waiting ? 7 : 0}, 0,
         coalesce(i.run_at, now() + i.delay_ms ${MS}), now(), now(), now(), i.created_by,
         i.trace_context, i.payload_version,
         ${STORED_GROUP('i.group_key', 'i.queue', GROUPED_QUEUES(s, '$2'))}, i.batch_id
  FROM input i
  WHERE NOT EXISTS (SELECT 1 FROM ${s}.jobs_archive a
                    WHERE a.id = i.id
                      AND a.finished_at_utc BETWEEN i.finished_from AND i.finished_to)
    AND NOT EXISTS (SELECT 1 FROM ${s}.jobs_dlq d
                    WHERE d.id = i.id AND d.failed_at_utc BETWEEN i.finished_from AND i.finished_to)
  ORDER BY i.idempotency_key, i.id
  ON CONFLICT DO NOTHING
  RETURNING id, queue
)
SELECT id FROM inserted${
  notifyChannel === null
    ? ''
    : `
UNION ALL
SELECT NULL FROM (SELECT DISTINCT queue FROM inserted) x
CROSS JOIN LATERAL pg_notify(${literal(notifyChannel)}, x.queue)`
}`;

/**
 * Binds {@link enqueue}: one parallel array per column, $1 id, $2 queue, $3 type, $4 payload,
 * $5 tags, $6 idempotency_key, $7 priority, $8 delay_ms, $9 run_at, $10 created_by,
 * $11 trace_context, $12 payload_version, $13 group_key, $14 batch_id, $15 id_given; $16
 * `probeBackMs`, how far back the archive and DLQ probes of the ids the library made reach (null:
 * all the way).
 */
export function enqueueParams(
  jobs: readonly ValidatedJob[],
  probeBackMs: number | null = null,
): unknown[] {
  return [
    jobs.map((j) => j.id),
    jobs.map((j) => j.queue),
    jobs.map((j) => j.type),
    jobs.map((j) => j.payload),
    jobs.map((j) => j.tags),
    jobs.map((j) => j.idempotencyKey),
    jobs.map((j) => j.priority),
    jobs.map((j) => j.delayMs),
    jobs.map((j) => j.runAt),
    jobs.map((j) => j.createdBy),
    jobs.map((j) => j.traceContext),
    jobs.map((j) => j.payloadVersion),
    jobs.map((j) => j.group),
    jobs.map((j) => j.batchId),
    jobs.map((j) => j.idGiven),
    probeBackMs,
  ];
}

/**
 * After an insert skipped some rows: who holds their ids (any pillar) or their active idempotency
 * keys. $1 ids, $2 keys. Plain READ COMMITTED read; a holder that vanished in between makes the
 * caller try the insert again.
 */
export const enqueueHolders = (s: string): string => `
SELECT 'id' AS kind, id, NULL::text AS idempotency_key FROM ${s}.jobs_hot WHERE id = ANY ($1::text[])
UNION ALL
SELECT 'id', id, NULL FROM ${s}.jobs_archive WHERE id = ANY ($1::text[])
UNION ALL
SELECT 'id', id, NULL FROM ${s}.jobs_dlq WHERE id = ANY ($1::text[])
UNION ALL
SELECT 'key', id, idempotency_key FROM ${s}.jobs_hot WHERE idempotency_key = ANY ($2::text[])`;

/** Binds {@link enqueueHolders}: $1 the jobs' ids, $2 their idempotency keys (those that have one). */
export function enqueueHoldersParams(jobs: readonly ValidatedJob[]): unknown[] {
  return [
    jobs.map((j) => j.id),
    jobs.map((j) => j.idempotencyKey).filter((k): k is string => k !== null),
  ];
}
