import { Inject, Injectable, Optional, Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { CHOKAQ_RESOLVED_OPTIONS } from '../chokaq.constants';
import {
  ChokaQDuplicateRecurringJobError,
  ChokaQHandlerScopeError,
  ChokaQValidationError,
  ValidationIssue,
} from '../errors';
import {
  HandlerDefinition,
  JobBatchItem,
  JobHandlerMetadata,
} from '../interfaces/handler.interface';
import { JobContext } from '../interfaces/job-context.interface';
import type { JobEvent, OnJobEventMetadata } from '../interfaces/job-event.interface';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import { RecurringJobMetadata, RecurringJobSpec } from '../interfaces/recurring-job.interface';
import {
  DEFAULT_BATCH_WAIT_MS,
  jobEventIssues,
  jobHandlerIssues,
  recurringJobIssues,
} from '../validation/decorator-options';
import { DEFAULT_PAYLOAD_MAX_BYTES } from '../validation/validate-job';
import { ChokaQMetadataAccessor } from './chokaq-metadata.accessor';

/** An `@OnJobEvent` method, bound to its instance. */
export interface JobEventListenerDefinition extends OnJobEventMetadata {
  /** `Class.method`. */
  name: string;
  listener: (event: JobEvent) => unknown;
}

/** What discovery found in the application. */
export interface ExploredJobs {
  handlers: HandlerDefinition[];
  recurring: RecurringJobSpec[];
  listeners: JobEventListenerDefinition[];
}

type Method = (...args: unknown[]) => unknown;

/**
 * Walks every provider of the application (DiscoveryService + MetadataScanner, like
 * nestjs/schedule's explorer) and turns `@JobHandler` / `@RecurringJob` metadata into handler
 * definitions bound to their singleton instances and recurring specs. It does not register or start
 * anything: the orchestrator does, in `onModuleInit`.
 *
 * Every decorator option is checked here, with the rules and words of the `forRoot` options, and
 * every problem of every decorator is thrown at once as one {@link ChokaQValidationError}, so a bad
 * `timeoutMs` or cron expression fails the start instead of misbehaving at the first job or slot.
 */
@Injectable()
export class ChokaQExplorer {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: ChokaQMetadataAccessor,
    @Optional()
    @Inject(CHOKAQ_RESOLVED_OPTIONS)
    private readonly options?: ResolvedChokaQOptions,
  ) {}

  explore(): ExploredJobs {
    const handlers: HandlerDefinition[] = [];
    const listeners: JobEventListenerDefinition[] = [];
    const recurring = new Map<string, { spec: RecurringJobSpec; where: string }>();
    const seen = new Set<unknown>();
    const issues: ValidationIssue[] = [];

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
      for (const meta of classRecurring) {
        this.addRecurring(recurring, issues, meta, undefined, className);
      }

      for (const methodName of this.scanner.getAllMethodNames(target.prototype)) {
        const method = (target.prototype as Record<string, Method>)[methodName];
        const handlerMeta = this.accessor.getJobHandlerMetadata(method);
        const methodRecurring = this.accessor.getRecurringJobMetadata(method);
        const eventMeta = this.accessor.getJobEventMetadata(method);
        if (!handlerMeta && methodRecurring.length === 0 && !eventMeta) continue;
        if (!staticScope) {
          throw new ChokaQHandlerScopeError(
            className,
            methodName,
            wrapper.isTransient ? 'transient' : 'request',
          );
        }
        if (handlerMeta) {
          issues.push(...jobHandlerIssues(`${className}.${methodName}`, handlerMeta));
          handlers.push(this.bind(wrapper.instance as object, methodName, className, handlerMeta));
        }
        for (const meta of methodRecurring) {
          this.addRecurring(recurring, issues, meta, handlerMeta, `${className}.${methodName}`);
        }
        if (eventMeta) {
          const name = `${className}.${methodName}`;
          issues.push(...jobEventIssues(name, eventMeta));
          const instance = wrapper.instance as object;
          const method = (instance as Record<string, Method>)[methodName];
          listeners.push({ ...eventMeta, name, listener: (event) => method.call(instance, event) });
        }
      }
    }
    if (issues.length > 0) throw new ChokaQValidationError(issues);
    return { handlers, recurring: [...recurring.values()].map((r) => r.spec), listeners };
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
    const method = (instance as Record<string, Method>)[methodName];
    return {
      queue: meta.queue,
      type: meta.type,
      name,
      timeoutMs: meta.timeoutMs,
      maxAttempts: meta.maxAttempts,
      retryZombies: meta.retryZombies,
      // Only a handler that opts in carries the key, so other definitions keep their shape.
      ...(meta.transactional === true && { transactional: true }),
      ...(meta.recordResult === true && { recordResult: true }),
      ...(meta.backoff !== undefined && { backoff: meta.backoff }),
      schema: meta.schema,
      // Only a versioned definition carries these, so other definitions keep their shape.
      ...(meta.version !== undefined && { version: meta.version }),
      ...(meta.upgrade !== undefined && { upgrade: meta.upgrade }),
      // `async` turns a synchronous throw into a rejection, so the runtime sees one shape.
      invoke: async (payload: unknown, ctx: JobContext) => method.call(instance, payload, ctx),
      ...(meta.batch !== undefined && {
        batch: { size: meta.batch.size, waitMs: meta.batch.waitMs ?? DEFAULT_BATCH_WAIT_MS },
        invokeBatch: async (items: JobBatchItem[]) => method.call(instance, items),
      }),
    };
  }

  /** Adds the spec of `meta` to `into`, and its problems to `issues`. */
  private addRecurring(
    into: Map<string, { spec: RecurringJobSpec; where: string }>,
    issues: ValidationIssue[],
    meta: RecurringJobMetadata,
    handler: JobHandlerMetadata | undefined,
    where: string,
  ): void {
    const queue = meta.queue ?? handler?.queue;
    const type = meta.type ?? (meta.queue === undefined ? handler?.type : undefined) ?? queue;
    const payloadMaxBytes =
      this.options?.storage.payloadMaxBytes ??
      this.options?.payload.maxBytes ??
      DEFAULT_PAYLOAD_MAX_BYTES;
    issues.push(...recurringJobIssues(meta, where, queue, type ?? '', payloadMaxBytes));
    const existing = into.get(meta.name);
    if (existing) throw new ChokaQDuplicateRecurringJobError(meta.name, existing.where, where);
    if (queue === undefined) return;
    const spec: RecurringJobSpec = {
      name: meta.name,
      cron: meta.cron,
      queue,
      type,
      payload: meta.payload ?? {},
      timeZone: meta.timeZone ?? 'UTC',
      misfire: meta.misfire ?? 'skip',
    };
    into.set(meta.name, { spec, where });
  }
}
