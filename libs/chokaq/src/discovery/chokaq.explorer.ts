import { Injectable, Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { JobHandlerMetadata } from '../decorators/job-handler.decorator';
import { RecurringJobMetadata } from '../decorators/recurring-job.decorator';
import {
  ChokaQDuplicateRecurringJobError,
  ChokaQHandlerScopeError,
  ChokaQValidationError,
} from '../errors';
import { JobContext } from '../runtime/job-context';
import { RecurringJobSpec } from '../runtime/recurring-job-spec';
import { assertQueueName } from '../storage/shared/validate-job';
import { ChokaQMetadataAccessor } from './chokaq-metadata.accessor';
import { HandlerDefinition } from './handler-definition';

/** What discovery found in the application. */
export interface ExploredJobs {
  handlers: HandlerDefinition[];
  recurring: RecurringJobSpec[];
}

type Method = (...args: unknown[]) => unknown;

/**
 * Walks every provider of the application (DiscoveryService + MetadataScanner, like
 * nestjs/schedule's explorer) and turns `@JobHandler` / `@RecurringJob` metadata into handler
 * definitions bound to their singleton instances and recurring specs. It does not register or start
 * anything: the orchestrator does, in `onModuleInit`.
 */
@Injectable()
export class ChokaQExplorer {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: ChokaQMetadataAccessor,
  ) {}

  explore(): ExploredJobs {
    const handlers: HandlerDefinition[] = [];
    const recurring = new Map<string, { spec: RecurringJobSpec; where: string }>();
    const seen = new Set<unknown>();

    for (const wrapper of this.discovery.getProviders()) {
      const target = this.scanTarget(wrapper);
      if (!target || seen.has(target.prototype)) continue;
      seen.add(target.prototype);
      const className = target.ctor?.name || String(wrapper.name);
      const staticScope = wrapper.isDependencyTreeStatic() && !wrapper.isTransient;

      const classRecurring = target.ctor ? this.accessor.getRecurringJobMetadata(target.ctor) : [];
      if (classRecurring.length > 0 && !staticScope) {
        throw new ChokaQHandlerScopeError(
          className,
          '(class)',
          wrapper.isTransient ? 'transient' : 'request',
        );
      }
      for (const meta of classRecurring) this.addRecurring(recurring, meta, undefined, className);

      for (const methodName of this.scanner.getAllMethodNames(target.prototype)) {
        const method = (target.prototype as Record<string, Method>)[methodName];
        const handlerMeta = this.accessor.getJobHandlerMetadata(method);
        const methodRecurring = this.accessor.getRecurringJobMetadata(method);
        if (!handlerMeta && methodRecurring.length === 0) continue;
        if (!staticScope) {
          throw new ChokaQHandlerScopeError(
            className,
            methodName,
            wrapper.isTransient ? 'transient' : 'request',
          );
        }
        if (handlerMeta)
          handlers.push(this.bind(wrapper.instance as object, methodName, className, handlerMeta));
        for (const meta of methodRecurring) {
          this.addRecurring(recurring, meta, handlerMeta, `${className}.${methodName}`);
        }
      }
    }
    return { handlers, recurring: [...recurring.values()].map((r) => r.spec) };
  }

  /**
   * The prototype whose methods to scan. For singleton providers it is the instance's own
   * prototype (this also covers factory providers returning class instances); for request-scoped
   * and transient class providers there is no usable instance, so the class prototype is scanned
   * just to refuse decorated methods there.
   */
  private scanTarget(wrapper: InstanceWrapper): { prototype: object; ctor?: Type } | undefined {
    const { instance, metatype } = wrapper;
    const isClassProvider =
      !wrapper.inject && typeof metatype === 'function' && !!metatype.prototype;
    const staticScope = wrapper.isDependencyTreeStatic() && !wrapper.isTransient;
    if (!staticScope) {
      return isClassProvider
        ? { prototype: metatype.prototype as object, ctor: metatype as Type }
        : undefined;
    }
    if (!instance || typeof instance !== 'object') return undefined;
    const prototype = Object.getPrototypeOf(instance) as object | null;
    if (!prototype || prototype === Object.prototype) return undefined;
    return { prototype, ctor: (instance as object).constructor as Type };
  }

  private bind(
    instance: object,
    methodName: string,
    className: string,
    meta: JobHandlerMetadata,
  ): HandlerDefinition {
    const name = `${className}.${methodName}`;
    assertQueueName(meta.queue, `@JobHandler of ${name}: queue`);
    const method = (instance as Record<string, Method>)[methodName];
    return {
      queue: meta.queue,
      type: meta.type,
      name,
      timeoutMs: meta.timeoutMs,
      maxAttempts: meta.maxAttempts,
      retryZombies: meta.retryZombies,
      // `async` turns a synchronous throw into a rejection, so the runtime sees one shape.
      invoke: async (payload: unknown, ctx: JobContext) => method.call(instance, payload, ctx),
    };
  }

  private addRecurring(
    into: Map<string, { spec: RecurringJobSpec; where: string }>,
    meta: RecurringJobMetadata,
    handler: JobHandlerMetadata | undefined,
    where: string,
  ): void {
    const queue = meta.queue ?? handler?.queue;
    if (queue === undefined) {
      throw new ChokaQValidationError([
        {
          path: `@RecurringJob('${meta.name}') on ${where}: queue`,
          message: 'is required on a class, or on a method that is not a @JobHandler',
          value: undefined,
        },
      ]);
    }
    assertQueueName(queue, `@RecurringJob('${meta.name}') on ${where}: queue`);
    const existing = into.get(meta.name);
    if (existing) throw new ChokaQDuplicateRecurringJobError(meta.name, existing.where, where);
    const spec: RecurringJobSpec = {
      name: meta.name,
      cron: meta.cron,
      queue,
      type: meta.type ?? (meta.queue === undefined ? handler?.type : undefined) ?? queue,
      payload: meta.payload ?? {},
      timeZone: meta.timeZone ?? 'UTC',
      misfire: meta.misfire ?? 'skip',
    };
    into.set(meta.name, { spec, where });
  }
}
