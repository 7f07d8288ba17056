/**
 * Edits of a job that is still Pending (`updatePending`): one guarded UPDATE of the hot row.
 */
import type { ValidatedPendingUpdate } from '../../../validation/validate-job';
import { literal } from './fragments';

/**
 * Applies the edits to job $1 if it is Pending (`status = 0`) and, with $10, of queue $10 and type
 * $11; returns its id. $2 payload (NULL keeps it), $3 its payload version (NULL keeps the job's),
 * $4 whether the tags change and $5 the new tags, $6 priority (NULL keeps it), $7 what happens to
 * the schedule (0 keep, 1 run now: no schedule, so it is due by its enqueue time as a job enqueued
 * without a delay is, 2 the instant $8), $9 the actor.
 *
 * Lock/isolation: one READ COMMITTED statement. A claim that took the row first holds its row
 * lock; the UPDATE waits for it, then re-checks `status = 0` on the row as the claim left it and
 * changes nothing, so a Fetched or started row is never edited. With `notify`, `pg_notify` wakes
 * the workers when the edited job is due now (sent at commit, as an enqueue's is).
 */
export const updatePending = (s: string, notifyChannel: string | null): string => `
WITH changed AS (
  UPDATE ${s}.jobs_hot j
  SET payload = coalesce($2::text, j.payload),
      payload_version = coalesce($3::int, j.payload_version),
      tags = CASE WHEN $4::boolean THEN $5::text ELSE j.tags END,
      priority = coalesce($6::int, j.priority),
      scheduled_at_utc = CASE $7::int WHEN 0 THEN j.scheduled_at_utc
                                      WHEN 1 THEN NULL
                                      ELSE $8::timestamptz END,
      last_updated_utc = now(),
      last_modified_by = coalesce($9::text, j.last_modified_by)
  WHERE j.id = $1 AND j.status = 0
    AND ($10::text IS NULL OR (j.queue = $10::text AND j.type = $11::text))
  RETURNING j.id, j.queue, coalesce(j.scheduled_at_utc, j.enqueued_at_utc) <= now() AS due
)
SELECT id FROM changed${
  notifyChannel === null
    ? ''
    : `
UNION ALL
SELECT NULL FROM changed c
CROSS JOIN LATERAL pg_notify(${literal(notifyChannel)}, c.queue)
WHERE c.due`
}`;

/** Binds {@link updatePending}: see there for $1–$11. */
export function updatePendingParams(
  id: string,
  e: ValidatedPendingUpdate,
  actor: string | null,
): unknown[] {
  const schedule = e.runAt === undefined ? 0 : e.runAt === null ? 1 : 2;
  return [
    id,
    e.payload,
    e.payloadVersion,
    e.tags !== undefined,
    e.tags ?? null,
    e.priority,
    schedule,
    e.runAt ?? null,
    actor,
    e.expect?.queue ?? null,
    e.expect?.type ?? null,
  ];
}
