/** Recurring job definitions and the compare-and-set that claims a slot once across processes. */
import { SqliteTables } from './fragments';

/** Recurring definitions and the compare-and-set of a slot. */
export function recurringStatements(t: SqliteTables) {
  const { recurring } = t;
  return {
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
