import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type {
  FromWorker,
  StatementCounts,
  WorkerConfig,
  WorkerMemory,
  WorkerReport,
} from '../worker/protocol';
import { pollUntil } from './stats';

const REPO_ROOT = join(__dirname, '..', '..');
/** Where `compileWorkers` puts the worker's JavaScript (gitignored). */
const WORKER_SCRIPT = join(REPO_ROOT, '.tmp', 'bench-worker', 'bench', 'worker', 'bench-worker.js');
let compiled = false;

/**
 * Compiles the worker and every module it imports (ChokaQ's sources and the peers' runners) to
 * plain JavaScript with `tsc` (bench/tsconfig.worker.json, about 4 s), once per bench process.
 * Workers run as compiled code, as in production: a TypeScript loader in every worker would add
 * about 80 MB to each system's RSS and its own CPU at start-up.
 */
export function compileWorkers(): void {
  if (compiled) return;
  execFileSync(
    process.execPath,
    [require.resolve('typescript/bin/tsc'), '-p', join(REPO_ROOT, 'bench', 'tsconfig.worker.json')],
    { cwd: REPO_ROOT, stdio: 'inherit' },
  );
  compiled = true;
}

/**
 * Every live child, so that an exit of the bench for any reason (error, Ctrl-C, timeout) kills
 * them: a leaked worker would keep claiming jobs and skew the next run.
 */
const live = new Set<ChildProcess>();
let hooked = false;

function killAll(): void {
  for (const child of live) child.kill('SIGKILL');
  live.clear();
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      killAll();
      process.exit(130);
    });
  }
}

/** A forked bench worker process and its IPC protocol, every wait bounded. */
export class WorkerProcess {
  handled = 0;
  private ready = false;
  private report: WorkerReport | undefined;
  private counts: StatementCounts | undefined;
  private memoryNow: WorkerMemory | undefined;
  private failure: string | undefined;
  private exited = false;

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (message: FromWorker) => {
      if (message.type === 'ready') this.ready = true;
      else if (message.type === 'progress') this.handled = message.handled;
      else if (message.type === 'report') this.report = message.report;
      else if (message.type === 'counts') this.counts = message.counts;
      else if (message.type === 'memory') this.memoryNow = message.memory;
      else if (message.type === 'error') this.failure ??= message.message;
    });
    child.on('exit', (code, signal) => {
      this.exited = true;
      live.delete(child);
      if (!this.report && !this.failure)
        this.failure = `worker exited (code ${code}, signal ${signal})`;
    });
  }

  /** Forks a worker with `config`; `execArgv` adds node flags (e.g. `--cpu-prof`). */
  static fork(config: WorkerConfig, execArgv: string[] = []): WorkerProcess {
    hookExit();
    compileWorkers();
    const child = fork(WORKER_SCRIPT, [], {
      cwd: REPO_ROOT,
      execArgv: ['--no-warnings', ...execArgv],
      env: { ...process.env, BENCH_WORKER_CONFIG: JSON.stringify(config) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    live.add(child);
    return new WorkerProcess(child);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  private check(): void {
    if (this.failure) throw new Error(`bench worker ${this.child.pid}: ${this.failure}`);
  }

  /** Resolves when the worker has built its system (connections open, modules loaded). */
  async waitReady(timeoutMs: number): Promise<void> {
    await pollUntil(() => (this.check(), this.ready), timeoutMs, 'worker ready');
  }

  start(): void {
    this.check();
    this.child.send({ type: 'start' });
  }

  /** The worker's statement counts since `start` (its config must have `countStatements`). */
  async statementCounts(timeoutMs: number): Promise<StatementCounts> {
    this.check();
    this.counts = undefined;
    this.child.send({ type: 'mark' });
    await pollUntil(() => (this.check(), this.counts !== undefined), timeoutMs, 'worker counts');
    return this.counts!;
  }

  /** The worker process's RSS and V8 heap in use, now. */
  async memory(timeoutMs: number): Promise<WorkerMemory> {
    this.check();
    this.memoryNow = undefined;
    this.child.send({ type: 'memory' });
    await pollUntil(() => (this.check(), this.memoryNow !== undefined), timeoutMs, 'worker memory');
    return this.memoryNow!;
  }

  /** Throws if the worker failed meanwhile (called by the drain's wait loop). */
  assertAlive(): void {
    this.check();
  }

  /** Graceful stop; resolves with the worker's report, and its process has exited. */
  async stop(timeoutMs: number): Promise<WorkerReport> {
    try {
      this.check();
      this.child.send({ type: 'stop' });
      await pollUntil(() => (this.check(), this.report !== undefined), timeoutMs, 'worker report');
      await pollUntil(() => this.exited, 10_000, 'worker exit').catch(() => this.kill());
      return this.report!;
    } finally {
      this.kill();
    }
  }

  /** SIGKILL, and wait (bounded) until the process is gone. */
  async killAndWait(timeoutMs: number): Promise<void> {
    this.kill();
    await pollUntil(() => this.exited, timeoutMs, 'killed worker exit');
  }

  /** SIGKILL unless already gone. Idempotent. */
  kill(): void {
    if (!this.exited) this.child.kill('SIGKILL');
    live.delete(this.child);
  }
}
