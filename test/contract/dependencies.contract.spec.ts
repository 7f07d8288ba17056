import { randomUUID } from 'node:crypto';
import { ChokaQDependencyNotFoundError } from '../../libs/chokaq/src/errors';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import type { JobLease, NewJob } from '../../libs/chokaq/src/interfaces/job.interface';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import {
  backdate,
  claim,
  expectRejects,
  expectValidationError,
  pillarsOf,
  startJob,
  uniqueQueue,
} from './helpers';

/**
 * Dependencies (issue 29, part 3): a job enqueued with `dependsOn` waits (status Waiting, in the
 * hot table, never claimed) and becomes Pending in the transaction of the move that settles its
 * last dependency; a failed dependency does what its edge's policy says.
 */
describeEachDialect('storage contract: dependencies', (fixture) => {
  let db: TestDatabase;
  let storage: JobStorage;
  beforeAll(async () => {
    db = await fixture.create();
    storage = db.storage;
  });
  afterAll(async () => {
    await db?.close();
  });

  const archive = (leases: readonly JobLease[]) =>
    storage.archiveSucceeded(leases.map((l) => ({ ...l, durationMs: 1 })));
  const fail = (lease: JobLease) =>
    storage.moveToDlq(lease, { reason: FailureReason.MaxRetriesExceeded, error: 'boom' });

  /** A started job of its own type in `queue`: its lease. */
  const started = (queue: string, job: NewJob = {}) => startJob(storage, queue, job);

  /** Enqueues a job of `queue` (type `waiter`) waiting on `dependsOn`; its id. */
  async function waiter(queue: string, dependsOn: NewJob['dependsOn'], job: NewJob = {}) {
    const { id, created } = await storage.enqueue({ queue, type: 'waiter', dependsOn, ...job });
    expect(created).toBe(true);
    return id;
  }

  const statusOf = async (id: string) => (await storage.getJob(id))?.status;

  it('a continuation waits, is never claimed, and is Pending in the move of its dependency', async () => {
    const queue = uniqueQueue('dep');
    const a = await started(queue);
    const b = await waiter(queue, [a.id]);
    expect(await storage.getJob(b)).toMatchObject({
      pillar: 'hot',
      status: JobStatus.Waiting,
      waitingOn: 1,
    });
    expect((await claim(storage, queue, 10)).rows).toEqual([]);
    const deps = await storage.getDependencies(b);
    expect(deps.dependsOn).toEqual([
      {
        jobId: b,
        dependsOn: a.id,
        onFailure: 'block',
        state: 'waiting',
        dependencyPillar: 'hot',
        blocked: false,
      },
    ]);
    expect((await storage.getDependencies(a.id)).dependents.map((d) => d.jobId)).toEqual([b]);

    await archive([a]);
    expect(await storage.getJob(b)).toMatchObject({ status: JobStatus.Pending, waitingOn: 0 });
    expect((await storage.getDependencies(b)).dependsOn[0]).toMatchObject({
      state: 'succeeded',
      dependencyPillar: 'archive',
    });
    const c = await claim(storage, queue, 10);
    expect(c.rows.map((r) => r.id)).toEqual([b]);
  });

  it('a fan-in is released only by the move of its last dependency', async () => {
    const queue = uniqueQueue('dep');
    const children = [await started(queue), await started(queue), await started(queue)];
    const parent = await waiter(
      queue,
      children.map((c) => c.id),
    );
    await archive(children.slice(0, 2));
    expect(await storage.getJob(parent)).toMatchObject({
      status: JobStatus.Waiting,
      waitingOn: 1,
    });
    await archive([children[2]]);
    expect(await statusOf(parent)).toBe(JobStatus.Pending);
  });

  it('enqueueMany writes a flow in one call: jobs may wait on jobs of the same call', async () => {
    const queue = uniqueQueue('flow');
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    const results = await storage.enqueueMany([
      { id: c, queue, type: 'join', dependsOn: [a, b] },
      { id: a, queue, type: 'left' },
      { id: b, queue, type: 'right', dependsOn: [a] },
    ]);
    expect(results.map((r) => r.created)).toEqual([true, true, true]);
    expect(await statusOf(a)).toBe(JobStatus.Pending);
    expect(await statusOf(b)).toBe(JobStatus.Waiting);
    expect(await storage.getJob(c)).toMatchObject({ status: JobStatus.Waiting, waitingOn: 2 });

    const first = await claim(storage, queue, 10);
    expect(first.rows.map((r) => r.id)).toEqual([a]);
    await storage.markAsProcessing(first.leases);
    await archive(first.leases);
    expect(await statusOf(b)).toBe(JobStatus.Pending);
    expect(await storage.getJob(c)).toMatchObject({ status: JobStatus.Waiting, waitingOn: 1 });
    const second = await claim(storage, queue, 10);
    expect(second.rows.map((r) => r.id)).toEqual([b]);
    await storage.markAsProcessing(second.leases);
    await archive(second.leases);
    expect(await statusOf(c)).toBe(JobStatus.Pending);
  });

  it('of two items with one id, only the one inserted gets edges', async () => {
    const queue = uniqueQueue('dep');
    const a = await started(queue);
    const x = randomUUID();
    const results = await storage.enqueueMany([
      { id: x, queue, type: 'first' },
      { id: x, queue, type: 'second', dependsOn: [a.id] },
    ]);
    expect(results).toEqual([
      { id: x, created: true },
      { id: x, created: false },
    ]);
    expect(await storage.getJob(x)).toMatchObject({ status: JobStatus.Pending, type: 'first' });
    expect((await storage.getDependencies(x)).dependsOn).toEqual([]);
    expect((await storage.getDependencies(a.id)).dependents).toEqual([]);
  });

  it('refuses a cycle, a job waiting on itself, and ids in no table, writing nothing', async () => {
    const queue = uniqueQueue('flow');
    const [a, b] = [randomUUID(), randomUUID()];
    await expectValidationError(
      storage.enqueueMany([
        { id: a, queue, dependsOn: [b] },
        { id: b, queue, dependsOn: [a] },
      ]),
      'items[0].dependsOn',
    );
    await expectValidationError(storage.enqueue({ id: a, queue, dependsOn: [a] }), 'dependsOn[0]');
    await expectValidationError(storage.enqueue({ queue, dependsOn: ['nope'] }), 'dependsOn[0]');
    const missing = randomUUID();
    const existing = await started(queue);
    const error = await expectRejects(
      storage.enqueueMany([
        { id: a, queue, type: 'ok' },
        { id: b, queue, dependsOn: [existing.id, missing] },
      ]),
    );
    expect(error).toBeInstanceOf(ChokaQDependencyNotFoundError);
    expect((error as ChokaQDependencyNotFoundError).missingIds).toEqual([missing]);
    expect(await pillarsOf(db, a)).toEqual([]);
    expect(await pillarsOf(db, b)).toEqual([]);
    expect((await storage.getDependencies(existing.id)).dependents).toEqual([]);
  });

  it('a dependency already archived counts as succeeded; in the DLQ as failed, by policy', async () => {
    const queue = uniqueQueue('dep');
    const done = await started(queue);
    await archive([done]);
    expect(await statusOf(await waiter(queue, [done.id]))).toBe(JobStatus.Pending);

    const dead = await started(queue);
    await fail(dead);
    const blocked = await waiter(queue, [dead.id]);
    expect(await statusOf(blocked)).toBe(JobStatus.Waiting);
    expect((await storage.getDependencies(blocked)).dependsOn[0]).toMatchObject({
      state: 'waiting',
      dependencyPillar: 'dlq',
      blocked: true,
    });
    expect(await statusOf(await waiter(queue, [{ jobId: dead.id, onFailure: 'ignore' }]))).toBe(
      JobStatus.Pending,
    );
    // Cancel: the enqueue's own check, once it committed, sends the job to the DLQ unrun.
    const cancelled = await waiter(queue, [{ jobId: dead.id, onFailure: 'cancel' }]);
    expect(await storage.getJob(cancelled)).toMatchObject({
      pillar: 'dlq',
      status: JobStatus.Cancelled,
      failureReason: FailureReason.DependencyFailed,
      attemptCount: 0,
    });
    expect((await storage.getJob(cancelled))!.errorDetails).toContain(dead.id);
  });

  it('a failed dependency: block waits, ignore releases, cancel cascades by each edge', async () => {
    const queue = uniqueQueue('dep');
    const a = await started(queue);
    const blocked = await waiter(queue, [a.id]);
    const ignoring = await waiter(queue, [{ jobId: a.id, onFailure: 'ignore' }]);
    const cancelled = await waiter(queue, [{ jobId: a.id, onFailure: 'cancel' }]);
    // Two levels below the cancelled one: one that cancels with it, one that ignores it.
    const deep = await waiter(queue, [{ jobId: cancelled, onFailure: 'cancel' }]);
    const shrugs = await waiter(queue, [{ jobId: cancelled, onFailure: 'ignore' }]);

    await fail(a);
    expect(await statusOf(blocked)).toBe(JobStatus.Waiting);
    expect(await statusOf(ignoring)).toBe(JobStatus.Pending);
    // Decided in the move, acted on by the check: never released meanwhile.
    expect(await statusOf(cancelled)).toBe(JobStatus.Waiting);
    const check = await storage.checkDependencies();
    expect(check.cancelled.sort()).toEqual([cancelled, deep].sort());
    for (const id of [cancelled, deep]) {
      expect(await storage.getJob(id)).toMatchObject({
        pillar: 'dlq',
        failureReason: FailureReason.DependencyFailed,
      });
    }
    expect(await statusOf(shrugs)).toBe(JobStatus.Pending);
    expect(await statusOf(blocked)).toBe(JobStatus.Waiting);
    expect((await storage.checkDependencies()).cancelled).toEqual([]);
  });

  it('block: a resurrect of the dependency that then succeeds releases the waiting job', async () => {
    const queue = uniqueQueue('dep');
    const a = await started(queue, { type: 'dep-a' });
    const b = await waiter(queue, [a.id]);
    await fail(a);
    expect(await storage.resurrect(a.id)).toBe(1);
    expect(await statusOf(b)).toBe(JobStatus.Waiting);
    const again = await claim(storage, { queues: [], types: [{ queue, type: 'dep-a' }] }, 1);
    expect(again.rows.map((r) => r.id)).toEqual([a.id]);
    await storage.markAsProcessing(again.leases);
    await archive(again.leases);
    expect(await statusOf(b)).toBe(JobStatus.Pending);
  });

  it('block: a purge of the dependency sends the waiting job to the DLQ, naming it', async () => {
    const queue = uniqueQueue('dep');
    const a = await started(queue);
    const b = await waiter(queue, [a.id]);
    await fail(a);
    expect(await storage.purgeDlq([a.id])).toBe(1);
    const check = await storage.checkDependencies();
    expect(check.cancelled).toEqual([b]);
    const job = await storage.getJob(b);
    expect(job).toMatchObject({ pillar: 'dlq', failureReason: FailureReason.DependencyFailed });
    expect(job!.errorDetails).toContain(a.id);
    expect(job!.errorDetails).toContain('removed');
    expect((await storage.getDependencies(b)).dependsOn[0]).toMatchObject({
      state: 'removed',
      dependencyPillar: 'removed',
    });
  });

  it('a cancel of a waiting job moves it to the DLQ; its dependents see a failure', async () => {
    const queue = uniqueQueue('dep');
    const a = await started(queue);
    const b = await waiter(queue, [a.id]);
    const c = await waiter(queue, [{ jobId: b, onFailure: 'ignore' }]);
    const result = await storage.cancel([b]);
    expect(result.cancelled).toEqual([b]);
    expect(await storage.getJob(b)).toMatchObject({ pillar: 'dlq', status: JobStatus.Cancelled });
    expect(await statusOf(c)).toBe(JobStatus.Pending);
    // The dependency's later success finds no one to release.
    await archive([a]);
    expect((await storage.getDependencies(a.id)).dependents[0]).toMatchObject({
      jobId: b,
      state: 'succeeded',
    });
  });

  it('a zombie dependency is a failure', async () => {
    const queue = uniqueQueue('dep');
    const a = await started(queue);
    const b = await waiter(queue, [{ jobId: a.id, onFailure: 'ignore' }]);
    await backdate(db, 'hot', 'heartbeat_utc', [a.id], 3_600_000);
    const swept = await storage.archiveZombies(60_000);
    expect(swept.dlq).toContain(a.id);
    expect(await statusOf(b)).toBe(JobStatus.Pending);
  });
});
