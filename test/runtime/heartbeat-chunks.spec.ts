import { randomUUID } from 'node:crypto';
import { MAX_CLAIM, MAX_ENQUEUE_MANY } from '../../libs/chokaq/src/validation/limits';
import type { JobLease } from '../../libs/chokaq/src/interfaces/job.interface';
import { HeartbeatLoop } from '../../libs/chokaq/src/runtime/heartbeat.loop';
import { createTestSchema } from '../support/test-database';
import { testOptions } from './support/options';
import { RecordingLogger } from './support/silent-logger';

/**
 * A process that owns more leases than one `keepAlive` takes (10,000) beats in chunks: every
 * lease is renewed, and a cancel requested for a job of the last chunk is heard. On SQLite, real
 * rows (the storage is never mocked).
 */
describe('HeartbeatLoop over more leases than one keepAlive takes', () => {
  const db = createTestSchema('sqlite');
  afterAll(() => db.close());

  it('renews all 10,001 leases and hears a cancel request from the last chunk', async () => {
    const storage = await db.openStorage();
    const queue = 'many-leases';
    const total = MAX_ENQUEUE_MANY + 1;
    for (let done = 0; done < total; done += MAX_ENQUEUE_MANY) {
      const n = Math.min(MAX_ENQUEUE_MANY, total - done);
      await storage.enqueueMany(Array.from({ length: n }, () => ({ queue })));
    }
    const workerId = 'test-host:1:many';
    const leases: JobLease[] = [];
    while (leases.length < total) {
      const leaseId = randomUUID();
      const rows = await storage.fetchNextBatch({
        workerId,
        leaseId,
        limit: MAX_CLAIM,
        start: MAX_CLAIM,
        handled: { queues: [queue], types: [] },
      });
      expect(rows.length).toBeGreaterThan(0);
      leases.push(...rows.map((r) => ({ id: r.id, workerId, leaseId })));
    }
    expect(leases).toHaveLength(total);
    // Every heartbeat an hour old; the last lease's job asked to stop.
    const hot = db.table('hot');
    await db.sql(`UPDATE ${hot} SET heartbeat_utc = heartbeat_utc - 3600000`);
    const last = leases[total - 1];
    expect((await storage.cancel([last.id])).cancelRequested).toEqual([last.id]);

    const heard: string[] = [];
    const loop = new HeartbeatLoop({
      storage,
      options: testOptions(),
      workerId,
      leases: () => leases,
      onCancelRequested: (ids) => heard.push(...ids),
      onThresholdReached: () => undefined,
      logger: new RecordingLogger(),
    });
    await loop.tick();
    const [stale] = await db.sql<{ n: number }>(
      `SELECT count(*) AS n FROM ${hot} WHERE heartbeat_utc < ?`,
      [Date.now() - 600_000],
    );
    expect(Number(stale.n)).toBe(0);
    expect(heard).toEqual([last.id]);
    await storage.close();
  }, 60_000);
});
