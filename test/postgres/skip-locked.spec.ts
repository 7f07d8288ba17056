import { randomUUID } from 'node:crypto';
import { DataSource, QueryRunner } from 'typeorm';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { PG_URL } from '../support/env';
import { TestSchema, createTestSchema, describePostgres } from '../support/test-database';

/**
 * The claim takes its rows `FOR UPDATE SKIP LOCKED`: a row locked by another transaction (a
 * concurrent claimer, an operator's `SELECT … FOR UPDATE`, a long admin move) is passed over, never
 * waited for. Without SKIP LOCKED the claim would queue behind that lock, and every worker of every
 * process would stall for as long as one transaction holds one pending row.
 */

/**
 * The claiming storage's statement timeout. A claim that waits for the row lock is cancelled by
 * the server after this long and rejects; it is far shorter than {@link TEST_BOUND_MS}, so the
 * test fails on that rejection rather than on its own bound.
 */
const STATEMENT_TIMEOUT_MS = 2_000;
/** How long the test waits for the claim at most. */
const TEST_BOUND_MS = 30_000;

/** `PG_URL` with a server-side statement timeout on every connection opened from it. */
function urlWithStatementTimeout(ms: number): string {
  const url = new URL(PG_URL);
  url.searchParams.set('options', `-c statement_timeout=${ms}`);
  return url.toString();
}

/** Rejects after `ms` unless `promise` settles first. */
async function within<T>(what: string, ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, bound]);
  } finally {
    clearTimeout(timer);
  }
}

jest.setTimeout(60_000);

describePostgres('PostgreSQL claim: SKIP LOCKED', () => {
  let db: TestSchema;
  let holder: DataSource;
  let lockTx: QueryRunner | undefined;

  beforeEach(async () => {
    db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
    holder = new DataSource({ type: 'postgres', url: PG_URL, poolSize: 1 });
    await holder.initialize();
  });

  afterEach(async () => {
    if (lockTx?.isTransactionActive) await lockTx.rollbackTransaction();
    await lockTx?.release();
    lockTx = undefined;
    await holder.destroy();
    await db.close();
  });

  /** Another session locks the row `id` in a transaction it keeps open. */
  async function lockRow(id: string): Promise<void> {
    lockTx = holder.createQueryRunner();
    await lockTx.connect();
    await lockTx.startTransaction();
    const locked = (await lockTx.query(
      `SELECT id FROM ${db.table('hot')} WHERE id = $1 FOR UPDATE`,
      [id],
    )) as unknown[];
    expect(locked).toHaveLength(1);
  }

  async function claimOn(storage: JobStorage, queue: string, budgeted: boolean) {
    return storage.fetchNextBatch({
      workerId: 'skip-locked',
      leaseId: randomUUID(),
      limit: 10,
      handled: { queues: [queue], types: [] },
      // No list: the claim's transaction path (budget locks, then the claim). An empty list says
      // no handled queue has a budget: the single-statement fast path.
      ...(budgeted ? {} : { budgetedQueues: [] }),
    });
  }

  it.each([
    ['the single-statement path (no MaxWorkers)', false],
    ['the budgeted path (MaxWorkers set)', true],
  ])(
    'a claim on %s returns the other due rows without waiting for a row another session locked',
    async (_path, budgeted) => {
      const seed = await db.openStorage();
      const queue = `skip.${budgeted ? 'budgeted' : 'plain'}`;
      if (budgeted) await seed.updateQueue(queue, { maxWorkers: 10 });
      // The locked row comes first in claim order, so a claim that waits for locks meets it first.
      const { id: locked } = await seed.enqueue({ queue, priority: 100 });
      const others = await seed.enqueueMany([
        { queue, priority: 1 },
        { queue, priority: 1 },
      ]);
      const claimer = await db.openStorage({
        url: urlWithStatementTimeout(STATEMENT_TIMEOUT_MS),
        autoCreateSchema: false,
      });
      // The bound is really in force on the claimer's connections.
      const probe = new DataSource({
        type: 'postgres',
        url: urlWithStatementTimeout(STATEMENT_TIMEOUT_MS),
        poolSize: 1,
      });
      await probe.initialize();
      try {
        expect(await probe.query('SHOW statement_timeout')).toEqual([
          { statement_timeout: `${STATEMENT_TIMEOUT_MS / 1000}s` },
        ]);
      } finally {
        await probe.destroy();
      }

      await lockRow(locked);
      const rows = await within('the claim', TEST_BOUND_MS, claimOn(claimer, queue, budgeted));
      expect(rows.map((r) => r.id).sort()).toEqual(others.map((o) => o.id).sort());

      // Once the lock is gone the skipped row is claimable: it was passed over, not lost.
      await lockTx!.rollbackTransaction();
      const next = await within(
        'the second claim',
        TEST_BOUND_MS,
        claimOn(claimer, queue, budgeted),
      );
      expect(next.map((r) => r.id)).toEqual([locked]);
    },
  );
});
