import type { LoggerService } from '@nestjs/common';
import { jittered } from '../common/jitter';
import type { HandlerLookup } from '../interfaces/handler.interface';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import type { JobStore } from '../storage/job-storage';
import { Loop } from './loop';

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
 */
export class RescueLoop {
  private readonly loop: Loop;
  private recovered = 0;
  private zombies = 0;
  private zombiesRetried = 0;

  constructor(
    private readonly storage: Pick<JobStore, 'recoverAbandoned' | 'archiveZombies'>,
    private readonly options: ResolvedChokaQOptions,
    private readonly logger: LoggerService,
    private readonly handlers: Pick<HandlerLookup, 'zombieRetryRules'>,
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
    if (recovered > 0)
      this.logger.log(`Rescue: ${recovered} abandoned Fetched job(s) returned to Pending`);
    if (zombies.dlq.length > 0) {
      this.logger.warn(
        `Rescue: ${zombies.dlq.length} zombie job(s) moved to the DLQ: ${zombies.dlq.slice(0, 10).join(', ')}`,
      );
    }
    if (zombies.retried.length > 0) {
      this.logger.warn(
        `Rescue: ${zombies.retried.length} zombie job(s) returned to Pending (retryZombies)`,
      );
    }
  }
}
