import type { Checked } from '../../interfaces/checked.interface';
import type { CancelResult } from '../../interfaces/job.interface';
import { DlqFilter } from '../../interfaces/job-view.interface';
import {
  QueueInfo,
  QueuePatch,
  RetentionPolicy,
  RetentionResult,
} from '../../interfaces/job.interface';
import { RecurringJobRecord } from '../../interfaces/recurring-job.interface';
import { CheckedRecurringDefinition, chunk } from '../../validation/validate-args';
import { ValidatedEdits, ValidatedPendingUpdate } from '../../validation/validate-job';
import { Audit } from '../dialect-job-storage';
import {
  auditWriteError,
  laterBatches,
  nothingRemoved,
  retentionDetails,
} from '../shared/audit-log';
import { mapQueueRow, toDate } from '../shared/row-mapper';
import { isDuplicateKeyError } from './postgres-errors';
import { PostgresPartitions } from './postgres-partitions';
import { Exec, PostgresConnection } from './postgres.connection';
import * as SQL from './sql';

/** Ids per statement of id-list operations (cancel, resurrectMany, purgeDlq). */
const ID_CHUNK = 1_000;

/**
 * The operator's half of the PostgreSQL write side: cancels, DLQ → hot moves, queue controls, purges and
 * retention, the audit log, and recurring definitions, with the audited-write helpers both halves
 * use. {@link PostgresJobStore} extends it, so the dialect stays one `JobStore` object; the split
 * only keeps each file readable (the job store holds what the worker runs on).
 */
export class PostgresAdminStore {
  protected readonly s: string;
  /** The `LISTEN/NOTIFY` channels of enqueues and cancels (null with `notify: false`). */
  protected readonly channel: string | null;
  protected readonly cancelChannel: string | null;
  /** The fixed statements, by the name of the method they serve (`sql/`), prepared by name. */
  protected readonly sql: ReturnType<typeof SQL.hotPathStatements>;
  /** The partitioned Archive and DLQ, when they are (`storage.partitioning`). */
  protected readonly partitions: PostgresPartitions;

  constructor(protected readonly db: PostgresConnection) {
    this.s = db.s;
    this.partitions = new PostgresPartitions(db);
    this.channel = db.config.notify ? SQL.enqueueChannel(db.schemaName) : null;
    this.cancelChannel = db.config.notify ? SQL.cancelChannel(db.schemaName) : null;
    this.sql = SQL.hotPathStatements(this.s, this.channel, this.cancelChannel);
    db.usePrepared(Object.values(this.sql));
  }

  // ---------------------------------------------------------------- cancel

  /**
   * One transaction of two statements: move Pending/Fetched rows to the DLQ, then flag Processing
   * rows. The second statement takes a new snapshot, so a row that became Processing while the
   * first ran is flagged rather than missed.
   */
  async cancel(
    unique: readonly string[],
    who: string | null,
    error: string,
    audit: Audit,
  ): Promise<CancelResult> {
    const result: CancelResult = { cancelled: [], cancelRequested: [] };
    for (const part of chunk(unique, ID_CHUNK)) {
      const [moved, requested] = await this.db.transaction('cancel', async (exec) => {
        const rows = [
          await exec(this.sql.cancel, SQL.cancelParams(part, error, who)),
          await exec(this.sql.cancelRequest, SQL.cancelRequestParams(part, who)),
        ] as const;
        await this.recordAudit(exec, audit, rows[0].length + rows[1].length);
        return rows;
      });
      result.cancelled.push(...moved.map((r) => String(r.id)));
      result.cancelRequested.push(...requested.map((r) => String(r.id)));
    }
    return result;
  }

  // ---------------------------------------------------------------- pending edits

  /** @inheritdoc */
  async updatePending(
    id: string,
    e: Checked<ValidatedPendingUpdate>,
    actor: string | null,
    audit: Audit,
  ): Promise<number> {
    const sql = SQL.updatePending(this.s, this.channel);
    return this.write('updatePending', audit, async (exec) => {
      // The notify rows (with `notify`) carry no id.
      const rows = await exec(sql, SQL.updatePendingParams(id, e, actor));
      const changed = rows.filter((r) => r.id !== null).length;
      if (changed > 0) await this.recordAudit(exec, audit, changed);
      return changed;
    });
  }

  // ---------------------------------------------------------------- DLQ → hot

  /** @inheritdoc */
  async resurrect(
    jobId: string,
    e: Checked<ValidatedEdits>,
    actor: string | null,
    audit: Audit,
  ): Promise<number> {
    const params = SQL.resurrectByIdsParams(e, actor, [jobId]);
    const sql = SQL.resurrect(this.s, SQL.CHOOSE_DLQ_BY_IDS);
    const rows = await this.audited('resurrect', audit, sql, params);
    return rows.length;
  }

  /** @inheritdoc */
  async resurrectMany(
    unique: readonly string[],
    who: string | null,
    audit: Audit,
  ): Promise<string[]> {
    const moved: string[] = [];
    const sql = SQL.resurrect(this.s, SQL.CHOOSE_DLQ_BY_IDS);
    for (const part of chunk(unique, ID_CHUNK)) {
      const params = SQL.resurrectByIdsParams({ payload: null, priority: null }, who, part);
      const rows = await this.audited('resurrectMany', audit, sql, params);
      moved.push(...rows.map((r) => String(r.id)));
    }
    return moved;
  }

  /** Bounded batches (oldest failure first, skipping rows other bulk actions hold), each its own statement. */
  async resurrectByFilter(
    f: Checked<DlqFilter>,
    max: number,
    who: string | null,
    audit: Audit,
  ): Promise<string[]> {
    const moved: string[] = [];
    for (let a = audit; moved.length < max; a = laterBatches(a)) {
      const batch = Math.min(ID_CHUNK, max - moved.length);
      const query = SQL.resurrectByFilterQuery(this.s, f, batch, who);
      const rows = await this.audited('resurrectByFilter', a, query.text, query.values);
      moved.push(...rows.map((r) => String(r.id)));
      if (rows.length < batch) break;
    }
    return moved;
  }

  // ---------------------------------------------------------------- queues

  /** @inheritdoc */
  async getQueues(): Promise<QueueInfo[]> {
    return (await this.db.query('getQueues', SQL.getQueues(this.s))).map(mapQueueRow);
  }

  /** @inheritdoc */
  async updateQueue(name: string, p: Checked<QueuePatch>, audit: Audit): Promise<QueueInfo> {
    const sql = SQL.updateQueue(this.s);
    const [row] = await this.audited('updateQueue', audit, sql, SQL.updateQueueParams(name, p));
    return mapQueueRow(row);
  }

  // ---------------------------------------------------------------- purge and retention

  /** @inheritdoc */
  async purgeDlq(ids: readonly string[], audit: Audit): Promise<number> {
    let deleted = 0;
    for (const part of chunk(ids, ID_CHUNK)) {
      const sql = SQL.purgeDlq(this.s);
      deleted += (await this.audited('purgeDlq', audit, sql, SQL.purgeDlqParams(part))).length;
    }
    return deleted;
  }

  /** @inheritdoc */
  async purgeDlqByFilter(f: Checked<DlqFilter>, max: number, audit: Audit): Promise<number> {
    let deleted = 0;
    for (let a = audit; deleted < max; a = laterBatches(a)) {
      const batch = Math.min(ID_CHUNK, max - deleted);
      const query = SQL.purgeDlqByFilterQuery(this.s, f, batch);
      const rows = await this.audited('purgeDlqByFilter', a, query.text, query.values);
      deleted += rows.length;
      if (rows.length < batch) break;
    }
    return deleted;
  }

  /**
   * Each table in batches of `batchSize`, each batch its own short transaction: its statement,
   * and with `audit` the run's audit row (rows removed so far, in the same transaction).
   */
  async applyRetention(
    policy: Checked<Required<RetentionPolicy>>,
    audit: Audit,
  ): Promise<RetentionResult> {
    const batch = policy.batchSize;
    const done = nothingRemoved();
    // The run's audit row in the caller's transaction, with `removed` more rows of `table` than
    // `done` holds (added to it once that transaction committed).
    const count = (exec: Exec, table: keyof RetentionResult, removed: number) =>
      this.recordAudit(
        exec,
        audit,
        removed,
        retentionDetails(audit, { ...done, [table]: done[table] + removed }),
      );
    const drain = async (table: keyof RetentionResult, sql: string, ageMs: number) => {
      for (;;) {
        const n = await this.write(`retention.${table}`, audit, async (exec) => {
          const deleted = (await exec(sql, SQL.applyRetentionParams(ageMs, batch))).length;
          await count(exec, table, deleted);
          return deleted;
        });
        done[table] += n;
        if (n < batch) return;
      }
    };
    // Batches that change rows without removing jobs' data (counted nowhere, not audited).
    const repeat = async (name: string, sql: string, ageMs: number) => {
      for (;;) {
        const rows = await this.db.query(name, sql, SQL.applyRetentionParams(ageMs, batch));
        if (rows.length < batch) return;
      }
    };
    // A partitioned Archive or DLQ: partitions made ahead, the expired ones dropped whole, and
    // row by row only in the partitions that are not (see PostgresPartitions.rowWiseTables).
    const layout = await this.partitions.layout();
    await this.partitions.makeAhead(layout);
    const pillars = [
      ['archive', 'jobs_archive', policy.archiveMs, SQL.applyRetentionArchive],
      ['dlq', 'jobs_dlq', policy.dlqMs, SQL.applyRetentionDlq],
    ] as const;
    for (const [key, table, ageMs, statement] of pillars) {
      for (const partition of this.partitions.expired(layout, table, ageMs)) {
        done[key] += await this.partitions.drop(table, partition, (exec, n) => count(exec, key, n));
      }
      for (const target of this.partitions.rowWiseTables(layout, table, ageMs)) {
        await drain(key, statement(this.s, target), ageMs);
      }
    }
    await drain('metricBuckets', SQL.applyRetentionBuckets(this.s), policy.metricsMs);
    // The totals are the buckets again, summed: those past the buckets' window go, then the
    // minutes no transaction can still write are sealed.
    await repeat('retention.metricTotals', SQL.applyRetentionTotals(this.s), policy.metricsMs);
    await this.sealMetricTotals();
    await drain('workers', SQL.applyRetentionWorkers(this.s), policy.workersMs);
    await drain('audit', SQL.applyRetentionAudit(this.s), policy.auditMs);
    // After the archive's: a unique key whose holder retention just removed holds nothing.
    await drain('dedupeKeys', SQL.applyRetentionDedupeKeys(this.s), 0);
    await drain('groups', SQL.applyRetentionGroups(this.s), 0);
    const batchesMs = Math.max(policy.archiveMs, policy.dlqMs);
    await drain('batches', SQL.applyRetentionBatches(this.s), batchesMs);
    // Not a removal: jobs of grouped queues stored without the shared group join it (see
    // applyRetentionGroupless).
    await repeat('retention.groupless', SQL.applyRetentionGroupless(this.s), 0);
    return done;
  }

  /**
   * The totals of every queue per minute for the minutes no transaction can still write
   * (`SQL.sealMetricTotals`), in one short transaction that holds the seal's mark.
   */
  private async sealMetricTotals(): Promise<void> {
    await this.db.transaction('retention.sealMetricTotals', async (exec) => {
      const [mark] = await exec(SQL.lockMetricSeal(this.s));
      await exec(SQL.sealMetricTotals(this.s), [String(mark.value)]);
    });
  }

  // ---------------------------------------------------------------- audit log

  /** @inheritdoc */
  async confirmationSecret(candidate: string): Promise<string> {
    const sql = SQL.confirmationSecret(this.s);
    const params = SQL.confirmationSecretParams(candidate);
    const [row] = await this.db.query('confirmationSecret', sql, params);
    return String(row.value);
  }

  /**
   * Runs `work` as an admin change: in one transaction when `audit` asks for a row (which `work`
   * writes with {@link recordAudit}), else on a connection in autocommit, as before audits existed.
   */
  protected write<T>(name: string, audit: Audit, work: (exec: Exec) => Promise<T>): Promise<T> {
    return audit === null
      ? this.db.retry(name, () => this.db.withConnection(false, work))
      : this.db.transaction(name, work);
  }

  /**
   * One statement of an admin change and its audit row (counting the rows it returned). The first
   * batch of an action confirmed by a token writes its audit row before the statement, so it holds
   * the token before it takes a row: a second action with the same token waits on that uncommitted
   * row and is then refused, instead of skipping the rows the first one has locked (the bulk
   * statements choose theirs with SKIP LOCKED), finding none, and taking the token with nothing
   * done. The row count is added once the statement ran.
   */
  protected audited(name: string, audit: Audit, sql: string, params: unknown[]) {
    return this.write(name, audit, async (exec) => {
      if (audit?.once) await this.recordAudit(exec, audit, 0);
      const rows = await exec(sql, params);
      await this.recordAudit(exec, laterBatches(audit), rows.length);
      return rows;
    });
  }

  /**
   * Writes (or adds `rows` to) the audit row of an action, in the caller's transaction. The first
   * batch of an action confirmed by a token (`audit.once`, see `laterBatches`) inserts the row
   * ({@link SQL.recordAuditOnce}): when the token already confirmed one, its transaction rolls back
   * and the action is refused.
   */
  protected async recordAudit(
    exec: Exec,
    audit: Audit,
    rows: number,
    details: string | null = audit?.details ?? null,
  ): Promise<void> {
    if (audit === null) return;
    const sql = audit.once ? SQL.recordAuditOnce(this.s) : SQL.recordAudit(this.s);
    try {
      await exec(sql, SQL.recordAuditParams(audit, rows, details));
    } catch (error) {
      throw auditWriteError(error, audit, isDuplicateKeyError);
    }
  }

  // ---------------------------------------------------------------- recurring definitions

  /** @inheritdoc */
  async upsertRecurringJob(d: Checked<CheckedRecurringDefinition>, audit: Audit): Promise<void> {
    await this.write('upsertRecurringJob', audit, async (exec) => {
      await exec(SQL.upsertRecurringJob(this.s), SQL.upsertRecurringJobParams(d));
      // An upsert always writes its row: one row affected.
      await this.recordAudit(exec, audit, 1);
    });
  }

  /** @inheritdoc */
  async getRecurringJobs(): Promise<RecurringJobRecord[]> {
    const rows = await this.db.query('getRecurringJobs', SQL.getRecurringJobs(this.s));
    return rows.map((r) => ({
      name: String(r.name),
      cron: String(r.cron),
      timeZone: String(r.time_zone),
      queue: String(r.queue),
      type: String(r.type),
      payload: JSON.parse(String(r.payload)) as unknown,
      misfirePolicy: r.misfire_policy === 'none' ? 'none' : 'skip',
      nextSlotUtc: toDate(r.next_slot_utc)!,
      lastSlotUtc: toDate(r.last_slot_utc),
      isPaused: r.is_paused === true,
      source: r.source === 'runtime' ? 'runtime' : 'decorator',
      lastJobId:
        r.last_job_id === null || r.last_job_id === undefined ? null : String(r.last_job_id),
    }));
  }

  /** @inheritdoc */
  async setRecurringJobPaused(name: string, paused: boolean, audit: Audit): Promise<boolean> {
    const sql = SQL.setRecurringJobPaused(this.s);
    const params = SQL.setRecurringJobPausedParams(name, paused);
    const rows = await this.audited('setRecurringJobPaused', audit, sql, params);
    return rows.length > 0;
  }

  /** @inheritdoc */
  async removeRecurringJob(name: string, audit: Audit): Promise<boolean> {
    const sql = SQL.removeRecurringJob(this.s);
    const params = SQL.removeRecurringJobParams(name);
    const rows = await this.audited('removeRecurringJob', audit, sql, params);
    return rows.length > 0;
  }
}
