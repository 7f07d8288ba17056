import { ChokaQAdmin } from '../../libs/chokaq/src/admin/chokaq-admin.service';
import { ChokaQJobNotPendingError } from '../../libs/chokaq/src/errors';
import { JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import { testOptions } from '../runtime/support/options';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import {
  backdateDue,
  claim,
  closeClaimers,
  expectRejects,
  expectValidationError,
  openClaimers,
  startJob,
  uniqueQueue,
} from './helpers';

const HOUR = 3_600_000;

/**
 * Editing a job that is still Pending (issue 30, part 4): one guarded statement with its audit row.
 * A job a worker has claimed (Fetched, or started ahead), or that finished, is never changed, and
 * the refusal says what state it is in.
 */
describeEachDialect('storage contract: editing a pending job', (fixture) => {
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

  it('changes payload, version, tags and priority of a Pending job, with one audit row', async () => {
    const queue = uniqueQueue('edit');
    const { id } = await storage.enqueue({
      queue,
      type: 'edit.one',
      payload: { n: 1 },
      tags: ['a'],
      priority: 5,
      createdBy: 'producer',
    });
    const result = await storage.updatePending(
      id,
      { payload: { n: 2, s: 'é' }, payloadVersion: 3, tags: ['b', 'c'], priority: 7 },
      'operator',
      { action: 'job.update', actor: 'operator' },
    );
    expect(result).toEqual({ updated: true });
    expect(await storage.getJob(id)).toMatchObject({
      status: JobStatus.Pending,
      payload: { n: 2, s: 'é' },
      payloadVersion: 3,
      tags: ['b', 'c'],
      priority: 7,
      attemptCount: 0,
      createdBy: 'producer',
      lastModifiedBy: 'operator',
    });
    const [entry] = (await admin.getAuditLog({ limit: 1 })).items;
    expect(entry).toMatchObject({
      action: 'job.update',
      actor: 'operator',
      target: id,
      rowsAffected: 1,
      details: {
        payloadBytes: Buffer.byteLength(JSON.stringify({ n: 2, s: 'é' })),
        payloadVersion: 3,
        tags: ['b', 'c'],
        priority: 7,
      },
    });
  });

  it('keeps every field it is not given, and clears the tags with []', async () => {
    const queue = uniqueQueue('edit');
    const { id } = await storage.enqueue({ queue, payload: { keep: true }, tags: ['x'] });
    const before = await storage.getJob(id);
    expect(await storage.updatePending(id, { tags: [] })).toEqual({ updated: true });
    const after = await storage.getJob(id);
    expect(after).toMatchObject({
      payload: { keep: true },
      payloadVersion: before?.payloadVersion,
      priority: before?.priority,
      tags: [],
      scheduledAtUtc: before?.scheduledAtUtc,
    });
  });

  it("runAt 'now' makes a delayed job due at its enqueue place; a Date moves it", async () => {
    const queue = uniqueQueue('edit');
    const first = await storage.enqueue({ queue, type: 't', delayMs: HOUR });
    const second = await storage.enqueue({ queue, type: 't' });
    await backdateDue(db, [first.id, second.id], 1_000);
    expect((await claim(storage, queue, 10)).rows.map((r) => r.id)).toEqual([second.id]);

    const third = await storage.enqueue({ queue, type: 't', delayMs: HOUR });
    const fourth = await storage.enqueue({ queue, type: 't' });
    await backdateDue(db, [third.id, fourth.id], 1_000);
    expect(await storage.updatePending(third.id, { runAt: 'now' })).toEqual({ updated: true });
    expect((await storage.getJob(third.id))?.scheduledAtUtc).toBeNull();
    // Due again, and first in line: it was enqueued before the fourth (and `first` is still held).
    expect((await claim(storage, queue, 10)).rows.map((r) => r.id)).toEqual([third.id, fourth.id]);

    const later = new Date(Date.now() + HOUR);
    const fifth = await storage.enqueue({ queue, type: 't' });
    expect(await storage.updatePending(fifth.id, { runAt: later })).toEqual({ updated: true });
    expect((await storage.getJob(fifth.id))?.scheduledAtUtc?.getTime()).toBe(later.getTime());
    expect((await claim(storage, queue, 10)).rows).toEqual([]);
  });

  it('refuses a Fetched, a running, an archived, a dead-lettered and a missing job, writing nothing', async () => {
    const queue = uniqueQueue('edit');
    const fetched = await startJob(storage, queue, { payload: { v: 1 } }, { fetchedOnly: true });
    const running = await startJob(storage, queue, { payload: { v: 1 } });
    const archived = await startJob(storage, queue);
    await storage.archiveSucceeded([{ ...archived, durationMs: 1 }]);
    const dead = await storage.enqueue({ queue });
    await storage.cancel([dead.id]);
    const missing = '01890a5d-ac96-774b-bcce-b302099a8057';
    const audited = (await admin.getAuditLog({ limit: 1 })).items[0]?.id;

    const edit = { payload: { v: 2 }, priority: 1 };
    const audit = { action: 'job.update', actor: 'op' } as const;
    const answers = await Promise.all(
      [fetched.id, running.id, archived.id, dead.id, missing].map((id) =>
        storage.updatePending(id, edit, 'op', audit),
      ),
    );
    expect(answers.map((a) => a.updated)).toEqual([false, false, false, false, false]);
    expect(answers.map((a) => (a.updated ? 'updated' : a.status))).toEqual([
      JobStatus.Fetched,
      JobStatus.Processing,
      JobStatus.Succeeded,
      JobStatus.Cancelled,
      null,
    ]);
    for (const id of [fetched.id, running.id]) {
      expect(await storage.getJob(id)).toMatchObject({ payload: { v: 1 }, priority: 10 });
    }
    expect((await admin.getAuditLog({ limit: 1 })).items[0]?.id).toBe(audited);
    // The admin's answer is the typed error, naming the state.
    const error = await expectRejects(admin.updatePending(running.id, edit, 'op'));
    expect(error).toBeInstanceOf(ChokaQJobNotPendingError);
    expect(error).toMatchObject({ jobId: running.id, status: JobStatus.Processing });
    expect((error as Error).message).toContain('it is Processing');
    await expect(admin.updatePending(missing, edit)).rejects.toMatchObject({ status: null });
  });

  it('holds an update to the expected queue and type', async () => {
    const queue = uniqueQueue('edit');
    const { id } = await storage.enqueue({ queue, type: 'edit.mine', payload: 1 });
    const other = await storage.updatePending(id, {
      payload: 2,
      expect: { queue, type: 'edit.other' },
    });
    expect(other).toEqual({
      updated: false,
      status: JobStatus.Pending,
      queue,
      type: 'edit.mine',
    });
    expect((await storage.getJob(id))?.payload).toBe(1);
    const mine = await storage.updatePending(id, {
      payload: 3,
      expect: { queue, type: 'edit.mine' },
    });
    expect(mine).toEqual({ updated: true });
    expect((await storage.getJob(id))?.payload).toBe(3);
  });

  it('refuses bad edits with every issue named, changing nothing', async () => {
    const queue = uniqueQueue('edit');
    const { id } = await storage.enqueue({ queue, payload: { v: 1 } });
    await expectValidationError(storage.updatePending(id, {}), 'edits');
    await expectValidationError(
      storage.updatePending(id, { payloadVersion: 2 }),
      'edits.payloadVersion',
    );
    await expectValidationError(
      storage.updatePending(id, { runAt: new Date(Number.NaN) }),
      'edits.runAt',
    );
    await expectValidationError(
      storage.updatePending(id, { runAt: 'soon' as unknown as 'now' }),
      'edits.runAt',
    );
    await expectValidationError(storage.updatePending(id, { priority: 1.5 }), 'edits.priority');
    await expectValidationError(
      storage.updatePending(id, { payload: 'x'.repeat(1_000_001) }),
      'edits.payload',
    );
    await expectValidationError(
      storage.updatePending(id, { tags: 'a' as unknown as string[] }),
      'edits.tags',
    );
    await expectValidationError(storage.updatePending('nope', { priority: 1 }), 'id');
    expect(await storage.getJob(id)).toMatchObject({ payload: { v: 1 }, priority: 10 });
  });

  it('against claims from other connections, each job is either edited before its claim or refused', async () => {
    const queue = uniqueQueue('edit');
    const [other] = (await openClaimers(db, 1, 1)).filter((s) => s !== storage);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        ids.push((await storage.enqueue({ queue, type: 'race', payload: { v: 0 } })).id);
      }
      const claimed = claim(other, queue, 20);
      const answers = await Promise.all(
        ids.map((id) => storage.updatePending(id, { payload: { v: 1 } })),
      );
      const rows = (await claimed).rows;
      const seen = new Map(rows.map((r) => [r.id, r.payload]));
      ids.forEach((id, i) => {
        const answer = answers[i];
        if (answer.updated) {
          // Edited first: a claim that took it afterwards read the new payload.
          if (seen.has(id)) expect(seen.get(id)).toEqual({ v: 1 });
        } else {
          // Refused: the claim had it, and read the old payload.
          expect(answer.status).toBe(JobStatus.Fetched);
          expect(seen.get(id)).toEqual({ v: 0 });
        }
      });
      for (const id of ids) {
        const job = await storage.getJob(id);
        const answer = answers[ids.indexOf(id)];
        expect(job?.payload).toEqual(answer.updated ? { v: 1 } : { v: 0 });
      }
    } finally {
      await closeClaimers(db, [other]);
    }
  });
});
