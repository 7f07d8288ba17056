import { ChokaQError } from './chokaq.error';

/**
 * Two handlers were found for the same queue (queue-wide) or the same `(queue, type)` pair.
 * Startup fails, because which one runs would otherwise depend on discovery order.
 *
 * @publicApi
 */
export class ChokaQDuplicateHandlerError extends ChokaQError {
  constructor(
    readonly queue: string,
    readonly type: string | undefined,
    readonly first: string,
    readonly second: string,
  ) {
    super(
      `Two ChokaQ handlers for ${type === undefined ? `every type of queue "${queue}"` : `queue "${queue}", type "${type}"`}: ` +
        `${first} and ${second}. Keep one @JobHandler for it, or give each a distinct { type }.`,
    );
  }
}
