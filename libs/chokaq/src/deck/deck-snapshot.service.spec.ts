import { Logger } from '@nestjs/common';
import { queueInfo as queue } from '../../../../test/runtime/support/queue-info';
import type { ChokaQAdmin } from '../admin/chokaq-admin.service';
import type { QueueGroupLoad } from '../interfaces/job.interface';
import { DeckSnapshotService } from './deck-snapshot.service';
import type { ResolvedDeckOptions } from './deck-options';

/** A driver's error, with the schema, table, host and port a browser must never see. */
function driverError(): Error {
  const cause = Object.assign(
    new Error('relation "chokaq_prod".jobs_hot does not exist (db.internal:5432)'),
    { code: '42P01' },
  );
  return new Error('unavailable: getSummary failed: relation "chokaq_prod".jobs_hot', { cause });
}

describe('the Deck snapshot of a failed read', () => {
  it('tells the browser a stable code and a generic message, and logs the full text once', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const failing = () => Promise.reject(driverError());
      const admin = new Proxy({}, { get: () => failing }) as unknown as ChokaQAdmin;
      const service = new DeckSnapshotService(admin, { refreshMs: 60_000 } as ResolvedDeckOptions);
      const first = await service.current();
      const second = await service.current();
      for (const snapshot of [first, second]) {
        expect(snapshot).toMatchObject({ ok: false, code: '42P01' });
        expect(JSON.stringify(snapshot)).not.toMatch(/chokaq_prod|jobs_hot|db\.internal|5432/);
      }
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0][0])).toContain('relation "chokaq_prod".jobs_hot');
    } finally {
      warn.mockRestore();
    }
  });
});

describe('the Deck snapshot of grouped queues', () => {
  it('reads the busiest five groups of each queue with a group limit, and nothing more for the others', async () => {
    const acme: QueueGroupLoad = { group: 'acme', pending: 3, running: 2 };
    const shared: QueueGroupLoad = { group: '', pending: 1, running: 0 };
    const getQueueGroups = jest.fn((name: string) =>
      Promise.resolve(name === 'tenants' ? [acme, shared] : []),
    );
    const admin = {
      getSummary: () => Promise.resolve({}),
      getThroughput: () => Promise.resolve({}),
      listQueues: () =>
        Promise.resolve([
          queue('plain'),
          queue('tenants', { groupConcurrency: 2 }),
          queue('paced', { groupRateLimit: { max: 10, perMs: 60_000 } }),
        ]),
      // A queue known only from its counts (no queue row) has no group limit either.
      getQueueStats: () => Promise.resolve([{ queue: 'counted', pending: 1 }]),
      getQueueHealth: () => Promise.resolve([]),
      getQueueOutcomes: () => Promise.resolve([]),
      listWorkers: () => Promise.resolve([]),
      readSource: () => Promise.resolve({ from: 'primary' }),
      getQueueGroups,
    } as unknown as ChokaQAdmin;
    const service = new DeckSnapshotService(admin, { refreshMs: 60_000 } as ResolvedDeckOptions);

    const snapshot = await service.read();

    expect([...getQueueGroups.mock.calls].sort()).toEqual([
      ['paced', 5],
      ['tenants', 5],
    ]);
    if (!snapshot.ok) throw new Error('the read failed');
    const of = (name: string) => snapshot.queues.find((q) => q.name === name);
    expect(of('tenants')).toMatchObject({
      groupConcurrency: 2,
      groupRateLimit: null,
      groups: [acme, shared],
    });
    expect(of('paced')).toMatchObject({
      groupConcurrency: null,
      groupRateLimit: { max: 10, perMs: 60_000 },
      groups: [],
    });
    expect(of('plain')).toMatchObject({ groupConcurrency: null, groupRateLimit: null, groups: [] });
    expect(of('counted')).toMatchObject({
      groupConcurrency: null,
      groupRateLimit: null,
      groups: [],
    });
  });
});
