import { ChokaQError } from './chokaq.error';

/**
 * The reason of a job's `AbortSignal` when its execution timeout fires, and the error stored in the
 * DLQ (`Timeout`). Raise the handler's `timeoutMs` (or the queue's `ExecutionTimeoutMs`) if the
 * work legitimately takes longer, and pass `ctx.signal` on so the work stops when it fires.
 *
 * @publicApi
 */
export class ChokaQJobTimeoutError extends ChokaQError {
  constructor(
    readonly jobId: string,
    readonly timeoutMs: number,
  ) {
    super(`Job ${jobId} exceeded its execution timeout of ${timeoutMs} ms and was aborted.`);
  }
}
