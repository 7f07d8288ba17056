import Database from 'better-sqlite3';
import { ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import type { StorageOptions } from '../../../libs/chokaq/src/interfaces/storage-options.interface';
import type { ChokaQWorkerStats } from '../../../libs/chokaq/src/runtime/chokaq-worker';
import type { JobStorage } from '../../../libs/chokaq/src/storage/job-storage';
import { PG_URL, TS_LOADER } from '../../support/env';
import { TestSchema, createTestSchema } from '../../support/test-database';
import type { FaultFixtureConfig } from '../fixtures/fault-worker';

const FIXTURE = join(__dirname, '..', 'fixtures', 'fault-worker.ts');

/** Columns of the runs table every fault fixture records into (see fixtures/fault-worker.ts). */
export function runsDdl(table: string): string {
  return (
    `CREATE TABLE ${table} (job_id varchar(64) NOT NULL, worker_id varchar(64) NOT NULL, ` +
    `lease_id varchar(64) NULL, attempt integer NOT NULL, phase varchar(16) NOT NULL, ` +
    `detail varchar(200) NULL, at_ms bigint NOT NULL)`
  );
}

/**
 * The one test fixture plus what the fault suites add: a runs table the fault workers record into
 * (in the schema on PostgreSQL; a separate records file on SQLite, so recording never contends
 * for the job file's write lock) and a storage of this process.
 */
export interface FaultDatabase extends TestSchema {
  /** A storage of this process on the database (opened with the overrides; closed by `close()`). */
  readonly storageHere: JobStorage;
  /** Where the fixtures record runs: `{ runsTable, recordPgUrl | recordFile }`. */
  readonly record: { runsTable: string; recordPgUrl?: string; recordFile?: string };
  /** Raw SQL on the records database, with `?` placeholders. */
  runs<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
}

/**
 * A fresh database for one fault test. `options` (for workers and producers, without a proxy)
 * leave out `overrides`, which only the storage of this process gets. The raw connection waits at
 * most 2 s for a lock, so a suite that holds the SQLite write lock on purpose stays responsive.
 */
export async function openFaultDatabase(
  dialect: 'sqlite' | 'postgres',
  overrides: Partial<StorageOptions> = {},
): Promise<FaultDatabase> {
  const db = createTestSchema(dialect, {
    busyTimeoutMs: 2_000,
    overrides: dialect === 'postgres' ? { poolSize: 4 } : {},
  });
  let records: Database.Database | undefined;
  try {
    const storageHere = await db.openStorage(overrides);
    if (dialect === 'postgres') {
      const runsTable = `"${db.schema}".fault_runs`;
      await db.sql(runsDdl(runsTable));
      return { ...db, storageHere, record: { runsTable, recordPgUrl: PG_URL }, runs: db.query };
    }
    const recordFile = join(dirname(db.file), 'runs.db');
    const rec = (records = new Database(recordFile));
    rec.pragma('journal_mode = WAL');
    rec.pragma('busy_timeout = 2000');
    rec.exec(runsDdl('fault_runs'));
    return {
      ...db,
      storageHere,
      record: { runsTable: 'fault_runs', recordFile },
      runs: async <T>(query: string, params: unknown[] = []) => {
        const statement = rec.prepare(query);
        return (
          statement.reader ? statement.all(...params) : (statement.run(...params), [])
        ) as T[];
      },
      async close() {
        rec.close();
        await db.close();
      },
    };
  } catch (error) {
    records?.close();
    await db.close();
    throw error;
  }
}

/**
 * Checks the pillars after a run: every id in `accepted` is in exactly one of Archive and DLQ, the
 * hot table is empty, and the lifetime counters equal the rows (nothing was purged; `resurrected`
 * DLQ → hot moves each removed one DLQ row). Returns the violations (empty when all hold).
 */
export async function pillarViolations(
  db: Pick<TestSchema, 'query' | 'table'>,
  accepted: readonly string[],
  { allowExtra = [] as readonly string[] } = {},
): Promise<string[]> {
  const violations: string[] = [];
  const ids = async (t: 'hot' | 'archive' | 'dlq') =>
    (await db.query<{ id: string }>(`SELECT id FROM ${db.table(t)}`)).map((r) => r.id);
  const [hot, archive, dlq] = [await ids('hot'), await ids('archive'), await ids('dlq')];
  if (hot.length > 0) violations.push(`${hot.length} job(s) still hot`);
  const archived = new Set(archive);
  const both = dlq.filter((id) => archived.has(id));
  if (both.length > 0)
    violations.push(`${both.length} job(s) in Archive and DLQ: ${both.slice(0, 5)}`);
  const everywhere = new Set([...hot, ...archive, ...dlq]);
  const lost = accepted.filter((id) => !everywhere.has(id));
  if (lost.length > 0) violations.push(`${lost.length} accepted job(s) lost: ${lost.slice(0, 5)}`);
  const known = new Set([...accepted, ...allowExtra]);
  const unknown = [...everywhere].filter((id) => !known.has(id));
  if (unknown.length > 0)
    violations.push(`${unknown.length} job(s) nobody enqueued: ${unknown.slice(0, 5)}`);
  const [c] = await db.query<Record<string, unknown>>(
    `SELECT SUM(succeeded_total) AS ok, SUM(failed_total) AS failed, SUM(cancelled_total) AS cancelled, ` +
      `SUM(resurrected_total) AS resurrected FROM ${db.table('stats')}`,
  );
  const ok = Number(c.ok ?? 0);
  const moved = Number(c.failed ?? 0) + Number(c.cancelled ?? 0);
  const resurrected = Number(c.resurrected ?? 0);
  if (ok !== archive.length)
    violations.push(`SucceededTotal ${ok} ≠ ${archive.length} archive rows`);
  if (moved !== dlq.length + resurrected) {
    violations.push(
      `FailedTotal + CancelledTotal ${moved} ≠ ${dlq.length} DLQ rows + ${resurrected} resurrected`,
    );
  }
  return violations;
}

/** A forked fault worker. */
export interface FaultWorker {
  readonly child: ChildProcess;
  readonly workerId: string;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** The worker's counters (conflicts, late results, …), over IPC. */
  stats(timeoutMs?: number): Promise<ChokaQWorkerStats>;
  /** How far the child's `Date.now()` is from the real clock (its clock skew), in ms. */
  clockOffsetMs(): Promise<number>;
  /** Enqueues through the child's own JobClient (its clock); resolves to the job id. */
  enqueue(queue: string, payload: unknown, options?: object): Promise<string>;
  /** SIGTERM, then wait for exit (bounded; SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL, then wait for exit. */
  kill(): Promise<void>;
  readonly exited: Promise<void>;
}

/** Every child started by this module that has not exited: the safety net of `killAll`. */
const live = new Set<ChildProcess>();

/** Kills every fault worker this process started that is still alive (afterAll / finally). */
export async function killAllFaultWorkers(): Promise<void> {
  await Promise.all(
    [...live].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
}

/**
 * Starts `fixtures/fault-worker.ts` through the tests' TypeScript loader (TS_LOADER) and resolves once its Nest app is up.
 * `preload` adds `-r <module>` (the clock-skew patch); `env` is merged into the child's environment.
 */
export async function startFaultWorker(
  config: FaultFixtureConfig,
  {
    preload = [],
    env = {},
    timeoutMs = 30_000,
  }: { preload?: string[]; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<FaultWorker> {
  const child = fork(FIXTURE, [], {
    execArgv: ['-r', TS_LOADER, ...preload.flatMap((p) => ['-r', p])],
    env: { ...process.env, ...env, CHOKAQ_FAULT_FIXTURE: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  live.add(child);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      live.delete(child);
      resolve();
    }),
  );
  const alive = () => child.exitCode === null && child.signalCode === null;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`fault worker not ready after ${timeoutMs} ms:\n${out}`)),
        timeoutMs,
      );
      const onMessage = (m: { ready?: string }) => {
        if (!m.ready) return;
        clearTimeout(timer);
        child.off('message', onMessage);
        resolve();
      };
      child.on('message', onMessage);
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`fault worker exited with ${child.exitCode} before ready:\n${out}`));
      });
    });
  } catch (error) {
    if (alive()) child.kill('SIGKILL');
    throw error;
  }
  const waitExit = async (ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
  };
  /**
   * Sends `message` and resolves with the first reply `pick` accepts. With a callback, a send to a
   * child whose channel has closed (it died) rejects the request instead of becoming an 'error'
   * event of the child process, which nothing handles.
   */
  const request = <T>(
    message: object,
    pick: (reply: Record<string, unknown>) => { value: T } | { error: Error } | undefined,
    label: string,
    ms: number,
  ) =>
    new Promise<T>((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        child.off('message', onMessage);
      };
      const timer = setTimeout(() => {
        settle();
        reject(new Error(`no ${label} reply`));
      }, ms);
      const onMessage = (reply: Record<string, unknown>) => {
        const picked = pick(reply);
        if (!picked) return;
        settle();
        if ('value' in picked) resolve(picked.value);
        else reject(picked.error);
      };
      child.on('message', onMessage);
      child.send(message, (error) => {
        if (!error) return;
        settle();
        reject(error);
      });
    });
  const statsReply = (ms: number) =>
    request(
      { stats: true },
      (m) =>
        m.stats
          ? {
              value: {
                stats: m.stats as ChokaQWorkerStats,
                clockOffsetMs: (m.clockOffsetMs as number | undefined) ?? 0,
              },
            }
          : undefined,
      'stats',
      ms,
    );
  return {
    child,
    workerId: config.workerId,
    exited,
    output: () => out,
    stats: async (ms = 5_000) => (await statsReply(ms)).stats,
    clockOffsetMs: async () => (await statsReply(5_000)).clockOffsetMs,
    enqueue: (queue, payload, options) =>
      request<string>(
        { enqueue: { queue, payload, options } },
        (m) =>
          m.enqueued !== undefined
            ? { value: String(m.enqueued) }
            : m.enqueueError !== undefined
              ? { error: new Error(String(m.enqueueError)) }
              : undefined,
        'enqueue',
        10_000,
      ),
    async stop(graceMs = 20_000) {
      if (!alive()) return;
      child.kill('SIGTERM');
      await waitExit(graceMs);
      if (alive()) {
        child.kill('SIGKILL');
        await exited;
      }
    },
    async kill() {
      if (!alive()) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** A producer of the fault suites: what it enqueued, and which calls threw with what. */
export interface SteadyProducer {
  /** Ids of the calls that returned. */
  readonly accepted: string[];
  /** Ids of the calls that threw: such a job may exist (its commit preceded the lost reply). */
  readonly failedIds: string[];
  readonly errors: unknown[];
  /** Stops after the call under way. */
  stop(): Promise<void>;
}

/**
 * Enqueues one job at a time with an id chosen here, `intervalMs` apart, until `stop()`, recording
 * what happened to each call. A failed call's id is remembered: if the insert committed but the
 * reply was lost, the job may exist, and that is allowed (the same id makes the caller's retry
 * idempotent).
 */
export function steadyProducer(
  enqueue: (id: string) => Promise<unknown>,
  intervalMs: number,
): SteadyProducer {
  const accepted: string[] = [];
  const failedIds: string[] = [];
  const errors: unknown[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const id = randomUUID();
      try {
        await enqueue(id);
        accepted.push(id);
      } catch (error) {
        failedIds.push(id);
        errors.push(error);
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    accepted,
    failedIds,
    errors,
    stop: async () => {
      running = false;
      await done;
    },
  };
}
