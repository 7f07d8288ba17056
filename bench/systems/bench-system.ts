import type { BenchDialect } from '../lib/args';
import type { BenchPayload, WorkerConfig } from '../worker/protocol';

/** One fresh schema (or SQLite file) of one system, seen from the bench process. */
export interface SystemRun {
  /** The worker configuration for this run's tables at `concurrency`. */
  workerConfig(concurrency: number): WorkerConfig;
  /** One enqueue call with one job. */
  enqueueOne(payload: BenchPayload): Promise<void>;
  /** One bulk enqueue call with all of `payloads`. */
  enqueueMany(payloads: BenchPayload[]): Promise<void>;
  /** The largest `payloads` length one bulk call should get when pre-filling. */
  readonly prefillChunk: number;
  /** Jobs the database shows finished (ChokaQ: archived; graphile-worker: deleted; pg-boss: completed). */
  finishedCount(): Promise<number>;
  /**
   * ChokaQ only: one retention pass that deletes every archived row (`applyRetention` with
   * `archiveMs: 0`, the other tables untouched), resolving to the archive rows it deleted.
   */
  retentionPass?(): Promise<number>;
  /** ChokaQ only: what the crash scenario reads and does after a SIGKILL ({@link CrashProbe}). */
  readonly crashProbe?: CrashProbe;
  /** Drops the schema (or deletes the file) and closes connections. Idempotent. */
  close(): Promise<void>;
}

/** The crash scenario's view of a ChokaQ run's tables. */
export interface CrashProbe {
  /** Payload `i` of every Processing row. */
  startedPayloads(): Promise<number[]>;
  /** Fetched rows. */
  fetchedCount(): Promise<number>;
  /** Zombies to the DLQ and Fetched rows back to Pending, whatever their age, until none is left. */
  rescueAll(): Promise<void>;
  /** Rows per pillar, and distinct ids over Archive and DLQ. */
  pillars(): Promise<{ hot: number; archive: number; dlq: number; distinct: number }>;
}

/** A system under test on one dialect. */
export interface BenchSystem {
  /** Stable id used in JSON output, e.g. `chokaq`, `graphile-preset`. */
  readonly id: string;
  /** Column header, e.g. `graphile-worker 0.17.3 (preset)`. */
  readonly label: string;
  readonly dialect: BenchDialect;
  readonly peer: boolean;
  /** Its runs have {@link SystemRun.retentionPass} (the retention scenario runs only then). */
  readonly retention?: boolean;
  /** One line for RESULTS.md: what was configured. */
  readonly settings: string;
  open(): Promise<SystemRun>;
}

/** The queue (ChokaQ), task identifier (graphile-worker) or queue name (pg-boss) of every bench job. */
export const BENCH_QUEUE = 'bench';
