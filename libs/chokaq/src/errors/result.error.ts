import { ChokaQFatalError } from './fatal.error';

/**
 * The return value of a handler that records its result (`@JobHandler(…, { recordResult: true })`)
 * could not be stored: it is not JSON-serialisable (a BigInt, a cycle, a function or `undefined`
 * at the top) or its JSON is over the payload size cap (`payload.maxBytes`). The result is never
 * cut short: the run fails with this error, which is fatal (a second run would return the same),
 * so the job goes to the DLQ as `FatalError` at once, its handler's own effects having happened.
 * Return less (an id or a summary), or raise the cap, then resurrect the job.
 *
 * @publicApi
 */
export class ChokaQResultError extends ChokaQFatalError {
  constructor(
    readonly queue: string,
    readonly type: string,
    readonly problem: string,
  ) {
    super(`The result of a ${queue}/${type} job cannot be stored: it ${problem}`);
  }
}
