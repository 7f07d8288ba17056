import type { ChokaQLogger } from './chokaq-logger.interface';
import type { EntityManager, QueryRunner } from 'typeorm';

/**
 * What a handler gets besides its payload.
 *
 * @publicApi
 */
export interface JobContext {
  /** The job id (a UUIDv7). */
  readonly id: string;
  readonly queue: string;
  readonly type: string;
  /** 1 on the first run; counts runs that reached the handler. */
  readonly attempt: number;
  /** The fencing token of this run. A run whose lease was lost can no longer change the job. */
  readonly leaseId: string;
  /**
   * The batch the job belongs to, or whose callback it is (`enqueueBatch`); null outside a batch.
   * A callback reads the batch's counts with `JobClient.getBatch(ctx.batchId)`, and its jobs'
   * stored results, a page at a time, with `JobClient.getBatchResults(ctx.batchId)`.
   */
  readonly batchId: string | null;
  /**
   * Aborted when the job times out, is cancelled, the process shuts down, or heartbeats keep
   * failing. Cooperative handlers pass it on to `fetch`, database calls and loops.
   */
  readonly signal: AbortSignal;
  /**
   * Records progress (0–100, clamped) on the hot row and emits a `progress` event in this process
   * with `note` (at most 500 characters; a longer note is cut). Best effort: it never throws, and
   * a value that is not a finite number is ignored.
   */
  reportProgress(percent: number, note?: string): Promise<void>;
  /** A logger whose context names the job. */
  readonly logger: ChokaQLogger;
  /**
   * Only for a handler with `transactional: true`: an `EntityManager` bound to the run's open
   * READ COMMITTED transaction. Writes made through it (or through {@link queryRunner}) commit
   * together with the job's move to the archive, or not at all. Do not commit or roll it back
   * yourself; `manager.transaction(…)` inside it opens a savepoint. Undefined for other handlers.
   */
  readonly transaction?: EntityManager;
  /** The `QueryRunner` of {@link transaction} (the same connection and transaction), or undefined. */
  readonly queryRunner?: QueryRunner;
}
