import type { LoggerService } from '@nestjs/common';
import type { ResolvedChokaQOptions } from '../config/chokaq-options';
import type { JobStorage } from '../storage/job-storage';
import { jittered } from './backoff';
import { Loop } from './loop';

/**
 * Rescue (SPEC §4): every `rescue.intervalMs` (jittered ±20 %, the first run one interval after
 * start so a fleet restarting together does not stampede), Fetched rows untouched for
 * `fetchedJobTimeoutMs` return to Pending (safe: no user code ran), and Processing rows whose
 * heartbeat is older than the zombie timeout go to the DLQ as Zombie.
 *
 * `retryZombies` is honoured per queue (the `Queues.RetryZombies` control, applied in SQL by
 * `archiveZombies`). The handler-level `retryZombies` option is not applied here yet: a zombie's
 * owner is gone, and any process's rescue loop may find it, so a per-handler flag would have to be
 * stored with the queue to mean the same thing everywhere — set it on the queue for now.
 */
export class RescueLoop {
  private readonly loop: Loop;
  private recovered = 0;
  private zombies = 0;
  private zombiesRetried = 0;

  constructor(
    private readonly storage: Pick<JobStorage, 'recoverAbandoned' | 'archiveZombies'>,
    private readonly options: ResolvedChokaQOptions,
    private readonly logger: LoggerService,
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
    const zombies = await this.storage.archiveZombies(this.options.rescue.zombieTimeoutMs);
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
        `Rescue: ${zombies.retried.length} zombie job(s) returned to Pending (RetryZombies)`,
      );
    }
  }
}
