import { TestDatabase, describeEachDialect } from '../support/test-database';
import { claim, uniqueQueue } from './helpers';

/**
 * FIFO within a priority: jobs of one producer process with the same priority and due at the same
 * time are claimed in the order they were enqueued. The claim breaks ties by id, so this holds
 * because the ids one process generates strictly increase, also within one millisecond (where an
 * `enqueueMany` puts its whole batch, and sequential `enqueue` calls often land too).
 */
describeEachDialect('storage contract: FIFO within a priority', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  /** Claims one job at a time (a worker at concurrency 1) until the queue is empty. */
  async function drainOneByOne(queue: string, expected: number): Promise<string[]> {
    const order: string[] = [];
    for (let i = 0; i <= expected; i++) {
      const c = await claim(db.storage, queue, 1);
      if (c.rows.length === 0) return order;
      order.push(c.rows[0].id);
    }
    throw new Error(`drainOneByOne: more than ${expected} jobs in ${queue}`);
  }

  /** Positions at which `order` runs against `expected` (an empty list when it is FIFO). */
  function inversions(order: string[], expected: string[]): string[] {
    const rank = new Map(expected.map((id, i) => [id, i]));
    const out: string[] = [];
    for (let i = 1; i < order.length; i++) {
      if (rank.get(order[i - 1])! > rank.get(order[i])!) out.push(`${i - 1}:${i}`);
    }
    return out;
  }

  it('1,000 jobs of one enqueueMany drain in enqueue order, one at a time', async () => {
    const queue = uniqueQueue('fifo-many');
    const results = await db.storage.enqueueMany(
      Array.from({ length: 1_000 }, (_, n) => ({ queue, priority: 5, payload: { n } })),
    );
    const enqueued = results.map((r) => r.id);
    const order = await drainOneByOne(queue, enqueued.length);
    expect(order).toHaveLength(enqueued.length);
    expect(inversions(order, enqueued)).toEqual([]);
    expect(order).toEqual(enqueued);
  }, 120_000);

  it('200 sequential enqueue calls drain in enqueue order, one at a time', async () => {
    const queue = uniqueQueue('fifo-one');
    const enqueued: string[] = [];
    for (let n = 0; n < 200; n++) {
      enqueued.push((await db.storage.enqueue({ queue, priority: 5, payload: { n } })).id);
    }
    const order = await drainOneByOne(queue, enqueued.length);
    expect(inversions(order, enqueued)).toEqual([]);
    expect(order).toEqual(enqueued);
  }, 60_000);
});
