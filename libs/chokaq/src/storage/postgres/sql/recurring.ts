/** Recurring job definitions and the compare-and-set that claims a slot once across processes. */
import type { CheckedRecurringDefinition } from '../../../validation/validate-args';

/**
 * Creates or updates a recurring definition. $1 name, $2 cron, $3 zone, $4 queue, $5 type,
 * $6 payload, $7 misfire policy, $8 next slot, $9 source. `last_slot_utc`, `last_job_id` and
 * `is_paused` are kept; `next_slot_utc` is reset only when the cron or zone changed (every SET
 * reads the old row).
 */
export const upsertRecurringJob = (s: string): string => `
INSERT INTO ${s}.recurring_jobs AS r (
  name, cron, time_zone, queue, type, payload, last_slot_utc, next_slot_utc, misfire_policy, is_paused, source)
VALUES ($1, $2, $3, $4, $5, $6, NULL, $8, $7, false, $9)
ON CONFLICT (name) DO UPDATE
SET next_slot_utc = CASE WHEN r.cron IS DISTINCT FROM EXCLUDED.cron
                           OR r.time_zone IS DISTINCT FROM EXCLUDED.time_zone
                         THEN EXCLUDED.next_slot_utc ELSE r.next_slot_utc END,
    cron = EXCLUDED.cron, time_zone = EXCLUDED.time_zone, queue = EXCLUDED.queue,
    type = EXCLUDED.type, payload = EXCLUDED.payload, misfire_policy = EXCLUDED.misfire_policy,
    source = EXCLUDED.source`;

/**
 * Binds {@link upsertRecurringJob}: $1 name, $2 cron, $3 zone, $4 queue, $5 type, $6 payload,
 * $7 misfire policy, $8 next slot, $9 source.
 */
export function upsertRecurringJobParams(d: CheckedRecurringDefinition): unknown[] {
  return [
    d.name,
    d.cron,
    d.timeZone,
    d.queue,
    d.type,
    d.payload,
    d.misfirePolicy,
    d.nextSlotUtc,
    d.source,
  ];
}

/** All recurring definitions. */
export const getRecurringJobs = (s: string): string =>
  `SELECT * FROM ${s}.recurring_jobs ORDER BY name`;

/** Pauses ($2 true) or resumes ($2 false) recurring job $1; a row back when it exists. */
export const setRecurringJobPaused = (s: string): string => `
UPDATE ${s}.recurring_jobs SET is_paused = $2 WHERE name = $1
RETURNING name`;

/** Binds {@link setRecurringJobPaused}: $1 name, $2 paused. */
export function setRecurringJobPausedParams(name: string, paused: boolean): unknown[] {
  return [name, paused];
}

/** Deletes recurring job $1; a row back when it existed. */
export const removeRecurringJob = (s: string): string => `
DELETE FROM ${s}.recurring_jobs WHERE name = $1
RETURNING name`;

/** Binds {@link removeRecurringJob}: $1 name. */
export function removeRecurringJobParams(name: string): unknown[] {
  return [name];
}

/**
 * Records job $2 as the last run of recurring job $1, leaving the slots alone; a row back when the
 * job exists. Runs first in the trigger's transaction: its row lock (READ COMMITTED) makes a
 * concurrent remove wait for the enqueue to commit, or the trigger find no row and enqueue nothing.
 * Also corrects the claim's `last_job_id` when the slot's idempotency key met a job already hot.
 */
export const triggerRecurringJob = (s: string): string => `
UPDATE ${s}.recurring_jobs SET last_job_id = $2 WHERE name = $1
RETURNING name`;

/** Binds {@link triggerRecurringJob}: $1 name, $2 the job id of its last run. */
export function triggerRecurringJobParams(name: string, jobId: string): unknown[] {
  return [name, jobId];
}

/**
 * Compare-and-set of a recurring slot: advances `next_slot_utc` from $2 to $3 (and records $2 as
 * `last_slot_utc`, and $4, the slot's job when one is enqueued, as `last_job_id`) only if it still
 * equals $2. Lock/isolation: READ COMMITTED row lock; a second process racing for the same slot
 * waits, then re-checks `next_slot_utc = $2` on the new row version and updates nothing. Runs in one
 * transaction with the slot's enqueue.
 */
export const claimRecurringSlot = (s: string): string => `
UPDATE ${s}.recurring_jobs
SET last_slot_utc = $2, next_slot_utc = $3, last_job_id = coalesce($4, last_job_id)
WHERE name = $1 AND next_slot_utc = $2
RETURNING name`;

/** Binds {@link claimRecurringSlot}: $1 name, $2 the slot, $3 the next slot, $4 the slot's job id or NULL. */
export function claimRecurringSlotParams(
  name: string,
  slotUtc: Date,
  nextSlotUtc: Date,
  jobId: string | null,
): unknown[] {
  return [name, slotUtc, nextSlotUtc, jobId];
}
