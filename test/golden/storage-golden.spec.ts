import Database from 'better-sqlite3';
import type BetterSqlite3 from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { HotJob, JobLease, NewJob } from '../../libs/chokaq/src/interfaces/job.interface';
import { RecurringJobDefinition } from '../../libs/chokaq/src/interfaces/recurring-job.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { PG_URL, pgAvailable } from '../support/env';
import { CapturedStatement, expectGolden } from './support/capture';
import { Recorder, recordPg, recordSqlite } from './support/recorders';

/**
 * Golden files pin, for PostgreSQL and SQLite, the exact SQL text and the parameter list that the
 * storage class really sends to its driver for the claim and every move (and the idempotency-key
 * enqueue, the Workers table's upsert and read, the progress write, the three shapes of a list
 * page, a job read with its attempt history, and a purge, which deletes that history too): each operation runs against a real database while the driver is wrapped
 * (`pg` `Client.prototype.query`; better-sqlite3 statement `run/get/all/iterate` and `exec`), and
 * every statement it sent, in order, transaction control included, is compared with
 * `test/golden/<dialect>/<operation>.sql` byte for byte. Parameters are pinned as a stable
 * description (position or name, JS type, array length and element types, JSON shape and keys),
 * not as values, which vary per run (uuids, times). The SQL Server goldens are
 * test/golden/mssql/ (built from the T-SQL builders; that dialect needs no server here).
 *
 * A change to any of these statements must be a conscious act: review the diff, then regenerate with
 *
 *   CHOKAQ_UPDATE_GOLDEN=1 npx jest test/golden && npx prettier --write test/golden
 *
 * (with PostgreSQL reachable, or its goldens are not rewritten) and commit the changed files under
 * test/golden/ together with the code. The `.params.json` files are compared as parsed JSON.
 *
 * PostgreSQL runs on a fixed schema name per process (`chokaq_golden_<pid>`, dropped afterwards),
 * written as `chokaq` in the golden text; it is skipped unless the global setup found the server
 * (CHOKAQ_PG_AVAILABLE=1).
 */

const WORKER = 'host:42:abcd';

/** One pinned operation: its golden file name and a scenario that records exactly that call. */
interface Scenario {
  file: string;
  run(storage: JobStorage, recorder: Recorder): Promise<CapturedStatement[]>;
}

function job(queue: string, overrides: Partial<NewJob> = {}): NewJob {
  return { queue, type: 'welcome.v1', payload: { to: 'a@b.c' }, ...overrides };
}

function leaseOf(row: HotJob): JobLease {
  return { id: row.id, workerId: row.workerId!, leaseId: row.leaseId! };
}

/** Claims everything due on `queue` for WORKER. */
function claim(storage: JobStorage, queue: string, limit = 100): Promise<HotJob[]> {
  return storage.fetchNextBatch({
    workerId: WORKER,
    leaseId: randomUUID(),
    limit,
    handled: { queues: [queue], types: [] },
  });
}

/** `count` jobs on `queue`, claimed and marked Processing; returns their leases. */
async function processing(storage: JobStorage, queue: string, count = 1): Promise<JobLease[]> {
  for (let i = 0; i < count; i++) await storage.enqueue(job(queue));
  const leases = (await claim(storage, queue)).map(leaseOf);
  expect(await storage.markAsProcessing(leases)).toHaveLength(count);
  return leases;
}

/** Enqueues `count` jobs on `queue` and moves them to the DLQ by id (admin path). */
async function inDlq(storage: JobStorage, queue: string, count = 1): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { id } = await storage.enqueue(job(queue));
    await storage.moveToDlq({ id }, { reason: FailureReason.FatalError, error: 'Error: fatal' });
    ids.push(id);
  }
  return ids;
}

const KEYED_JOB: NewJob = {
  queue: 'golden.enqueue',
  type: 'welcome.v1',
  payload: { to: 'a@b.c' },
  tags: ['vip', 'eu'],
  idempotencyKey: 'welcome:42',
  priority: 20,
  delayMs: 5_000,
  createdBy: 'tests',
};

/** Jobs with a dedupe key, one per mode (`NewJob.dedupe`). */
const THROTTLED_JOB: NewJob = {
  queue: 'golden.throttle',
  type: 'report.v1',
  payload: { n: 1 },
  dedupe: { key: 'report:7', mode: 'throttle', windowMs: 60_000 },
};
const DEBOUNCED_JOB: NewJob = {
  ...THROTTLED_JOB,
  queue: 'golden.debounce',
  dedupe: { key: 'sync:7', mode: 'debounce', windowMs: 60_000 },
};
const UNIQUE_JOB: NewJob = {
  ...THROTTLED_JOB,
  queue: 'golden.unique',
  dedupe: { key: 'index:7', mode: 'unique', states: ['pending'] },
};

const RECURRING: RecurringJobDefinition = {
  name: 'golden.nightly',
  cron: '0 3 * * *',
  timeZone: 'UTC',
  queue: 'golden.recurring',
  type: 'nightly.v1',
  payload: { kind: 'nightly' },
  misfirePolicy: 'skip',
  nextSlotUtc: new Date('2026-01-02T03:00:00.000Z'),
  source: 'runtime',
};

const SCENARIOS: readonly Scenario[] = [
  {
    // A budgeted queue (so PostgreSQL's budget-lock step locks a row), a queue-wide handler, a
    // queue without a Queues row, and an exact (queue, type) pair.
    file: 'claim',
    async run(storage, recorder) {
      await storage.updateQueue('emails', { maxWorkers: 5 });
      await storage.enqueue(job('emails', { priority: 20 }));
      await storage.enqueue(job('emails'));
      await storage.enqueue(job('billing', { type: 'invoice.v2' }));
      const { result, statements } = await recorder.record(() =>
        storage.fetchNextBatch({
          workerId: WORKER,
          leaseId: randomUUID(),
          limit: 20,
          handled: {
            queues: ['emails', 'default'],
            types: [{ queue: 'billing', type: 'invoice.v2' }],
          },
        }),
      );
      expect(result).toHaveLength(3);
      return statements;
    },
  },
  {
    // The runtime's hot path: no handled queue is budgeted (PostgreSQL claims in one autocommit
    // statement) and the first rows start in the claim itself.
    file: 'claim-start',
    async run(storage, recorder) {
      await storage.enqueue(job('golden.start', { priority: 20 }));
      await storage.enqueue(job('golden.start'));
      const { result, statements } = await recorder.record(() =>
        storage.fetchNextBatch({
          workerId: WORKER,
          leaseId: randomUUID(),
          limit: 20,
          start: 1,
          budgetedQueues: ['emails'],
          handled: { queues: ['golden.start'], types: [] },
        }),
      );
      expect(result.map((r) => r.status)).toEqual([2, 1]);
      return statements;
    },
  },
  {
    // A rate-limited queue: serialised like a budgeted one, the allowance and the spend in the
    // claim, then (the claim took fewer rows than asked) the rate state read for the wait.
    file: 'claim-rate-limited',
    async run(storage, recorder) {
      await storage.enqueueMany([job('golden.rate'), job('golden.rate'), job('golden.rate')]);
      await storage.updateQueue('golden.rate', { rateLimit: { max: 2, perMs: 60_000 } });
      const { result, statements } = await recorder.record(() =>
        storage.fetchNextBatch({
          workerId: WORKER,
          leaseId: randomUUID(),
          limit: 3,
          start: 3,
          budgetedQueues: ['golden.rate'],
          handled: { queues: ['golden.rate'], types: [] },
        }),
      );
      expect(result.map((r) => r.status)).toEqual([2, 2]);
      expect(result.rateLimitWaitMs).toBeGreaterThan(0);
      return statements;
    },
  },
  {
    // A grouped queue (issue 30, part 2): serialised like a budgeted one, then its own claim that
    // walks the groups after the cursor, takes turns across them and spends the group windows.
    file: 'claim-grouped',
    async run(storage, recorder) {
      await storage.updateQueue('golden.groups', {
        groupConcurrency: 1,
        groupRateLimit: { max: 5, perMs: 60_000 },
      });
      await storage.enqueueMany([
        job('golden.groups', { group: 'acme' }),
        job('golden.groups', { group: 'acme' }),
        job('golden.groups', { group: 'globex' }),
      ]);
      const { result, statements } = await recorder.record(() =>
        storage.fetchNextBatch({
          workerId: WORKER,
          leaseId: randomUUID(),
          limit: 3,
          start: 3,
          budgetedQueues: ['golden.groups'],
          handled: { queues: ['golden.groups'], types: [] },
        }),
      );
      expect(result.map((r) => r.group).sort()).toEqual(['acme', 'globex']);
      return statements;
    },
  },
  {
    // A grouped queue's next claim by the same claimer: on PostgreSQL one autocommit statement
    // that takes the queue's row lock and checks that no claim committed since its snapshot.
    file: 'claim-grouped-again',
    async run(storage, recorder) {
      await storage.updateQueue('golden.groups2', { groupConcurrency: 1 });
      await storage.enqueueMany([
        job('golden.groups2', { group: 'acme' }),
        job('golden.groups2', { group: 'globex' }),
      ]);
      const request = (limit: number) => ({
        workerId: WORKER,
        leaseId: randomUUID(),
        limit,
        start: limit,
        budgetedQueues: ['golden.groups2'],
        handled: { queues: ['golden.groups2'], types: [] },
      });
      expect(await storage.fetchNextBatch(request(1))).toHaveLength(1);
      const { result, statements } = await recorder.record(() =>
        storage.fetchNextBatch(request(3)),
      );
      expect(result).toHaveLength(1);
      return statements;
    },
  },
  {
    // Fetched rows started by markAsProcessing: the start and its start-lag bucket together.
    file: 'mark-as-processing',
    async run(storage, recorder) {
      await storage.enqueue(job('golden.mark'));
      await storage.enqueue(job('golden.mark'));
      const leases = (await claim(storage, 'golden.mark')).map(leaseOf);
      const { result, statements } = await recorder.record(() => storage.markAsProcessing(leases));
      expect(result.sort()).toEqual(leases.map((l) => l.id).sort());
      return statements;
    },
  },
  {
    // A retryable failure: back to Pending, RetriedTotal and the retried bucket.
    file: 'reschedule-for-retry',
    async run(storage, recorder) {
      const [lease] = await processing(storage, 'golden.retry');
      const { result, statements } = await recorder.record(() =>
        storage.rescheduleForRetry(lease, 5_000, 'Error: try again'),
      );
      expect(result).toBe(1);
      return statements;
    },
  },
  {
    file: 'archive-succeeded',
    async run(storage, recorder) {
      const leases = await processing(storage, 'golden.archive', 2);
      const { result, statements } = await recorder.record(() =>
        storage.archiveSucceeded(leases.map((l, i) => ({ ...l, durationMs: 120 + i }))),
      );
      expect(result.map((r) => r.id).sort()).toEqual(leases.map((l) => l.id).sort());
      return statements;
    },
  },
  {
    // A batch where one run records its result: the archive takes the results too.
    file: 'archive-succeeded-results',
    async run(storage, recorder) {
      const leases = await processing(storage, 'golden.archive.results', 2);
      const { result, statements } = await recorder.record(() =>
        storage.archiveSucceeded([
          { ...leases[0], durationMs: 120, result: '{"rows":3}' },
          { ...leases[1], durationMs: 121 },
        ]),
      );
      expect(result.map((r) => r.id).sort()).toEqual(leases.map((l) => l.id).sort());
      return statements;
    },
  },
  {
    file: 'move-to-dlq-lease',
    async run(storage, recorder) {
      const [lease] = await processing(storage, 'golden.dlq');
      const { result, statements } = await recorder.record(() =>
        storage.moveToDlq(lease, {
          reason: FailureReason.MaxRetriesExceeded,
          error: 'Error: boom',
          durationMs: 15,
        }),
      );
      expect(result).toBe(1);
      return statements;
    },
  },
  {
    file: 'move-to-dlq-admin',
    async run(storage, recorder) {
      const { id } = await storage.enqueue(job('golden.dlq'));
      const { result, statements } = await recorder.record(() =>
        storage.moveToDlq(
          { id },
          { reason: FailureReason.Cancelled, error: 'cancelled', actor: 'ops' },
        ),
      );
      expect(result).toBe(1);
      return statements;
    },
  },
  {
    // One Pending job (moves to the DLQ) and one Processing job (gets CancelRequestedUtc).
    file: 'cancel',
    async run(storage, recorder) {
      const { id: pending } = await storage.enqueue(job('golden.cancel'));
      const [running] = await processing(storage, 'golden.cancel-running');
      const { result, statements } = await recorder.record(() =>
        storage.cancel([pending, running.id], 'ops'),
      );
      expect(result).toEqual({ cancelled: [pending], cancelRequested: [running.id] });
      return statements;
    },
  },
  {
    file: 'resurrect-edits',
    async run(storage, recorder) {
      const [id] = await inDlq(storage, 'golden.resurrect');
      const { result, statements } = await recorder.record(() =>
        storage.resurrect(id, { payload: { a: 1 }, tags: ['x'], priority: 99 }, 'ops'),
      );
      expect(result).toBe(1);
      return statements;
    },
  },
  {
    file: 'update-pending',
    async run(storage, recorder) {
      const { id } = await storage.enqueue(job('golden.update'));
      const { result, statements } = await recorder.record(() =>
        storage.updatePending(
          id,
          { payload: { a: 1 }, payloadVersion: 2, tags: ['x'], priority: 99, runAt: 'now' },
          'ops',
          { action: 'job.update', actor: 'ops' },
        ),
      );
      expect(result).toEqual({ updated: true });
      return statements;
    },
  },
  {
    file: 'resurrect-by-filter',
    async run(storage, recorder) {
      const ids = await inDlq(storage, 'golden.rbf', 2);
      const { result, statements } = await recorder.record(() =>
        storage.resurrectByFilter({ queue: 'golden.rbf' }, 10, 'ops'),
      );
      expect(result.sort()).toEqual(ids.sort());
      return statements;
    },
  },
  {
    // One expired Processing job on an ordinary queue (→ DLQ Zombie), one on a RetryZombies
    // queue and one whose handler rule opts in (both → Pending), so every branch runs.
    file: 'archive-zombies',
    async run(storage, recorder) {
      await storage.updateQueue('golden.zombie-retry', { retryZombies: true });
      const [dead] = await processing(storage, 'golden.zombie');
      const [retried] = await processing(storage, 'golden.zombie-retry');
      const [byHandler] = await processing(storage, 'golden.zombie-handler');
      await new Promise((resolve) => setTimeout(resolve, 30));
      const { result, statements } = await recorder.record(() =>
        storage.archiveZombies(1, undefined, [
          { queue: 'golden.zombie-handler', type: 'welcome.v1', retry: true },
        ]),
      );
      expect(result.dlq).toEqual([dead.id]);
      expect(result.retried.sort()).toEqual([retried.id, byHandler.id].sort());
      return statements;
    },
  },
  {
    // A worker's first report (starting) into its row of the Workers table.
    file: 'upsert-worker',
    async run(storage, recorder) {
      const { statements } = await recorder.record(() =>
        storage.upsertWorker({
          workerId: WORKER,
          host: 'host',
          pid: 42,
          libraryVersion: '0.1.0',
          concurrency: 10,
          running: 0,
          handled: { queues: ['emails'], types: [{ queue: 'billing', type: 'invoice.v2' }] },
          circuits: { 'billing/invoice.v2': 'open' },
          draining: false,
          starting: true,
        }),
      );
      return statements;
    },
  },
  {
    file: 'list-workers',
    async run(storage, recorder) {
      const { result, statements } = await recorder.record(() =>
        storage.listWorkers({ lostAfterMs: 600_000 }),
      );
      expect(result).toEqual([]);
      return statements;
    },
  },
  {
    file: 'report-progress',
    async run(storage, recorder) {
      const [lease] = await processing(storage, 'golden.progress');
      const { result, statements } = await recorder.record(() =>
        storage.reportProgress(lease, 40, 'step 2 of 5'),
      );
      expect(result).toBe(1);
      return statements;
    },
  },
  {
    // The first page of the active list of one queue: a plain keyset read, one row more than asked.
    file: 'list-active',
    async run(storage, recorder) {
      await storage.enqueueMany([job('golden.list'), job('golden.list'), job('golden.list')]);
      const { result, statements } = await recorder.record(() =>
        storage.listActive({ filter: { queue: 'golden.list' }, limit: 2 }),
      );
      expect(result.items).toHaveLength(2);
      expect(result.nextCursor).not.toBeNull();
      return statements;
    },
  },
  {
    // A page of the archive from a cursor, oldest first.
    file: 'list-archive-cursor',
    async run(storage, recorder) {
      const leases = await processing(storage, 'golden.list', 3);
      await storage.archiveSucceeded(leases.map((l) => ({ ...l, durationMs: 5 })));
      const first = await storage.listArchive({
        filter: { queue: 'golden.list' },
        order: 'oldest',
        limit: 1,
      });
      const { result, statements } = await recorder.record(() =>
        storage.listArchive({
          filter: { queue: 'golden.list' },
          order: 'oldest',
          limit: 1,
          cursor: first.nextCursor!,
        }),
      );
      expect(result.items).toHaveLength(1);
      return statements;
    },
  },
  {
    // A search in the DLQ from a cursor: the bounded scan.
    file: 'list-dlq-search',
    async run(storage, recorder) {
      await inDlq(storage, 'golden.list', 3);
      const first = await storage.listDlq({ filter: { queue: 'golden.list' }, limit: 1 });
      const { result, statements } = await recorder.record(() =>
        storage.listDlq({
          filter: { queue: 'golden.list', search: 'fatal' },
          cursor: first.nextCursor!,
        }),
      );
      expect(result).toMatchObject({ nextCursor: null, scanLimited: false });
      expect(result.items).toHaveLength(2);
      return statements;
    },
  },
  {
    file: 'enqueue-key',
    async run(storage, recorder) {
      const { result, statements } = await recorder.record(() => storage.enqueue(KEYED_JOB));
      expect(result.created).toBe(true);
      return statements;
    },
  },
  {
    // The batch record, its callbacks and its jobs in one transaction.
    file: 'enqueue-batch',
    async run(storage, recorder) {
      const { result, statements } = await recorder.record(() =>
        storage.enqueueBatch({
          jobs: [job('golden.batch'), job('golden.batch', { priority: 5 })],
          callbacks: {
            onSuccess: { queue: 'golden.batch.done', type: 'done.v1', payload: { ok: true } },
            onFailure: { queue: 'golden.batch.done', type: 'failed.v1' },
          },
          createdBy: 'golden',
        }),
      );
      expect(result.jobIds).toHaveLength(2);
      return statements;
    },
  },
  {
    // The move that settles a batch: its counts, its settle mark and the callback it fires.
    file: 'archive-settles-batch',
    async run(storage, recorder) {
      const made = await storage.enqueueBatch({
        jobs: [job('golden.settle')],
        callbacks: { onComplete: { queue: 'golden.settle.done' } },
      });
      const [row] = await claim(storage, 'golden.settle');
      await storage.markAsProcessing([leaseOf(row)]);
      const { statements } = await recorder.record(() =>
        storage.archiveSucceeded([{ ...leaseOf(row), durationMs: 3 }]),
      );
      const batch = await storage.getBatch(made.batchId);
      expect(batch?.callbacks.map((c) => c.fired)).toEqual([true]);
      return statements;
    },
  },
  {
    file: 'get-batch',
    async run(storage, recorder) {
      const made = await storage.enqueueBatch({
        jobs: [job('golden.read')],
        callbacks: { onComplete: { queue: 'golden.read' } },
      });
      const { result, statements } = await recorder.record(() => storage.getBatch(made.batchId));
      expect(result?.total).toBe(1);
      return statements;
    },
  },
  {
    // A page of a batch's results: its archived jobs after a cursor, in id order.
    file: 'batch-results',
    async run(storage, recorder) {
      const made = await storage.enqueueBatch({
        jobs: [job('golden.results'), job('golden.results')],
        callbacks: { onComplete: { queue: 'golden.results.done' } },
      });
      const leases = (await claim(storage, 'golden.results')).map(leaseOf);
      await storage.markAsProcessing(leases);
      await storage.archiveSucceeded(leases.map((l) => ({ ...l, durationMs: 1, result: '7' })));
      const { result, statements } = await recorder.record(() =>
        storage.getBatchResults(made.batchId, { after: made.jobIds[0], limit: 10 }),
      );
      expect(result).toEqual({ items: [{ id: made.jobIds[1], result: 7 }], nextCursor: null });
      return statements;
    },
  },
  {
    // What a cancel of a batch reads: its jobs still hot.
    file: 'batch-hot-job-ids',
    async run(storage, recorder) {
      const made = await storage.enqueueBatch({ jobs: [job('golden.cancel')] });
      const { result, statements } = await recorder.record(() =>
        storage.batchHotJobIds(made.batchId),
      );
      expect(result).toEqual(made.jobIds);
      return statements;
    },
  },
  {
    // The compare-and-set of a recurring slot, its enqueue and the last job it records.
    file: 'claim-recurring-slot',
    async run(storage, recorder) {
      const slot = new Date('2026-01-02T03:00:00.000Z');
      await storage.upsertRecurringJob(RECURRING);
      const { result, statements } = await recorder.record(() =>
        storage.claimRecurringSlot(RECURRING.name, slot, new Date('2026-01-03T03:00:00.000Z'), {
          queue: RECURRING.queue,
          type: RECURRING.type,
          idempotencyKey: `recurring:${RECURRING.name}:${slot.toISOString()}`,
          createdBy: 'chokaq:recurring',
        }),
      );
      expect(result?.created).toBe(true);
      return statements;
    },
  },
  {
    // One run outside the schedule: the last job recorded, then the enqueue, in one transaction.
    file: 'trigger-recurring-job',
    async run(storage, recorder) {
      await storage.upsertRecurringJob(RECURRING);
      const { result, statements } = await recorder.record(() =>
        storage.triggerRecurringJob(RECURRING.name, {
          queue: RECURRING.queue,
          type: RECURRING.type,
          payload: RECURRING.payload,
          createdBy: 'ops',
        }),
      );
      expect(result?.created).toBe(true);
      return statements;
    },
  },
  {
    // The dashboard's cheap totals: counters, hot counts, retained rows without a history scan.
    file: 'summary',
    async run(storage, recorder) {
      const { result, statements } = await recorder.record(() => storage.getSummary());
      expect(result.pending).toBe(0);
      return statements;
    },
  },
  {
    // Hot counts per queue: pending rows in the claim's index, active rows in the active index.
    file: 'queue-stats',
    async run(storage, recorder) {
      await storage.enqueue(job('golden.stats'));
      const { result, statements } = await recorder.record(() => storage.getQueueStats());
      expect(result).toEqual([expect.objectContaining({ queue: 'golden.stats', pending: 1 })]);
      return statements;
    },
  },
  {
    file: 'queue-health',
    async run(storage, recorder) {
      await storage.enqueue(job('golden.health'));
      const { result, statements } = await recorder.record(() => storage.getQueueHealth());
      expect(result.map((h) => h.queue)).toEqual(['golden.health']);
      return statements;
    },
  },
  {
    // Each queue's recent outcomes in one statement: the buckets of the window summed per queue.
    file: 'queue-outcomes',
    async run(storage, recorder) {
      const [lease] = await processing(storage, 'golden.outcomes');
      await storage.archiveSucceeded([{ ...lease, durationMs: 5 }]);
      const { result, statements } = await recorder.record(() => storage.getQueueOutcomes());
      expect(result).toEqual([
        expect.objectContaining({ queue: 'golden.outcomes', minutes: 5, succeeded: 1, failed: 0 }),
      ]);
      return statements;
    },
  },
  {
    // A job's audit entries: the exact target, through the target index.
    file: 'audit-log-target',
    async run(storage, recorder) {
      const { id } = await storage.enqueue(job('golden.audit'));
      await storage.cancel([id], 'ops', { action: 'job.cancel', actor: 'ops' });
      const { result, statements } = await recorder.record(() =>
        storage.getAuditLog({ target: id, limit: 10 }),
      );
      expect(result.items.map((e) => [e.action, e.target])).toEqual([['job.cancel', id]]);
      return statements;
    },
  },
  {
    file: 'throughput-series',
    async run(storage, recorder) {
      const to = await storage.now();
      const { result, statements } = await recorder.record(() =>
        storage.getThroughputSeries({
          queue: 'golden.series',
          from: new Date(to.getTime() - 3_600_000),
          to,
          stepMs: 300_000,
        }),
      );
      expect(result.length).toBeGreaterThanOrEqual(12);
      return statements;
    },
  },
  {
    // All queues at one-minute steps: a step is a bucket (PostgreSQL groups by the bucket's key).
    file: 'throughput-series-minutes',
    async run(storage, recorder) {
      const to = await storage.now();
      const { result, statements } = await recorder.record(() =>
        storage.getThroughputSeries({
          from: new Date(to.getTime() - 3_600_000),
          to,
          stepMs: 60_000,
        }),
      );
      expect(result.length).toBeGreaterThanOrEqual(60);
      return statements;
    },
  },
  {
    file: 'top-errors',
    async run(storage, recorder) {
      await inDlq(storage, 'golden.errors', 2);
      const { result, statements } = await recorder.record(() =>
        storage.getTopDlqErrors(10, { queue: 'golden.errors' }),
      );
      expect(result).toEqual([expect.objectContaining({ error: 'Error: fatal', count: 2 })]);
      return statements;
    },
  },
  {
    file: 'count-exactly',
    async run(storage, recorder) {
      await inDlq(storage, 'golden.count', 2);
      const { result, statements } = await recorder.record(() =>
        storage.countExactly({
          pillar: 'dlq',
          filter: { queue: 'golden.count', reason: FailureReason.FatalError },
        }),
      );
      expect(result).toBe(2);
      return statements;
    },
  },
  {
    // One job with its attempt history: the job, then its attempt rows.
    file: 'get-job-attempts',
    async run(storage, recorder) {
      const [lease] = await processing(storage, 'golden.attempts');
      await storage.rescheduleForRetry(lease, 0, 'Error: try again');
      const { result, statements } = await recorder.record(() =>
        storage.getJob(lease.id, { attempts: true }),
      );
      expect(result?.attempts?.map((a) => a.outcome)).toEqual(['retried']);
      return statements;
    },
  },
  {
    // DLQ rows by id, and their attempt rows with them.
    file: 'purge-dlq',
    async run(storage, recorder) {
      const ids = await inDlq(storage, 'golden.purge', 2);
      const { result, statements } = await recorder.record(() => storage.purgeDlq(ids));
      expect(result).toBe(2);
      return statements;
    },
  },
  {
    // The key is held by an active job: nothing is inserted and the holder's id comes back.
    file: 'enqueue-key-held',
    async run(storage, recorder) {
      const holder = await storage.enqueue(KEYED_JOB);
      const { result, statements } = await recorder.record(() => storage.enqueue(KEYED_JOB));
      expect(result).toEqual({ id: holder.id, created: false });
      return statements;
    },
  },
  {
    // A dedupe key taken for the first time: the key row, then the job's insert.
    file: 'enqueue-dedupe',
    async run(storage, recorder) {
      const { result, statements } = await recorder.record(() => storage.enqueue(THROTTLED_JOB));
      expect(result.created).toBe(true);
      return statements;
    },
  },
  {
    // A debounce within its window: the key row locked, the Pending holder replaced.
    file: 'enqueue-dedupe-replace',
    async run(storage, recorder) {
      const holder = await storage.enqueue(DEBOUNCED_JOB);
      const { result, statements } = await recorder.record(() => storage.enqueue(DEBOUNCED_JOB));
      expect(result).toEqual({ id: holder.id, created: false, replaced: true });
      return statements;
    },
  },
  {
    // A unique key whose holder left its states: a new job, and the key moved to it.
    file: 'enqueue-dedupe-move',
    async run(storage, recorder) {
      await storage.enqueue(UNIQUE_JOB);
      await claim(storage, 'golden.unique');
      const { result, statements } = await recorder.record(() => storage.enqueue(UNIQUE_JOB));
      expect(result.created).toBe(true);
      return statements;
    },
  },
];

/** A storage on a real database, its driver wrapped, and a way back to empty tables. */
interface Harness {
  storage: JobStorage;
  recorder: Recorder;
  reset(): Promise<void>;
  close(): Promise<void>;
}

const TABLES = [
  'jobs_hot',
  'jobs_archive',
  'jobs_dlq',
  'stats_summary',
  'metric_buckets',
  'queues',
  'recurring_jobs',
  'workers',
  'audit_log',
  'job_attempts',
  'dedupe_keys',
  'job_groups',
  'batches',
  'batch_callbacks',
];

function defineGoldens(dir: string, open: () => Promise<Harness>): void {
  let harness: Harness;
  beforeAll(async () => {
    harness = await open();
  });
  afterAll(async () => {
    await harness?.close();
  });
  beforeEach(async () => {
    await harness.reset();
  });

  it.each(SCENARIOS.map((s) => [s.file, s] as const))('%s', async (_file, scenario) => {
    const statements = await scenario.run(harness.storage, harness.recorder);
    expect(statements.length).toBeGreaterThan(0);
    expectGolden(dir, scenario.file, statements);
  });
}

describe('SQLite golden statements', () => {
  defineGoldens(join(__dirname, 'sqlite'), async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chokaq-golden-'));
    // The DataSource createJobStorage would open for { type: 'sqlite' }, borrowed so the test can
    // reach the better-sqlite3 handle the storage uses (the driver's single connection).
    const dataSource = new DataSource({ type: 'better-sqlite3', database: join(dir, 'chokaq.db') });
    await dataSource.initialize();
    const db = (dataSource.driver as unknown as { databaseConnection: BetterSqlite3.Database })
      .databaseConnection;
    expect(db).toBeInstanceOf(Database);
    const storage = await createJobStorage({ dataSource, schema: 'chokaq_' });
    const recorder = recordSqlite(db);
    return {
      storage,
      recorder,
      async reset() {
        for (const t of TABLES) await dataSource.query(`DELETE FROM chokaq_${t}`);
      },
      async close() {
        recorder.uninstall();
        await storage.close();
        await dataSource.destroy();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  });
});

(pgAvailable() ? describe : describe.skip)('PostgreSQL golden statements', () => {
  defineGoldens(join(__dirname, 'postgres'), async () => {
    const schema = `chokaq_golden_${process.pid}`;
    const dataSource = new DataSource({ type: 'postgres', url: PG_URL, poolSize: 4 });
    await dataSource.initialize();
    // Jest gives each test file its own module registry: the wrapper only sees the queries if
    // TypeORM loaded the same `pg` instance this file imported.
    expect(
      (dataSource.driver as unknown as { postgres: { Client: unknown } }).postgres.Client,
    ).toBe(Client);
    await dataSource.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    const storage = await createJobStorage({ dataSource, schema });
    const recorder = recordPg(schema);
    return {
      storage,
      recorder,
      async reset() {
        await dataSource.query(`TRUNCATE ${TABLES.map((t) => `"${schema}".${t}`).join(', ')}`);
      },
      async close() {
        recorder.uninstall();
        await storage.close();
        await dataSource.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await dataSource.destroy();
      },
    };
  });
});
