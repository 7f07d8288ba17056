import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { Pool } from 'pg';
import {
  ChokaQModule,
  ChokaQModuleOptions,
  ChokaQStorageUnavailableError,
  JobClient,
} from '../../libs/chokaq/src';
import { PG_URL, pgAvailable, TS_LOADER } from '../support/env';
import { waitFor } from '../support/wait-for';
import {
  FaultDatabase,
  openFaultDatabase,
  pillarViolations,
  FaultWorker,
  killAllFaultWorkers,
  startFaultWorker,
  steadyProducer,
} from './support/fault-processes';
import { TcpProxy } from './support/tcp-proxy';

/**
 * Database outages with real worker processes (issue 6, part 1).
 *
 * PostgreSQL: the workers and a producer reach the server only through a TCP proxy of this test,
 * which is cut for ~10 s (every piped socket destroyed, new connections closed) while the server
 * backends behind it are terminated — nothing else in the database is touched.
 * SQLite: another process holds `BEGIN EXCLUSIVE` on the job file for several seconds.
 */
jest.setTimeout(120_000);

afterAll(killAllFaultWorkers);

/** Worker settings of the outage runs. */
function workerOptions(storage: ChokaQModuleOptions['storage']): ChokaQModuleOptions {
  return {
    storage,
    worker: { concurrency: 5, prefetch: 20, batchSize: 10, pollIntervalMs: 50 },
    heartbeat: {
      intervalMs: 500,
      // Documented choice: with the default (abort running jobs after 10 failed heartbeats) an
      // outage longer than 10 × interval turns the jobs running at that moment into DLQ
      // HeartbeatFailure. Here the workers ride the outage out instead.
      cancelOnHeartbeatFailure: false,
      failureThreshold: 1_000,
    },
    rescue: { intervalMs: 500, fetchedJobTimeoutMs: 4_000, zombieTimeoutMs: 4_000 },
    retry: { maxAttempts: 3, baseDelayMs: 100, jitterMs: 0 },
  };
}

/** Lines of `output` that mention `fragment`. */
function lines(output: string, fragment: string): number {
  return output.split('\n').filter((l) => l.includes(fragment)).length;
}

(pgAvailable() ? describe : describe.skip)('PostgreSQL outage through a TCP proxy', () => {
  let db: FaultDatabase | undefined;
  let proxy: TcpProxy | undefined;
  let app: INestApplication | undefined;
  const workers: FaultWorker[] = [];
  let admin: Pool | undefined;

  afterEach(async () => {
    proxy?.restore();
    await Promise.all(workers.splice(0).map((w) => w.stop(10_000)));
    await app?.close().catch(() => undefined);
    await proxy?.close();
    await admin?.end();
    await db?.close();
  });

  it('two workers ride out a 10 s cut: logged once, reconnect, nothing lost, enqueues typed', async () => {
    db = await openFaultDatabase('postgres');
    const target = new URL(PG_URL);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    const port = await proxy.listen();
    const proxied = new URL(PG_URL);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(port);
    const storage = { ...db.options, url: proxied.toString() } as ChokaQModuleOptions['storage'];
    admin = new Pool({ connectionString: PG_URL, max: 1 });

    // The producer: a producer-only Nest app through the proxy; enqueue gives up after 375–750 ms
    // of waiting (4 waits, each in [ceiling / 2, ceiling]).
    const moduleRef = await Test.createTestingModule({
      imports: [
        ChokaQModule.forRoot({
          storage: {
            ...(storage as object),
            transientRetry: { maxAttempts: 5, baseDelayMs: 50, maxDelayMs: 500 },
          } as ChokaQModuleOptions['storage'],
          worker: { enabled: false },
        }),
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const jobs = app.get(JobClient);

    const backlog = await db.storageHere.enqueueMany(
      Array.from({ length: 900 }, (_, n) => ({ queue: 'faults', payload: { sleepMs: 50, n } })),
    );
    for (const n of [1, 2]) {
      workers.push(
        await startFaultWorker({
          ...db.record,
          workerId: `outage-${n}`,
          options: workerOptions({
            ...(storage as object),
            notifyReconnectMs: 200,
          } as ChokaQModuleOptions['storage']),
        }),
      );
    }
    const produced = steadyProducer((id) => jobs.enqueue('faults', { sleepMs: 10 }, { id }), 50);
    const current = db;
    await waitFor(
      'the drain to be under way',
      async () => (await current.count('archive')) >= 150,
      {
        timeoutMs: 20_000,
        intervalMs: 50,
      },
    );

    // The outage, as a failover looks to a client: the server ends the sessions behind the proxy
    // (selected by the proxy's own upstream ports, so no other test's session is touched) and the
    // path goes dead at once.
    const ports = proxy.upstreamPorts();
    const terminated = await admin.query<{ n: string }>(
      `SELECT COUNT(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity
        WHERE client_port = ANY($1::int[]) AND pid <> pg_backend_pid()`,
      [ports],
    );
    proxy.cut();
    // The outage lasts 10 s. A COMMIT that reached the server just before the cut may still be
    // applied in the first moment, so "nothing moves" is measured from 1 s in.
    await new Promise((r) => setTimeout(r, 1_000));
    const archivedAtCut = await db.count('archive');
    await new Promise((r) => setTimeout(r, 9_000));
    const archivedBeforeRestore = await db.count('archive');
    const refused = proxy.refused;
    proxy.restore();

    // Bounded generously: after 10 s of failures the workers' reconnect backoff is long, and on a
    // loaded machine the drain of the backlog is slow; a healthy run returns within seconds.
    await waitFor(
      'the backlog to drain after the outage',
      async () => (await current.count('hot')) === 0,
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    await produced.stop();
    await waitFor('late enqueues to drain', async () => (await current.count('hot')) === 0, {
      timeoutMs: 10_000,
    });

    // Nothing moved while the path was cut (no write got through), and the workers kept trying.
    expect(archivedBeforeRestore).toBe(archivedAtCut);
    expect(refused).toBeGreaterThan(0);
    expect(Number(terminated.rows[0].n)).toBeGreaterThan(0);

    // Enqueues: each either returned an id that exists now, or threw the typed, retryable error.
    expect(produced.errors.length).toBeGreaterThan(0);
    for (const error of produced.errors) {
      expect(error).toBeInstanceOf(ChokaQStorageUnavailableError);
      expect((error as ChokaQStorageUnavailableError).retryable).toBe(true);
    }
    const accepted = [...backlog.map((r) => r.id), ...produced.accepted];
    expect(await pillarViolations(db, accepted, { allowExtra: produced.failedIds })).toEqual([]);
    // Archive, or DLQ as Zombie where a heartbeat expired during the outage: nothing else.
    const dlq = await db.query<{ status: number; failure_reason: number }>(
      `SELECT status, failure_reason FROM ${db.table('dlq')}`,
    );
    expect(dlq.filter((r) => Number(r.status) !== 6 || Number(r.failure_reason) !== 2)).toEqual([]);

    // Each worker's LISTEN session comes back. Its reconnect waits double from 200 ms up to 30 s
    // (±20 %), so after the outage an attempt is at most 36 s away; one that fails after the
    // restore (a server busy with the other test files' sessions) costs at most another 36 s.
    for (const worker of workers) {
      await waitFor(
        `${worker.workerId}'s LISTEN session to be re-established`,
        () => lines(worker.output(), 'LISTEN connection') >= 2,
        { timeoutMs: 2 * 36_000 + 5_000, intervalMs: 100 },
      ).catch((error: Error) => {
        const said = worker
          .output()
          .split('\n')
          .filter((line) => line.includes('LISTEN') || line.includes('fetcher'));
        throw new Error(`${error.message}; its log:\n${said.join('\n')}`);
      });
    }

    // Logged once per outage, not once per poll: the fetcher of each worker warned exactly once
    // and said it recovered, although it failed many times in between.
    for (const worker of workers) {
      const out = worker.output();
      if (process.env.CHOKAQ_FAULTS_VERBOSE === '1') console.log(out);
      expect(worker.child.exitCode).toBeNull();
      expect(lines(out, 'ChokaQ fetcher failed')).toBe(1);
      expect(lines(out, 'ChokaQ fetcher recovered')).toBe(1);
      // Every other loop too: one line per loop for the whole outage.
      const counts = Object.fromEntries(
        [
          'Heartbeat failed',
          'ChokaQ rescue failed',
          'markAsProcessing failed',
          'completion(s) failed',
        ].map((kind) => [kind, lines(out, kind)]),
      );
      expect(Object.entries(counts).filter(([, n]) => n > 1)).toEqual([]);
      // The LISTEN session: one line when lost, one when re-established.
      expect(lines(out, 'LISTEN connection')).toBe(2);
      expect(lines(out, 're-established after')).toBe(1);
      const stats = await worker.stats();
      expect(stats.running + stats.buffered).toBe(0);
      // Every warning or error line of the outage is a one-off, never a per-poll flood.
      expect(lines(out, 'WARN') + lines(out, 'ERROR')).toBeLessThan(40);
    }
  }, 200_000);
});

describe('SQLite file locked by another process', () => {
  let db: FaultDatabase | undefined;
  const workers: FaultWorker[] = [];

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop(10_000)));
    await db?.close();
  });

  it('workers keep their event loop, retry and finish; enqueue during the lock is typed', async () => {
    db = await openFaultDatabase('sqlite', {
      transientRetry: { maxAttempts: 6, baseDelayMs: 50, maxDelayMs: 500 },
    } as never);
    const current = db;
    const backlog = await db.storageHere.enqueueMany(
      Array.from({ length: 300 }, (_, n) => ({ queue: 'faults', payload: { sleepMs: 20, n } })),
    );
    for (const n of [1, 2]) {
      workers.push(
        await startFaultWorker({
          ...db.record,
          workerId: `lock-${n}`,
          options: workerOptions(db.options),
        }),
      );
    }
    await waitFor('the drain to be under way', async () => (await current.count('archive')) >= 30, {
      timeoutMs: 20_000,
      intervalMs: 20,
    });

    const holdMs = 6_000;
    const locker = fork(
      join(__dirname, 'fixtures', 'sqlite-locker.ts'),
      [db.file, String(holdMs)],
      {
        execArgv: ['-r', TS_LOADER],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        locker.once('message', () => resolve());
        locker.once('exit', (code) => reject(new Error(`locker exited with ${code}`)));
      });
      const lockedAt = Date.now();
      const archivedAtLock = await db.count('archive');

      // An enqueue during the lock gives up with the typed error once its retry bound is reached.
      const enqueueStarted = Date.now();
      const outcome = await db.storageHere
        .enqueue({ queue: 'faults', payload: { sleepMs: 1 } })
        .then(
          (r) => r,
          (e: unknown) => e,
        );
      expect(outcome).toBeInstanceOf(ChokaQStorageUnavailableError);
      expect(Date.now() - enqueueStarted).toBeLessThan(holdMs);

      // The workers' event loops stay responsive while their writes are refused: IPC round trips
      // (handled on the event loop, like the heartbeat timer) answer promptly during the lock.
      const latencies: number[] = [];
      while (Date.now() - lockedAt < holdMs - 1_000) {
        for (const worker of workers) {
          const t0 = Date.now();
          await worker.stats();
          latencies.push(Date.now() - t0);
        }
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(Math.max(...latencies)).toBeLessThan(1_000);
      expect(await db.count('archive')).toBe(archivedAtLock);
      await new Promise<void>((resolve) =>
        locker.exitCode !== null ? resolve() : locker.once('exit', () => resolve()),
      );
    } finally {
      if (locker.exitCode === null) locker.kill('SIGKILL');
    }

    await waitFor(
      'the backlog to drain after the lock',
      async () => (await current.count('hot')) === 0,
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
    expect(
      await pillarViolations(
        db,
        backlog.map((r) => r.id),
      ),
    ).toEqual([]);
    const dlq = await db.query<{ status: number; failure_reason: number }>(
      `SELECT status, failure_reason FROM ${db.table('dlq')}`,
    );
    expect(dlq.filter((r) => Number(r.status) !== 6 || Number(r.failure_reason) !== 2)).toEqual([]);
    for (const worker of workers) {
      const out = worker.output();
      expect(lines(out, 'ChokaQ fetcher failed')).toBeLessThanOrEqual(1);
      expect(lines(out, 'WARN') + lines(out, 'ERROR')).toBeLessThan(40);
    }
  });
});
