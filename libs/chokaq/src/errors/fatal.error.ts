import { ChokaQError } from './chokaq.error';

/**
 * Throw from a handler when retrying cannot help (a malformed payload, a business rule that will
 * never pass): the job goes to the DLQ as `FatalError` at once, without spending further attempts.
 * Fix the cause, then resurrect the job from the DLQ.
 *
 * @publicApi
 */
export class ChokaQFatalError extends ChokaQError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
