import { Injectable } from '@nestjs/common';
import { ChokaQDuplicateHandlerError, ChokaQValidationError } from '../errors';
import { HandlerDefinition, HandlerLookup } from '../interfaces/handler.interface';
import { HandledJobs, ZombieRetryRule } from '../interfaces/job.interface';
import { handlerDefinitionIssues } from '../validation/decorator-options';
import { runnableVersions } from '../validation/payload-version';

/**
 * The handlers of this process, as the runtime sees them. An exact `(queue, type)` handler wins
 * over a queue-wide one; the claim filter (`handled()`) lists queues with a queue-wide handler and
 * the exact pairs of the other queues, so this process never claims a job it cannot run.
 *
 * @publicApi
 */
@Injectable()
export class HandlerRegistry implements HandlerLookup {
  private readonly queueWide = new Map<string, HandlerDefinition>();
  private readonly exact = new Map<string, Map<string, HandlerDefinition>>();

  /**
   * Replaces the registered handlers with `handlers`, all or nothing: a duplicate throws and leaves
   * the registry as it was (so a failed start can be retried).
   */
  replaceAll(handlers: readonly HandlerDefinition[]): void {
    const next = new HandlerRegistry();
    for (const handler of handlers) next.register(handler);
    this.queueWide.clear();
    this.exact.clear();
    for (const [k, v] of next.queueWide) this.queueWide.set(k, v);
    for (const [k, v] of next.exact) this.exact.set(k, v);
  }

  /**
   * Adds a handler; a second one for the same queue-wide slot or pair throws, and so do options
   * that break the `@JobHandler` rules (`ChokaQValidationError`).
   */
  register(handler: HandlerDefinition): void {
    const issues = handlerDefinitionIssues(handler);
    if (issues.length > 0) throw new ChokaQValidationError(issues);
    if (handler.type === undefined) {
      const existing = this.queueWide.get(handler.queue);
      if (existing)
        throw new ChokaQDuplicateHandlerError(
          handler.queue,
          undefined,
          existing.name,
          handler.name,
        );
      this.queueWide.set(handler.queue, handler);
      return;
    }
    const byType = this.exact.get(handler.queue) ?? new Map<string, HandlerDefinition>();
    const existing = byType.get(handler.type);
    if (existing)
      throw new ChokaQDuplicateHandlerError(
        handler.queue,
        handler.type,
        existing.name,
        handler.name,
      );
    byType.set(handler.type, handler);
    this.exact.set(handler.queue, byType);
  }

  resolve(queue: string, type: string): HandlerDefinition | undefined {
    return this.exact.get(queue)?.get(type) ?? this.queueWide.get(queue);
  }

  handled(): HandledJobs {
    const queues = [...this.queueWide.keys()].sort();
    const types: Array<{ queue: string; type: string; minVersion: number; maxVersion: number }> =
      [];
    for (const [queue, byType] of [...this.exact.entries()].sort(([a], [b]) =>
      a.localeCompare(b),
    )) {
      if (this.queueWide.has(queue)) continue;
      for (const type of [...byType.keys()].sort()) {
        const handler = byType.get(type)!;
        types.push({ queue, type, ...runnableVersions(handler.version, handler.upgrade) });
      }
    }
    return { queues, types };
  }

  zombieRetryRules(): ZombieRetryRule[] {
    const byQueue = new Map<string, HandlerDefinition[]>();
    for (const handler of this.list()) {
      byQueue.set(handler.queue, [...(byQueue.get(handler.queue) ?? []), handler]);
    }
    const rules: ZombieRetryRule[] = [];
    for (const [queue, handlers] of [...byQueue].sort(([a], [b]) => a.localeCompare(b))) {
      // Queues where nobody opts in need no rule: without one a zombie goes to the DLQ anyway.
      if (!handlers.some((h) => h.retryZombies === true)) continue;
      for (const h of handlers) rules.push({ queue, type: h.type, retry: h.retryZombies === true });
    }
    return rules;
  }

  /** Every registered handler (for logs and diagnostics). */
  list(): HandlerDefinition[] {
    return [
      ...this.queueWide.values(),
      ...[...this.exact.values()].flatMap((m) => [...m.values()]),
    ];
  }

  /** True when no handler is registered. */
  get isEmpty(): boolean {
    return this.queueWide.size === 0 && this.exact.size === 0;
  }
}
