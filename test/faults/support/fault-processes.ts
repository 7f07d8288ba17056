import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import type { ChokaQWorkerStats } from '../../../libs/chokaq/src/runtime/chokaq-worker';
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
 * Starts `fixtures/fault-worker.ts` through @swc-node/register and resolves once its Nest app is up.
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
    execArgv: ['-r', '@swc-node/register', ...preload.flatMap((p) => ['-r', p])],
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
  const statsReply = (ms: number) =>
    new Promise<{ stats: ChokaQWorkerStats; clockOffsetMs: number }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no stats reply')), ms);
      const onMessage = (m: { stats?: ChokaQWorkerStats; clockOffsetMs?: number }) => {
        if (!m.stats) return;
        clearTimeout(timer);
        child.off('message', onMessage);
        resolve({ stats: m.stats, clockOffsetMs: m.clockOffsetMs ?? 0 });
      };
      child.on('message', onMessage);
      child.send({ stats: true });
    });
  return {
    child,
    workerId: config.workerId,
    exited,
    output: () => out,
    stats: async (ms = 5_000) => (await statsReply(ms)).stats,
    clockOffsetMs: async () => (await statsReply(5_000)).clockOffsetMs,
    enqueue: (queue, payload, options) =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no enqueue reply')), 10_000);
        const onMessage = (m: { enqueued?: string; enqueueError?: string }) => {
          if (m.enqueued === undefined && m.enqueueError === undefined) return;
          clearTimeout(timer);
          child.off('message', onMessage);
          if (m.enqueued !== undefined) resolve(m.enqueued);
          else reject(new Error(m.enqueueError));
        };
        child.on('message', onMessage);
        child.send({ enqueue: { queue, payload, options } });
      }),
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
