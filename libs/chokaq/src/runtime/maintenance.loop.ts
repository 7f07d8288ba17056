import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { jittered } from '../common/jitter';
import { logEvent } from '../common/log-events';
import type { RetentionResult } from '../interfaces/job.interface';
import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import type { JobStore } from '../storage/job-storage';
import { Loop } from './loop';

/**
 * Retention (SPEC §4 "Maintenance"): every `retention.intervalMs` (jittered ±20 %), deletes archive,
 * DLQ, metric-bucket and Workers rows older than their windows, in bounded batches (the storage
 * makes each batch its own short transaction). Every process runs it; the deletes skip locked
 * rows, so two processes at once only share the work. The first run waits one jittered interval,
 * so a restart storm does not start with a burst of deletes.
 */
export class MaintenanceLoop {
  private readonly loop: Loop;
  private last: RetentionResult | undefined;

  constructor(
    private readonly storage: Pick<JobStore, 'applyRetention'>,
    private readonly options: ResolvedChokaQOptions,
    private readonly logger: ChokaQLogger,
  ) {
    const interval = () => jittered(options.retention.intervalMs, 0.2);
    this.loop = new Loop({
      name: 'ChokaQ maintenance',
      logger,
      tick: () => this.tick(),
      intervalMs: interval,
      initialDelayMs: interval(),
    });
  }

  /** What the last run removed. */
  get lastResult(): RetentionResult | undefined {
    return this.last;
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One retention pass. */
  async tick(): Promise<void> {
    const { archiveMs, dlqMs, metricsMs, workersMs, auditMs } = this.options.retention;
    this.last = await this.storage.applyRetention(
      { archiveMs, dlqMs, metricsMs, workersMs, auditMs },
      { action: 'retention.run', actor: 'system' },
    );
    const { archive, dlq, metricBuckets, workers } = this.last;
    if (archive + dlq + metricBuckets + workers > 0) {
      logEvent(
        this.logger,
        'RetentionApplied',
        `Retention removed ${archive} archive, ${dlq} DLQ, ${metricBuckets} metric-bucket and ` +
          `${workers} worker row(s)`,
        { archive, dlq, metricBuckets, workers },
      );
    }
  }
}
