/** The Workers table: a process's presence row, its stop, and the list operators read. */
import type { CheckedWorkerHeartbeat, CheckedWorkerQuery } from '../../../validation/validate-args';
import { MS } from './fragments';

/**
 * One worker's report into its row of the Workers table (its heartbeat). $1 worker id, $2 host,
 * $3 pid, $4 library version, $5 concurrency, $6 running, $7 handled (JSON), $8 circuits (JSON),
 * $9 draining, $10 starting: sets `started_at_utc` and clears `stopped_at_utc` (a new run of the
 * process); a later report keeps both. Every time from the database clock.
 * Lock/isolation: `INSERT … ON CONFLICT DO UPDATE` is atomic under concurrency (no lost insert
 * race); READ COMMITTED, one statement, one row lock on the worker's own row.
 */
export const upsertWorker = (s: string): string => `
INSERT INTO ${s}.workers AS w (
  worker_id, host, pid, library_version, started_at_utc, last_seen_utc,
  concurrency, running, handled, circuits, is_draining, stopped_at_utc)
VALUES ($1, $2, $3, $4, now(), now(), $5, $6, $7, $8, $9, NULL)
ON CONFLICT (worker_id) DO UPDATE
SET host = EXCLUDED.host, pid = EXCLUDED.pid, library_version = EXCLUDED.library_version,
    started_at_utc = CASE WHEN $10::boolean THEN now() ELSE w.started_at_utc END,
    last_seen_utc = now(),
    concurrency = EXCLUDED.concurrency, running = EXCLUDED.running,
    handled = EXCLUDED.handled, circuits = EXCLUDED.circuits, is_draining = EXCLUDED.is_draining,
    stopped_at_utc = CASE WHEN $10::boolean THEN NULL ELSE w.stopped_at_utc END`;

/**
 * Binds {@link upsertWorker}: $1 worker id, $2 host, $3 pid, $4 library version, $5 concurrency,
 * $6 running, $7 handled (JSON), $8 circuits (JSON), $9 draining, $10 starting.
 */
export function upsertWorkerParams(w: CheckedWorkerHeartbeat): unknown[] {
  return [
    w.workerId,
    w.host,
    w.pid,
    w.libraryVersion,
    w.concurrency,
    w.running,
    w.handled,
    w.circuits,
    w.draining,
    w.starting,
  ];
}

/**
 * A clean stop of worker $1: stop and last-seen times now, nothing running. Returns the worker id
 * when a row changed. Lock/isolation: READ COMMITTED, one row lock.
 */
export const markWorkerStopped = (s: string): string => `
UPDATE ${s}.workers
SET stopped_at_utc = now(), last_seen_utc = now(), running = 0
WHERE worker_id = $1 AND stopped_at_utc IS NULL
RETURNING worker_id`;

/** Binds {@link markWorkerStopped}: $1 the worker id. */
export function markWorkerStoppedParams(workerId: string): unknown[] {
  return [workerId];
}

/**
 * The Workers table, most recently seen first, at most $2 rows, each with `is_lost`: not stopped
 * and not seen for more than $1 ms by the database clock. A plain read (no lock); the table holds
 * live workers and the stopped or lost ones retention has not removed yet.
 */
export const listWorkers = (s: string): string => `
SELECT w.*, (w.stopped_at_utc IS NULL AND w.last_seen_utc < now() - $1::float8 ${MS}) AS is_lost
FROM ${s}.workers w
ORDER BY w.last_seen_utc DESC, w.worker_id
LIMIT $2`;

/** Binds {@link listWorkers}: $1 the ms after which an unstopped worker is lost, $2 the most rows. */
export function listWorkersParams(query: CheckedWorkerQuery): unknown[] {
  return [query.lostAfterMs, query.limit];
}
