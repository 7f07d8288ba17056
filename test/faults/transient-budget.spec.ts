import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ChokaQStorageUnavailableError } from '../../libs/chokaq/src';
import { FaultDatabase, openFaultDatabase } from './support/fault-processes';
import { waitFor } from '../support/wait-for';
import { transientRetryBudgetMs } from '../../libs/chokaq/src/storage/shared/transient-retry';
import { TS_LOADER } from '../support/env';

/** The documented lower bound of the default transient-retry budget: 2,575 ms. */
const BUDGET_MS = transientRetryBudgetMs().minMs;

/**
 * The default transient-retry budget, held by a real lock: another process holds the SQLite file
 * with `BEGIN EXCLUSIVE` (fixtures/sqlite-locker.ts), and an `enqueue` of this process retries
 * `SQLITE_BUSY` with the default `storage.transientRetry`. The budget is a floor, not a race: the
 * waits are random within [ceiling / 2, ceiling], so the sum of the halves is always waited.
 */
jest.setTimeout(60_000);

describe('transient-retry budget against a locked SQLite file', () => {
  let db: FaultDatabase | undefined;
  let locker: ChildProcess | undefined;

  afterEach(async () => {
    if (locker && locker.exitCode === null && locker.signalCode === null) locker.kill('SIGKILL');
    locker = undefined;
    await db?.close();
    db = undefined;
  });

  /** Starts the locker and resolves once it holds the lock. */
  async function lockFor(file: string, holdMs: number): Promise<ChildProcess> {
    const child = fork(join(__dirname, 'fixtures', 'sqlite-locker.ts'), [file, String(holdMs)], {
      execArgv: ['-r', TS_LOADER],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    locker = child;
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`locker exited with ${code}`)));
    });
    return child;
  }

  const exited = (child: ChildProcess): Promise<boolean> =>
    waitFor('the locker to exit', () => child.exitCode !== null || child.signalCode !== null, {
      timeoutMs: 10_000,
    });

  it('an enqueue waits out a 2 s lock and succeeds once it is released', async () => {
    db = await openFaultDatabase('sqlite');
    const child = await lockFor(db.file, 2_000);
    const result = await db.storageHere.enqueue({ queue: 'budget', payload: { n: 1 } });
    expect(result.created).toBe(true);
    await exited(child);
    expect(await db.count('hot', `id = '${result.id}'`)).toBe(1);
  });

  it('an enqueue against a lock that outlasts the budget rejects typed, not before the budget', async () => {
    db = await openFaultDatabase('sqlite');
    const child = await lockFor(db.file, 60_000);
    const started = performance.now();
    const outcome = await db.storageHere.enqueue({ queue: 'budget', payload: { n: 2 } }).then(
      (r) => r,
      (e: unknown) => e,
    );
    const elapsed = performance.now() - started;
    child.send('release');
    await exited(child);
    expect(outcome).toBeInstanceOf(ChokaQStorageUnavailableError);
    expect((outcome as ChokaQStorageUnavailableError).retryable).toBe(true);
    // A correctness bound, not a speed assertion: giving up earlier than documented would break
    // the promise that a lock or failover shorter than the budget is ridden out. The tolerance
    // covers only timer granularity.
    expect(elapsed).toBeGreaterThanOrEqual(BUDGET_MS - 20);
  });
});
