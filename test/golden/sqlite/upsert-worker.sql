-- [1/3] run
BEGIN IMMEDIATE

-- [2/3] run
INSERT INTO chokaq_workers (worker_id, host, pid, library_version, started_at_utc,
        last_seen_utc, concurrency, running, handled, circuits, is_draining, stopped_at_utc)
      VALUES (@workerId, @host, @pid, @libraryVersion, CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER), CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER),
        @concurrency, @running, @handled, @circuits, @draining, NULL)
      ON CONFLICT (worker_id) DO UPDATE SET
        host = excluded.host, pid = excluded.pid, library_version = excluded.library_version,
        started_at_utc = CASE WHEN @starting = 1 THEN excluded.started_at_utc
                              ELSE started_at_utc END,
        last_seen_utc = excluded.last_seen_utc,
        concurrency = excluded.concurrency, running = excluded.running,
        handled = excluded.handled, circuits = excluded.circuits,
        is_draining = excluded.is_draining,
        stopped_at_utc = CASE WHEN @starting = 1 THEN NULL ELSE stopped_at_utc END

-- [3/3] run
COMMIT
