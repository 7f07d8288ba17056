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
import { CheckedRecurringDefinition } from '../../validation/validate-args';
import { ValidatedEdits, ValidatedPendingUpdate } from '../../validation/validate-job';
import { Audit } from '../dialect-job-storage';
import {
  auditWriteError,
  laterBatches,
  nothingRemoved,
  retentionDetails,
} from '../shared/audit-log';
import { mapQueueRow, toDate } from '../shared/row-mapper';
import { isDuplicateKeyError } from './mssql-errors';
import { MssqlStatement } from './mssql-params';
import { MssqlPartitions } from './mssql-partitions';
import { bool, idsOf, MssqlConnection, MssqlTransaction, num, Row } from './mssql.connection';
import * as SQL from './sql';

/** Rows per bulk DLQ action statement (resurrect / purge by filter). */
const BULK_BATCH = 500;

/**
 * The operator's half of the SQL Server write side: cancels, DLQ → hot moves, queue controls, purges and
 * retention, the audit log, and recurring definitions, with the audited-batch helpers both halves
 * use. {@link MssqlJobStore} extends it, so the dialect stays one `JobStore` object; the split only
 * keeps each file readable (the job store holds what the worker runs on).
 */
export class MssqlAdminStore {
  /** The partitioned Archive and DLQ, when they are (`storage.partitioning`). */
  protected readonly partitions: MssqlPartitions;

  constructor(protected readonly db: MssqlConnection) {
    this.partitions = new MssqlPartitions(db);
  }

  /** The schema the statements are built for, with how its key columns compare. */
  protected get schema(): SQL.MssqlSchema {
    return this.db.target;
  }

  // ---------------------------------------------------------------- cancel

  /** @inheritdoc */
  async cancel(
    unique: readonly string[],
    actor: string | null,
    error: string,
    audit: Audit,
  ): Promise<CancelResult> {
    const rows = await this.audited('cancel', audit, SQL.cancel(this.schema, unique, actor, error));
    return {
      cancelled: rows.filter((r) => num(r.Kind) === 0).map((r) => String(r.Id)),
      cancelRequested: rows.filter((r) => num(r.Kind) === 1).map((r) => String(r.Id)),
    };
  }

  // ---------------------------------------------------------------- pending edits

  /** @inheritdoc */
  async updatePending(
    id: string,
    e: Checked<ValidatedPendingUpdate>,
    actor: string | null,
    audit: Audit,
  ): Promise<number> {
    const statement = SQL.updatePending(this.schema, id, e, actor);
    if (audit === null) return (await this.db.query('updatePending', statement)).length;
    return this.db.transaction('updatePending', async (tx) => {
      const changed = (await tx.exec(statement)).length;
      if (changed > 0) await this.recordAudit(tx, audit, changed, audit.details);
      return changed;
    });
  }

  // ---------------------------------------------------------------- DLQ → hot

  /** @inheritdoc */
  async resurrect(
    key: string,
    valid: Checked<ValidatedEdits>,
    actor: string | null,
    audit: Audit,
  ): Promise<number> {
    const statement = SQL.resurrect(this.schema, { ids: [key] }, valid, actor);
    return (await this.audited('resurrect', audit, statement)).length;
  }

  /** @inheritdoc */
  async resurrectMany(
    unique: readonly string[],
    actor: string | null,
    audit: Audit,
  ): Promise<string[]> {
    const statement = SQL.resurrect(this.schema, { ids: unique }, null, actor);
    return idsOf(await this.audited('resurrectMany', audit, statement));
  }

  /** @inheritdoc */
  async resurrectByFilter(
    valid: Checked<DlqFilter>,
    max: number,
    actor: string | null,
    audit: Audit,
  ): Promise<string[]> {
    let remaining = max;
    const moved: string[] = [];
    for (let a = audit; remaining > 0; a = laterBatches(a)) {
      const batch = Math.min(BULK_BATCH, remaining);
      const got = idsOf(
        await this.audited(
          'resurrectByFilter',
          a,
          SQL.resurrect(this.schema, { filter: valid, max: batch }, null, actor),
        ),
      );
      moved.push(...got);
      remaining -= got.length;
      if (got.length < batch) break;
    }
    return moved;
  }

  // ---------------------------------------------------------------- queues

  /** @inheritdoc */
  async getQueues(): Promise<QueueInfo[]> {
    return (await this.db.query('getQueues', SQL.getQueues(this.schema))).map(mapQueueRow);
  }

  /** @inheritdoc */
  async updateQueue(queue: string, p: Checked<QueuePatch>, audit: Audit): Promise<QueueInfo> {
    const rows = await this.audited('updateQueue', audit, SQL.updateQueue(this.schema, queue, p));
    return mapQueueRow(rows[0]);
  }

  // ---------------------------------------------------------------- purge and retention

  /** @inheritdoc */
  async purgeDlq(unique: readonly string[], audit: Audit): Promise<number> {
    return this.affected('purgeDlq', SQL.purgeDlq(this.schema, unique), audit);
  }

  /** @inheritdoc */
  async purgeDlqByFilter(valid: Checked<DlqFilter>, max: number, audit: Audit): Promise<number> {
    let remaining = max;
    let deleted = 0;
    for (let a = audit; remaining > 0; a = laterBatches(a)) {
      const batch = Math.min(BULK_BATCH, remaining);
      const n = await this.affected(
        'purgeDlqByFilter',
        SQL.purgeDlqByFilter(this.schema, valid, batch),
        a,
      );
      deleted += n;
      remaining -= n;
      if (n < batch) break;
    }
    return deleted;
  }

  /**
   * Each table in batches of `batchSize`, each batch its own statement (= short transaction), or
   * with `audit` its own transaction of the batch and the run's audit row (rows removed so far).
   * A partitioned Archive or DLQ first gets its boundaries ahead and loses its expired partitions
   * whole, each removal one such batch too; its rows are then deleted one by one only outside the
   * periods' partitions ({@link MssqlPartitions}).
   */
  async applyRetention(
    policy: Checked<Required<RetentionPolicy>>,
    audit: Audit,
  ): Promise<RetentionResult> {
    const batch = policy.batchSize;
    const done = nothingRemoved();
    const deletedBy = (rows: Row[]) => num(rows[0]?.Affected);
    // One batch of the run, counted as `table`'s rows (in the run's audit row, when it has one).
    const run = (table: keyof RetentionResult, statement: MssqlStatement) =>
      this.audited('applyRetention', audit, statement, (batchRows) => {
        const deleted = deletedBy(batchRows);
        return [deleted, retentionDetails(audit, { ...done, [table]: done[table] + deleted })];
      });
    const drain = async (
      table: keyof RetentionResult,
      step: (schema: SQL.MssqlSchema, ageMs: number, batch: number) => MssqlStatement,
      ageMs: number,
    ): Promise<void> => {
      for (;;) {
        const n = deletedBy(await run(table, step(this.schema, ageMs, batch)));
        done[table] += n;
        if (n < batch) return;
      }
    };
    // Read whether or not `storage.partitioning` is set now: tables converted once stay partitioned.
    const layout = await this.partitions.layout();
    await this.partitions.makeAhead(layout);
    const pillars = [
      ['archive', policy.archiveMs, SQL.applyRetentionArchive],
      ['dlq', policy.dlqMs, SQL.applyRetentionDlq],
    ] as const;
    for (const [table, ageMs, step] of pillars) {
      for (const slot of this.partitions.expired(layout, table, ageMs)) {
        const removed = await this.partitions.drop(table, slot, ageMs, (statement) =>
          run(table, statement),
        );
        // Not removed: the numbers of the partitions after it are not known any more.
        if (removed === undefined) break;
        done[table] += removed;
      }
      const range = this.partitions.rowWise(layout, table);
      await drain(table, (schema, age, size) => step(schema, age, size, range), ageMs);
    }
    await drain('metricBuckets', SQL.applyRetentionBuckets, policy.metricsMs);
    await drain('workers', SQL.applyRetentionWorkers, policy.workersMs);
    await drain('audit', SQL.applyRetentionAudit, policy.auditMs);
    // After the archive's: a unique key whose holder retention just removed holds nothing.
    await drain('dedupeKeys', SQL.applyRetentionDedupeKeys, 0);
    await drain('groups', SQL.applyRetentionGroups, 0);
    await drain('batches', SQL.applyRetentionBatches, Math.max(policy.archiveMs, policy.dlqMs));
    // Not a removal, and counted nowhere: the jobs of grouped queues stored without a group join
    // the shared group (see SQL.applyRetentionGroupless).
    for (;;) {
      const rows = await this.db.query(
        'applyRetention',
        SQL.applyRetentionGroupless(this.schema, 0, batch),
      );
      if (num(rows[0]?.Affected) < batch) break;
    }
    return done;
  }

  // ---------------------------------------------------------------- audit log

  /** @inheritdoc */
  async confirmationSecret(candidate: string): Promise<string> {
    const rows = await this.db.query(
      'confirmationSecret',
      SQL.confirmationSecret(this.schema, candidate),
    );
    return String(rows[0].Value);
  }

  /**
   * Runs `statement` as an admin change: alone (its own short transaction), or with `audit` in one
   * READ COMMITTED transaction with the action's audit row, which counts what `count` reads from
   * the statement's rows (default: one row per row changed) and may bring details of its own.
   */
  protected audited(
    name: string,
    audit: Audit,
    statement: MssqlStatement,
    count: (rows: Row[]) => number | [number, string | null] = (rows) => rows.length,
  ): Promise<Row[]> {
    if (audit === null) return this.db.query(name, statement);
    return this.db.transaction(name, async (tx) => {
      // The first batch of an action confirmed by a token inserts its audit row (`audit.once`, see
      // `laterBatches`) before the statement: a token that already confirmed an action meets the
      // primary key (2627) and the transaction rolls back, and one in flight holds the key, so a
      // second action waits on it and is then refused, instead of skipping the rows the first has
      // locked (the bulk statements read past locked rows, READPAST), finding none, and taking
      // the token with nothing done. The row count is added once the statement ran.
      if (audit.once) await this.recordAudit(tx, audit, 0, audit.details);
      const rows = await tx.exec(statement);
      const counted = count(rows);
      const [n, details] = typeof counted === 'number' ? [counted, audit.details] : counted;
      await this.recordAudit(tx, laterBatches(audit)!, n, details);
      return rows;
    });
  }

  /**
   * Writes (or adds `rows` to) the audit row of an action, in the caller's transaction; the first
   * batch of an action confirmed by a token inserts it, and a token that already confirmed one is
   * refused (`ChokaQConfirmationError`, `used`).
   */
  protected async recordAudit(
    tx: MssqlTransaction,
    audit: NonNullable<Audit>,
    rows: number,
    details: string | null,
  ): Promise<void> {
    try {
      await tx.exec(SQL.recordAudit(this.schema, audit, rows, details));
    } catch (error) {
      throw auditWriteError(error, audit, isDuplicateKeyError);
    }
  }

  // ---------------------------------------------------------------- recurring definitions

  /** @inheritdoc */
  async upsertRecurringJob(d: Checked<CheckedRecurringDefinition>, audit: Audit): Promise<void> {
    // An upsert always writes its row: one row affected.
    await this.audited(
      'upsertRecurringJob',
      audit,
      SQL.upsertRecurringJob(this.schema, d),
      () => 1,
    );
  }

  /** @inheritdoc */
  async getRecurringJobs(): Promise<RecurringJobRecord[]> {
    const rows = await this.db.query('getRecurringJobs', SQL.getRecurringJobs(this.schema));
    return rows.map((r) => ({
      name: String(r.Name),
      cron: String(r.Cron),
      timeZone: String(r.TimeZone),
      queue: String(r.Queue),
      type: String(r.Type),
      payload: r.Payload === null || r.Payload === undefined ? null : JSON.parse(String(r.Payload)),
      misfirePolicy: String(r.MisfirePolicy) === 'none' ? 'none' : 'skip',
      nextSlotUtc: toDate(r.NextSlotUtc)!,
      lastSlotUtc: toDate(r.LastSlotUtc),
      isPaused: bool(r.IsPaused),
      source: String(r.Source) === 'runtime' ? 'runtime' : 'decorator',
      lastJobId: r.LastJobId === null || r.LastJobId === undefined ? null : String(r.LastJobId),
    }));
  }

  /** @inheritdoc */
  async setRecurringJobPaused(name: string, paused: boolean, audit: Audit): Promise<boolean> {
    const statement = SQL.setRecurringJobPaused(this.schema, name, paused);
    return (await this.affected('setRecurringJobPaused', statement, audit)) > 0;
  }

  /** @inheritdoc */
  async removeRecurringJob(name: string, audit: Audit): Promise<boolean> {
    const statement = SQL.removeRecurringJob(this.schema, name);
    return (await this.affected('removeRecurringJob', statement, audit)) > 0;
  }

  /** Runs one batch (with the transient retry) and reads the count it selected as `Affected`. */
  protected async affected(
    name: string,
    statement: MssqlStatement,
    audit: Audit = null,
  ): Promise<number> {
    const count = (rows: Row[]) => num(rows[0]?.Affected);
    return count(await this.audited(name, audit, statement, count));
  }
}
