import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { jittered } from '../common/jitter';
import { logEvent } from '../common/log-events';
import { STORED_TEXT } from '../common/stored-text';
import type { HandlerLookup } from '../interfaces/handler.interface';
import type { RescuedZombie } from '../interfaces/job.interface';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import type { ChokaQMetrics } from '../observability/chokaq-metrics';
import type { JobStore } from '../storage/job-storage';
import type { JobEventSink } from './job-events';
import { stalledEvent } from './lifecycle-events';
import { Loop } from './loop';

/** Job ids a rescue log line lists, at most, per worker. */
const LOGGED_IDS = 10;

/**
 * Rescue (SPEC §4): every `rescue.intervalMs` (jittered ±20 %, the first run one interval after
 * start so a fleet restarting together does not stampede), Fetched rows untouched for
 * `fetchedJobTimeoutMs` return to Pending (safe: no user code ran), and Processing rows whose
 * heartbeat is older than the zombie timeout go to the DLQ as Zombie.
 *
 * A zombie returns to Pending (attempt kept) instead when its queue has `RetryZombies` (in the
 * database, so every process agrees) or when the handler this process has for its `(queue, type)`
 * opts in with `@JobHandler(…, { retryZombies: true })`. The zombie's owner is gone and any
 * process's rescue may find it first, so the handler option only counts where that handler is
 * registered: a process hosting only other queues sends such a zombie to the DLQ. The rules are
 * read from the registry on every pass, so they follow what this process hosts now.
 *
 * Its log line names the lost worker(s) whose jobs it declared zombies, and each rescued zombie is
 * a `stalled` lifecycle event of this process, emitted once the sweep's statement committed.
 *
 * Each pass ends with the dependency check (`checkDependencies`): waiting jobs whose dependency
 * failed under `cancel` (or was removed while they were blocked on it) go to the DLQ as
 * `DependencyFailed`, and edges an in-flight move could not see are settled.
 */
export class RescueLoop {
  private readonly loop: Loop;
  private recovered = 0;
  private zombies = 0;
  private zombiesRetried = 0;

  constructor(
    private readonly storage: Pick<
      JobStore,
      'recoverAbandoned' | 'archiveZombies' | 'checkDependencies'
    >,
    private readonly options: ResolvedChokaQOptions,
    private readonly logger: ChokaQLogger,
    private readonly handlers: Pick<HandlerLookup, 'zombieRetryRules'>,
    /** Where `stalled` events go (the application's `JobEvents`). Default: nowhere. */
    private readonly events?: JobEventSink,
    /** Where rescued zombies are counted (DLQ `Zombie`, or retried). Default: nowhere. */
    private readonly metrics?: Pick<ChokaQMetrics, 'zombies'>,
  ) {
    const interval = () => jittered(options.rescue.intervalMs, 0.2);
    this.loop = new Loop({
      name: 'ChokaQ rescue',
      logger,
      tick: () => this.tick(),
      intervalMs: interval,
      initialDelayMs: interval(),
    });
  }

  /** Totals since start: Fetched rows recovered, zombies moved to DLQ, zombies retried. */
  get totals(): { recovered: number; zombies: number; zombiesRetried: number } {
    return {
      recovered: this.recovered,
      zombies: this.zombies,
      zombiesRetried: this.zombiesRetried,
    };
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One rescue pass (exposed for tests and for admin "rescue now"). */
  async tick(): Promise<void> {
    const recovered = await this.storage.recoverAbandoned(this.options.rescue.fetchedJobTimeoutMs);
    const zombies = await this.storage.archiveZombies(
      this.options.rescue.zombieTimeoutMs,
      undefined,
      this.handlers.zombieRetryRules(),
    );
    this.recovered += recovered;
    this.zombies += zombies.dlq.length;
    this.zombiesRetried += zombies.retried.length;
    this.metrics?.zombies(zombies.jobs);
    // After the zombies: a zombie dependency's cancel edges are marked by its move just above.
    const dependencies = await this.storage.checkDependencies();
    if (dependencies.cancelled.length > 0) {
      const ids = dependencies.cancelled;
      const more = ids.length > LOGGED_IDS ? ', …' : '';
      logEvent(
        this.logger,
        'DependentsCancelled',
        `Rescue: ${ids.length} waiting job(s) moved to the DLQ because a dependency failed or ` +
          `was removed (${ids.slice(0, LOGGED_IDS).join(', ')}${more})`,
        { count: ids.length, jobIds: ids },
      );
    }
    if (recovered > 0) {
      logEvent(
        this.logger,
        'FetchedJobsRecovered',
        `Rescue: ${recovered} abandoned Fetched job(s) returned to Pending`,
        { count: recovered },
      );
    }
    const dead = zombies.jobs.filter((z) => z.pillar === 'dlq');
    const retried = zombies.jobs.filter((z) => z.pillar === 'hot');
    if (dead.length > 0) {
      logEvent(
        this.logger,
        'ZombiesDeadLettered',
        `Rescue: ${dead.length} zombie job(s) moved to the DLQ, of lost worker(s) ${byWorker(dead)}`,
        { count: dead.length, workerIds: workersOf(dead), jobIds: dead.map((z) => z.job.id) },
      );
    }
    if (retried.length > 0) {
      logEvent(
        this.logger,
        'ZombiesRetried',
        `Rescue: ${retried.length} zombie job(s) returned to Pending (retryZombies), of lost ` +
          `worker(s) ${byWorker(retried)}`,
        {
          count: retried.length,
          workerIds: workersOf(retried),
          jobIds: retried.map((z) => z.job.id),
        },
      );
    }
    const events = this.events;
    if (events?.hasListeners('stalled')) {
      const now = new Date();
      for (const rescued of zombies.jobs) {
        events.emit(stalledEvent(rescued, STORED_TEXT.zombie, now));
      }
    }
  }
}

/**
 * `w1 (2: id, id), w2 (1: id)`: the workers that lost the jobs, each with its count and the
 * first job ids. A row without a worker (written by hand) is listed as `(none)`.
 */
/** The distinct workers that lost `jobs`, in order of appearance (null for a row without one). */
function workersOf(jobs: readonly RescuedZombie[]): string[] {
  return [...new Set(jobs.map(({ job }) => job.workerId ?? '(none)'))];
}

function byWorker(jobs: readonly RescuedZombie[]): string {
  const groups = new Map<string, string[]>();
  for (const { job } of jobs) {
    const worker = job.workerId ?? '(none)';
    const ids = groups.get(worker) ?? [];
    ids.push(job.id);
    groups.set(worker, ids);
  }
  return [...groups]
    .map(([worker, ids]) => {
      const more = ids.length > LOGGED_IDS ? ', …' : '';
      return `${worker} (${ids.length}: ${ids.slice(0, LOGGED_IDS).join(', ')}${more})`;
    })
    .join(', ');
}
