import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { StreamLogger } from '../common/stream-logger';
import { Observable } from 'rxjs';
import { toError } from '../common/error-text';
import { logEvent } from '../common/log-events';
import {
  JOB_EVENT_NAMES,
  type JobEvent,
  type JobEventFilter,
  type JobEventName,
} from '../interfaces/job-event.interface';

/** How one listener is registered: which events of which jobs, and a name for its log lines. */
export interface JobEventListenerOptions extends JobEventFilter {
  /** The events it hears; default all of them. */
  events?: readonly JobEventName[];
  /** Names the listener in log lines and {@link JobEvents.listenerStats} (e.g. `Class.method`). */
  name?: string;
}

/** What a listener has been through since it was registered. @publicApi */
export interface JobEventListenerStats {
  name: string;
  /** Events waiting for it now. */
  queued: number;
  /** Events dropped because its queue was full. */
  dropped: number;
  /** Events it threw (or rejected) on. */
  failed: number;
}

/** The emitting side of {@link JobEvents}, as the worker and the admin API see it. */
export interface JobEventSink {
  /** Whether any listener hears `name` (so an emitter can skip building the event). */
  hasListeners(name: JobEventName): boolean;
  /** Whether any listener is registered at all. */
  readonly listening: boolean;
  emit(event: JobEvent): void;
}

/** A listener that threw is logged at most this often (with the count of the ones not logged). */
const FAILURE_LOG_INTERVAL_MS = 10_000;

/**
 * One listener with its own bounded queue. Events are handed to it one at a time, never from the
 * emitter's call stack; an async listener's promise is awaited before its next event, so a slow
 * listener only backs up its own queue. A full queue drops the listener's new events.
 */
class ListenerQueue {
  private readonly queue: JobEvent[] = [];
  private draining = false;
  dropped = 0;
  failed = 0;
  private suppressedFailures = 0;
  private lastFailureLog = -Infinity;

  constructor(
    readonly name: string,
    readonly events: ReadonlySet<JobEventName>,
    readonly filter: JobEventFilter,
    private readonly listener: (event: JobEvent) => unknown,
    private readonly maxQueued: number,
    private readonly logger: ChokaQLogger,
  ) {}

  get queued(): number {
    return this.queue.length;
  }

  hears(event: JobEvent): boolean {
    if (!this.events.has(event.name)) return false;
    if (this.filter.queue !== undefined && this.filter.queue !== event.job.queue) return false;
    return this.filter.type === undefined || this.filter.type === event.job.type;
  }

  offer(event: JobEvent): void {
    if (this.queue.length >= this.maxQueued) {
      if (this.dropped++ === 0) {
        logEvent(
          this.logger,
          'EventListenerBehind',
          `Job event listener ${this.name} is ${this.maxQueued} events behind; its new events are ` +
            `dropped until it catches up (further drops are counted, not logged)`,
          { listener: this.name, maxQueued: this.maxQueued },
        );
      }
      return;
    }
    this.queue.push(event);
    if (!this.draining) {
      this.draining = true;
      setImmediate(() => void this.drain());
    }
  }

  private async drain(): Promise<void> {
    for (let event = this.queue.shift(); event; event = this.queue.shift()) {
      try {
        await this.listener(event);
      } catch (error) {
        this.failed++;
        this.logFailure(event, error);
      }
    }
    this.draining = false;
  }

  private logFailure(event: JobEvent, error: unknown): void {
    const now = Date.now();
    if (now - this.lastFailureLog < FAILURE_LOG_INTERVAL_MS) {
      this.suppressedFailures++;
      return;
    }
    const suppressed = this.suppressedFailures;
    this.suppressedFailures = 0;
    this.lastFailureLog = now;
    const err = toError(error);
    logEvent(
      this.logger,
      'EventListenerFailed',
      `Job event listener ${this.name} threw on ${event.name} of job ${event.job.id}: ${err.message}` +
        (suppressed > 0 ? ` (${suppressed} more failure(s) since the last one logged)` : ''),
      {
        listener: this.name,
        jobEvent: event.name,
        jobId: event.job.id,
        error: err.message,
        suppressed,
      },
      err.stack,
    );
  }
}

/**
 * The in-process stream of job lifecycle events (see {@link JOB_EVENT_NAMES} for what each means).
 * Inject it to subscribe with RxJS; `@OnJobEvent` methods are registered on it at startup.
 *
 * ```ts
 * constructor(events: JobEvents) {
 *   events.on('dead', { queue: 'emails' }).subscribe((e) => alert(e.job.id, e.error));
 * }
 * ```
 *
 * Events are local to the process that made the move they describe, and emitted only after that
 * move committed. A listener cannot affect a job: each has its own bounded queue
 * (`events.maxQueuedPerListener`), is called outside the worker's call stack, and what it throws
 * is logged and counted.
 *
 * It is the worker's {@link JobEventSink} (checked where the module hands it to the worker; not
 * declared here, so the public API does not name that internal interface).
 *
 * @publicApi
 */
export class JobEvents {
  private readonly listeners = new Set<ListenerQueue>();
  /** Listeners per event name, so an emitter without listeners pays one lookup. */
  private readonly heard = new Map<JobEventName, number>();
  private anonymous = 0;

  /** The module builds it: inject `JobEvents` instead. @internal */
  constructor(
    private readonly options: { maxQueuedPerListener: number },
    private readonly logger: ChokaQLogger = new StreamLogger('ChokaQ'),
  ) {}

  /**
   * The events named (one, several, or every one with `'*'`), of the jobs `filter` selects, as an
   * `Observable`. Each subscription is a listener with its own queue; unsubscribing removes it.
   */
  on(
    events: JobEventName | readonly JobEventName[] | '*',
    filter: JobEventFilter = {},
  ): Observable<JobEvent> {
    const names = events === '*' ? JOB_EVENT_NAMES : typeof events === 'string' ? [events] : events;
    return new Observable<JobEvent>((subscriber) =>
      this.listen((event) => subscriber.next(event), { ...filter, events: names }),
    );
  }

  /** Registers a listener; returns the function that removes it. */
  listen(
    listener: (event: JobEvent) => unknown,
    options: JobEventListenerOptions = {},
  ): () => void {
    const events = new Set(options.events ?? JOB_EVENT_NAMES);
    const entry = new ListenerQueue(
      options.name ?? `#${++this.anonymous}`,
      events,
      { queue: options.queue, type: options.type },
      listener,
      this.options.maxQueuedPerListener,
      this.logger,
    );
    this.listeners.add(entry);
    for (const name of events) this.heard.set(name, (this.heard.get(name) ?? 0) + 1);
    return () => {
      if (!this.listeners.delete(entry)) return;
      for (const name of events) this.heard.set(name, (this.heard.get(name) ?? 1) - 1);
    };
  }

  /** Each listener's queue length, drops and failures. */
  listenerStats(): JobEventListenerStats[] {
    return [...this.listeners].map(({ name, queued, dropped, failed }) => ({
      name,
      queued,
      dropped,
      failed,
    }));
  }

  /** @internal */
  get listening(): boolean {
    return this.listeners.size > 0;
  }

  /** @internal */
  hasListeners(name: JobEventName): boolean {
    return (this.heard.get(name) ?? 0) > 0;
  }

  /** @internal Queues `event` for every listener that hears it; returns at once. */
  emit(event: JobEvent): void {
    if (!this.hasListeners(event.name)) return;
    for (const listener of this.listeners) {
      if (listener.hears(event)) listener.offer(event);
    }
  }
}
