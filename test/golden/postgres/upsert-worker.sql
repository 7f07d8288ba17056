-- [1/1] query

INSERT INTO "chokaq".workers AS w (
  worker_id, host, pid, library_version, started_at_utc, last_seen_utc,
  concurrency, running, handled, circuits, is_draining, stopped_at_utc)
VALUES ($1, $2, $3, $4, now(), now(), $5, $6, $7, $8, $9, NULL)
ON CONFLICT (worker_id) DO UPDATE
SET host = EXCLUDED.host, pid = EXCLUDED.pid, library_version = EXCLUDED.library_version,
    started_at_utc = CASE WHEN $10::boolean THEN now() ELSE w.started_at_utc END,
    last_seen_utc = now(),
    concurrency = EXCLUDED.concurrency, running = EXCLUDED.running,
    handled = EXCLUDED.handled, circuits = EXCLUDED.circuits, is_draining = EXCLUDED.is_draining,
    stopped_at_utc = CASE WHEN $10::boolean THEN NULL ELSE w.stopped_at_utc END
