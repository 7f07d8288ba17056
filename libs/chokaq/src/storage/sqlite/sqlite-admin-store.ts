import type { Checked } from '../../interfaces/checked.interface';
import { FailureReason, JobStatus } from '../../interfaces/job-status.enum';
import { DlqFilter, JobAttemptOutcome } from '../../interfaces/job-view.interface';
import {
  CancelResult,
  QueueInfo,
  QueuePatch,
  RetentionPolicy,
  RetentionResult,
} from '../../interfaces/job.interface';
import { RecurringJobRecord } from '../../interfaces/recurring-job.interface';
import { CheckedRecurringDefinition } from '../../validation/validate-args';
import { ValidatedEdits, ValidatedPendingUpdate } from '../../validation/validate-job';
import { Audit } from '../dialect-job-storage';
import { attemptOutcomeOf } from '../shared/attempts';
import {
  auditWriteError,
  laterBatches,
  nothingRemoved,
  retentionDetails,
} from '../shared/audit-log';
import { dueCallbacks } from '../shared/batches';
import { EdgeState } from '../shared/dependencies';
import { Outcome, dlqStatusFor } from '../shared/outcome';
import { mapQueueRow, toDate } from '../shared/row-mapper';
import { BucketDelta, CounterDelta, bucketsOf, countersByQueue } from './sqlite-counters';
import { yieldToEventLoop } from './sqlite-mutex';
import { Params, Row, SqliteConnection, SqliteStatements } from './sqlite.connection';
import { isDuplicateKeyError } from './sqlite-errors';
import * as SQL from './sql';

/** Rows per resurrect / purge transaction of the bulk operations. */
const BULK_CHUNK = 500;

/** The parameters of a resurrect that edits nothing (`resurrectInsert`). */
function noEdits(actor: string | null): Params {
  return { payload: null, setTags: 0, tags: null, priority: null, actor };
}

/**
 * The operator's half of the SQLite write side: cancels, DLQ → hot moves, queue controls, purges and
 * retention, the audit log, recurring definitions, and the attempt, counter and bucket writes both
 * halves end their transactions with. {@link SqliteJobStore} extends it, so the dialect stays one
 * `JobStore` object; the split only keeps each file readable (the job store holds what the worker
 * runs on).
 */
export abstract class SqliteAdminStore {
  /** The fixed statements, by the name of the method they serve (`sql/`). */
  protected readonly sql: SQL.JobStoreStatements;

  constructor(protected readonly db: SqliteConnection) {
    this.sql = SQL.jobStoreStatements(db.prefix);
  }

  /** The database clock (the job store's `now`): retention cuts off at its time. */
  abstract now(): Promise<Date>;

  // ---------------------------------------------------------------- cancel

  /** @inheritdoc */
  async cancel(
    unique: readonly string[],
    by: string | null,
    text: string,
    audit: Audit,
  ): Promise<CancelResult> {
    const json = JSON.stringify(unique);
    return this.db.write('cancel', () => {
      const rows = this.db.all(this.sql.cancel, { ids: json });
      this.moveRowsToDlq(rows, FailureReason.Cancelled, text, by, null);
      const requested = this.db.all(this.sql.cancelRequest, { ids: json, actor: by });
      this.recordAudit(audit, rows.length + requested.length);
      return {
        cancelled: rows.map((r) => String(r.id)),
        cancelRequested: requested.map((r) => String(r.id)),
      };
    });
  }

  /**
   * Steps 2–6 of every Hot → DLQ move, on rows already deleted and captured in this transaction:
   * the attempt rows of those that were Processing, insert them with the DLQ status and reason,
   * add `FailedTotal` (or `CancelledTotal`, for a reason that lands as Cancelled: a cancel, or a
   * dependency that failed) once per queue, upsert the metric buckets (the cancelled outcome
   * likewise), count them as failed in their batches ({@link settleBatches}) and settle the
   * edges of the jobs waiting on them ({@link settleDependencies}).
   */
  protected moveRowsToDlq(
    rows: Row[],
    reason: FailureReason,
    error: string,
    actor: string | null,
    durationMs: number | null,
  ): void {
    if (rows.length === 0) return;
    // The runs that had started end here: their attempt rows (a Pending or Fetched row ran nothing).
    this.recordAttempts(
      rows.filter((r) => Number(r.status) === 2),
      attemptOutcomeOf(reason),
      error,
    );
    const cancelled = dlqStatusFor(reason) === JobStatus.Cancelled;
    const moved = rows.map((r) => ({
      ...r,
      status: dlqStatusFor(reason),
      failure_reason: reason,
      error_details: error,
      last_modified_by: actor ?? r.last_modified_by ?? null,
      duration_ms: durationMs,
    }));
    this.db.run(this.sql.moveToDlqInsert, { moved: JSON.stringify(moved) });
    this.addCounters(countersByQueue(moved, cancelled ? 'cancelled' : 'failed'));
    this.addBuckets(bucketsOf(moved, cancelled ? Outcome.Cancelled : Outcome.Failed, reason));
    this.settleBatches(rows, false);
    this.settleDependencies(rows, false);
  }

  // ---------------------------------------------------------------- pending edits

  /** @inheritdoc */
  async updatePending(
    id: string,
    e: Checked<ValidatedPendingUpdate>,
    by: string | null,
    audit: Audit,
  ): Promise<number> {
    const params = {
      id,
      payload: e.payload,
      payloadVersion: e.payloadVersion,
      setTags: e.tags === undefined ? 0 : 1,
      tags: e.tags ?? null,
      priority: e.priority,
      schedule: e.runAt === undefined ? 0 : e.runAt === null ? 1 : 2,
      runAt: e.runAt?.getTime() ?? null,
      actor: by,
      queue: e.expect?.queue ?? null,
      type: e.expect?.type ?? null,
    };
    return this.db.write('updatePending', () => {
      const changed = this.db.all(this.sql.updatePending, params).length;
      if (changed > 0) this.recordAudit(audit, changed);
      return changed;
    });
  }

  // ---------------------------------------------------------------- DLQ → hot

  /** @inheritdoc */
  async resurrect(
    id: string,
    validated: Checked<ValidatedEdits>,
    by: string | null,
    audit: Audit,
  ): Promise<number> {
    const params = {
      payload: validated.payload,
      setTags: validated.tags === undefined ? 0 : 1,
      tags: validated.tags ?? null,
      priority: validated.priority,
      actor: by,
    };
    return this.db.write('resurrect', () => {
      const rows = this.db.all(this.sql.resurrect, { ids: JSON.stringify([id]) });
      this.insertResurrected(rows, params);
      this.recordAudit(audit, rows.length);
      return rows.length;
    });
  }

  /** @inheritdoc */
  async resurrectMany(
    unique: readonly string[],
    by: string | null,
    audit: Audit,
  ): Promise<string[]> {
    const moved: string[] = [];
    for (let i = 0; i < unique.length; i += BULK_CHUNK) {
      if (i > 0) await yieldToEventLoop();
      const chunk = JSON.stringify(unique.slice(i, i + BULK_CHUNK));
      const rows = await this.db.write('resurrectMany', () => {
        const deleted = this.db.all(this.sql.resurrect, { ids: chunk });
        this.insertResurrected(deleted, noEdits(by));
        this.recordAudit(audit, deleted.length);
        return deleted;
      });
      moved.push(...rows.map((r) => String(r.id)));
    }
    return moved;
  }

  /** @inheritdoc */
  async resurrectByFilter(
    filter: Checked<DlqFilter>,
    limit: number,
    by: string | null,
    audit: Audit,
  ): Promise<string[]> {
    const where = SQL.dlqWhere(filter);
    const del = SQL.resurrectByFilter(this.sql.tables.dlq, where);
    const moved: string[] = [];
    for (let a = audit; moved.length < limit; a = laterBatches(a)) {
      if (moved.length > 0) await yieldToEventLoop();
      const batch = Math.min(BULK_CHUNK, limit - moved.length);
      const rows = await this.db.write('resurrectByFilter', () => {
        const deleted = this.db.all(del, { ...where.params, limit: batch });
        this.insertResurrected(deleted, noEdits(by));
        this.recordAudit(a, deleted.length);
        return deleted;
      });
      moved.push(...rows.map((r) => String(r.id)));
      if (rows.length < batch) break;
    }
    return moved;
  }

  /**
   * Steps 2–4 of DLQ → hot on rows already deleted from the DLQ in this transaction: insert them,
   * add `ResurrectedTotal` once per queue, and reopen their batches ({@link reopenBatches}).
   */
  protected insertResurrected(rows: Row[], params: Params): void {
    if (rows.length === 0) return;
    this.db.run(this.sql.resurrectInsert, { ...params, moved: JSON.stringify(rows) });
    this.addCounters(countersByQueue(rows, 'resurrected'));
    this.reopenBatches(rows);
  }

  // ---------------------------------------------------------------- queues

  /** @inheritdoc */
  async getQueues(): Promise<QueueInfo[]> {
    const rows = await this.db.read('getQueues', () => this.db.all(this.sql.getQueues));
    return rows.map(mapQueueRow);
  }

  /** @inheritdoc */
  async updateQueue(name: string, patch: Checked<QueuePatch>, audit: Audit): Promise<QueueInfo> {
    const json = JSON.stringify(patch);
    const row = await this.db.write('updateQueue', () => {
      const updated = this.db.get(this.sql.updateQueue, { name, patch: json });
      // A queue given group limits: its jobs without a group join the shared group.
      if (patch.groupConcurrency !== undefined || patch.groupRateLimit !== undefined) {
        this.db.run(this.sql.updateQueueSharedGroup, { name });
      }
      this.recordAudit(audit, 1);
      return updated;
    });
    return mapQueueRow(row!);
  }

  // ---------------------------------------------------------------- purge and retention

  /** @inheritdoc */
  async purgeDlq(unique: readonly string[], audit: Audit): Promise<number> {
    let purged = 0;
    for (let i = 0; i < unique.length; i += BULK_CHUNK) {
      if (i > 0) await yieldToEventLoop();
      const chunk = JSON.stringify(unique.slice(i, i + BULK_CHUNK));
      purged += await this.db.write('purgeDlq', () =>
        this.audited(audit, this.deleteWithAttempts(this.sql.purgeDlq, { ids: chunk })),
      );
    }
    return purged;
  }

  /** @inheritdoc */
  async purgeDlqByFilter(filter: Checked<DlqFilter>, limit: number, audit: Audit): Promise<number> {
    const where = SQL.dlqWhere(filter);
    const purge = SQL.purgeDlqByFilter(this.sql.tables.dlq, where);
    let purged = 0;
    for (let a = audit; purged < limit; a = laterBatches(a)) {
      if (purged > 0) await yieldToEventLoop();
      const batch = Math.min(BULK_CHUNK, limit - purged);
      const n = await this.db.write('purgeDlqByFilter', () =>
        this.audited(a, this.deleteWithAttempts(purge, { ...where.params, limit: batch })),
      );
      purged += n;
      if (n < batch) break;
    }
    return purged;
  }

  /** @inheritdoc */

  /**
   * Each table in batches of `batchSize`, each batch its own BEGIN IMMEDIATE transaction: its
   * delete, and with `audit` the run's audit row (rows removed so far).
   */
  async applyRetention(
    policy: Checked<Required<RetentionPolicy>>,
    audit: Audit,
  ): Promise<RetentionResult> {
    const batch = policy.batchSize;
    // One cutoff per call: rows that age past it while the batches run wait for the next call.
    const now = (await this.now()).getTime();
    const done = nothingRemoved();
    const drain = async (table: keyof RetentionResult, sql: string, ageMs: number) => {
      // The archive's and the DLQ's rows take their jobs' attempt rows with them, the batches
      // their callbacks' rows.
      const jobs = table === 'archive' || table === 'dlq';
      for (;;) {
        const n = await this.db.write(`retention.${table}`, () => {
          const params = { cutoff: now - ageMs, limit: batch };
          const deleted = jobs
            ? this.deleteWithAttempts(sql, params)
            : table === 'batches'
              ? this.deleteBatches(sql, params)
              : this.db.run(sql, params);
          const counts = { ...done, [table]: done[table] + deleted };
          this.recordAudit(audit, deleted, retentionDetails(audit, counts));
          return deleted;
        });
        done[table] += n;
        if (n < batch) return;
        await yieldToEventLoop();
      }
    };
    await drain('archive', this.sql.applyRetentionArchive, policy.archiveMs);
    await drain('dlq', this.sql.applyRetentionDlq, policy.dlqMs);
    await drain('metricBuckets', this.sql.applyRetentionBuckets, policy.metricsMs);
    await drain('workers', this.sql.applyRetentionWorkers, policy.workersMs);
    await drain('audit', this.sql.applyRetentionAudit, policy.auditMs);
    // After the archive's: a unique key whose holder retention just removed holds nothing.
    await drain('dedupeKeys', this.sql.applyRetentionDedupeKeys, 0);
    await drain('groups', this.sql.applyRetentionGroups, 0);
    const batchesMs = Math.max(policy.archiveMs, policy.dlqMs);
    await drain('batches', this.sql.applyRetentionBatches, batchesMs);
    // Not a removal: jobs of grouped queues stored without the shared group join it (counted
    // nowhere, audited nowhere; see applyRetentionGroupless).
    for (;;) {
      const joined = await this.db.write('retention.groupless', () =>
        this.db.run(this.sql.applyRetentionGroupless, { cutoff: now, limit: batch }),
      );
      if (joined < batch) break;
      await yieldToEventLoop();
    }
    return done;
  }

  /**
   * Deletes archive or DLQ rows with `sql` (which returns their ids and dependency columns), the
   * attempt rows of those jobs and, for those in the dependency graph, their edges' remove step
   * ({@link removeDependencies}), in the caller's transaction. Returns the rows deleted from the
   * pillar.
   */
  protected deleteWithAttempts(sql: string, params: Params): number {
    const gone = this.db.all(sql, params);
    if (gone.length > 0) {
      this.db.run(this.sql.deleteAttempts, { ids: JSON.stringify(gone.map((r) => r.id)) });
      this.removeDependencies(gone);
    }
    return gone.length;
  }

  /**
   * Deletes batches with `sql` (which returns their ids) and their callbacks' rows, in the
   * caller's transaction. Returns the batches deleted.
   */
  protected deleteBatches(sql: string, params: Params): number {
    const gone = this.db.all(sql, params);
    if (gone.length > 0) {
      this.db.run(this.sql.deleteBatchCallbacks, { ids: JSON.stringify(gone.map((r) => r.id)) });
    }
    return gone.length;
  }

  // ---------------------------------------------------------------- audit log

  /** @inheritdoc */
  async confirmationSecret(candidate: string): Promise<string> {
    return this.db.write('confirmationSecret', () => {
      this.db.run(this.sql.confirmationSecretInsert, { candidate });
      return String(this.db.get(this.sql.confirmationSecret)!.value);
    });
  }

  /** Writes (or adds `rows` to) the audit row of an action, in the caller's transaction. */
  protected recordAudit(
    audit: Audit,
    rows: number,
    details: string | null = audit?.details ?? null,
  ): void {
    if (audit === null) return;
    const { id, actor, action, target } = audit;
    // The first batch of an action confirmed by a token inserts its row: a token that already
    // confirmed an action meets the primary key, and this transaction rolls back.
    const sql = audit.once ? this.sql.recordAuditOnce : this.sql.recordAudit;
    try {
      this.db.run(sql, { id, actor, action, target, rows, details });
    } catch (error) {
      throw auditWriteError(error, audit, isDuplicateKeyError);
    }
  }

  /** {@link recordAudit} of a statement's changed-row count; returns the count. */
  protected audited(audit: Audit, changed: number): number {
    this.recordAudit(audit, changed);
    return changed;
  }

  // ---------------------------------------------------------------- recurring definitions

  /** @inheritdoc */
  async upsertRecurringJob(d: Checked<CheckedRecurringDefinition>, audit: Audit): Promise<void> {
    const params = { ...d, nextSlotUtc: d.nextSlotUtc.getTime() };
    await this.db.write('upsertRecurringJob', () => {
      this.db.run(this.sql.upsertRecurringJob, params);
      // An upsert always writes its row: one row affected.
      this.recordAudit(audit, 1);
    });
  }

  /** @inheritdoc */
  async getRecurringJobs(): Promise<RecurringJobRecord[]> {
    const rows = await this.db.read('getRecurringJobs', () =>
      this.db.all(this.sql.getRecurringJobs),
    );
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
      isPaused: r.is_paused === 1,
      source: r.source === 'runtime' ? 'runtime' : 'decorator',
      lastJobId:
        r.last_job_id === null || r.last_job_id === undefined ? null : String(r.last_job_id),
    }));
  }

  /** @inheritdoc */
  async setRecurringJobPaused(name: string, paused: boolean, audit: Audit): Promise<boolean> {
    const params = { name, paused: paused ? 1 : 0 };
    const changed = await this.db.write('setRecurringJobPaused', () =>
      this.audited(audit, this.db.run(this.sql.setRecurringJobPaused, params)),
    );
    return changed > 0;
  }

  /** @inheritdoc */
  async removeRecurringJob(name: string, audit: Audit): Promise<boolean> {
    const changed = await this.db.write('removeRecurringJob', () =>
      this.audited(audit, this.db.run(this.sql.removeRecurringJob, { name })),
    );
    return changed > 0;
  }

  // ---------------------------------------------------------------- batches

  /**
   * The settle step of every move out of the hot table, in that move's transaction, on the rows
   * it deleted (`ok`: into the Archive, else into the DLQ); the rules: docs/storage.md, "Batches".
   * When none of the rows is in a batch it runs nothing, so moves of jobs outside batches pay only
   * that check. Else it counts the members among them in their batches (`batchSettleCount`, which
   * leaves callbacks out), decides for each batch that reached its total which callbacks are due
   * and never fired ({@link dueCallbacks}), records them as fired with the settle time
   * (`batchSettle`) and enqueues them (`batchFire`). No lock beyond the transaction's: SQLite has a
   * single writer, and the BEGIN IMMEDIATE that holds it since the move's first statement keeps
   * any other move from changing a batch between its count and the decision taken on it.
   */
  protected settleBatches(rows: readonly Row[], ok: boolean): void {
    const moved = batchRowsJson(rows);
    if (moved === null) return;
    const touched = this.db.all(this.sql.batchSettleCount, { moved, ok: ok ? 1 : 0 });
    const settled: { id: string; due: number }[] = [];
    for (const batch of touched) {
      const failed = Number(batch.failed);
      if (Number(batch.succeeded) + failed < Number(batch.total)) continue;
      settled.push({ id: String(batch.id), due: dueCallbacks(failed, Number(batch.fired)) });
    }
    if (settled.length === 0) return;
    const json = JSON.stringify(settled);
    this.db.run(this.sql.batchSettle, { settled: json });
    if (settled.some((s) => s.due !== 0)) this.db.run(this.sql.batchFire, { settled: json });
  }

  /**
   * The reopen step of a resurrect, in its transaction, on the rows it took from the DLQ: their
   * batches count them as failed no more and are not settled (`batchReopen`). Nothing runs when
   * none of them is in a batch.
   */
  protected reopenBatches(rows: readonly Row[]): void {
    const moved = batchRowsJson(rows);
    if (moved !== null) this.db.run(this.sql.batchReopen, { moved });
  }

  // ---------------------------------------------------------------- dependencies

  /**
   * The dependency settle step of every move out of the hot table, in that move's transaction, on
   * the rows it deleted (`ok`: into the Archive, else into the DLQ); the rules: docs/storage.md,
   * "Dependencies". Only the rows marked `has_dependents` are looked up, so a move of jobs no one
   * waits on runs nothing. Else it settles their open edges (`dependencySettle`), counts per
   * dependent the edges that became succeeded or ignored, and lowers those dependents' counts,
   * releasing each that reaches 0 (`dependencyRelease`, once per number of edges). No lock beyond
   * the transaction's: SQLite has a single writer, and the BEGIN IMMEDIATE that holds it since the
   * move's first statement keeps any other move from changing a dependent's count between its
   * edges and its release.
   */
  protected settleDependencies(rows: readonly Row[], ok: boolean): void {
    const ids = waitedOnIds(rows);
    if (ids === null) return;
    const settled = this.db.all(this.sql.dependencySettle, { ids, ok: ok ? 1 : 0 });
    const satisfied = new Map<string, number>();
    for (const edge of settled) {
      const state = Number(edge.state);
      if (state !== EdgeState.Succeeded && state !== EdgeState.Ignored) continue;
      const id = String(edge.job_id);
      satisfied.set(id, (satisfied.get(id) ?? 0) + 1);
    }
    this.updateWaiting(this.db, this.sql.dependencyRelease, satisfied);
  }

  /**
   * Runs `sql`, an update of the waiting jobs `@ids` by one count `@n` (`WAITING_IDS` in
   * `sql/dependencies.ts`), on `on` once per distinct count of `counts` (job id → count), with
   * the jobs of that count: few statements, as jobs mostly share a count.
   */
  protected updateWaiting(
    on: SqliteStatements,
    sql: string,
    counts: ReadonlyMap<string, number>,
  ): void {
    const byCount = new Map<number, string[]>();
    for (const [id, n] of counts) {
      const ids = byCount.get(n);
      if (ids) ids.push(id);
      else byCount.set(n, [id]);
    }
    for (const [n, ids] of byCount) on.run(sql, { ids: JSON.stringify(ids), n });
  }

  /**
   * The dependency remove step of a purge or retention batch, in its transaction, on the rows it
   * deleted from the DLQ or the Archive: the edges of those that waited go with them
   * (`dependencyRemoveOwn`), then the open edges of those waited on are marked removed for the
   * check pass (`dependencyRemove`). Rows that never were in the dependency graph run nothing.
   */
  protected removeDependencies(gone: readonly Row[]): void {
    const waited = gone.filter((r) => r.waiting_on !== null).map((r) => r.id);
    if (waited.length > 0) {
      this.db.run(this.sql.dependencyRemoveOwn, { ids: JSON.stringify(waited) });
    }
    const ids = waitedOnIds(gone);
    if (ids !== null) this.db.run(this.sql.dependencyRemove, { ids });
  }

  // ---------------------------------------------------------------- attempts, counters and buckets

  /**
   * The attempt rows of the runs a move ends, in its transaction (`storage/shared/attempts.ts`):
   * `rows` are those runs' hot rows as the move found them (id, attempt_count, worker_id,
   * lease_id, started_at_utc).
   */
  protected recordAttempts(rows: Row[], outcome: JobAttemptOutcome, error: string): void {
    if (rows.length === 0) return;
    const attempts = rows.map((r) => ({
      id: r.id,
      attempt_count: r.attempt_count,
      worker_id: r.worker_id ?? null,
      lease_id: r.lease_id ?? null,
      started_at_utc: r.started_at_utc ?? null,
      outcome,
      error,
    }));
    this.db.run(this.sql.recordAttempts, { attempts: JSON.stringify(attempts) });
  }

  protected addCounters(deltas: CounterDelta[]): void {
    if (deltas.length > 0) this.db.run(this.sql.addCounters, { deltas: JSON.stringify(deltas) });
  }

  protected addBuckets(deltas: BucketDelta[]): void {
    if (deltas.length > 0) this.db.run(this.sql.addBuckets, { buckets: JSON.stringify(deltas) });
  }
}

/**
 * The ids of the rows marked `has_dependents` (some job waits or waited on them) among moved or
 * deleted rows, as the JSON array the dependency statements read (`@ids`); null when none is.
 */
function waitedOnIds(rows: readonly Row[]): string | null {
  const marked = rows.filter((r) => Number(r.has_dependents) === 1);
  return marked.length === 0 ? null : JSON.stringify(marked.map((r) => r.id));
}

/**
 * The rows of a batch (members or callbacks) among moved rows, as the JSON array `{id, batch_id}`
 * the batch statements read (`@moved`); null when none is in a batch.
 */
function batchRowsJson(rows: readonly Row[]): string | null {
  const inBatch = rows.filter((r) => r.batch_id !== null && r.batch_id !== undefined);
  if (inBatch.length === 0) return null;
  return JSON.stringify(inBatch.map((r) => ({ id: r.id, batch_id: r.batch_id })));
}
