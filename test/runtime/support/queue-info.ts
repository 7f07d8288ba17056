import type { QueueInfo } from '../../../libs/chokaq/src/interfaces/job.interface';

/**
 * A `Queues` row for unit tests: queue `name`, running, visible, with no limit of any kind and
 * updated at the epoch; `patch` sets any field.
 */
export function queueInfo(name: string, patch: Partial<QueueInfo> = {}): QueueInfo {
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
    ...patch,
  };
}
