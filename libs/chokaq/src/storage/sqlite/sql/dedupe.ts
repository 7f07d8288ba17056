/**
 * Dedupe keys (`NewJob.dedupe`): the key table's statements, run in the enqueue's BEGIN IMMEDIATE
 * transaction (or the caller's) in the order of `storage/shared/dedupe.ts`. The write lock held
 * since BEGIN serialises every enqueue, so reading the key row needs no lock of its own.
 */
import { SQLITE_NOW_MS, SqliteTables } from './fragments';

/** The window's end for `@mode` and `@window_ms`: none for unique (mode 3). */
const WINDOW_END = `CASE WHEN @mode = 3 THEN NULL ELSE ${SQLITE_NOW_MS} + @window_ms END`;

/** The dedupe key statements of one prefix. */
export function dedupeStatements(t: SqliteTables) {
  const { hot, archive, keys } = t;
  return {
    /** Takes `@key` for `@job_id` if no row holds it; returns the job id when it did. */
    dedupeTake: `INSERT INTO ${keys} (key, job_id, mode, states, window_ms, window_started_utc,
        window_ends_utc)
      VALUES (@key, @job_id, @mode, @states, @window_ms, ${SQLITE_NOW_MS}, ${WINDOW_END})
      ON CONFLICT (key) DO NOTHING
      RETURNING job_id`,

    /**
     * Key `@key`'s holder: its job, whether the key's window is still open, the holder's hot status
     * (NULL when not hot), and whether it succeeded within the last `@window_ms`.
     */
    dedupeHolder: `SELECT k.job_id, COALESCE(k.window_ends_utc > ${SQLITE_NOW_MS}, 0) AS in_window,
        h.status AS hot_status,
        EXISTS (SELECT 1 FROM ${archive} a
                WHERE a.id = k.job_id AND a.finished_at_utc > ${SQLITE_NOW_MS} - @window_ms)
          AS finished_within_window
      FROM ${keys} k LEFT JOIN ${hot} h ON h.id = k.job_id
      WHERE k.key = @key`,

    /**
     * Debounce: gives holder `@holder`, if still Pending, the new payload and a run time
     * `@window_ms` from now; returns its id. The key's window moves with {@link dedupeRewindow}.
     */
    dedupeReplace: `UPDATE ${hot}
      SET payload = @payload, payload_version = @payload_version, trace_context = @trace_context,
          scheduled_at_utc = ${SQLITE_NOW_MS} + @window_ms, last_updated_utc = ${SQLITE_NOW_MS}
      WHERE id = @holder AND status = 0
      RETURNING id`,

    /** Debounce, after a replace: the key's window starts now and ends `@window_ms` later. */
    dedupeRewindow: `UPDATE ${keys}
      SET window_started_utc = ${SQLITE_NOW_MS}, window_ends_utc = ${SQLITE_NOW_MS} + @window_ms
      WHERE key = @key`,

    /** Points `@key` at `@job_id`, just inserted, with its mode, states and a new window. */
    dedupeMove: `UPDATE ${keys}
      SET job_id = @job_id, mode = @mode, states = @states, window_ms = @window_ms,
          window_started_utc = ${SQLITE_NOW_MS}, window_ends_utc = ${WINDOW_END}
      WHERE key = @key`,

    /** The key job `@id` holds, if any (`getJob`). */
    dedupeOfJob: `SELECT key, mode, states, window_ms, window_started_utc, window_ends_utc
      FROM ${keys} WHERE job_id = @id`,

    /**
     * applyRetention batch: dedupe keys that hold nothing any more (`@cutoff` unused): a throttle
     * or debounce window that ended; a unique key whose holder is neither hot nor succeeded within
     * the key's window (a holder in the DLQ never holds a unique key).
     */
    applyRetentionDedupeKeys: `DELETE FROM ${keys} WHERE key IN (
        SELECT k.key FROM ${keys} k
        WHERE @cutoff IS NOT NULL AND CASE WHEN k.mode = 3
          THEN NOT EXISTS (SELECT 1 FROM ${hot} h WHERE h.id = k.job_id)
           AND NOT EXISTS (SELECT 1 FROM ${archive} a
                           WHERE a.id = k.job_id AND a.finished_at_utc > ${SQLITE_NOW_MS} - k.window_ms)
          ELSE k.window_ends_utc <= ${SQLITE_NOW_MS} END
        LIMIT @limit)`,
  };
}
