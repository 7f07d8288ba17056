/**
 * Purges and retention: bounded batches, each its own short statement, that skip rows other
 * actions hold. Counters are lifetime and never touched here.
 */
import type { DlqFilter } from '../../../interfaces/job-view.interface';
import { filterClause } from './filters';
import { chooseDlqByFilter } from './moves';
import { MS, attemptsDelete } from './fragments';

/**
 * Deletes DLQ rows by id ($1, one bounded chunk). Lock/isolation: READ COMMITTED; rows another
 * transaction holds (e.g. being resurrected) are skipped, not waited for. Counters untouched.
 */
export const purgeDlq = (s: string): string =>
  purgeDlqByFilter(
    s,
    `SELECT f.id FROM ${s}.jobs_dlq f WHERE f.id = ANY ($1::text[]) FOR UPDATE SKIP LOCKED`,
  );

/** Binds {@link purgeDlq}: $1 the ids (one bounded chunk). */
export function purgeDlqParams(ids: readonly string[]): unknown[] {
  return [ids];
}

/**
 * Deletes the DLQ rows whose ids `chosen` yields (evaluated once, see {@link fetchNextBatch}) and
 * their attempt rows ({@link attemptsDelete}), in one statement.
 */
export const purgeDlqByFilter = (s: string, chosen: string): string => `
WITH chosen AS MATERIALIZED (${chosen}),
gone AS (DELETE FROM ${s}.jobs_dlq d USING chosen c WHERE d.id = c.id RETURNING d.id),
history AS (${attemptsDelete(s, 'gone')}
)
SELECT id FROM gone`;

/**
 * One batch of a purge by filter: {@link purgeDlqByFilter} over {@link chooseDlqByFilter}, with its
 * values (the filter's, then the batch size).
 */
export function purgeDlqByFilterQuery(
  s: string,
  filter: DlqFilter,
  batch: number,
): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const where = filterClause('dlq', filter, values, 'f');
  values.push(batch);
  return { text: purgeDlqByFilter(s, chooseDlqByFilter(s, where, `$${values.length}`)), values };
}

/**
 * Retention, one bounded batch: archive rows finished more than $1 ms ago, at most $2, oldest
 * first, and their attempt rows ({@link attemptsDelete}).
 * Lock/isolation: each batch its own short transaction (one statement); the batch is picked once
 * in a MATERIALIZED CTE with SKIP LOCKED, so it never waits on row locks of a concurrent purge or
 * retention run. Counters untouched (they are lifetime).
 */
export const applyRetentionArchive = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.id FROM ${s}.jobs_archive r
  WHERE r.finished_at_utc < now() - $1::float8 ${MS}
  ORDER BY r.finished_at_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
gone AS (DELETE FROM ${s}.jobs_archive a USING chosen c WHERE a.id = c.id RETURNING a.id),
history AS (${attemptsDelete(s, 'gone')}
)
SELECT id FROM gone`;

/** Binds every `applyRetention…` batch: $1 the age in ms past which rows go, $2 the batch size. */
export function applyRetentionParams(ageMs: number, batch: number): unknown[] {
  return [ageMs, batch];
}

/**
 * Retention batch of the DLQ (failed more than $1 ms ago, at most $2) and their attempt rows; as
 * {@link applyRetentionArchive}.
 */
export const applyRetentionDlq = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.id FROM ${s}.jobs_dlq r
  WHERE r.failed_at_utc < now() - $1::float8 ${MS}
  ORDER BY r.failed_at_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
gone AS (DELETE FROM ${s}.jobs_dlq d USING chosen c WHERE d.id = c.id RETURNING d.id),
history AS (${attemptsDelete(s, 'gone')}
)
SELECT id FROM gone`;

/** Retention batch of metric buckets older than $1 ms (at most $2), by primary key; as {@link applyRetentionArchive}. */
export const applyRetentionBuckets = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.bucket_utc, r.queue, r.outcome, r.failure_reason FROM ${s}.metric_buckets r
  WHERE r.bucket_utc < now() - $1::float8 ${MS}
  ORDER BY r.bucket_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED)
DELETE FROM ${s}.metric_buckets b USING chosen c
WHERE b.bucket_utc = c.bucket_utc AND b.queue = c.queue
  AND b.outcome = c.outcome AND b.failure_reason = c.failure_reason
RETURNING 1 AS deleted`;

/**
 * Retention batch of the Workers table: rows last seen more than $1 ms ago (stopped or lost
 * workers: a live one reports every heartbeat), at most $2; as {@link applyRetentionArchive}. A
 * worker that reports again after its row was removed writes it anew.
 */
export const applyRetentionWorkers = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.worker_id FROM ${s}.workers r
  WHERE r.last_seen_utc < now() - $1::float8 ${MS}
  ORDER BY r.last_seen_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED)
DELETE FROM ${s}.workers w USING chosen c WHERE w.worker_id = c.worker_id
RETURNING w.worker_id`;

/** Retention batch of the audit log: entries older than $1 ms, at most $2; as {@link applyRetentionArchive}. */
export const applyRetentionAudit = (s: string): string => `
WITH chosen AS MATERIALIZED (
  SELECT r.id FROM ${s}.audit_log r
  WHERE r.at_utc < now() - $1::float8 ${MS}
  ORDER BY r.at_utc
  LIMIT $2
  FOR UPDATE SKIP LOCKED)
DELETE FROM ${s}.audit_log a USING chosen c WHERE a.id = c.id
RETURNING a.id`;
