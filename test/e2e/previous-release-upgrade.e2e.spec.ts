import { join } from 'node:path';
import { INestApplication, Injectable } from '@nestjs/common';
import { JobClient, JobContext, JobHandler } from '../../libs/chokaq/src';
import type { StorageDialect } from '../../libs/chokaq/src/interfaces/job.interface';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { POSTGRES_MIGRATIONS } from '../../libs/chokaq/src/storage/postgres/postgres.schema';
import { SQLITE_MIGRATIONS } from '../../libs/chokaq/src/storage/sqlite/sqlite.schema';
import { PG_URL } from '../support/env';
import { TestSchema, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';
import {
  PREVIOUS_RELEASE,
  buildPreviousRelease,
  previousReleaseRequired,
  previousReleaseUnavailable,
} from './support/previous-release';
import { WorkerProcess, forkFixture } from './support/worker-processes';

/**
 * Schema upgrade with the previous release still running (issue 13, "Schema upgrades"): the
 * previous release (PREVIOUS_RELEASE, built from git history) creates the schema and holds jobs in
 * every pillar, its worker processes keep running while this release starts and migrates the
 * database under the schema lock, and then: the migration is complete, no job is lost or stranded,
 * the counters agree with the tables, and the previous release's workers keep working.
 */
jest.setTimeout(180_000);

const OLD_FIXTURE = join(__dirname, 'fixtures', 'previous-release-worker.ts');
const unavailable = previousReleaseUnavailable();

/** What the previous release's handler does with a job (fixtures/previous-release-worker.ts). */
type Kind = 'ok' | 'fatal' | 'retry' | 'hold' | 'hang';

/** Runs of this release's own handler, in this process. */
const newRuns: string[] = [];

@Injectable()
class NewReleaseHandlers {
  @JobHandler('upgrade.new')
  run(_payload: unknown, ctx: JobContext): void {
    newRuns.push(ctx.id);
  }
}

interface OldWorker extends WorkerProcess {
  /** Enqueues through the previous release's JobClient in that process. */
  enqueue(
    queue: string,
    items: Array<{ payload: { kind: Kind }; delayMs?: number }>,
  ): Promise<string[]>;
  /** Releases its `hold` runs. */
  open(): void;
}

function scenario(dialect: StorageDialect): void {
  let db: TestSchema;
  let releaseDir: string;
  let app: INestApplication | undefined;
  const old: OldWorker[] = [];
  const runsTable = () => (dialect === 'sqlite' ? 'upgrade_runs' : `${db.schema}.upgrade_runs`);

  beforeAll(async () => {
    releaseDir = await buildPreviousRelease();
  }, 300_000);
  beforeEach(() => {
    db = e2eDatabase(dialect);
    newRuns.length = 0;
  });
  afterEach(async () => {
    await Promise.all(old.splice(0).map((w) => w.stop()));
    if (app) await closeAndCheck(app, db);
    app = undefined;
    await db.close();
  });

  /** Rescue and heartbeat timings shared by both releases. */
  const timings = {
    heartbeat: { intervalMs: 200 },
    rescue: { intervalMs: 200, fetchedJobTimeoutMs: 5_000, zombieTimeoutMs: 3_000 },
    retry: { maxAttempts: 3, baseDelayMs: 50, multiplier: 1, jitterMs: 0 },
  };

  async function startOld(n: number): Promise<OldWorker> {
    const options = {
      ...timings,
      storage: db.options,
      worker: {
        workerId: `previous-${n}`,
        concurrency: 2,
        prefetch: 2,
        batchSize: 2,
        pollIntervalMs: 50,
        shutdownGracePeriodMs: 2_000,
      },
    };
    const base = await forkFixture(OLD_FIXTURE, {
      CHOKAQ_PREVIOUS_RELEASE: releaseDir,
      CHOKAQ_FIXTURE: JSON.stringify({
        options,
        runsTable: runsTable(),
        ...(dialect === 'sqlite' ? { sqliteFile: db.file } : { pgUrl: PG_URL }),
      }),
    });
    let calls = 0;
    const worker: OldWorker = {
      ...base,
      enqueue: (queue, items) =>
        new Promise((resolve, reject) => {
          const call = ++calls;
          const onMessage = (m: { call?: number; ids?: string[]; error?: string }) => {
            if (m.call !== call) return;
            base.child.off('message', onMessage);
            if (m.ids) resolve(m.ids);
            else reject(new Error(`the previous release refused the enqueue: ${m.error}`));
          };
          base.child.on('message', onMessage);
          base.child.send({ call, enqueue: { queue, items } });
        }),
      open: () => base.child.send({ open: true }),
    };
    old.push(worker);
    return worker;
  }

  const count = (table: 'hot' | 'archive' | 'dlq', where = '1 = 1', params: unknown[] = []) =>
    db.count(table, where, params);
  const items = (kind: Kind, n: number, delayMs?: number) =>
    Array.from({ length: n }, () => ({ payload: { kind }, ...(delayMs ? { delayMs } : {}) }));
  const versions = async () =>
    (
      await db.query<{ version: number }>(
        `SELECT version FROM ${db.table('migrations')} ORDER BY version`,
      )
    ).map((r) => Number(r.version));

  /** Runs `body`; a failure carries what the previous release's processes printed. */
  async function explained(body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (error) {
      if (error instanceof Error) {
        error.message += `\n\nOutput of the previous release's processes:\n${old
          .map((w) => `--- ${w.workerId}\n${w.output()}`)
          .join('\n')}`;
      }
      throw error;
    }
  }

  it('the previous release holds jobs in every pillar; this release migrates under its running workers; nothing is lost or stranded and the old workers keep working', () =>
    explained(async () => {
      // The previous release creates the schema and fills every pillar.
      const w1 = await startOld(1);
      await db.query(
        `CREATE TABLE ${runsTable()} (job_id varchar(36) NOT NULL, worker_id varchar(255) NOT NULL, attempt integer NOT NULL)`,
      );
      const w2 = await startOld(2);
      const before = await versions();
      expect(before).toEqual(dialect === 'sqlite' ? [1] : [1, 2]);

      const finished = {
        ok: await w1.enqueue('upgrade', items('ok', 3)),
        fatal: await w1.enqueue('upgrade', items('fatal', 2)),
        retry: await w1.enqueue('upgrade', items('retry', 1)),
      };
      await waitFor('the previous release to archive 4 jobs and dead-letter 2', async () => {
        return (await count('archive')) === 4 && (await count('dlq')) === 2;
      });
      const scheduled = await w1.enqueue('upgrade', items('ok', 2, 3_600_000));
      // Each old worker runs 2 held jobs (its concurrency) and buffers 2 more (its prefetch), so
      // what comes after them stays Pending.
      const held = await w1.enqueue('upgrade', items('hold', 8));
      await waitFor('each old worker to run 2 held jobs and buffer 2', async () => {
        const rows = await db.query<{ worker_id: string; status: number; n: number }>(
          `SELECT worker_id, status, COUNT(*) AS n FROM ${db.table('hot')}
          WHERE status IN (1, 2) GROUP BY worker_id, status`,
        );
        return rows.length === 4 && rows.every((r) => Number(r.n) === 2);
      });
      const waiting = await w2.enqueue('upgrade', items('ok', 40));
      const forNew = await w2.enqueue('upgrade.new', items('ok', 3));
      expect({
        processing: await count('hot', 'status = 2'),
        fetched: await count('hot', 'status = 1'),
        pending: await count('hot', 'status = 0 AND scheduled_at_utc IS NULL'),
        scheduled: await count('hot', 'status = 0 AND scheduled_at_utc IS NOT NULL'),
        archived: await count('archive'),
        dead: await count('dlq'),
      }).toEqual({ processing: 4, fetched: 4, pending: 43, scheduled: 2, archived: 4, dead: 2 });

      // This release starts while they run: a worker app and a second storage race for the schema
      // lock, and one of them migrates. The first old worker is set free just before, so it is busy
      // with the backlog during the migration; the second one's runs stay in flight across it.
      w1.open();
      let storage: JobStorage;
      [app, storage] = await Promise.all([
        bootApp(db, { providers: [NewReleaseHandlers], options: { ...timings } }),
        db.openStorage(),
      ]);
      const all = dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
      expect(await versions()).toEqual(all.map((m) => m.version));
      for (const w of old) expect(w.child.exitCode).toBeNull();
      expect(await count('hot', "worker_id = 'previous-2' AND status IN (1, 2)")).toBe(4);

      // The old workers keep working: the runs they started before the migration finish, their
      // buffers and the pending jobs run, and so do jobs this release enqueues for them and the
      // scheduled ones once due.
      const enqueuedAfter = await app.get(JobClient).enqueueMany('upgrade', items('ok', 4));
      w2.open();
      // An hour passes for the scheduled jobs.
      await db.query(`UPDATE ${db.table('hot')} SET scheduled_at_utc = ? WHERE id IN (?, ?)`, [
        dialect === 'sqlite' ? Date.now() - 1_000 : new Date(Date.now() - 1_000),
        ...scheduled,
      ]);
      await waitFor('every job to leave the hot table', async () => (await count('hot')) === 0, {
        timeoutMs: 60_000,
      });
      // This release ran the jobs the previous one enqueued for it.
      expect([...newRuns].sort()).toEqual([...forNew].sort());

      // A run of an old worker that dies after the upgrade is rescued.
      const [hang] = await app.get(JobClient).enqueueMany('upgrade', items('hang', 1));
      // Processing is not enough before the kill: the handler writes the run record (which the
      // check of the runs below reads) only after the job became Processing, so a kill in between
      // would leave the hanging job without one.
      const holder = await waitFor(
        'an old worker to start the hanging job and record its run',
        async () => {
          const [row] = await db.query<{ worker_id: string }>(
            `SELECT worker_id FROM ${db.table('hot')} WHERE id = ? AND status = 2`,
            [hang],
          );
          const [run] = await db.query<{ worker_id: string }>(
            `SELECT worker_id FROM ${runsTable()} WHERE job_id = ?`,
            [hang],
          );
          return row && run?.worker_id === row.worker_id ? row.worker_id : undefined;
        },
      );
      const victim = old.find((w) => w.workerId === holder)!;
      await victim.kill();
      await waitFor('the dead worker’s run to become a zombie', async () => {
        return (await count('dlq', 'id = ?', [hang])) === 1;
      });

      // Every job is in exactly one pillar: the fatal ones and the zombie in the DLQ, the rest in
      // the archive.
      const ids = async (table: 'hot' | 'archive' | 'dlq') =>
        (await db.query<{ id: string }>(`SELECT id FROM ${db.table(table)}`))
          .map((r) => r.id)
          .sort();
      const dead = [...finished.fatal, hang].sort();
      const succeeded = [
        ...finished.ok,
        ...finished.retry,
        ...scheduled,
        ...held,
        ...waiting,
        ...forNew,
        ...enqueuedAfter,
      ].sort();
      expect(await ids('hot')).toEqual([]);
      expect(await ids('dlq')).toEqual(dead);
      expect(await ids('archive')).toEqual(succeeded);
      const dlqRows = await db.query<{ id: string; status: number; failure_reason: number }>(
        `SELECT id, status, failure_reason FROM ${db.table('dlq')}`,
      );
      for (const row of dlqRows) {
        expect([Number(row.status), Number(row.failure_reason)]).toEqual(
          row.id === hang
            ? [JobStatus.Zombie, FailureReason.Zombie]
            : [JobStatus.Failed, FailureReason.FatalError],
        );
      }

      // Each job of queue `upgrade` ran on an old worker, once (the retried one twice).
      const runs = await db.query<{ job_id: string; worker_id: string; attempt: number }>(
        `SELECT job_id, worker_id, attempt FROM ${runsTable()}`,
      );
      const upgradeJobs = succeeded.filter((id) => !forNew.includes(id)).concat(dead);
      expect(runs.map((r) => r.job_id).sort()).toEqual([...upgradeJobs, ...finished.retry].sort());
      expect(runs.every((r) => r.worker_id.startsWith('previous-'))).toBe(true);
      expect(
        runs
          .filter((r) => finished.retry.includes(r.job_id))
          .map((r) => Number(r.attempt))
          .sort(),
      ).toEqual([1, 2]);

      // The lifetime counters agree with the tables.
      const stats = async (queue: string) =>
        (
          await db.query<Record<string, number>>(
            `SELECT succeeded_total, failed_total, cancelled_total, retried_total FROM ${db.table('stats')} WHERE queue = ?`,
            [queue],
          )
        ).map((r) => Object.values(r).map(Number))[0];
      expect(await stats('upgrade')).toEqual([succeeded.length - forNew.length, dead.length, 0, 1]);
      expect(await stats('upgrade.new')).toEqual([forNew.length, 0, 0, 0]);
      const summary = await storage.getSummary();
      expect(summary).toMatchObject({ pending: 0, fetched: 0, processing: 0 });
      if (dialect === 'sqlite') {
        // The exact counts kept by the triggers counted the old workers' moves too.
        expect(summary).toMatchObject({ archived: succeeded.length, dlq: dead.length });
      }

      // The surviving old worker is still up, logged no error, and stops cleanly on SIGTERM.
      const survivor = old.find((w) => w !== victim)!;
      expect(survivor.child.exitCode).toBeNull();
      await survivor.stop();
      expect(survivor.child.signalCode).not.toBe('SIGKILL');
      expect(survivor.output()).not.toMatch(/\bERROR\b|Error:/);

      // A process of the previous release started after the upgrade (a restart or a rollback during
      // the rollout) starts against the newer schema and works.
      const restarted = await startOld(3);
      const [late] = await app.get(JobClient).enqueueMany('upgrade', items('ok', 1));
      await waitFor('the restarted old worker to run a job', async () => {
        return (await count('archive', 'id = ?', [late])) === 1;
      });
      expect(
        await db.query(`SELECT worker_id FROM ${runsTable()} WHERE job_id = ?`, [late]),
      ).toEqual([{ worker_id: 'previous-3' }]);
      expect(await versions()).toEqual(all.map((m) => m.version));
      await restarted.stop();
      expect(restarted.output()).not.toMatch(/\bERROR\b|Error:/);
    }));
}

if (unavailable && previousReleaseRequired()) {
  describe('schema upgrade with the previous release running', () => {
    it('needs the previous release from git history', () => {
      throw new Error(`Cannot run the upgrade suite: ${unavailable}`);
    });
  });
} else if (unavailable) {
  console.log(`Upgrade suite SKIPPED: ${unavailable}`);
  describe.skip('schema upgrade with the previous release running', () => {
    it('needs the previous release from git history', () => undefined);
  });
} else {
  describeEachDialect(
    `schema upgrade with the previous release (${PREVIOUS_RELEASE.slice(0, 7)}) running`,
    ({ name }) => scenario(name),
    { only: ['sqlite', 'postgres'] },
  );
}
