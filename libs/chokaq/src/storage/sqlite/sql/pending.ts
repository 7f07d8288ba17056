/**
 * Edits of a job that is still Pending (`updatePending`): one guarded UPDATE of the hot row.
 */
import { SQLITE_NOW_MS, SqliteTables } from './fragments';

/** The statements of `updatePending`. */
export function pendingStatements(t: SqliteTables) {
  return {
    /**
     * Applies the edits to job `@id` if it is Pending and, with `@queue`, of queue `@queue` and
     * type `@type`; returns its id. `@payload`, `@payloadVersion` and `@priority` NULL keep the
     * column; `@setTags` 1 writes `@tags`; `@schedule` 0 keeps the due time, 1 clears the schedule
     * (run now: due by its enqueue time, as a job enqueued without a delay is), 2 sets it to
     * `@runAt` (epoch ms). Runs in the write transaction, where no claim can interleave.
     */
    updatePending: `UPDATE ${t.hot}
      SET payload = COALESCE(@payload, payload),
          payload_version = COALESCE(@payloadVersion, payload_version),
          tags = CASE WHEN @setTags = 1 THEN @tags ELSE tags END,
          priority = COALESCE(@priority, priority),
          scheduled_at_utc = CASE @schedule WHEN 0 THEN scheduled_at_utc
                                            WHEN 1 THEN NULL
                                            ELSE @runAt END,
          last_updated_utc = ${SQLITE_NOW_MS},
          last_modified_by = COALESCE(@actor, last_modified_by)
      WHERE id = @id AND status = 0
        AND (@queue IS NULL OR (queue = @queue AND type = @type))
      RETURNING id`,
  };
}
