/** Purges and retention: bounded batches of each table. Counters are lifetime and never touched. */
import { SqlWhere } from './filters';
import { GROUPED, IDS, SQLITE_NOW_MS, SqliteTables } from './fragments';
import { chooseDlqByFilter } from './moves';

/**
 * What a delete from the DLQ or the Archive returns of each row: its id, whose attempt rows the
 * same transaction deletes next, and its dependency columns, for the remove step of its edges
 * (`dependencyRemoveOwn`, `dependencyRemove`).
 */
const GONE = 'RETURNING id, has_dependents, waiting_on';

/**
 * purgeDlqByFilter: one batch, its own transaction; counters untouched. Returns the rows
 * ({@link GONE}).
 */
export function purgeDlqByFilter(dlqTable: string, where: SqlWhere): string {
  return `DELETE FROM ${dlqTable} WHERE id IN (${chooseDlqByFilter(dlqTable, where)}) ${GONE}`;
}

/** Purges by id and the retention batches of every table. */
export function retentionStatements(t: SqliteTables) {
  const { hot, archive, dlq, buckets, workers, audit, groups, queues, batches, callbacks } = t;
  return {
    /** purgeDlq: by id; counters untouched. Returns the rows ({@link GONE}). */
    purgeDlq: `DELETE FROM ${dlq} WHERE id IN ${IDS} ${GONE}`,

    /**
     * applyRetention batch: archive rows finished before `@cutoff`; each batch its own
     * transaction, which deletes the returned ids' attempt rows too ({@link deleteAttempts}) and
     * runs the remove step of their edges ({@link GONE}).
     */
    applyRetentionArchive: `DELETE FROM ${archive} WHERE id IN (
        SELECT id FROM ${archive} WHERE finished_at_utc < @cutoff ORDER BY finished_at_utc LIMIT @limit)
      ${GONE}`,

    /** applyRetention batch: DLQ rows failed before `@cutoff`; as the archive's. */
    applyRetentionDlq: `DELETE FROM ${dlq} WHERE id IN (
        SELECT id FROM ${dlq} WHERE failed_at_utc < @cutoff ORDER BY failed_at_utc LIMIT @limit)
      ${GONE}`,

    /** applyRetention batch: metric buckets older than `@cutoff` (primary key leads with bucket_utc). */
    applyRetentionBuckets: `DELETE FROM ${buckets} WHERE rowid IN (
        SELECT rowid FROM ${buckets} WHERE bucket_utc < @cutoff ORDER BY bucket_utc LIMIT @limit)`,

    /**
     * applyRetention batch: Workers rows last seen before `@cutoff` (stopped or lost workers: a
     * live one reports every heartbeat). A worker that reports again writes its row anew.
     */
    applyRetentionWorkers: `DELETE FROM ${workers} WHERE worker_id IN (
        SELECT worker_id FROM ${workers} WHERE last_seen_utc < @cutoff
        ORDER BY last_seen_utc LIMIT @limit)`,

    /** applyRetention batch: audit log entries recorded before `@cutoff`. */
    applyRetentionAudit: `DELETE FROM ${audit} WHERE id IN (
        SELECT id FROM ${audit} WHERE at_utc < @cutoff ORDER BY at_utc LIMIT @limit)`,

    /**
     * applyRetention batch: group rate windows that no longer count (`@cutoff` unused): the
     * group's last start is at least one window old (its allowance is the whole of the limit
     * again), or its queue has no group rate limit. Under BEGIN IMMEDIATE no claim writes a window
     * meanwhile, so a window that counts is never removed; a later start makes the row again.
     */
    applyRetentionGroups: `DELETE FROM ${groups} WHERE (queue, group_key) IN (
        SELECT g.queue, g.group_key FROM ${groups} g LEFT JOIN ${queues} q ON q.name = g.queue
        WHERE @cutoff IS NOT NULL
          AND (q.group_rate_per_ms IS NULL OR g.rate_window_last IS NULL
               OR g.rate_window_last <= ${SQLITE_NOW_MS} - q.group_rate_per_ms)
        LIMIT @limit)`,

    /**
     * applyRetention batch: batches settled before `@cutoff` (the longer of the Archive's and the
     * DLQ's retention: their jobs' rows are gone or going), at most `@limit`, oldest first
     * (`batches_settled_ix`). Returns the ids, whose callbacks' rows the same transaction deletes
     * next ({@link deleteBatchCallbacks}). SQLite has one writer: under BEGIN IMMEDIATE no move
     * settles a batch and no resurrect reopens one meanwhile, so a batch with a job back in the hot
     * table is never removed. A job of a removed batch that a resurrect brings back later still
     * carries its `batch_id`, whose settle and reopen steps then find no row and write nothing.
     */
    applyRetentionBatches: `DELETE FROM ${batches} WHERE id IN (
        SELECT id FROM ${batches} WHERE settled_at_utc < @cutoff
        ORDER BY settled_at_utc LIMIT @limit)
      RETURNING id`,

    /**
     * The callbacks' rows of the batches `@ids` (removed by retention in the same transaction):
     * one primary-key range per batch.
     */
    deleteBatchCallbacks: `DELETE FROM ${callbacks} WHERE batch_id IN ${IDS}`,

    /**
     * applyRetention, not a removal: a batch of at most `@limit` hot jobs without a group in a
     * queue with group limits (`@cutoff` unused), put into the queue's shared group `''` so that
     * its grouped claim reaches them. Setting a limit does this for the rows it sees
     * (`updateQueueSharedGroup`) and every enqueue and resurrect of this release stores `''`
     * itself, under the same write lock; this catches the jobs a process of an earlier release
     * enqueued (its insert names no group column) after the limit was set. CROSS JOIN keeps the
     * queues the outer loop: only the grouped queues' hot rows are read (`jobs_hot_queue_enqueued_ix`).
     */
    applyRetentionGroupless: `UPDATE ${hot} SET group_key = ''
      WHERE group_key IS NULL AND id IN (
        SELECT h.id FROM ${queues} q CROSS JOIN ${hot} h ON h.queue = q.name
        WHERE @cutoff IS NOT NULL AND ${GROUPED('q')} AND h.group_key IS NULL
        LIMIT @limit)`,
  };
}
