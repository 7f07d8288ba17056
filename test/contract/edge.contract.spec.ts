import { randomUUID } from 'node:crypto';
import { ChokaQAdmin } from '../../libs/chokaq/src/admin/chokaq-admin.service';
import { JobClient } from '../../libs/chokaq/src/client/job-client';
import { STORED_TEXT } from '../../libs/chokaq/src/storage/validated-job-storage';
import { QUEUE_RANGES } from '../../libs/chokaq/src/validation/limits';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { EDGES, refusedPaths } from './edge-cases';
import { backdate, startJob, uniqueQueue } from './helpers';

/*
 * The validating edge: one input is accepted or refused the same way on every dialect. Written
 * once, run on each: for every limit of the one limits table (edge-cases.ts) the value at the limit
 * is accepted (whatever the call returns, it is not a validation error) and the value one past it
 * is refused with a ChokaQValidationError whose only issue has the path in the table, the same
 * path on every dialect. The texts ChokaQ stores are the same everywhere too.
 */
describeEachDialect('storage contract: the validating edge', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  describe.each(EDGES)('$name', (edge) => {
    it(`accepts ${edge.accepted}`, async () => {
      await expect(edge.call(db.storage, edge.accepted)).resolves.not.toThrow();
    });

    it(`refuses ${edge.refused ?? edge.accepted + 1} at '${edge.path}'`, async () => {
      const refused = edge.refused ?? edge.accepted + 1;
      expect(await refusedPaths(edge.call(db.storage, refused))).toEqual([edge.path]);
    });
  });

  it('stores one Zombie text, for a dead zombie and for one returned to Pending', async () => {
    const dead = uniqueQueue('zombie');
    const retried = uniqueQueue('zombie');
    await db.storage.updateQueue(retried, { retryZombies: true });
    const a = await startJob(db.storage, dead);
    const b = await startJob(db.storage, retried);
    await backdate(db, 'hot', 'heartbeat_utc', [a.id, b.id], 3_600_000);

    const result = await db.storage.archiveZombies(600_000);

    expect(result.dlq).toContain(a.id);
    expect(result.retried).toContain(b.id);
    expect((await db.storage.getJob(a.id))?.errorDetails).toBe(STORED_TEXT.zombie);
    expect((await db.storage.getJob(b.id))?.lastError).toBe(STORED_TEXT.zombie);
    const families = await db.storage.getTopDlqErrors(10, { queue: dead });
    expect(families.map((f) => f.error)).toEqual([STORED_TEXT.zombie.split('\n')[0]]);
  });

  it('stores one Cancelled text, naming the actor when there is one', async () => {
    const queue = uniqueQueue('cancel');
    const [byOps, anonymous] = await db.storage.enqueueMany([{ queue }, { queue }]);
    await db.storage.cancel([byOps.id], 'ops');
    await db.storage.cancel([anonymous.id]);
    expect((await db.storage.getJob(byOps.id))?.errorDetails).toBe(STORED_TEXT.cancelled('ops'));
    expect((await db.storage.getJob(anonymous.id))?.errorDetails).toBe(STORED_TEXT.cancelled(null));
    expect(STORED_TEXT.cancelled('ops')).toBe('Cancelled by ops');
  });

  it('ChokaQAdmin and JobClient accept and refuse what the storage does, at the same paths', async () => {
    // No worker and no options are needed by these calls: the producer and operator APIs pass
    // their arguments to the storage, whose edge is the one place that checks them.
    const admin = new ChokaQAdmin(db.storage, {} as never, new WorkerRegistry());
    const client = new JobClient(db.storage, new WorkerRegistry());
    const queue = uniqueQueue('controls');
    const [maxWorkersMin, maxWorkersMax] = QUEUE_RANGES.maxWorkers;
    const [zombieMin, zombieMax] = QUEUE_RANGES.zombieTimeoutSeconds;

    expect((await admin.setMaxWorkers(queue, maxWorkersMax)).maxWorkers).toBe(maxWorkersMax);
    expect((await admin.setZombieTimeout(queue, zombieMax)).zombieTimeoutSeconds).toBe(zombieMax);
    for (const [call, path] of [
      [() => admin.setMaxWorkers(queue, maxWorkersMax + 1), 'patch.maxWorkers'],
      [() => admin.setMaxWorkers(queue, maxWorkersMin - 1), 'patch.maxWorkers'],
      [() => admin.setZombieTimeout(queue, zombieMax + 1), 'patch.zombieTimeoutSeconds'],
      [() => admin.setZombieTimeout(queue, zombieMin - 1), 'patch.zombieTimeoutSeconds'],
      [() => admin.getJob('not-a-uuid'), 'id[0]'],
      [() => admin.cancel(['not-a-uuid']), 'ids[0]'],
      [() => client.cancel('not-a-uuid'), 'ids[0]'],
      [() => client.getJob('not-a-uuid'), 'id[0]'],
      [() => admin.getTopErrors(1_001), 'limit'],
      [() => admin.listActive({ limit: 0 }), 'limit'],
      [() => admin.listArchive({ order: 'desc' as never }), 'order'],
      [() => admin.listDlq({ cursor: 'not a cursor' }), 'cursor'],
    ] as const) {
      expect(await refusedPaths(call())).toEqual([path]);
    }
    expect(await admin.getJob(randomUUID())).toBeNull();
  });
});
