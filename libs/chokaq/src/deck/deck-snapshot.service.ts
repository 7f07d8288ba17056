import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  Observable,
  Subject,
  catchError,
  exhaustMap,
  firstValueFrom,
  from,
  merge,
  of,
  shareReplay,
  timer,
} from 'rxjs';
import { ChokaQAdmin } from '../admin/chokaq-admin.service';
import { publicErrorCode, toError } from '../common/error-text';
import type { QueueGroupLoad, QueueInfo } from '../interfaces/job.interface';
import type {
  QueueHealth,
  QueueStats,
  ReadSource,
  SummaryStats,
  ThroughputStats,
} from '../interfaces/job-view.interface';
import type { WorkerInfo } from '../interfaces/worker.interface';
import { DECK_OPTIONS } from './deck.constants';
import type { ResolvedDeckOptions } from './deck-options';

/** One queue as a card of the Queues panel shows it: controls, counts, lag and recent outcomes. */
export interface DeckQueue extends QueueInfo {
  pending: number;
  fetched: number;
  processing: number;
  /** Jobs waiting on their dependencies. */
  waiting: number;
  duePending: number;
  /** Pending jobs an open circuit holds back, and when the first of them is due again. */
  heldPending: number;
  heldUntilUtc: Date | null;
  /** The longest wait of its due and held jobs. */
  maxLagMs: number;
  succeededTotal: number;
  failedTotal: number;
  /** Jobs an open circuit handed back unrun (lifetime). */
  deferredTotal: number;
  /** Its job types whose circuit is not closed on some live worker, and on how many. */
  circuits: DeckCircuit[];
  /** Succeeded and failed over the last five minutes (from the metric buckets). */
  succeeded5m: number;
  failed5m: number;
  /**
   * Its busiest groups (`NewJob.group`), at most five, most running first: read only for a queue
   * with a group limit (`groupConcurrency` or `groupRateLimit`), else empty. Group `''` is its jobs
   * without a group.
   */
  groups: QueueGroupLoad[];
}

/** How many of a grouped queue's busiest groups its card shows. */
const DECK_GROUPS = 5;

/** A job type of a queue whose circuit breaker is not closed in some live worker. */
export interface DeckCircuit {
  type: string;
  /** `open` when any worker has it open, else `half-open`. */
  state: 'open' | 'half-open';
  /** Live workers that report it not closed (circuits are per process). */
  workers: number;
}

/** What every open Deck sees each tick: read once per tick per process, whoever watches. */
export type DeckSnapshot =
  | {
      ok: true;
      at: string;
      summary: SummaryStats;
      throughput: ThroughputStats;
      queues: DeckQueue[];
      workers: { alive: number; lost: number };
      worstLag: { queue: string; lagMs: number } | null;
      /** Where the snapshot was read: the primary, or the read replica with its lag. */
      reads: ReadSource;
    }
  | { ok: false; at: string; code: string; error: string };

/**
 * The one shared snapshot of the process. A tick reads the operator core once (single-flight: a
 * tick that comes while a read runs is dropped), every subscriber (each open stream, each
 * `GET api/snapshot`) shares that read, and with nobody subscribed nothing is read at all. A
 * mutation through the Deck asks for an early tick so its effect shows without waiting.
 */
@Injectable()
export class DeckSnapshotService {
  private readonly kicks = new Subject<void>();
  /** Reads done since start (a test counts them). */
  reads = 0;
  private readonly logger = new Logger('ChokaQDeck');
  /** The text of the last failed read's error, until a read succeeds. */
  private lastFailure: string | undefined;

  readonly snapshots$: Observable<DeckSnapshot>;

  constructor(
    private readonly admin: ChokaQAdmin,
    @Inject(DECK_OPTIONS) options: ResolvedDeckOptions,
  ) {
    this.snapshots$ = merge(timer(0, options.refreshMs), this.kicks).pipe(
      exhaustMap(() =>
        from(this.read()).pipe(catchError((error: unknown) => of(this.failed(error)))),
      ),
      shareReplay({ bufferSize: 1, refCount: true }),
    );
  }

  /**
   * The snapshot of a failed read: a stable code ({@link publicErrorCode}) and a generic message
   * for the browser; the driver's text (schema, tables, host and port) goes to the server log, once
   * per streak of failures with the same text.
   */
  private failed(error: unknown): DeckSnapshot {
    const code = publicErrorCode(error);
    const text = toError(error).message;
    if (text !== this.lastFailure) {
      this.lastFailure = text;
      this.logger.warn(`The Deck's snapshot read failed (${code}): ${text}`);
    }
    return {
      ok: false,
      at: new Date().toISOString(),
      code,
      error: `The database could not be read (${code}); the server log has the details.`,
    };
  }

  /** The latest snapshot: the shared one while streams are open, else one read now. */
  current(): Promise<DeckSnapshot> {
    return firstValueFrom(this.snapshots$);
  }

  /** Asks for a tick now (after a mutation). */
  kick(): void {
    this.kicks.next();
  }

  /** One set of reads. */
  async read(): Promise<DeckSnapshot> {
    this.reads++;
    const now = Date.now();
    const [summary, throughput, queues, stats, health, outcomes, workers, reads] =
      await Promise.all([
        this.admin.getSummary(),
        this.admin.getThroughput(),
        this.admin.listQueues(),
        this.admin.getQueueStats(),
        this.admin.getQueueHealth(),
        this.admin.getQueueOutcomes({ minutes: 5 }),
        this.admin.listWorkers({ limit: 500 }),
        this.admin.readSource(),
      ]);
    const series = new Map(outcomes.map((o) => [o.queue, { s: o.succeeded, f: o.failed }]));
    const statsOf = new Map(stats.map((s) => [s.queue, s]));
    const healthOf = new Map(health.map((h) => [h.queue, h]));
    const names = new Set([...queues.map((q) => q.name), ...stats.map((s) => s.queue)]);
    const circuitsOf = openCircuits(workers);
    const infos = [...names]
      .sort()
      .map((name) => queues.find((q) => q.name === name) ?? defaultQueue(name));
    // One more read per grouped queue; a queue without group limits costs nothing.
    const groupsOf = await Promise.all(
      infos.map((info) =>
        isGrouped(info) ? this.admin.getQueueGroups(info.name, DECK_GROUPS) : Promise.resolve([]),
      ),
    );
    const cards: DeckQueue[] = infos.map((info, i) =>
      card(
        info,
        statsOf.get(info.name),
        healthOf.get(info.name),
        series.get(info.name),
        circuitsOf,
        groupsOf[i],
      ),
    );
    const worst = health.reduce<QueueHealth | null>(
      (acc, h) => (h.maxLagMs > (acc?.maxLagMs ?? 0) ? h : acc),
      null,
    );
    this.lastFailure = undefined;
    return {
      ok: true,
      at: new Date(now).toISOString(),
      summary,
      throughput,
      queues: cards,
      workers: countWorkers(workers),
      worstLag: worst ? { queue: worst.queue, lagMs: worst.maxLagMs } : null,
      reads,
    };
  }
}

function defaultQueue(name: string): QueueInfo {
  return {
    name,
    isPaused: false,
    isActive: true,
    maxWorkers: null,
    zombieTimeoutSeconds: null,
    executionTimeoutMs: null,
    retryZombies: false,
    rateLimit: null,
    groupConcurrency: null,
    groupRateLimit: null,
    lastUpdatedUtc: new Date(0),
  };
}

function card(
  info: QueueInfo,
  stats: QueueStats | undefined,
  health: QueueHealth | undefined,
  recent: { s: number; f: number } | undefined,
  circuitsOf: Map<string, DeckCircuit[]>,
  groups: QueueGroupLoad[],
): DeckQueue {
  return {
    ...info,
    pending: stats?.pending ?? 0,
    fetched: stats?.fetched ?? 0,
    processing: stats?.processing ?? 0,
    waiting: stats?.waiting ?? 0,
    duePending: health?.duePending ?? 0,
    heldPending: health?.heldPending ?? 0,
    heldUntilUtc: health?.heldUntilUtc ?? null,
    maxLagMs: health?.maxLagMs ?? 0,
    succeededTotal: stats?.succeededTotal ?? 0,
    failedTotal: stats?.failedTotal ?? 0,
    deferredTotal: stats?.deferredTotal ?? 0,
    circuits: circuitsOf.get(info.name) ?? [],
    succeeded5m: recent?.s ?? 0,
    failed5m: recent?.f ?? 0,
    groups,
  };
}

/** A queue with a group limit: its claim takes turns across its groups. */
function isGrouped(info: QueueInfo): boolean {
  return info.groupConcurrency !== null || info.groupRateLimit !== null;
}

function countWorkers(workers: WorkerInfo[]): { alive: number; lost: number } {
  let alive = 0;
  let lost = 0;
  for (const w of workers) {
    if (w.state === 'running' || w.state === 'draining') alive++;
    else if (w.state === 'lost') lost++;
  }
  return { alive, lost };
}

/**
 * The circuits that are not closed, per queue, over the live workers (running or draining): a
 * worker reports its circuits by `queue/type`, and a queue name has no `/`.
 */
export function openCircuits(workers: WorkerInfo[]): Map<string, DeckCircuit[]> {
  const byQueue = new Map<string, Map<string, DeckCircuit>>();
  for (const w of workers) {
    if (w.state !== 'running' && w.state !== 'draining') continue;
    for (const [key, state] of Object.entries(w.circuits)) {
      if (state === 'closed') continue;
      const at = key.indexOf('/');
      if (at <= 0) continue;
      const queue = key.slice(0, at);
      const type = key.slice(at + 1);
      let types = byQueue.get(queue);
      if (!types) byQueue.set(queue, (types = new Map()));
      const seen = types.get(type);
      if (seen) {
        seen.workers++;
        if (state === 'open') seen.state = 'open';
      } else {
        types.set(type, { type, state, workers: 1 });
      }
    }
  }
  const out = new Map<string, DeckCircuit[]>();
  for (const [queue, types] of byQueue)
    out.set(
      queue,
      [...types.values()].sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0)),
    );
  return out;
}
