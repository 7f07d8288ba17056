import type { HandlerDefinition } from '../interfaces/handler.interface';

/** A batch being filled: its members so far and the timer that sends it when its wait is over. */
interface OpenBatch<T> {
  members: T[];
  timer: NodeJS.Timeout;
}

/**
 * Fills the batches of batch handlers (`@JobHandler(…, { batch })`): one open batch per handler,
 * sent to `send` when it holds `batch.size` members, when `batch.waitMs` passed since its first
 * member came, or when {@link flush} asks (a run of it is being stopped). A batch is sent once,
 * and a member is in one batch.
 */
export class JobBatches<T> {
  private readonly open = new Map<HandlerDefinition, OpenBatch<T>>();

  constructor(private readonly send: (handler: HandlerDefinition, members: T[]) => void) {}

  /** Adds `member` to the open batch of `handler` (opening one), and sends the batch when full. */
  add(handler: HandlerDefinition, member: T): void {
    const { size, waitMs } = handler.batch!;
    let batch = this.open.get(handler);
    if (batch === undefined) {
      const timer = setTimeout(() => this.flush(handler), waitMs);
      timer.unref?.();
      batch = { members: [], timer };
      this.open.set(handler, batch);
    }
    batch.members.push(member);
    if (batch.members.length >= size) this.flush(handler);
  }

  /** Sends the open batch of `handler` now, if it has one. */
  flush(handler: HandlerDefinition): void {
    const batch = this.open.get(handler);
    if (batch === undefined) return;
    this.open.delete(handler);
    clearTimeout(batch.timer);
    this.send(handler, batch.members);
  }
}
