import { randomUUID } from 'node:crypto';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { createTestSchema, describePostgres } from '../support/test-database';

/**
 * The claim returns its instants as epoch milliseconds (no date text to parse on the hot path).
 * PostgreSQL keeps microseconds: a claimed row must still read as `getJob` reads the same row,
 * each instant truncated to its millisecond as the driver's date parsing truncates it.
 */
describePostgres('PostgreSQL claim: the instants of a claimed row', () => {
  const db = createTestSchema('postgres');
  let storage: JobStorage;

  beforeAll(async () => {
    storage = await db.openStorage();
  });
  afterAll(async () => {
    await db.close();
  });

  it('truncates each to its millisecond, as getJob reads it', async () => {
    const queue = `instants-${randomUUID().slice(0, 8)}`;
    const { id } = await storage.enqueue({ queue, payload: {} });
    // Sub-millisecond parts that rounding would carry into the next millisecond.
    await db.sql(
      `UPDATE ${db.table('hot')} SET
         created_at_utc = '2026-01-02 03:04:05.678999+00',
         enqueued_at_utc = '2026-01-02 03:04:05.678900+00',
         scheduled_at_utc = '2026-01-02 03:04:05.999999+00',
         heartbeat_utc = '2026-01-02 03:04:06.000600+00',
         started_at_utc = '2026-01-02 03:04:06.000500+00',
         cancel_requested_utc = '1999-12-31 23:59:59.999999+00'
       WHERE id = $1`,
      [id],
    );
    const [row] = await storage.fetchNextBatch({
      workerId: 'test-host:1:instants',
      leaseId: randomUUID(),
      limit: 1,
      handled: { queues: [queue], types: [] },
    });
    expect(row.id).toBe(id);
    expect({
      created: row.createdAtUtc.toISOString(),
      enqueued: row.enqueuedAtUtc.toISOString(),
      scheduled: row.scheduledAtUtc?.toISOString(),
      heartbeat: row.heartbeatUtc?.toISOString(),
      started: row.startedAtUtc?.toISOString(),
      cancelRequested: row.cancelRequestedUtc?.toISOString(),
    }).toEqual({
      created: '2026-01-02T03:04:05.678Z',
      enqueued: '2026-01-02T03:04:05.678Z',
      scheduled: '2026-01-02T03:04:05.999Z',
      heartbeat: '2026-01-02T03:04:06.000Z',
      started: '2026-01-02T03:04:06.000Z',
      cancelRequested: '1999-12-31T23:59:59.999Z',
    });
    const { pillar, ...view } = (await storage.getJob(id))!;
    expect(pillar).toBe('hot');
    expect(view).toMatchObject({ ...row });
  });
});
