/** Purges and retention: bounded batches of each table. Counters are lifetime and never touched. */
import { SqlWhere } from './filters';
import { IDS, SqliteTables } from './fragments';
import { chooseDlqByFilter } from './moves';

/**
 * purgeDlqByFilter: one batch, its own transaction; counters untouched. Returns the ids, whose
 * attempt rows the same transaction deletes next.
 */
export function purgeDlqByFilter(dlqTable: string, where: SqlWhere): string {
  return `DELETE FROM ${dlqTable} WHERE id IN (${chooseDlqByFilter(dlqTable, where)}) RETURNING id`;
}

/** Purges by id and the retention batches of every table. */
export function retentionStatements(t: SqliteTables) {
  const { archive, dlq, buckets, workers, audit } = t;
  return {
    /** purgeDlq: by id; counters untouched. Returns the ids, whose attempt rows go next. */
    purgeDlq: `DELETE FROM ${dlq} WHERE id IN ${IDS} RETURNING id`,

    /**
     * applyRetention batch: archive rows finished before `@cutoff`; each batch its own
     * transaction, which deletes the returned ids' attempt rows too ({@link deleteAttempts}).
     */
    applyRetentionArchive: `DELETE FROM ${archive} WHERE id IN (
        SELECT id FROM ${archive} WHERE finished_at_utc < @cutoff ORDER BY finished_at_utc LIMIT @limit)
      RETURNING id`,

    /** applyRetention batch: DLQ rows failed before `@cutoff`; as the archive's. */
    applyRetentionDlq: `DELETE FROM ${dlq} WHERE id IN (
        SELECT id FROM ${dlq} WHERE failed_at_utc < @cutoff ORDER BY failed_at_utc LIMIT @limit)
      RETURNING id`,

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
  };
}
