import { INestApplication } from '@nestjs/common';
import { ChokaQAdmin, JobClient } from '../../libs/chokaq/src';
import { pgAvailable, PG_URL } from '../support/env';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';
import { TestSchema, describeEachDialect } from '../support/test-database';
import type { StorageDialect } from '../../libs/chokaq/src/interfaces/job.interface';
import { waitFor } from '../support/wait-for';
import { WorkerProcess, startWorkerProcess } from './support/worker-processes';

/**
 * Proofs with real OS processes (child_process.fork of fixtures/worker-process.ts through the
 * tests' TypeScript loader): several workers on one database, and SIGKILL in the middle of work.
 */
jest.setTimeout(180_000);

interface Setup {
  db: TestSchema;
  producer: INestApplication;
  jobs: JobClient;
  runsTable: string;
  workers: WorkerProcess[];
  fixtureBase: { pgUrl?: string; sqliteFile?: string; runsTable: string };
}

async function setUp(dialect: StorageDialect): Promise<Setup> {
  const db = e2eDatabase(dialect);
  // A producer-only app in this process: creates the schema and enqueues.
  const producer = await bootApp(db, { options: { worker: { enabled: false } } });
  const runsTable = db.dialect === 'sqlite' ? 'e2e_runs' : `${db.schema}.e2e_runs`;
  await db.query(
    `CREATE TABLE ${runsTable} (job_id varchar(36) NOT NULL, worker_id varchar(255) NOT NULL, attempt integer NOT NULL)`,
  );
  return {
    db,
    producer,
    jobs: producer.get(JobClient),
    runsTable,
    workers: [],
    fixtureBase:
      dialect === 'sqlite' ? { sqliteFile: db.file, runsTable } : { pgUrl: PG_URL, runsTable },
  };
}

async function tearDown(s: Setup | undefined): Promise<void> {
  if (!s) return;
  await Promise.all(s.workers.map((w) => w.stop()));
  await closeAndCheck(s.producer, s.db);
  await s.db.close();
}

async function ids(
  db: TestSchema,
  table: 'hot' | 'archive' | 'dlq',
  where = '1 = 1',
): Promise<string[]> {
  return (await db.query<{ id: string }>(`SELECT id FROM ${db.table(table)} WHERE ${where}`)).map(
    (r) => r.id,
  );
}

(pgAvailable() ? describe : describe.skip)(
  'several worker processes on one PostgreSQL database',
  () => {
    let s: Setup | undefined;
    afterEach(async () => tearDown(s));

    it('three processes drain 2,000 jobs, each run to success exactly once', async () => {
      s = await setUp('postgres');
      const setup = s;
      const options = {
        storage: setup.db.options,
        worker: { concurrency: 20, prefetch: 100, batchSize: 50, pollIntervalMs: 50 },
        heartbeat: { intervalMs: 1_000 },
      };
      setup.workers.push(
        ...(await Promise.all(
          [1, 2, 3].map((n) =>
            startWorkerProcess({
              ...setup.fixtureBase,
              mode: 'record',
              options: { ...options, worker: { ...options.worker, workerId: `mp-${n}` } },
            }),
          ),
        )),
      );
      const total = 2_000;
      const enqueued: string[] = [];
      for (let i = 0; i < total; i += 500) {
        enqueued.push(
          ...(await setup.jobs.enqueueMany(
            'mp',
            Array.from({ length: 500 }, (_, k) => ({ payload: { n: i + k } })),
          )),
        );
      }
      expect(new Set(enqueued).size).toBe(total);
      await waitFor(
        `${total} jobs archived`,
        async () => (await setup.db.count('archive')) === total,
        {
          timeoutMs: 120_000,
          intervalMs: 200,
        },
      );

      const runs = await setup.db.query<{ job_id: string; worker_id: string; attempt: number }>(
        `SELECT job_id, worker_id, attempt FROM ${setup.runsTable}`,
      );
      expect(runs).toHaveLength(total);
      expect(new Set(runs.map((r) => r.job_id)).size).toBe(total);
      expect(runs.every((r) => Number(r.attempt) === 1)).toBe(true);
      expect(new Set(runs.map((r) => r.worker_id)).size).toBeGreaterThanOrEqual(2);
      expect(await setup.db.count('hot')).toBe(0);
      expect(await setup.db.count('dlq')).toBe(0);
      const [stats] = await setup.db.query<{ s: string }>(
        `SELECT SUM(succeeded_total) AS s FROM ${setup.db.table('stats')}`,
      );
      expect(Number(stats.s)).toBe(total);
    });
  },
);

describeEachDialect(
  'SIGKILL of a worker holding fetched and processing jobs (SPEC §8 invariant 10)',
  ({ name: dialect }) => {
    let s: Setup | undefined;
    afterEach(async () => tearDown(s));

    it('every job ends in Archive or DLQ (Zombie), none lost, none in two tables, none finalised twice', async () => {
      s = await setUp(dialect);
      const setup = s;
      const rescue = { intervalMs: 200, fetchedJobTimeoutMs: 1_500, zombieTimeoutMs: 1_500 };
      const victim = await startWorkerProcess({
        ...setup.fixtureBase,
        mode: 'hang',
        options: {
          storage: setup.db.options,
          worker: {
            workerId: 'victim',
            concurrency: 3,
            // SPEC §8 invariant 10 holds Fetched rows: the buffer, so no starting ahead
            // (test/faults/start-ahead.spec.ts kills a worker that starts ahead).
            startAhead: 0,
            prefetch: 10,
            batchSize: 10,
            pollIntervalMs: 50,
          },
          heartbeat: { intervalMs: 300 },
          rescue,
        },
      });
      setup.workers.push(victim);
      const all = await setup.jobs.enqueueMany(
        'mp',
        Array.from({ length: 14 }, (_, n) => ({ payload: { n } })),
      );

      // Wait until the database shows the victim holding both kinds of rows, then kill it.
      await waitFor('the victim to hold Processing and Fetched rows', async () => {
        const processing = await setup.db.count('hot', "status = 2 AND worker_id = 'victim'");
        const fetched = await setup.db.count('hot', "status = 1 AND worker_id = 'victim'");
        return processing === 3 && fetched >= 1;
      });
      await victim.kill();
      const processingAtKill = await ids(setup.db, 'hot', "status = 2 AND worker_id = 'victim'");
      const fetchedAtKill = await ids(setup.db, 'hot', "status = 1 AND worker_id = 'victim'");
      expect(processingAtKill).toHaveLength(3);
      expect(fetchedAtKill.length).toBeGreaterThanOrEqual(1);

      // A healthy worker with short rescue intervals takes over.
      setup.workers.push(
        await startWorkerProcess({
          ...setup.fixtureBase,
          mode: 'record',
          options: {
            storage: setup.db.options,
            worker: { workerId: 'rescuer', pollIntervalMs: 50 },
            heartbeat: { intervalMs: 300 },
            rescue,
          },
        }),
      );
      await waitFor('the hot table to empty', async () => (await setup.db.count('hot')) === 0, {
        timeoutMs: 30_000,
      });

      const archived = await ids(setup.db, 'archive');
      const dlq = await ids(setup.db, 'dlq');
      // Nothing lost, nothing in two tables.
      expect([...archived, ...dlq].sort()).toEqual([...all].sort());
      expect(archived.filter((id) => dlq.includes(id))).toEqual([]);
      // The interrupted runs are zombies (not silently re-run); the rest ran once, on the rescuer.
      const zombies = await setup.db.query<{ id: string; status: number; failure_reason: number }>(
        `SELECT id, status, failure_reason FROM ${setup.db.table('dlq')}`,
      );
      expect(zombies.map((z) => z.id).sort()).toEqual([...processingAtKill].sort());
      expect(zombies.every((z) => Number(z.status) === 6 && Number(z.failure_reason) === 2)).toBe(
        true,
      );
      expect(archived.sort()).toEqual(all.filter((id) => !processingAtKill.includes(id)).sort());
      const runs = await setup.db.query<{ job_id: string; worker_id: string }>(
        `SELECT job_id, worker_id FROM ${setup.runsTable}`,
      );
      expect(runs.map((r) => r.job_id).sort()).toEqual(archived.sort());
      expect(runs.every((r) => r.worker_id === 'rescuer')).toBe(true);
      // One accepted finalisation per job: the lifetime counters add up to the job count.
      const [totals] = await setup.db.query<{ ok: string; failed: string }>(
        `SELECT SUM(succeeded_total) AS ok, SUM(failed_total) AS failed FROM ${setup.db.table('stats')}`,
      );
      expect(Number(totals.ok)).toBe(archived.length);
      expect(Number(totals.failed)).toBe(dlq.length);
    });
  },
  // The worker-process fixture and its runs table speak SQLite and PostgreSQL only.
  { only: ['sqlite', 'postgres'] },
);

describeEachDialect(
  'a recurring job upserted at run time, run by three worker processes',
  ({ name: dialect }) => {
    let s: Setup | undefined;
    afterEach(async () => tearDown(s));

    it('each every-second slot is enqueued once and run once, by processes that declare no recurring job', async () => {
      s = await setUp(dialect);
      const setup = s;
      setup.workers.push(
        ...(await Promise.all(
          [1, 2, 3].map((n) =>
            startWorkerProcess({
              ...setup.fixtureBase,
              mode: 'record',
              options: {
                storage: setup.db.options,
                worker: { workerId: `rec-${n}`, pollIntervalMs: 100 },
              },
            }),
          ),
        )),
      );
      // The schedule lives in data: the producer-only app writes it, the workers pick it up
      // because their handler of queue 'mp' resolves its (queue, type).
      const admin = setup.producer.get(ChokaQAdmin);
      await admin.upsertRecurringJob({ name: 'mp-every-second', cron: '* * * * * *', queue: 'mp' });
      const started = Date.now();
      await waitFor(
        'five recurring runs recorded',
        async () => (await setup.db.count('archive', "queue = 'mp'")) >= 5,
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      await admin.pauseRecurringJob('mp-every-second');
      const elapsedSlots = Math.ceil((Date.now() - started) / 1_000) + 1;
      await Promise.all(setup.workers.map((w) => w.stop()));

      const keys: string[] = [];
      for (const table of ['hot', 'archive', 'dlq'] as const) {
        const rows = await setup.db.query<{ k: string; by: string }>(
          `SELECT idempotency_key AS k, created_by AS by FROM ${setup.db.table(table)} WHERE queue = 'mp'`,
        );
        expect(rows.every((r) => r.by === 'chokaq:recurring')).toBe(true);
        keys.push(...rows.map((r) => r.k));
      }
      expect(keys.every((k) => k.startsWith('recurring:mp-every-second:'))).toBe(true);
      // Each slot once across the three processes, and no more slots than seconds went by.
      expect(new Set(keys).size).toBe(keys.length);
      expect(keys.length).toBeGreaterThanOrEqual(5);
      expect(keys.length).toBeLessThanOrEqual(elapsedSlots + 1);
      // Each archived job ran once.
      const runs = await setup.db.query<{ job_id: string }>(
        `SELECT job_id FROM ${setup.runsTable}`,
      );
      const archived = await ids(setup.db, 'archive', "queue = 'mp'");
      expect(runs.map((r) => r.job_id).sort()).toEqual([...archived].sort());
      // The row names the job of its last claimed slot.
      const [record] = await admin.getRecurringJobs();
      expect(record).toMatchObject({ name: 'mp-every-second', source: 'runtime', isPaused: true });
      expect(record.lastRun?.id).toBe(record.lastJobId);
    });
  },
  // The worker-process fixture and its runs table speak SQLite and PostgreSQL only.
  { only: ['sqlite', 'postgres'] },
);
