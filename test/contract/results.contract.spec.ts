import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { countersOf, expectOnlyIn, expectValidationError, startJob, uniqueQueue } from './helpers';

/**
 * Stored results (`@JobHandler(…, { recordResult: true })`): the JSON text a completion carries
 * lands in the archive row in the same move, `getJob` returns it parsed, and a batch mixing runs
 * that record results with runs that do not keeps each one's own.
 */
describeEachDialect('storage contract: stored results', (fixture) => {
  let db: TestDatabase;
  let storage: JobStorage;
  beforeAll(async () => {
    db = await fixture.create();
    storage = db.storage;
  });
  afterAll(async () => {
    await db?.close();
  });

  it('archives a run with its result, and getJob returns it parsed', async () => {
    const queue = uniqueQueue('res');
    const lease = await startJob(storage, queue);
    const value = { rows: 3, names: ['a', 'é', '\u0000x'], nested: { ok: true }, n: null };
    const done = await storage.archiveSucceeded([
      { ...lease, durationMs: 7, result: JSON.stringify(value) },
    ]);
    expect(done).toEqual([{ id: lease.id, leaseId: lease.leaseId }]);
    await expectOnlyIn(db, lease.id, 'archive');
    const job = await storage.getJob(lease.id);
    expect(job).toMatchObject({ pillar: 'archive', durationMs: 7, result: value });
    expect((await countersOf(storage, queue)).succeededTotal).toBe(1);
  });

  it('keeps each run’s own result in a batch that mixes runs with and without one', async () => {
    const queue = uniqueQueue('res');
    const a = await startJob(storage, queue);
    const b = await startJob(storage, queue);
    const c = await startJob(storage, queue);
    const done = await storage.archiveSucceeded([
      { ...a, durationMs: 1, result: '42' },
      { ...b, durationMs: 2 },
      { ...c, durationMs: 3, result: '"text"' },
    ]);
    expect(done.map((r) => r.id).sort()).toEqual([a.id, b.id, c.id].sort());
    expect((await storage.getJob(a.id))?.result).toBe(42);
    expect((await storage.getJob(b.id))?.result).toBeNull();
    expect((await storage.getJob(c.id))?.result).toBe('text');
  });

  it('stores no result for a batch without one, and shows null outside the archive', async () => {
    const queue = uniqueQueue('res');
    const a = await startJob(storage, queue);
    const pending = await storage.enqueue({ queue, type: 'res.pending' });
    await storage.archiveSucceeded([{ ...a, durationMs: 1 }]);
    expect((await storage.getJob(a.id))?.result).toBeNull();
    expect((await storage.getJob(pending.id))?.result).toBeNull();
  });

  it('refuses a result that is not JSON text, writing nothing', async () => {
    const queue = uniqueQueue('res');
    const lease = await startJob(storage, queue);
    await expectValidationError(
      storage.archiveSucceeded([{ ...lease, durationMs: 1, result: '{not json' }]),
      'items[0].result',
    );
    await expectValidationError(
      storage.archiveSucceeded([{ ...lease, durationMs: 1, result: 42 as unknown as string }]),
      'items[0].result',
    );
    await expectOnlyIn(db, lease.id, 'hot');
  });
});
