import { composeJobStorage } from './compose-job-storage';
import type { DialectJobQueries, DialectJobStore } from './dialect-job-storage';

/** A half with state of its own, to show each method runs against its own half. */
class Store {
  readonly dialect = 'sqlite' as const;
  private closed = false;
  async close(): Promise<void> {
    this.closed = true;
  }
  isClosed(): boolean {
    return this.closed;
  }
}

class Queries {
  constructor(private readonly summary: { pending: number }) {}
  async getSummary(): Promise<{ pending: number }> {
    return this.summary;
  }
}

/** Every read of `JobQueries`, so the composition finds each one on the read half. */
const READS = [
  'getJob',
  'listActive',
  'listArchive',
  'listDlq',
  'getQueueStats',
  'getQueueHealth',
  'getQueueOutcomes',
  'getThroughput',
  'getThroughputSeries',
  'getTopDlqErrors',
  'countExactly',
  'previewDlqFilter',
  'listWorkers',
  'getAuditLog',
];

function queries(summary: { pending: number }): DialectJobQueries {
  const half = new Queries(summary) as unknown as Record<string, unknown>;
  for (const name of READS) half[name] = async () => name;
  return half as unknown as DialectJobQueries;
}

describe('composeJobStorage', () => {
  it('joins the halves: writes and lifecycle on the store, reads on the queries, each on its own state', async () => {
    const store = new Store();
    const composed = composeJobStorage(
      store as unknown as DialectJobStore,
      queries({ pending: 3 }),
    ) as unknown as Store & Queries & Record<string, () => Promise<unknown>>;

    expect(composed.dialect).toBe('sqlite');
    await composed.close();
    expect(store.isClosed()).toBe(true);
    expect(await composed.getSummary()).toEqual({ pending: 3 });
    expect(await composed.getJob()).toBe('getJob');
  });

  it("carries the store's capability flags, which the worker reads through the edge", () => {
    class Capable extends Store {
      readonly reportsRateLimitWait = true;
      readonly startsAhead = true;
    }
    const composed = composeJobStorage(
      new Capable() as unknown as DialectJobStore,
      queries({ pending: 0 }),
    );
    expect(composed.reportsRateLimitWait).toBe(true);
    expect(composed.startsAhead).toBe(true);
    const plain = composeJobStorage(
      new Store() as unknown as DialectJobStore,
      queries({ pending: 0 }),
    );
    expect(plain.reportsRateLimitWait).toBeUndefined();
    expect(plain.startsAhead).toBeUndefined();
  });

  it('refuses a store that defines a read too', () => {
    class Greedy extends Store {
      async getJob(): Promise<null> {
        return null;
      }
    }
    expect(() =>
      composeJobStorage(new Greedy() as unknown as DialectJobStore, queries({ pending: 0 })),
    ).toThrow('The store of a JobStorage defines the read getJob');
  });
});
