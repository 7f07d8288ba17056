/** The Workers table: a process's presence row, its stop, and the list operators read. */
import { SQLITE_NOW_MS, SqliteTables } from './fragments';

/** This process's row of the Workers table. */
export function workerStatements(t: SqliteTables) {
  const { workers } = t;
  return {
    /**
     * upsertWorker: the reporting worker's row, every time from the database clock. `@starting`
     * 1 sets `started_at_utc` and clears `stopped_at_utc` (a new run of the process); a later
     * report keeps both. One statement under BEGIN IMMEDIATE.
     */
    upsertWorker: `INSERT INTO ${workers} (worker_id, host, pid, library_version, started_at_utc,
        last_seen_utc, concurrency, running, handled, circuits, is_draining, stopped_at_utc)
      VALUES (@workerId, @host, @pid, @libraryVersion, ${SQLITE_NOW_MS}, ${SQLITE_NOW_MS},
        @concurrency, @running, @handled, @circuits, @draining, NULL)
      ON CONFLICT (worker_id) DO UPDATE SET
        host = excluded.host, pid = excluded.pid, library_version = excluded.library_version,
        started_at_utc = CASE WHEN @starting = 1 THEN excluded.started_at_utc
                              ELSE started_at_utc END,
        last_seen_utc = excluded.last_seen_utc,
        concurrency = excluded.concurrency, running = excluded.running,
        handled = excluded.handled, circuits = excluded.circuits,
        is_draining = excluded.is_draining,
        stopped_at_utc = CASE WHEN @starting = 1 THEN NULL ELSE stopped_at_utc END`,

    /** markWorkerStopped: a clean stop; stop and last-seen times now, nothing running. */
    markWorkerStopped: `UPDATE ${workers}
      SET stopped_at_utc = ${SQLITE_NOW_MS}, last_seen_utc = ${SQLITE_NOW_MS}, running = 0
      WHERE worker_id = @workerId AND stopped_at_utc IS NULL`,
  };
}

/** The Workers table as operators list it. */
export function workerReadStatements(t: SqliteTables) {
  const { workers } = t;
  return {
    /**
     * listWorkers: the Workers table, most recently seen first, at most `@limit` rows, each with
     * `is_lost`: not stopped and not seen for more than `@lostAfterMs` by the database clock.
     */
    listWorkers: `SELECT *, (stopped_at_utc IS NULL
          AND last_seen_utc < ${SQLITE_NOW_MS} - @lostAfterMs) AS is_lost
      FROM ${workers}
      ORDER BY last_seen_utc DESC, worker_id
      LIMIT @limit`,
  };
}
