import type {
  ChokaQModuleOptions,
  ResolvedChokaQOptions,
} from '../../../libs/chokaq/src/interfaces/module-options.interface';

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? Partial<T[K]> : T[K] };

/**
 * Resolved options with tiny intervals for tests. Built here (not with `resolveChokaQOptions`) so the
 * runtime tests pin exactly what they run with.
 */
export function testOptions(
  overrides: DeepPartial<Omit<ResolvedChokaQOptions, 'storage'>> &
    Pick<ChokaQModuleOptions, 'storage'> = {},
): ResolvedChokaQOptions {
  const base: ResolvedChokaQOptions = {
    storage: { type: 'sqlite', database: ':memory:' },
    retry: {
      maxAttempts: 3,
      baseDelayMs: 50,
      multiplier: 2,
      maxDelayMs: 3_600_000,
      jitterMs: 0,
      maxJobAgeMs: 86_400_000,
    },
    execution: { timeoutMs: 10_000 },
    heartbeat: { intervalMs: 100, failureThreshold: 3, cancelOnHeartbeatFailure: true },
    rescue: { intervalMs: 60_000, fetchedJobTimeoutMs: 600_000, zombieTimeoutMs: 600_000 },
    worker: {
      enabled: true,
      concurrency: 4,
      prefetch: 10,
      startAhead: 128,
      batchSize: 5,
      pollIntervalMs: 20,
      shutdownGracePeriodMs: 1_000,
      workerId: '',
    },
    payload: { maxBytes: 1_000_000 },
    retention: {
      archiveMs: 7 * 86_400_000,
      dlqMs: 30 * 86_400_000,
      metricsMs: 86_400_000,
      workersMs: 86_400_000,
      auditMs: 90 * 86_400_000,
      intervalMs: 3_600_000,
    },
    circuitBreaker: {
      failureThreshold: 1_000,
      windowMs: 60_000,
      breakDurationMs: 30_000,
      halfOpenProbes: 1,
    },
    events: { maxQueuedPerListener: 1_000 },
    metrics: { enabled: true, maxAttributeValues: 100, queueGauges: true },
    tracing: { enabled: true },
  };
  const out = { ...base } as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(overrides)) {
    const current = out[key];
    out[key] =
      value &&
      typeof value === 'object' &&
      current &&
      typeof current === 'object' &&
      key !== 'storage'
        ? { ...(current as object), ...(value as object) }
        : value;
  }
  return out as unknown as ResolvedChokaQOptions;
}
