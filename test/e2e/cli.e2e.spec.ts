import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { availableParallelism, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import type { StorageDialect } from '../../libs/chokaq/src/interfaces/job.interface';
import { schemaDdl } from '../../libs/chokaq/src/cli/commands/schema.command';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { archiveDirectly as archiveDirectlyThrough } from '../support/archive-directly';
import { PG_URL, TS_LOADER } from '../support/env';
import { TestSchema, createTestSchema, describeEachDialect } from '../support/test-database';

/**
 * The `chokaq` binary as an operator runs it: every command runs as a child process of the CLI's
 * entry point (`libs/chokaq/src/cli/main.ts`, through the tests' TypeScript loader, whose compile
 * cache makes each start as quick as the built file's; `--version` reads the package's
 * `package.json` from there as it does from `dist/`) against a SQLite file and a PostgreSQL schema.
 * The built binary, from the packed tarball and through npx, is the packaging test's. Each run is
 * asserted on what a shell sees: the exit code, stdout (one JSON document with `--json`, parsed)
 * and stderr; the database is seeded and checked through the storage in this process. Every
 * command runs at least once per dialect; runs that do not depend on each other are started
 * together, as many at a time as the machine has cores, since each process start loads a driver.
 *
 * SQL Server's CLI path is the same code over its storage, whose statements test/mssql pins; it is
 * not run here.
 */
jest.setTimeout(300_000);

const ROOT = resolve(__dirname, '..', '..');
const ACTOR = `cli:${userInfo().username}`;
const MAIN = join(ROOT, 'libs', 'chokaq', 'src', 'cli', 'main.ts');

/** Runs a command to its end, bounded; never rejects on a non-zero exit code. */
function run(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`${args.join(' ')} did not end within ${timeoutMs} ms:\n${stdout}${stderr}`));
    }, timeoutMs);
    child.once('error', fail);
    child.once('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * CLI processes running at once. Each start loads the library and a driver (mostly CPU): more at
 * once than the machine has cores makes every one of them slower, and on a loaded machine a batch
 * of ten started together ran past a minute each.
 */
const MAX_PROCESSES = Math.max(2, availableParallelism());
let processes = 0;
const waiting: Array<() => void> = [];

/** Runs `work` when fewer than {@link MAX_PROCESSES} CLI processes run. */
async function inTurn<T>(work: () => Promise<T>): Promise<T> {
  while (processes >= MAX_PROCESSES) await new Promise<void>((turn) => waiting.push(turn));
  processes += 1;
  try {
    return await work();
  } finally {
    processes -= 1;
    waiting.shift()?.();
  }
}

/**
 * Runs `chokaq` with `args`; no `CHOKAQ_DATABASE_URL` unless `env` sets one. A run takes about a
 * second; the bound only ends a process that hangs.
 */
function chokaq(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  const { CHOKAQ_DATABASE_URL: _ignored, ...base } = process.env;
  return inTurn(() =>
    run(process.execPath, ['-r', TS_LOADER, MAIN, ...args], { ...base, ...env }, 120_000),
  );
}

/** The parsed JSON document of a run that must have printed one, and nothing else. */
function json<T = Record<string, unknown>>(result: CliRun): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(
      `stdout is not one JSON document:\n${result.stdout}\nstderr:\n${result.stderr}`,
    );
  }
}

/** The JSON error report a `--json` run wrote to stderr. */
function jsonError(result: CliRun): Record<string, unknown> {
  return (JSON.parse(result.stderr) as { error: Record<string, unknown> }).error;
}

/** Expects an exit code, showing both streams when it differs. */
function expectExit(result: CliRun, code: number): void {
  if (result.code !== code) {
    throw new Error(
      `expected exit ${code}, got ${result.code}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`,
    );
  }
}

describe('the chokaq binary, without a database', () => {
  it('prints the version, the DDL and usage errors as a shell sees them', async () => {
    const [version, ddl, misspelt, noCommand] = await Promise.all([
      chokaq(['--version']),
      chokaq(['schema', '--dialect', 'postgres', '--schema', 'jobs']),
      chokaq(['dlq', 'list', '--queeu', 'x']),
      chokaq([]),
    ]);
    expect(version).toEqual({ code: 0, stdout: '0.1.0\n', stderr: '' });
    expect(ddl).toEqual({ code: 0, stdout: schemaDdl('postgres', 'jobs'), stderr: '' });
    expect({ code: misspelt.code, stdout: misspelt.stdout }).toEqual({ code: 2, stdout: '' });
    expect(misspelt.stderr).toContain("unknown option '--queeu'");
    expect(noCommand.code).toBe(2);
    expect(noCommand.stderr).toContain('Usage: chokaq <command>');
  });
});

describeEachDialect(
  'the chokaq binary',
  ({ name: dialect }) => {
    let db: TestSchema;
    let storage: JobStorage | undefined;
    let url: string;

    beforeAll(() => {
      db = createTestSchema(dialect);
      // SQLite through the `sqlite:` form, PostgreSQL through the environment variable.
      url = dialect === 'sqlite' ? `sqlite:${db.file}` : PG_URL;
    });
    afterAll(async () => {
      await storage?.close();
      await db?.close();
    });

    /** `chokaq` on this dialect's database. */
    const cli = (...args: string[]) =>
      dialect === 'sqlite'
        ? chokaq([...args, '--url', url, '--schema', db.schema])
        : chokaq([...args, '--schema', db.schema], { CHOKAQ_DATABASE_URL: url });

    it('refuses to act on a database without the schema, and migrates it under the schema lock', async () => {
      const [ddl, before] = await Promise.all([
        chokaq(['schema', '--dialect', dialect, '--schema', db.schema]),
        cli('stats', '--json'),
      ]);
      expect(ddl).toEqual({ code: 0, stdout: schemaDdl(dialect, db.schema), stderr: '' });
      expectExit(before, 1);
      expect(before.stdout).toBe('');
      if (dialect === 'sqlite') {
        // Opening a missing file would create an empty database: only `migrate` may.
        expect(jsonError(before)).toMatchObject({ name: 'CliDatabaseMissingError', exitCode: 1 });
        writeFileSync(db.file, '');
      } else {
        expect(jsonError(before)).toMatchObject({
          name: 'CliSchemaOutdatedError',
          exitCode: 1,
          schema: db.schema,
          currentVersion: 0,
        });
      }

      const dryRun = await cli('migrate', '--dry-run', '--json');
      expectExit(dryRun, 0);
      const plan = json<{ currentVersion: number; pending: { version: number }[]; script: string }>(
        dryRun,
      );
      expect(plan.currentVersion).toBe(0);
      expect(plan.pending.length).toBeGreaterThan(5);
      expect(plan.script).toContain(
        dialect === 'sqlite' ? 'BEGIN IMMEDIATE' : 'pg_advisory_xact_lock',
      );
      const latest = plan.pending.at(-1)!.version;

      const migrate = await cli('migrate');
      expectExit(migrate, 0);
      expect(migrate.stdout).toContain(`from version 0 to ${latest}`);
      const again = await cli('migrate', '--json');
      expectExit(again, 0);
      expect(json(again)).toMatchObject({ applied: [], fromVersion: latest, toVersion: latest });

      storage = await db.openStorage({ autoCreateSchema: false });
      expect((await storage.schemaStatus()).pending).toEqual([]);
    });

    /** Seeded below: jobs of each pillar, a worker, a recurring job. */
    const seed = {
      pending: [] as string[],
      dlq: [] as string[],
      recurring: `cli-recurring-${dialect}`,
      workerId: `cli-host:1234:${dialect}`,
    };

    it('reads: stats, queues, jobs, the DLQ, workers, recurring jobs; 3 when nothing matches', async () => {
      const s = storage!;
      for (let i = 0; i < 2; i++)
        seed.pending.push((await s.enqueue({ queue: 'cli-q', payload: { n: i } })).id);
      for (let i = 0; i < 40; i++) {
        const { id } = await s.enqueue({ queue: 'cli-dlq', type: 'cli.fail', payload: { i } });
        expect(
          await s.moveToDlq({ id }, { reason: FailureReason.Timeout, error: `timed out ${i}` }),
        ).toBe(1);
        seed.dlq.push(id);
      }
      await s.upsertWorker({
        workerId: seed.workerId,
        host: 'cli-host',
        pid: 1234,
        libraryVersion: '0.1.0',
        concurrency: 4,
        running: 1,
        handled: { queues: ['cli-q'], types: [] },
        circuits: {},
        draining: false,
        starting: true,
      });
      await s.upsertRecurringJob({
        name: seed.recurring,
        cron: '0 3 * * *',
        timeZone: 'UTC',
        queue: 'cli-q',
        type: 'cli.nightly',
        payload: {},
        misfirePolicy: 'skip',
        nextSlotUtc: new Date(Date.now() + 86_400_000),
      });

      const [
        stats,
        statsHuman,
        queues,
        workers,
        recurring,
        job,
        missingJob,
        dlqPage,
        dlqNone,
        noRecurring,
      ] = await Promise.all([
        cli('stats', '--json'),
        cli('stats'),
        cli('queues', 'list', '--json'),
        cli('workers', '--json', '--lost-after', '1h'),
        cli('recurring', 'list', '--json'),
        cli('jobs', 'get', seed.pending[0], '--json'),
        cli('jobs', 'get', '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'),
        cli(
          'dlq',
          'list',
          '--queue',
          'cli-dlq',
          '--reason',
          'timeout',
          '--since',
          '1h',
          '--limit',
          '5',
          '--json',
        ),
        cli('dlq', 'list', '--queue', 'cli-dlq', '--until', '2000-01-01'),
        cli('recurring', 'pause', 'no-such-job'),
      ]);

      expectExit(stats, 0);
      const { summary, queues: perQueue } = json<{
        summary: { pending: number; dlq: number };
        queues: { queue: string; pending: number }[];
      }>(stats);
      expect(summary).toMatchObject({ pending: 2 });
      expect(perQueue.find((q) => q.queue === 'cli-q')).toMatchObject({ pending: 2 });
      expectExit(statsHuman, 0);
      expect(statsHuman.stdout).toMatch(/^cli-q\s+2\s+2\s/m);

      expectExit(queues, 0);
      expect(
        json<{ queues: { name: string }[] }>(queues)
          .queues.map((q) => q.name)
          .sort(),
      ).toEqual(['cli-dlq', 'cli-q']);

      expectExit(workers, 0);
      expect(json<{ workers: unknown[] }>(workers).workers).toEqual([
        expect.objectContaining({
          workerId: seed.workerId,
          state: 'running',
          running: 1,
          concurrency: 4,
        }),
      ]);

      expectExit(recurring, 0);
      expect(json<{ recurringJobs: unknown[] }>(recurring).recurringJobs).toEqual([
        expect.objectContaining({
          name: seed.recurring,
          cron: '0 3 * * *',
          isPaused: false,
          lastRun: null,
        }),
      ]);

      expectExit(job, 0);
      expect(json<{ job: unknown }>(job).job).toMatchObject({
        id: seed.pending[0],
        queue: 'cli-q',
        pillar: 'hot',
        payload: { n: 0 },
        // Not archived: no stored result.
        result: null,
        // Never started: no attempt history, and the list is there (read with the job).
        attempts: [],
      });
      expectExit(missingJob, 3);
      expect(missingJob).toMatchObject({ stdout: '' });
      expect(missingJob.stderr).toContain(
        "No job has the id '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'",
      );

      expectExit(dlqPage, 0);
      const page = json<{
        items: { id: string; failureReason: number }[];
        nextCursor: string | null;
      }>(dlqPage);
      expect(page.items).toHaveLength(5);
      expect(page.items.every((i) => i.failureReason === FailureReason.Timeout)).toBe(true);
      expect(page.nextCursor).toEqual(expect.any(String));

      expectExit(dlqNone, 3);
      expect(dlqNone.stdout).toBe('(none)\n');
      expect(dlqNone.stderr).toContain('No DLQ job matches');
      expectExit(noRecurring, 3);
      expect(noRecurring.stderr).toContain('No recurring job is named "no-such-job"');
    });

    it('acts through the operator API, audited as cli:<os user> unless --actor', async () => {
      const [pause, resume, maxWorkers, timeouts, missingQueue, cancel] = await Promise.all([
        cli('queues', 'pause', 'cli-q'),
        cli('queues', 'resume', 'cli-dlq', '--json'),
        cli('queues', 'set-max-workers', 'cli-dlq', '3', '--json'),
        cli('queues', 'set-timeout', 'cli-dlq', '--execution', '30s', '--zombie', '5m', '--json'),
        cli('queues', 'pause', 'no-such-queue'),
        cli('jobs', 'cancel', seed.pending[1], '--actor', 'ops@example.com', '--json'),
      ]);
      expectExit(pause, 0);
      expect(pause.stdout).toContain("Queue 'cli-q' paused.");
      expectExit(resume, 0);
      expect(json(resume)).toMatchObject({ queue: { name: 'cli-dlq', isPaused: false } });
      expectExit(maxWorkers, 0);
      expect(json(maxWorkers)).toMatchObject({ queue: { maxWorkers: 3 } });
      expectExit(timeouts, 0);
      expect(json(timeouts)).toMatchObject({
        queue: { executionTimeoutMs: 30_000, zombieTimeoutSeconds: 300 },
      });
      expectExit(missingQueue, 3);
      expect(missingQueue.stderr).toContain("No queue is named 'no-such-queue'");
      expectExit(cancel, 0);
      expect(json(cancel)).toEqual({
        cancelled: [seed.pending[1]],
        cancelRequested: [],
        notCancelled: [],
      });
      expect((await storage!.getQueues()).find((q) => q.name === 'cli-q')?.isPaused).toBe(true);

      const rateLimit = await cli(
        'queues',
        'set-rate-limit',
        'cli-dlq',
        '--max',
        '10',
        '--per-ms',
        '1000',
        '--actor',
        'ops@example.com',
      );
      expectExit(rateLimit, 0);
      expect(rateLimit.stdout).toContain(
        "Queue 'cli-dlq': rate limit at most 10 starts per 1000 ms.",
      );
      expect(rateLimit.stdout).toContain('10/1000ms');
      const cleared = await cli('queues', 'set-rate-limit', 'cli-dlq', '--clear', '--json');
      expectExit(cleared, 0);
      expect(json(cleared)).toMatchObject({ queue: { name: 'cli-dlq', rateLimit: null } });

      const [grouped, groups] = await Promise.all([
        cli(
          'queues',
          'set-group-limits',
          'cli-dlq',
          '--concurrency',
          '2',
          '--max',
          '5',
          '--per-ms',
          '1000',
        ),
        cli('queues', 'groups', 'cli-q'),
      ]);
      expectExit(grouped, 0);
      expect(grouped.stdout).toContain("Queue 'cli-dlq': group limits set.");
      expect(grouped.stdout).toContain('2 running, 5/1000ms');
      expectExit(groups, 0);
      expect(groups.stdout).toContain("Queue 'cli-q' has no jobs in a group.");
      const ungrouped = await cli(
        'queues',
        'set-group-limits',
        'cli-dlq',
        '--concurrency',
        'none',
        '--clear-rate',
        '--json',
      );
      expect(json(ungrouped)).toMatchObject({
        queue: { name: 'cli-dlq', groupConcurrency: null, groupRateLimit: null },
      });

      const recurringPause = await cli('recurring', 'pause', seed.recurring);
      expectExit(recurringPause, 0);
      const [recurringResume, trigger] = await Promise.all([
        cli('recurring', 'resume', seed.recurring, '--json'),
        cli('recurring', 'trigger', seed.recurring, '--json'),
      ]);
      expectExit(recurringResume, 0);
      expect(json(recurringResume)).toEqual({ name: seed.recurring, paused: false });
      expectExit(trigger, 0);
      const { jobId } = json<{ jobId: string }>(trigger);
      expect(await storage!.getJob(jobId)).toMatchObject({
        queue: 'cli-q',
        type: 'cli.nightly',
        createdBy: ACTOR,
      });
    });

    it('DLQ bulk actions: preview and token, --dry-run, --yes over 25 rows, by filter and by ids', async () => {
      const filter = ['--queue', 'cli-dlq', '--type', 'cli.fail', '--search', 'timed out'];
      const [preview, dryRun, unconfirmed] = await Promise.all([
        cli('dlq', 'preview', '--action', 'resurrect', ...filter, '--json'),
        cli('dlq', 'resurrect', ...filter, '--dry-run', '--json'),
        cli('dlq', 'resurrect', ...filter),
      ]);
      expectExit(preview, 0);
      const previewed = json<{
        matched: number;
        willAffect: number;
        sampleIds: string[];
        token: string;
      }>(preview);
      expect(previewed).toMatchObject({ matched: 40, willAffect: 40 });
      expect(previewed.sampleIds).toHaveLength(20);
      expectExit(dryRun, 0);
      expect(json(dryRun)).toMatchObject({ dryRun: true, matched: 40, willAffect: 40 });
      // More than 25 rows without --yes: refused, nothing changed.
      expectExit(unconfirmed, 2);
      expect(unconfirmed.stderr).toContain('This would resurrect 40 row(s), more than 25');
      const inDlq = () => db.count('dlq', 'queue = ?', ['cli-dlq']);
      expect(await inDlq()).toBe(40);

      // At most 5 (under the threshold): no --yes needed; the preview's token confirms it.
      const five = await cli('dlq', 'resurrect', ...filter, '--max', '5', '--json');
      expectExit(five, 0);
      const moved = json<{ affected: number; ids: string[] }>(five);
      expect(moved.affected).toBe(5);
      expect(await inDlq()).toBe(35);
      // The first preview's token no longer confirms: its count moved (40 → 35).
      const stale = await cli(
        'dlq',
        'resurrect',
        ...filter,
        '--token',
        previewed.token,
        '--yes',
        '--json',
      );
      expectExit(stale, 1);
      expect(jsonError(stale)).toMatchObject({
        name: 'ChokaQConfirmationError',
        reason: 'count-changed',
        previewed: 40,
        current: 35,
      });

      const remaining = seed.dlq.filter((id) => !moved.ids.includes(id));
      const byIds = await cli('dlq', 'purge', remaining[0], remaining[1], '--json');
      expectExit(byIds, 0);
      expect(json(byIds)).toMatchObject({ matched: 2, affected: 2 });

      const purged = await cli('dlq', 'purge', '--queue', 'cli-dlq', '--yes');
      expectExit(purged, 0);
      expect(purged.stdout).toContain('Purged 33 DLQ job(s) of 33 matching.');
      const [empty, all] = await Promise.all([
        cli('dlq', 'purge', '--queue', 'cli-dlq', '--json'),
        cli('dlq', 'preview', '--action', 'purge', '--all', '--json'),
      ]);
      expectExit(empty, 3);
      expect(jsonError(empty)).toMatchObject({ name: 'CliNothingMatchedError', exitCode: 3 });
      expect(await inDlq()).toBe(0);
      // --all: every DLQ job, here the one cancelled above.
      expectExit(all, 0);
      expect(json(all)).toMatchObject({ action: 'purge', matched: 1, filter: {} });
    });

    it('the audit log holds every action with its actor', async () => {
      const [all, byOps] = await Promise.all([
        cli('audit', '--limit', '100', '--json'),
        cli('audit', '--actor', 'ops@example.com', '--action', 'job.cancel', '--since', '1h'),
      ]);
      expectExit(all, 0);
      const entries = json<{
        items: { actor: string; action: string; target: string | null; rowsAffected: number }[];
      }>(all).items;
      // An attempt that matched nothing is recorded too (0 rows): the missing recurring job.
      expect(entries.map((e) => `${e.action} ${e.actor} ${e.rowsAffected}`).sort()).toEqual(
        [
          `dlq.purge ${ACTOR} 2`,
          `dlq.purge-by-filter ${ACTOR} 33`,
          `dlq.resurrect-by-filter ${ACTOR} 5`,
          'job.cancel ops@example.com 1',
          `queue.pause ${ACTOR} 1`,
          `queue.resume ${ACTOR} 1`,
          `queue.update ${ACTOR} 1`,
          `queue.update ${ACTOR} 1`,
          `queue.update ${ACTOR} 1`,
          // set-group-limits, then set-group-limits --concurrency none --clear-rate.
          `queue.update ${ACTOR} 1`,
          `queue.update ${ACTOR} 1`,
          'queue.update ops@example.com 1',
          `recurring.pause ${ACTOR} 0`,
          `recurring.pause ${ACTOR} 1`,
          `recurring.resume ${ACTOR} 1`,
          `recurring.trigger ${ACTOR} 1`,
        ].sort(),
      );
      expectExit(byOps, 0);
      expect(byOps.stdout).toMatch(
        new RegExp(`ops@example\\.com\\s+job\\.cancel\\s+${seed.pending[1]}\\s+1$`, 'm'),
      );
    });

    /** One job of `cli-results` archived through the storage, with `result` stored if given. */
    const archiveDirectly = (result?: unknown) =>
      archiveDirectlyThrough(storage!, 'cli-results', seed.workerId, result);

    it("jobs get prints an archived job's stored result, as text and in --json", async () => {
      const stored = { total: 42, lines: ['a', 'b'], note: 'done' };
      const withResult = await archiveDirectly(stored);
      const withoutResult = await archiveDirectly();
      const [text, asJson, plainText, plainJson] = await Promise.all([
        cli('jobs', 'get', withResult),
        cli('jobs', 'get', withResult, '--json'),
        cli('jobs', 'get', withoutResult),
        cli('jobs', 'get', withoutResult, '--json'),
      ]);

      expectExit(text, 0);
      expect(text.stdout).toMatch(/^where\s+archive$/m);
      // After the payload, pretty-printed as it is; nothing follows (no error, no failed attempt).
      expect(text.stdout).toContain(
        `Payload:\n${JSON.stringify({ n: 1 }, null, 2)}\n\nResult:\n${JSON.stringify(stored, null, 2)}\n`,
      );
      expect(text.stdout.endsWith(`Result:\n${JSON.stringify(stored, null, 2)}\n`)).toBe(true);
      expectExit(asJson, 0);
      expect(json<{ job: unknown }>(asJson).job).toMatchObject({
        id: withResult,
        pillar: 'archive',
        payload: { n: 1 },
        result: stored,
      });

      expectExit(plainText, 0);
      expect(plainText.stdout).toMatch(/^where\s+archive$/m);
      expect(plainText.stdout).not.toContain('Result:');
      expectExit(plainJson, 0);
      expect(json<{ job: unknown }>(plainJson).job).toMatchObject({
        id: withoutResult,
        pillar: 'archive',
        result: null,
      });
    });

    it('jobs get prints the dedupe key a job holds and its window', async () => {
      const key = `cli:${seed.workerId}`;
      const { id } = await storage!.enqueue({
        queue: 'cli-dedupe',
        delayMs: 3_600_000,
        dedupe: { key, mode: 'unique', states: ['pending', 'running'] },
      });
      const text = await cli('jobs', 'get', id);
      expectExit(text, 0);
      expect(text.stdout).toMatch(
        new RegExp(
          `^dedupe key\\s+${key.replace(/[.:]/g, '\\$&')} \\(unique: pending, running\\)$`,
          'm',
        ),
      );
    });

    it('jobs run-now and jobs edit change a pending job, and refuse one a worker has started', async () => {
      const s = storage!;
      const queue = 'cli-edit';
      const original = { payload: { x: 0 }, tags: ['old'], priority: 7 };
      const delayed = async () => (await s.enqueue({ queue, ...original, delayMs: 3_600_000 })).id;
      const [due, edited] = [await delayed(), await delayed()];
      // Started as a worker starts it: claimed, then Processing.
      const type = 'cli.edit.started';
      const { id: started } = await s.enqueue({ queue, type, ...original });
      const lease = { id: started, workerId: seed.workerId, leaseId: randomUUID() };
      const claimed = await s.fetchNextBatch({
        workerId: lease.workerId,
        leaseId: lease.leaseId,
        limit: 1,
        handled: { queues: [], types: [{ queue, type }] },
      });
      expect(claimed.map((job) => job.id)).toEqual([started]);
      expect(await s.markAsProcessing([lease])).toHaveLength(1);

      const edits = ['--priority', '3', '--tags', 'a,b', '--payload', '{"x":1}'];
      const [runNow, edit, refused, missing] = await Promise.all([
        cli('jobs', 'run-now', due, '--json'),
        cli('jobs', 'edit', edited, ...edits),
        cli('jobs', 'edit', started, ...edits),
        cli('jobs', 'run-now', '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'),
      ]);

      expectExit(runNow, 0);
      expect(json(runNow)).toEqual({ id: due, edits: { runAt: 'now' } });
      // Due at once; nothing else changed.
      expect(await s.getJob(due)).toMatchObject({
        status: JobStatus.Pending,
        scheduledAtUtc: null,
        ...original,
      });

      expectExit(edit, 0);
      expect(edit.stdout).toContain(`Job ${edited} edited.`);
      // Edited; still delayed, as --run-at was not given.
      expect(await s.getJob(edited)).toMatchObject({
        status: JobStatus.Pending,
        priority: 3,
        tags: ['a', 'b'],
        payload: { x: 1 },
        scheduledAtUtc: expect.any(Date),
      });

      expectExit(refused, 1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(
        `Job ${started} cannot be edited: it is Processing, and only a Pending job can be`,
      );
      expect(await s.getJob(started)).toMatchObject({ status: JobStatus.Processing, ...original });

      expectExit(missing, 3);
      expect(missing.stderr).toContain('no job has this id');
    });

    it('migrate --binary-keys: a new PostgreSQL install is byte-wise already; SQLite refuses it', async () => {
      if (dialect === 'sqlite') {
        const refused = await cli('migrate', '--binary-keys', '--json');
        expectExit(refused, 2);
        expect(jsonError(refused)).toMatchObject({ name: 'CliUsageError' });
        expect(refused.stderr).toContain('--binary-keys is for SQL Server and PostgreSQL');
        return;
      }
      const run = await cli('migrate', '--binary-keys');
      expectExit(run, 0);
      expect(run.stdout).toContain(
        'The job-id columns were byte-wise already; nothing to convert.',
      );
    });

    // Last: it changes the schema's layout under the tests above.
    it('migrate --partitioning: PostgreSQL converts the Archive and the DLQ, keeping their rows; SQLite refuses it', async () => {
      if (dialect === 'sqlite') {
        const refused = await cli('migrate', '--partitioning', 'day', '--json');
        expectExit(refused, 2);
        expect(jsonError(refused)).toMatchObject({ name: 'CliUsageError' });
        return;
      }
      const count = async (table: string) =>
        Number(
          (await db.sql<{ n: string }>(`SELECT count(*) AS n FROM ${db.schema}.${table}`))[0].n,
        );
      const kinds = async () =>
        (
          await db.sql<{ name: string; kind: string }>(
            `SELECT c.relname AS name, c.relkind::text AS kind FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relname IN ('jobs_archive', 'jobs_dlq') ORDER BY 1`,
            [db.schema],
          )
        ).map((r) => `${r.name}:${r.kind}`);
      const rows = { archive: await count('jobs_archive'), dlq: await count('jobs_dlq') };
      expect(rows.dlq).toBeGreaterThan(0);
      expect(await kinds()).toEqual(['jobs_archive:r', 'jobs_dlq:r']);

      const migrate = await cli('migrate', '--partitioning', 'day', '--json');
      expectExit(migrate, 0);
      expect(json(migrate)).toMatchObject({ applied: [], partitioning: { period: 'day' } });
      expect(migrate.stderr).toBe('');
      expect(await kinds()).toEqual(['jobs_archive:p', 'jobs_dlq:p']);
      expect({ archive: await count('jobs_archive'), dlq: await count('jobs_dlq') }).toEqual(rows);
    });
  },
  { only: ['sqlite', 'postgres'] satisfies StorageDialect[] },
);
