import { ChokaQAdmin } from '../../libs/chokaq/src/admin/chokaq-admin.service';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { NewJob } from '../../libs/chokaq/src/interfaces/job.interface';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import { testOptions } from '../runtime/support/options';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { Claim, claim, expectValidationError, newWorkerId, startJob, uniqueQueue } from './helpers';

const HOUR = 3_600_000;

/**
 * Groups (issue 30, part 2): a job's group, kept through every move; per queue, a group
 * concurrency and a group rate limit enforced inside the claim; a claim that takes turns across
 * the groups, so that one group's backlog does not starve another; order within a group.
 */
describeEachDialect('storage contract: groups', (fixture) => {
  let db: TestDatabase;
  let storage: JobStorage;
  let admin: ChokaQAdmin;
  beforeAll(async () => {
    db = await fixture.create();
    storage = db.storage;
    admin = new ChokaQAdmin(storage, testOptions(), new WorkerRegistry());
  });
  afterAll(async () => {
    await db?.close();
  });

  /** A claim that starts every row it takes: the only kind that claims a grouped queue. */
  const claimStarting = (queue: string, limit: number, workerId = newWorkerId()): Promise<Claim> =>
    claim(storage, queue, limit, workerId, { start: limit });

  const groupsOf = (c: Claim): string[] => c.rows.map((r) => r.group ?? '-');

  const count = (values: readonly string[], value: string): number =>
    values.filter((v) => v === value).length;

  async function finish(c: Claim): Promise<void> {
    if (c.leases.length > 0) {
      await storage.archiveSucceeded(c.leases.map((l) => ({ ...l, durationMs: 1 })));
    }
  }

  it('a job keeps its group through every move; a job without one has none', async () => {
    const queue = uniqueQueue('keep');
    const plain = await storage.enqueue({ queue });
    expect((await storage.getJob(plain.id))?.group).toBeNull();

    const done = await startJob(storage, queue, { group: 'tenant-a' });
    expect((await storage.getJob(done.id))?.group).toBe('tenant-a');
    await storage.archiveSucceeded([{ ...done, durationMs: 1 }]);
    expect(await storage.getJob(done.id)).toMatchObject({ pillar: 'archive', group: 'tenant-a' });

    const failed = await startJob(storage, queue, { group: 'tenant-b' });
    await storage.moveToDlq(failed, { reason: FailureReason.FatalError, error: 'boom' });
    expect(await storage.getJob(failed.id)).toMatchObject({ pillar: 'dlq', group: 'tenant-b' });
    expect(await storage.resurrect(failed.id)).toBe(1);
    expect(await storage.getJob(failed.id)).toMatchObject({ pillar: 'hot', group: 'tenant-b' });
  });

  it('group concurrency: at most N of a group are Fetched or Processing at once; other groups go on', async () => {
    const queue = uniqueQueue('cap');
    await admin.setGroupLimits(queue, { concurrency: 2 });
    const jobs: NewJob[] = [];
    for (let i = 0; i < 6; i++) jobs.push({ queue, group: 'a' }, { queue, group: 'b' });
    await storage.enqueueMany(jobs);

    const first = await claimStarting(queue, 10);
    expect(count(groupsOf(first), 'a')).toBe(2);
    expect(count(groupsOf(first), 'b')).toBe(2);
    expect(first.rows.every((r) => r.status === 2 && r.attemptCount === 1)).toBe(true);
    // Another worker finds every group at its limit.
    expect((await claimStarting(queue, 10)).rows).toHaveLength(0);

    // One of a's finishes: one more of a's may start, none of b's.
    const doneA = first.leases[first.rows.findIndex((r) => r.group === 'a')];
    await storage.archiveSucceeded([{ ...doneA, durationMs: 1 }]);
    expect(groupsOf(await claimStarting(queue, 10))).toEqual(['a']);
    expect(await storage.getQueueGroups(queue)).toEqual([
      { group: 'b', pending: 4, running: 2 },
      { group: 'a', pending: 3, running: 2 },
    ]);
  });

  it('takes turns: tenant B enqueued after 10,000 of tenant A starts all 10 within 3 claims, A within its limit throughout', async () => {
    const queue = uniqueQueue('fair');
    await admin.setGroupLimits(queue, { concurrency: 5 });
    const a: NewJob[] = Array.from({ length: 10_000 }, (_, i) => ({
      queue,
      group: 'tenant-a',
      payload: { i },
    }));
    for (let i = 0; i < a.length; i += 1_000) await storage.enqueueMany(a.slice(i, i + 1_000));
    await storage.enqueueMany(Array.from({ length: 10 }, () => ({ queue, group: 'tenant-b' })));

    let startedB = 0;
    let cycles = 0;
    while (startedB < 10 && cycles < 10) {
      cycles += 1;
      const c = await claimStarting(queue, 10);
      const groups = groupsOf(c);
      startedB += count(groups, 'tenant-b');
      const load = await storage.getQueueGroups(queue);
      expect(load.find((g) => g.group === 'tenant-a')?.running ?? 0).toBeLessThanOrEqual(5);
      await finish(c);
    }
    expect(startedB).toBe(10);
    expect(cycles).toBeLessThanOrEqual(3);
  });

  it('round robin: with room for every group, a claim takes each group’s first job before any second one', async () => {
    const queue = uniqueQueue('robin');
    await admin.setGroupLimits(queue, { concurrency: 100 });
    const jobs: NewJob[] = [];
    for (const group of ['g1', 'g2', 'g3']) {
      for (let i = 0; i < 4; i++) jobs.push({ queue, group });
    }
    await storage.enqueueMany(jobs);
    const c = await claimStarting(queue, 6);
    expect(groupsOf(c).sort()).toEqual(['g1', 'g1', 'g2', 'g2', 'g3', 'g3']);
  });

  it('a grouped claim hands its rows back in claim order (priority, due time, id), also a claimer’s second claim', async () => {
    const queue = uniqueQueue('handback');
    await admin.setGroupLimits(queue, { concurrency: 100 });
    const workerId = newWorkerId();
    // A first claim of the empty queue: the claimer now knows the queue is grouped (on
    // PostgreSQL its next claim is one statement).
    expect((await claimStarting(queue, 3, workerId)).rows).toHaveLength(0);
    const low = await storage.enqueue({ queue, group: 'a', priority: 1 });
    const high = await storage.enqueue({ queue, group: 'b', priority: 9 });
    const mid = await storage.enqueue({ queue, group: 'c', priority: 5 });
    const c = await claimStarting(queue, 3, workerId);
    expect(c.rows.map((r) => r.id)).toEqual([high.id, mid.id, low.id]);
  });

  it('the next claim goes on after the last group the previous one visited', async () => {
    const queue = uniqueQueue('cursor');
    await admin.setGroupLimits(queue, { concurrency: 10 });
    const jobs: NewJob[] = [];
    for (let i = 0; i < 3; i++) {
      for (const group of ['a', 'b', 'c']) jobs.push({ queue, group });
    }
    await storage.enqueueMany(jobs);
    const order: string[] = [];
    for (let i = 0; i < 6; i++) {
      const c = await claimStarting(queue, 1);
      order.push(...groupsOf(c));
      await finish(c);
    }
    // A claim of one row visits one group with room, so the groups come in turn.
    expect(order).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
  });

  // A claim of 1 finds a group per row it may start and takes each group's first row as the walk
  // found it; a claim of 5 reads the group's rows again, in its order.
  it.each([5, 1])(
    'within a group, claim order holds: priority, then due time, then enqueue order (claims of %i)',
    async (limit) => {
      const queue = uniqueQueue('order');
      await admin.setGroupLimits(queue, { concurrency: 1 });
      const low1 = await storage.enqueue({ queue, group: 'g', priority: 1 });
      const high = await storage.enqueue({ queue, group: 'g', priority: 5 });
      const low2 = await storage.enqueue({ queue, group: 'g', priority: 1 });
      const seen: string[] = [];
      for (let i = 0; i < 3; i++) {
        const c = await claimStarting(queue, limit);
        expect(c.rows).toHaveLength(1);
        seen.push(c.rows[0].id);
        await finish(c);
      }
      expect(seen).toEqual([high.id, low1.id, low2.id]);
    },
  );

  it('a group rate limit: at most max starts of each group per window, held-back jobs stay Pending', async () => {
    const queue = uniqueQueue('grate');
    await admin.setGroupLimits(queue, { rateLimit: { max: 2, perMs: 400 } });
    const jobs: NewJob[] = [];
    for (let i = 0; i < 4; i++) jobs.push({ queue, group: 'a' }, { queue, group: 'b' });
    await storage.enqueueMany(jobs);

    const first = await claimStarting(queue, 10);
    expect(count(groupsOf(first), 'a')).toBe(2);
    expect(count(groupsOf(first), 'b')).toBe(2);
    await finish(first);
    expect((await claimStarting(queue, 10)).rows).toHaveLength(0);
    const pending = await storage.getQueueGroups(queue);
    expect(pending.map((g) => g.pending)).toEqual([2, 2]);

    const later = await waitFor(
      'the next group window',
      async () => {
        const c = await claimStarting(queue, 10);
        await finish(c);
        return c.rows.length > 0 ? c : undefined;
      },
      { timeoutMs: 10_000 },
    );
    expect(count(groupsOf(later), 'a')).toBeLessThanOrEqual(2);
    expect(count(groupsOf(later), 'b')).toBeLessThanOrEqual(2);
  });

  it('a grouped queue with a rate limit of its own: claim after claim, at most max start per window and a short claim says when the next start is due', async () => {
    const queue = uniqueQueue('grouped-rate');
    await admin.setGroupLimits(queue, { concurrency: 5 });
    await admin.setRateLimit(queue, { max: 3, perMs: 60_000 });
    const jobs: NewJob[] = [];
    for (let i = 0; i < 4; i++) jobs.push({ queue, group: 'a' }, { queue, group: 'b' });
    await storage.enqueueMany(jobs);

    // Claim after claim (PostgreSQL: the first in the claim's transaction, the later ones as one
    // statement), the queue's window holds: 3 starts, then none, each short claim with its wait.
    const started: number[] = [];
    for (let i = 0; i < 3; i++) {
      const c = await claimStarting(queue, 2);
      started.push(c.rows.length);
      if (c.rows.length < 2 && storage.reportsRateLimitWait === true) {
        expect(c.rows.rateLimitWaitMs).toBeGreaterThan(50_000);
        expect(c.rows.rateLimitWaitMs).toBeLessThanOrEqual(60_000);
      }
      await finish(c);
    }
    expect(started).toEqual([2, 1, 0]);
  });

  it('limits removed between two claims of one claimer: its next claim takes the queue as any other', async () => {
    const queue = uniqueQueue('ungroup');
    await admin.setGroupLimits(queue, { concurrency: 1 });
    const jobs: NewJob[] = [];
    for (let i = 0; i < 3; i++) jobs.push({ queue, group: 'a' });
    await storage.enqueueMany(jobs);
    const workerId = newWorkerId();
    expect((await claimStarting(queue, 3, workerId)).rows).toHaveLength(1);
    expect((await claimStarting(queue, 3, workerId)).rows).toHaveLength(0);

    await admin.setGroupLimits(queue, { concurrency: null });
    expect((await claimStarting(queue, 3, workerId)).rows).toHaveLength(2);
  });

  it('jobs without a group in a grouped queue share one group, those enqueued before the limits too', async () => {
    const queue = uniqueQueue('shared');
    const before = await storage.enqueue({ queue });
    await admin.setGroupLimits(queue, { concurrency: 1 });
    const after = await storage.enqueue({ queue });
    await storage.enqueue({ queue, group: 'x' });

    const c = await claimStarting(queue, 10);
    // The shared group (one at a time) and group x.
    expect(c.rows).toHaveLength(2);
    expect(c.rows.map((r) => r.id)).toContain(before.id);
    expect((await storage.getJob(after.id))?.group).toBeNull();
    await finish(c);
    const next = await claimStarting(queue, 10);
    expect(next.rows.map((r) => r.id)).toEqual([after.id]);
    expect(next.rows[0].group).toBeNull();

    // Without group limits, the queue is claimed as any other.
    await admin.setGroupLimits(queue, { concurrency: null });
    await storage.enqueueMany([{ queue, group: 'x' }, { queue, group: 'x' }, { queue }]);
    expect((await claimStarting(queue, 10)).rows).toHaveLength(3);
  });

  it('a grouped queue is never claimed into the buffer (a claim that starts none of its rows takes none)', async () => {
    const queue = uniqueQueue('nobuffer');
    await admin.setGroupLimits(queue, { concurrency: 3 });
    await storage.enqueue({ queue, group: 'g' });
    expect((await claim(storage, queue, 5)).rows).toHaveLength(0);
    expect((await claimStarting(queue, 5)).rows).toHaveLength(1);
  });

  it('validates groups and group limits', async () => {
    const queue = uniqueQueue('valid');
    await expectValidationError(storage.enqueue({ queue, group: '' }), 'group');
    await expectValidationError(storage.enqueue({ queue, group: 'trailing ' }), 'group');
    await expectValidationError(storage.enqueue({ queue, group: 'x'.repeat(256) }), 'group');
    await expectValidationError(
      admin.setGroupLimits(queue, { concurrency: 0 }),
      'patch.groupConcurrency',
    );
    await expectValidationError(
      admin.setGroupLimits(queue, { rateLimit: { max: 0, perMs: 10 } }),
      'patch.groupRateLimit.max',
    );
    await expectValidationError(admin.setGroupLimits(queue, {}), 'limits');
    await expectValidationError(storage.getQueueGroups(queue, 0), 'limit');
    const info = await admin.setGroupLimits(queue, {
      concurrency: 3,
      rateLimit: { max: 5, perMs: 1_000 },
    });
    expect(info).toMatchObject({ groupConcurrency: 3, groupRateLimit: { max: 5, perMs: 1_000 } });
    expect((await admin.setGroupLimits(queue, { rateLimit: null })).groupRateLimit).toBeNull();
  });

  it('retention removes group windows that no longer count, and keeps those that do', async () => {
    const queue = uniqueQueue('gret');
    await admin.setGroupLimits(queue, { rateLimit: { max: 1, perMs: HOUR } });
    await storage.enqueueMany([{ queue, group: 'kept' }]);
    await finish(await claimStarting(queue, 5));
    const other = uniqueQueue('gret2');
    await admin.setGroupLimits(other, { rateLimit: { max: 1, perMs: 1 } });
    await storage.enqueue({ queue: other, group: 'gone' });
    await finish(await claimStarting(other, 5));
    // A window of 1 ms is over by the time retention runs.
    const policy = { archiveMs: HOUR, dlqMs: HOUR, metricsMs: HOUR };
    const result = await waitFor(
      'retention of the ended window',
      async () => {
        const r = await storage.applyRetention(policy);
        return r.groups > 0 ? r : undefined;
      },
      { timeoutMs: 5_000 },
    );
    expect(result.groups).toBeGreaterThanOrEqual(1);
    // The hour-long window still counts: group `kept` may not start another job.
    await storage.enqueue({ queue, group: 'kept' });
    expect((await claimStarting(queue, 5)).rows).toHaveLength(0);
  });

  it('retention puts a grouped queue’s job stored without a group (an enqueue that raced the limit) into the shared group', async () => {
    const queue = uniqueQueue('raced');
    await admin.setGroupLimits(queue, { concurrency: 1 });
    const { id } = await storage.enqueue({ queue });
    // As an enqueue that read the queue before its limit was set would have stored it.
    await db.sql(
      `UPDATE ${db.table('hot')} SET ${db.column('group_key')} = NULL WHERE ${db.column('id')} = ${db.param(1)}`,
      [id],
    );
    expect((await claimStarting(queue, 5)).rows).toHaveLength(0);
    await storage.applyRetention({ archiveMs: HOUR, dlqMs: HOUR, metricsMs: HOUR });
    expect((await claimStarting(queue, 5)).rows.map((r) => r.id)).toEqual([id]);
  });

  it('a claim visits a bounded number of groups; the next one goes on from there', async () => {
    const queue = uniqueQueue('bound');
    // 80 groups with one job running each, claimed before the queue had limits (so no claim has
    // walked its groups yet), then at their limit of 1 with one more waiting; a free group last.
    const busy = Array.from({ length: 80 }, (_, i) => `busy-${String(i).padStart(2, '0')}`);
    await storage.enqueueMany(busy.map((group) => ({ queue, group })));
    expect((await claimStarting(queue, 100)).rows).toHaveLength(80);
    await admin.setGroupLimits(queue, { concurrency: 1 });
    await storage.enqueueMany([...busy.map((group) => ({ queue, group })), { queue, group: 'zz' }]);
    // A claim of 5 visits at most 64 groups: all of them at their limit.
    expect((await claimStarting(queue, 5)).rows).toHaveLength(0);
    // The next one goes on after them and reaches the free group.
    expect(groupsOf(await claimStarting(queue, 5))).toEqual(['zz']);
  });

  it('a worker that runs some types takes a group’s first job of those, behind a job it does not run or that is not due', async () => {
    const queue = uniqueQueue('types');
    await admin.setGroupLimits(queue, { concurrency: 5 });
    // Group a's first job in claim order is of a type this worker does not run; b's is due later.
    await storage.enqueue({ queue, group: 'a', type: 'other', priority: 9 });
    const a = await storage.enqueue({ queue, group: 'a', type: 'mine', priority: 1 });
    await storage.enqueue({ queue, group: 'b', type: 'mine', priority: 9, delayMs: 3_600_000 });
    const b = await storage.enqueue({ queue, group: 'b', type: 'mine', priority: 1 });
    const handled = { queues: [], types: [{ queue, type: 'mine' }] };
    // Two rows to start, two groups: one row of each, the first of each this worker may run.
    const c = await claim(storage, handled, 2, newWorkerId(), { start: 2 });
    expect(c.rows.map((r) => r.id).sort()).toEqual([a.id, b.id].sort());
  });

  it('a group whose jobs are all scheduled later is passed over, not counted as one with room', async () => {
    const queue = uniqueQueue('later');
    await admin.setGroupLimits(queue, { concurrency: 5 });
    const later = Array.from({ length: 6 }, (_, i) => ({
      queue,
      group: `later-${i}`,
      delayMs: 3_600_000,
    }));
    await storage.enqueueMany([...later, { queue, group: 'zz-due' }]);
    // A claim of 1 looks for one group with a due job: six groups with nothing due come first.
    expect(groupsOf(await claimStarting(queue, 1))).toEqual(['zz-due']);
  });
});
