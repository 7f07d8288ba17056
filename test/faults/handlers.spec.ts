import { INestApplication, Injectable } from '@nestjs/common';
import {
  ChokaQAdmin,
  ChokaQError,
  FailureReason,
  JobClient,
  JobContext,
  JobHandler,
  JobStatus,
} from '../../libs/chokaq/src';
import { CHOKAQ_STORAGE } from '../../libs/chokaq/src/chokaq.constants';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { bootApp, e2eDatabase } from '../e2e/support/e2e-app';
import { TestSchema, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import {
  FaultDatabase,
  openFaultDatabase,
  FaultWorker,
  killAllFaultWorkers,
  startFaultWorker,
} from './support/fault-processes';

/**
 * Stuck and misbehaving handlers (issue 6, part 2), through the Nest module on SQLite and
 * PostgreSQL; the event-loop-blocking handler runs in a real worker process so that another
 * process's rescue can look at its rows while it is blocked.
 */
jest.setTimeout(60_000);

/** What the handlers of this file saw, per test. */
const seen = {
  neverSignal: undefined as AbortSignal | undefined,
  lateLease: undefined as { id: string; leaseId: string } | undefined,
  lateFinished: false,
  quickRuns: [] as string[],
  followUp: undefined as Promise<unknown> | undefined,
  lateFollowUp: undefined as Promise<unknown> | undefined,
};

function circular(): unknown {
  const o: Record<string, unknown> = { kind: 'circular' };
  o.self = o;
  return o;
}

const THROWN: Record<string, () => unknown> = {
  undefined: () => undefined,
  null: () => null,
  string: () => 'plain string thrown',
  number: () => 42,
  circular,
  nulAndSurrogates: () => new Error('bad \u0000 text \ud800 with lone \udfff surrogates'),
};

@Injectable()
class MisbehavingHandlers {
  constructor(private readonly jobs: JobClient) {}

  /** Never settles, whatever happens to its signal. */
  @JobHandler('stuck', { type: 'never', timeoutMs: 300 })
  never(_p: unknown, ctx: JobContext): Promise<void> {
    seen.neverSignal = ctx.signal;
    return new Promise(() => undefined);
  }

  @JobHandler('stuck', { type: 'quick' })
  quick(_p: unknown, ctx: JobContext): void {
    seen.quickRuns.push(ctx.id);
  }

  /** Ignores the signal and resolves after its timeout: a late result. */
  @JobHandler('stuck', { type: 'late', timeoutMs: 200 })
  async late(_p: unknown, ctx: JobContext): Promise<void> {
    seen.lateLease = { id: ctx.id, leaseId: ctx.leaseId };
    await new Promise((r) => setTimeout(r, 700));
    seen.lateFinished = true;
  }

  @JobHandler('throws', { maxAttempts: 1 })
  throws(payload: { kind: string }): void {
    throw THROWN[payload.kind]();
  }

  /** Waits for the shutdown abort, then enqueues a follow-up job and returns. */
  @JobHandler('shutdown', { type: 'cooperative' })
  async cooperative(_p: unknown, ctx: JobContext): Promise<void> {
    await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
    seen.followUp = this.jobs.enqueue('followups', { from: ctx.id });
    await seen.followUp;
  }

  /** Ignores the shutdown abort and enqueues long after the grace period (storage closed by then). */
  @JobHandler('shutdown', { type: 'stubborn' })
  async stubborn(_p: unknown, ctx: JobContext): Promise<void> {
    await new Promise((r) => setTimeout(r, 1_500));
    seen.lateFollowUp = this.jobs.enqueue('followups', { from: ctx.id });
    await seen.lateFollowUp.catch(() => undefined);
  }
}

async function dlqRow(db: TestSchema, id: string) {
  const [row] = await db.query<{ status: number; failure_reason: number; error_details: string }>(
    `SELECT status, failure_reason, error_details FROM ${db.table('dlq')} WHERE id = ?`,
    [id],
  );
  return row;
}

describeEachDialect(
  'stuck and misbehaving handlers',
  ({ name: dialect }) => {
    let db: TestSchema;
    let app: INestApplication | undefined;

    beforeEach(async () => {
      db = e2eDatabase(dialect);
      seen.quickRuns = [];
    });
    afterEach(async () => {
      await app?.close().catch(() => undefined);
      app = undefined;
      await db.close();
    });

    async function boot(options = {}) {
      app = await bootApp(db, {
        providers: [MisbehavingHandlers],
        options: { worker: { concurrency: 1, pollIntervalMs: 20 }, ...options },
      });
      return { jobs: app.get(JobClient), admin: app.get(ChokaQAdmin) };
    }

    it('a handler that never settles: timeout aborts its signal, DLQ Timeout, the only slot is freed', async () => {
      const { jobs } = await boot();
      const stuck = await jobs.enqueue('stuck', {}, { type: 'never', priority: 100 });
      const next = await jobs.enqueue('stuck', {}, { type: 'quick', priority: 1 });
      // Concurrency 1: `quick` can only run once the never-settling run gave its slot back.
      await waitFor(
        'the quick job to be archived',
        async () => (await db.count('archive', 'id = ?', [next])) === 1,
      );
      expect(seen.quickRuns).toEqual([next]);
      expect(seen.neverSignal?.aborted).toBe(true);
      expect(String(seen.neverSignal?.reason)).toMatch(/ChokaQJobTimeoutError|timeout/i);
      // The slot is freed at the timeout, and the stuck job's move to the DLQ is written by the
      // completion flush after it: the quick job's archive may commit first.
      const row = await waitFor('the stuck job in the DLQ', () => dlqRow(db, stuck));
      expect(Number(row.status)).toBe(JobStatus.Failed);
      expect(Number(row.failure_reason)).toBe(FailureReason.Timeout);
    });

    it('a handler that ignores its signal and finishes late: the result is refused, the job stays DLQ Timeout', async () => {
      const { jobs, admin } = await boot();
      seen.lateFinished = false;
      const id = await jobs.enqueue('stuck', {}, { type: 'late' });
      await waitFor('the late handler to finish', () => seen.lateFinished, { timeoutMs: 10_000 });
      await waitFor(
        'the late result to be counted',
        () => (app!.get(WorkerRegistry).localWorker?.stats().lateResults ?? 0) >= 1,
      );
      expect(await dlqRow(db, id)).toMatchObject({ failure_reason: FailureReason.Timeout });
      expect(await db.count('archive', 'id = ?', [id])).toBe(0);
      // The fence itself: a finalisation under the run's (now stale) lease changes nothing.
      const storage = app!.get<JobStorage>(CHOKAQ_STORAGE);
      const workerId = admin.workerStats()!.workerId;
      expect(
        await storage.archiveSucceeded([{ ...seen.lateLease!, workerId, durationMs: 1 }]),
      ).toEqual([]);
      expect(
        await storage.moveToDlq(
          { ...seen.lateLease!, workerId },
          { reason: FailureReason.MaxRetriesExceeded, error: 'x' },
        ),
      ).toBe(0);
      expect(await db.count('archive')).toBe(0);
      const [stats] = await db.query<{ ok: number; failed: number }>(
        `SELECT succeeded_total AS ok, failed_total AS failed FROM ${db.table('stats')} WHERE queue = 'stuck'`,
      );
      expect([Number(stats.ok), Number(stats.failed)]).toEqual([0, 1]);
    });

    it('non-Error throws (undefined, null, string, number, circular object, NUL and lone surrogates) land in the DLQ with readable text', async () => {
      // Six failures of one type in a row would open its circuit (default threshold 5) and park
      // the sixth job for the break duration; circuits are not the subject here.
      const { jobs } = await boot({ circuitBreaker: { failureThreshold: 1_000 } });
      const ids: Record<string, string> = {};
      for (const kind of Object.keys(THROWN)) ids[kind] = await jobs.enqueue('throws', { kind });
      await waitFor(
        'every throwing job in the DLQ',
        async () => (await db.count('dlq')) === Object.keys(THROWN).length,
      );
      const expected: Record<string, RegExp> = {
        undefined: /undefined was thrown/,
        null: /null was thrown/,
        string: /plain string thrown/,
        number: /Non-error thrown: 42/,
        circular: /Non-error thrown: \[object Object\]/,
        nulAndSurrogates: /bad \uFFFD text \uFFFD with lone \uFFFD surrogates/,
      };
      for (const [kind, id] of Object.entries(ids)) {
        const row = await dlqRow(db, id);
        expect(Number(row.failure_reason)).toBe(FailureReason.MaxRetriesExceeded);
        expect(row.error_details).toMatch(expected[kind]);
        expect(row.error_details).not.toContain('\u0000');
      }
    });

    it('a handler that enqueues a follow-up when shutdown aborts it: the enqueue succeeds (storage open during the drain)', async () => {
      const { jobs } = await boot({ worker: { concurrency: 2, shutdownGracePeriodMs: 500 } });
      const cooperative = await jobs.enqueue('shutdown', {}, { type: 'cooperative' });
      const stubborn = await jobs.enqueue('shutdown', {}, { type: 'stubborn' });
      await waitFor('both running', async () => (await db.count('hot', 'status = 2')) === 2);
      seen.followUp = undefined;
      seen.lateFollowUp = undefined;
      await app!.close();
      app = undefined;

      // During the drain: the follow-up is accepted, and the handler that returned normally after
      // the abort is archived (it finished; it is not returned to Pending).
      // (Read through a function: TypeScript would narrow `seen.followUp` to the undefined set above.)
      const followUp = (): Promise<unknown> | undefined => seen.followUp;
      await expect(followUp()).resolves.toEqual(expect.any(String));
      const followUpId = (await followUp()) as string;
      expect(await db.count('hot', 'id = ? AND status = 0', [followUpId])).toBe(1);
      expect(await db.count('archive', 'id = ?', [cooperative])).toBe(1);

      // After the drain: the stubborn handler outlived the grace period; its row is left Processing
      // for the rescue loop of another process, and its late enqueue fails with a typed error
      // because ChokaQ's storage is closed by then.
      await waitFor(
        'the stubborn handler to try its enqueue',
        () => seen.lateFollowUp !== undefined,
        {
          timeoutMs: 5_000,
        },
      );
      const late = await seen.lateFollowUp!.then(
        () => 'resolved',
        (e: unknown) => e,
      );
      expect(late).toBeInstanceOf(ChokaQError);
      expect(await db.count('hot', 'id = ? AND status = 2', [stubborn])).toBe(1);
      expect(await db.count('hot', `queue = 'followups'`)).toBe(1);
    });
  },
  // Raw assertions here are written for SQLite and PostgreSQL; SQL Server runs the e2e suites.
  { only: ['sqlite', 'postgres'] },
);

/**
 * A handler that blocks its event loop: no heartbeat, no timer, no rescue runs in that process
 * meanwhile. Whether its job is declared a zombie is decided by the other processes' rescue,
 * against the database clock: a block shorter than the zombie timeout is harmless; a longer one
 * turns the job into a zombie while its process is still alive, and the run's eventual result is
 * then refused by the fence (the job stays in the DLQ as Zombie, ready to resurrect).
 */
describe('a handler that blocks the event loop (busy loop) [sqlite]', () => {
  let db: FaultDatabase | undefined;
  let worker: FaultWorker | undefined;

  afterEach(async () => {
    await worker?.stop(10_000);
    await db?.close();
  });
  afterAll(killAllFaultWorkers);

  async function run(busyMs: number, zombieTimeoutMs: number) {
    db = await openFaultDatabase('sqlite');
    const current = db;
    worker = await startFaultWorker({
      ...db.record,
      workerId: `busy-${busyMs}`,
      options: {
        storage: db.options,
        worker: { concurrency: 1, pollIntervalMs: 20 },
        heartbeat: { intervalMs: 100 },
        rescue: { intervalMs: 100, fetchedJobTimeoutMs: 60_000, zombieTimeoutMs },
      },
    });
    const { id } = await db.storageHere.enqueue({ queue: 'faults', payload: { busyMs } });
    await waitFor(
      'the busy run to start',
      async () =>
        (
          await current.runs<{ n: number }>(
            `SELECT COUNT(*) AS n FROM fault_runs WHERE job_id = ? AND phase = 'start'`,
            [id],
          )
        )[0].n > 0,
    );
    // Another process's rescue, many times while the worker is blocked.
    let zombies: string[] = [];
    const until = Date.now() + busyMs + 500;
    while (Date.now() < until) {
      zombies = [...zombies, ...(await current.storageHere.archiveZombies(zombieTimeoutMs)).dlq];
      await new Promise((r) => setTimeout(r, 50));
    }
    await waitFor(
      'the run to end',
      async () =>
        (
          await current.runs<{ n: number }>(
            `SELECT COUNT(*) AS n FROM fault_runs WHERE job_id = ? AND phase = 'ok'`,
            [id],
          )
        )[0].n > 0,
    );
    await waitFor(
      'the job to leave the hot table',
      async () => (await current.count('hot', `id = '${id}'`)) === 0,
    );
    return { id, zombies };
  }

  it('a block shorter than the zombie timeout is not a zombie: the job is archived', async () => {
    const { id, zombies } = await run(1_500, 3_000);
    expect(zombies).toEqual([]);
    expect(await db!.count('archive', `id = '${id}'`)).toBe(1);
  });

  it('a block longer than the zombie timeout is a zombie although the process lives; its late success is refused', async () => {
    const { id, zombies } = await run(2_500, 1_000);
    expect(zombies).toEqual([id]);
    expect(await db!.count('dlq', `id = '${id}' AND status = 6 AND failure_reason = 2`)).toBe(1);
    expect(await db!.count('archive')).toBe(0);
    await waitFor(
      'the refused archive to be counted',
      async () => (await worker!.stats()).conflicts >= 1,
    );
    expect(worker!.child.exitCode).toBeNull();
  });
});
