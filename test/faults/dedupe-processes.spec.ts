import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import type { DedupeOption, EnqueueResult } from '../../libs/chokaq/src/interfaces/job.interface';
import { countRows, dedupeKeyRows, uniqueQueue } from '../contract/helpers';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { TS_LOADER } from '../support/env';

const FIXTURE = join(__dirname, 'fixtures', 'dedupe-enqueuer.ts');
const PROCESSES = 4;
const PER_PROCESS = 8;

jest.setTimeout(60_000);

/** A producer process of `fixtures/dedupe-enqueuer.ts`, ready for `go`. */
interface Producer {
  child: ChildProcess;
  /** Per job of the fixture, the results of its enqueues. */
  results: Promise<EnqueueResult[][]>;
}

async function startProducer(
  db: TestDatabase,
  queue: string,
  keys: readonly DedupeOption[],
): Promise<Producer> {
  const child = fork(FIXTURE, [], {
    execArgv: ['-r', TS_LOADER],
    env: {
      ...process.env,
      CHOKAQ_DEDUPE_FIXTURE: JSON.stringify({
        options: db.options,
        jobs: keys.map((dedupe) => ({ queue, type: 'race', dedupe })),
        count: PER_PROCESS,
      }),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let out: (r: EnqueueResult[][]) => void = () => {};
  let fail: (e: Error) => void = () => {};
  const results = new Promise<EnqueueResult[][]>((resolve, reject) => {
    out = resolve;
    fail = reject;
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('producer not ready after 30 s')), 30_000);
    child.on('message', (m: { ready?: boolean; results?: EnqueueResult[][]; error?: string }) => {
      if (m.ready) {
        clearTimeout(timer);
        resolve();
      } else if (m.results) out(m.results);
      else if (m.error) fail(new Error(m.error));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      const error = new Error(`producer exited with ${code}`);
      reject(error);
      fail(error);
    });
  });
  return { child, results };
}

/**
 * Dedupe keys across processes (issue 30, part 1): producers in separate OS processes, each with
 * its own connections, enqueue one key at the same moment; one row is made and every call gets
 * its id: one key of each mode, at once, on each dialect.
 */
describeEachDialect(
  'dedupe keys across processes',
  (fixture) => {
    let db: TestDatabase;
    const children: ChildProcess[] = [];
    beforeAll(async () => {
      db = await fixture.create();
    });
    afterAll(async () => {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      await db?.close();
    });

    it('producers in four processes enqueue one key of each mode at once: one row and one answer per key', async () => {
      const queue = uniqueQueue('proc');
      const keys: DedupeOption[] = [
        { key: `throttle:${queue}`, mode: 'throttle', windowMs: 3_600_000 },
        { key: `debounce:${queue}`, mode: 'debounce', windowMs: 3_600_000 },
        { key: `unique:${queue}`, mode: 'unique', states: ['pending', 'running'] },
      ];
      const producers = await Promise.all(
        Array.from({ length: PROCESSES }, () => startProducer(db, queue, keys)),
      );
      children.push(...producers.map((p) => p.child));
      for (const p of producers) p.child.send({ go: true });
      const perProducer = await Promise.all(producers.map((p) => p.results));
      for (const [k, { key }] of keys.entries()) {
        const results = perProducer.flatMap((r) => r[k]);
        expect(results).toHaveLength(PROCESSES * PER_PROCESS);
        expect(new Set(results.map((r) => r.id)).size).toBe(1);
        expect(results.filter((r) => r.created)).toHaveLength(1);
        expect(await dedupeKeyRows(db, key)).toBe(1);
      }
      expect(await countRows(db, 'hot', { queue })).toBe(keys.length);
    });
  },
  { only: ['sqlite', 'postgres'] },
);
