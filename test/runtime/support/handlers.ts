import type {
  HandlerDefinition,
  HandlerLookup,
} from '../../../libs/chokaq/src/interfaces/handler.interface';
import type { JobContext } from '../../../libs/chokaq/src/interfaces/job-context.interface';
import type {
  HandledJobs,
  ZombieRetryRule,
} from '../../../libs/chokaq/src/interfaces/job.interface';

/** The handler function of a test. */
export type TestHandlerFn = (payload: unknown, ctx: JobContext) => unknown;

/** A minimal {@link HandlerLookup}: `(queue, type)` handlers win over queue-wide ones. */
export class TestHandlers implements HandlerLookup {
  private readonly definitions: HandlerDefinition[] = [];

  /** Registers a handler; `type` undefined = queue-wide. */
  add(
    queue: string,
    fn: TestHandlerFn,
    options: {
      type?: string;
      timeoutMs?: number;
      maxAttempts?: number;
      retryZombies?: boolean;
    } = {},
  ): this {
    this.definitions.push({
      queue,
      type: options.type,
      name: `test.${queue}.${options.type ?? '*'}`,
      timeoutMs: options.timeoutMs,
      maxAttempts: options.maxAttempts,
      retryZombies: options.retryZombies,
      invoke: async (payload, ctx) => fn(payload, ctx),
    });
    return this;
  }

  /** Removes every handler of `queue` (simulates a handler removed after the claim). */
  remove(queue: string): void {
    for (let i = this.definitions.length - 1; i >= 0; i--) {
      if (this.definitions[i].queue === queue) this.definitions.splice(i, 1);
    }
  }

  resolve(queue: string, type: string): HandlerDefinition | undefined {
    return (
      this.definitions.find((d) => d.queue === queue && d.type === type) ??
      this.definitions.find((d) => d.queue === queue && d.type === undefined)
    );
  }

  handled(): HandledJobs {
    const queues = [
      ...new Set(this.definitions.filter((d) => d.type === undefined).map((d) => d.queue)),
    ];
    const types = this.definitions
      .filter((d) => d.type !== undefined && !queues.includes(d.queue))
      .map((d) => ({ queue: d.queue, type: d.type! }));
    return { queues, types };
  }

  zombieRetryRules(): ZombieRetryRule[] {
    const opted = new Set(this.definitions.filter((d) => d.retryZombies).map((d) => d.queue));
    return this.definitions
      .filter((d) => opted.has(d.queue))
      .map((d) => ({ queue: d.queue, type: d.type, retry: d.retryZombies === true }));
  }
}
