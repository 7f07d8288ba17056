import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import type { ChokaQModuleOptions } from '../../../libs/chokaq/src';
import { TS_LOADER } from '../../support/env';

const FIXTURE = join(__dirname, '..', 'fixtures', 'worker-process.ts');

/** A forked worker process running `fixtures/worker-process.ts`. */
export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly workerId: string;
  /** Output so far (for failure messages). */
  output(): string;
  /** SIGTERM, then wait for exit (bounded). */
  stop(): Promise<void>;
  /** SIGKILL, then wait for exit. */
  kill(): Promise<void>;
}

/** Starts a worker process and resolves once its Nest app is up (bounded by `timeoutMs`). */
export async function startWorkerProcess(
  config: {
    options: ChokaQModuleOptions;
    mode: 'record' | 'hang';
    runsTable: string;
    pgUrl?: string;
    sqliteFile?: string;
  },
  timeoutMs = 30_000,
): Promise<WorkerProcess> {
  return forkFixture(FIXTURE, { CHOKAQ_FIXTURE: JSON.stringify(config) }, timeoutMs);
}

/**
 * Forks `fixture` (TypeScript, through the tests' loader, TS_LOADER) with `env` added to this process's
 * environment, and resolves once it sends `{ ready: workerId }` (bounded by `timeoutMs`).
 */
export async function forkFixture(
  fixture: string,
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<WorkerProcess> {
  const child = fork(fixture, [], {
    execArgv: ['-r', TS_LOADER],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const workerId = await new Promise<string>((resolve, reject) => {
    // A start that fails kills the child first: no test holds it yet, so nothing else would stop
    // it, and a child left running keeps Jest from exiting.
    const fail = (error: Error) => {
      clearTimeout(timer);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      void exited.then(() => reject(error));
    };
    const timer = setTimeout(
      () => fail(new Error(`worker process not ready after ${timeoutMs} ms:\n${out}`)),
      timeoutMs,
    );
    child.once('message', (m: { ready?: string }) => {
      clearTimeout(timer);
      if (m.ready) resolve(m.ready);
      else fail(new Error(`unexpected message ${JSON.stringify(m)}`));
    });
    child.once('exit', (code) => {
      fail(new Error(`worker process exited with ${code} before it was ready:\n${out}`));
    });
  });
  const waitExit = async (ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
  };
  return {
    child,
    workerId,
    output: () => out,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await waitExit(20_000);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}
