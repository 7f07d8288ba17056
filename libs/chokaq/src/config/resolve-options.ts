import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { ChokaQValidationError, ValidationIssue } from '../errors';
import { ChokaQModuleOptions, ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import type { ArchivePartitioning, StorageOptions } from '../interfaces/storage-options.interface';
import { AUDIT_LIMITS, MAX_TIMER_MS } from '../validation/limits';
import {
  OPTION_RULES,
  OptionRule,
  TRANSIENT_RETRY_RULES,
  describeRule,
  int,
  optionIssues,
  satisfies,
} from '../validation/option-rules';
import { DEFAULT_WORKER_RETENTION_MS } from '../validation/validate-args';
import { DEFAULT_PAYLOAD_MAX_BYTES } from '../validation/validate-job';
import { DEFAULT_SQLITE_FILE, PARTITION_PERIODS } from './storage-defaults';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Every default of SPEC §6 except `storage` and `worker.workerId`, which are computed. */
export const CHOKAQ_DEFAULTS = {
  retry: {
    maxAttempts: 3,
    baseDelayMs: 3 * SECOND,
    multiplier: 2,
    maxDelayMs: HOUR,
    jitterMs: SECOND,
    maxJobAgeMs: DAY,
  },
  execution: { timeoutMs: 15 * MINUTE },
  heartbeat: { intervalMs: 10 * SECOND, failureThreshold: 10, cancelOnHeartbeatFailure: true },
  rescue: { intervalMs: MINUTE, fetchedJobTimeoutMs: 10 * MINUTE, zombieTimeoutMs: 10 * MINUTE },
  worker: {
    enabled: true,
    concurrency: 10,
    prefetch: 128,
    startAhead: 128,
    batchSize: 20,
    pollIntervalMs: SECOND,
    shutdownGracePeriodMs: 30 * SECOND,
  },
  payload: { maxBytes: DEFAULT_PAYLOAD_MAX_BYTES },
  retention: {
    archiveMs: 7 * DAY,
    dlqMs: 30 * DAY,
    metricsMs: DAY,
    workersMs: DEFAULT_WORKER_RETENTION_MS,
    auditMs: AUDIT_LIMITS.retentionMs,
    intervalMs: HOUR,
  },
  circuitBreaker: {
    failureThreshold: 5,
    windowMs: MINUTE,
    breakDurationMs: 30 * SECOND,
    halfOpenProbes: 1,
  },
  events: { maxQueuedPerListener: 1_000 },
  metrics: { enabled: true, maxAttributeValues: 100, queueGauges: true },
  tracing: { enabled: true },
} as const;

/** Keys of a section that are not in OPTION_RULES because they are checked here, not by a rule. */
const CHECKED_ELSEWHERE: Readonly<Record<string, readonly string[]>> = {
  metrics: ['meterProvider'],
  tracing: ['tracerProvider'],
};

/** Default storage: the SQLite file `chokaq.db` in the working directory. */
export const DEFAULT_STORAGE_OPTIONS: StorageOptions = {
  type: 'sqlite',
  database: DEFAULT_SQLITE_FILE,
};

/** The heartbeat is jittered ±20 %, so the longest gap between two beats is 1.2 intervals. */
const HEARTBEAT_JITTER = 1.2;

const COMMON_STORAGE_KEYS = ['schema', 'autoCreateSchema', 'payloadMaxBytes', 'transientRetry'];
const SERVER_KEYS = ['url', 'host', 'port', 'username', 'password', 'database', 'poolSize'];
const STORAGE_KEYS: Record<string, string[]> = {
  sqlite: ['type', 'database', 'busyTimeoutMs', 'dataVersionPollMs', ...COMMON_STORAGE_KEYS],
  postgres: [
    'type',
    ...SERVER_KEYS,
    'notify',
    'notifyReconnectMs',
    'preparedStatements',
    'readReplica',
    'partitioning',
    ...COMMON_STORAGE_KEYS,
  ],
  mssql: [
    'type',
    ...SERVER_KEYS,
    'options',
    'requestTimeoutMs',
    'schemaTimeoutMs',
    'partitioning',
    ...COMMON_STORAGE_KEYS,
  ],
  dataSource: [
    'dataSource',
    'notify',
    'notifyReconnectMs',
    'preparedStatements',
    'schemaTimeoutMs',
    'readReplica',
    'partitioning',
    ...COMMON_STORAGE_KEYS,
  ],
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `hostname:pid:random` — unique per process even when pids repeat across containers. */
function defaultWorkerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/**
 * Applies the defaults of SPEC §6 to `options` and validates the result: types, integers, ranges,
 * cross-field rules and unknown keys. Every problem is collected and thrown at once as one
 * {@link ChokaQValidationError}, each issue with its path and value, e.g.
 * `retry.maxAttempts must be an integer from 1 to 1000 (got 0)`.
 *
 * Pure apart from the random part of the default `workerId`; shared by `forRoot` and
 * `forRootAsync`, and usable on its own to check a configuration in a test.
 *
 * @publicApi
 */
export function resolveChokaQOptions(options: ChokaQModuleOptions = {}): ResolvedChokaQOptions {
  const issues: ValidationIssue[] = [];
  const add = (path: string, message: string, value: unknown) =>
    issues.push({ path, message, value });

  if (!isPlainObject(options)) {
    throw new ChokaQValidationError([
      { path: 'options', message: 'must be an object', value: options },
    ]);
  }
  const input = options as Record<string, unknown>;
  for (const key of Object.keys(input)) {
    if (key !== 'storage' && !Object.prototype.hasOwnProperty.call(OPTION_RULES, key)) {
      add(key, 'is not a known option', input[key]);
    }
  }

  const resolved: Record<string, Record<string, unknown>> = {};
  for (const [section, rules] of Object.entries(OPTION_RULES)) {
    const given = input[section];
    const defaults = (CHOKAQ_DEFAULTS as Record<string, Record<string, unknown>>)[section] ?? {};
    const out: Record<string, unknown> = { ...defaults };
    if (given !== undefined && !isPlainObject(given)) {
      add(section, 'must be an object', given);
    } else if (given) {
      const found = optionIssues(
        given,
        rules,
        (key) => `${section}.${key}`,
        CHECKED_ELSEWHERE[section],
      );
      issues.push(...found);
      for (const [key, value] of Object.entries(given)) {
        const path = `${section}.${key}`;
        if (value !== undefined && !found.some((i) => i.path === path)) out[key] = value;
      }
    }
    resolved[section] = out;
  }
  if (resolved.worker.workerId === undefined) resolved.worker.workerId = defaultWorkerId();

  const r = resolved as unknown as Omit<ResolvedChokaQOptions, 'storage'>;
  // Cross-field rules, checked only on values that passed their own rule.
  const ok = (path: string) => !issues.some((i) => i.path === path);
  if (
    ok('retry.maxDelayMs') &&
    ok('retry.baseDelayMs') &&
    r.retry.maxDelayMs < r.retry.baseDelayMs
  ) {
    add(
      'retry.maxDelayMs',
      `must be ≥ retry.baseDelayMs (${r.retry.baseDelayMs})`,
      r.retry.maxDelayMs,
    );
  }
  if (ok('worker.batchSize') && ok('worker.prefetch') && r.worker.batchSize > r.worker.prefetch) {
    add('worker.batchSize', `must be ≤ worker.prefetch (${r.worker.prefetch})`, r.worker.batchSize);
  }
  // A healthy job is refreshed at least every 1.2 heartbeat intervals; a rescue timeout at or
  // below that would rescue (and zombie) jobs that are alive.
  const longestGap = Math.ceil(r.heartbeat.intervalMs * HEARTBEAT_JITTER);
  for (const key of ['fetchedJobTimeoutMs', 'zombieTimeoutMs'] as const) {
    if (ok(`rescue.${key}`) && ok('heartbeat.intervalMs') && r.rescue[key] <= longestGap) {
      add(
        `rescue.${key}`,
        `must be greater than heartbeat.intervalMs × 1.2 (${longestGap}), or live jobs would be rescued`,
        r.rescue[key],
      );
    }
  }

  // A lost worker is shown as lost once it has not been seen for the zombie timeout; a shorter
  // retention of the Workers table would remove its row before it ever shows as lost.
  const workersGiven = (input.retention as Record<string, unknown> | undefined)?.workersMs;
  if (ok('retention.workersMs') && ok('rescue.zombieTimeoutMs')) {
    if (workersGiven === undefined) {
      r.retention.workersMs = Math.max(r.retention.workersMs, r.rescue.zombieTimeoutMs);
    } else if (r.retention.workersMs < r.rescue.zombieTimeoutMs) {
      add(
        'retention.workersMs',
        `must be ≥ rescue.zombieTimeoutMs (${r.rescue.zombieTimeoutMs}), or a lost worker's row would be removed before it shows as lost`,
        r.retention.workersMs,
      );
    }
  }

  // An OpenTelemetry MeterProvider is known by what ChokaQ calls on it.
  const meterProvider = r.metrics.meterProvider as unknown;
  if (
    meterProvider !== undefined &&
    !(isPlainObjectLike(meterProvider) && typeof meterProvider.getMeter === 'function')
  ) {
    add(
      'metrics.meterProvider',
      'must be an OpenTelemetry MeterProvider (with getMeter)',
      meterProvider,
    );
  }

  // …and an OpenTelemetry TracerProvider likewise.
  const tracerProvider = r.tracing.tracerProvider as unknown;
  if (
    tracerProvider !== undefined &&
    !(isPlainObjectLike(tracerProvider) && typeof tracerProvider.getTracer === 'function')
  ) {
    add(
      'tracing.tracerProvider',
      'must be an OpenTelemetry TracerProvider (with getTracer)',
      tracerProvider,
    );
  }

  const storage = resolveStorage(input.storage, r.payload.maxBytes, add);
  if (issues.length > 0) throw new ChokaQValidationError(issues);
  return { ...r, storage };
}

function resolveStorage(
  given: unknown,
  payloadMaxBytes: number,
  add: (path: string, message: string, value: unknown) => void,
): StorageOptions {
  if (given === undefined) return { ...DEFAULT_STORAGE_OPTIONS, payloadMaxBytes };
  if (!isPlainObject(given)) {
    add(
      'storage',
      "must be an object with a type ('sqlite' | 'postgres' | 'mssql') or a dataSource",
      given,
    );
    return DEFAULT_STORAGE_OPTIONS;
  }
  let kind: string;
  if ('dataSource' in given) {
    kind = 'dataSource';
    const ds = given.dataSource as { options?: unknown; initialize?: unknown } | null;
    if (
      !isPlainObjectLike(ds) ||
      typeof ds.initialize !== 'function' ||
      !isPlainObject(ds.options)
    ) {
      add('storage.dataSource', 'must be a TypeORM DataSource', ds);
    }
    if ('type' in given) add('storage.type', 'cannot be combined with dataSource', given.type);
  } else if (given.type === 'sqlite' || given.type === 'postgres' || given.type === 'mssql') {
    kind = given.type;
  } else {
    add(
      'storage.type',
      "must be 'sqlite', 'postgres' or 'mssql' (or pass storage.dataSource)",
      given.type,
    );
    return DEFAULT_STORAGE_OPTIONS;
  }
  for (const key of Object.keys(given)) {
    if (!STORAGE_KEYS[kind].includes(key) && !(key === 'type' && kind === 'dataSource')) {
      add(`storage.${key}`, `is not a known option of ${kind} storage`, given[key]);
    }
  }
  const str = (key: string, max = 4_096) => stringIssue(given, key, 'storage', max, add);
  const ruled = (key: string, rule: OptionRule) => {
    const v = given[key];
    if (v !== undefined && !satisfies(rule, v)) add(`storage.${key}`, describeRule(rule), v);
  };
  const num = (key: string, min: number, max: number) => ruled(key, int(min, max));
  const flag = (key: string) => {
    if (given[key] !== undefined && typeof given[key] !== 'boolean') {
      add(`storage.${key}`, 'must be a boolean', given[key]);
    }
  };
  str('schema', 63);
  flag('autoCreateSchema');
  // The same bound as `payload.maxBytes`, which it overrides for the storage.
  ruled('payloadMaxBytes', OPTION_RULES.payload.maxBytes);
  if (given.transientRetry !== undefined && !isPlainObject(given.transientRetry)) {
    add('storage.transientRetry', 'must be an object', given.transientRetry);
  } else if (given.transientRetry !== undefined) {
    const found = optionIssues(
      given.transientRetry,
      TRANSIENT_RETRY_RULES,
      (key) => `storage.transientRetry.${key}`,
    );
    for (const issue of found) add(issue.path, issue.message, issue.value);
  }
  if (kind === 'sqlite') {
    str('database');
    num('busyTimeoutMs', 0, 60_000);
    num('dataVersionPollMs', 0, 60_000);
  }
  if (kind === 'postgres' || kind === 'mssql') {
    serverConnectionIssues(given, 'storage', `${kind} storage`, add);
  }
  if (kind === 'postgres' || kind === 'dataSource') {
    flag('notify');
    num('notifyReconnectMs', 10, 300_000);
    flag('preparedStatements');
    const replica = given.readReplica;
    if (replica !== undefined && !isPlainObject(replica)) {
      add('storage.readReplica', 'must be an object with a url or a host', replica);
    } else if (replica !== undefined) {
      for (const key of Object.keys(replica)) {
        if (!SERVER_KEYS.includes(key)) {
          add(
            `storage.readReplica.${key}`,
            'is not a known option of a read replica',
            replica[key],
          );
        }
      }
      serverConnectionIssues(replica, 'storage.readReplica', 'a read replica', add);
    }
  }
  if (kind !== 'sqlite') partitioningIssues(given.partitioning, add);
  if (kind === 'mssql' && given.options !== undefined && !isPlainObject(given.options)) {
    add('storage.options', 'must be an object of mssql driver options', given.options);
  }
  // A driver timer; under 1 s it would cancel ordinary claims and moves of a busy server.
  if (kind === 'mssql') num('requestTimeoutMs', 1_000, MAX_TIMER_MS);
  // 0 is none: a schema step is bounded by its lock waits, not by the size of the tables.
  if (kind === 'mssql' || kind === 'dataSource') num('schemaTimeoutMs', 0, MAX_TIMER_MS);
  const storage = { ...given } as unknown as StorageOptions & { database?: string };
  if (kind === 'sqlite' && storage.database === undefined) storage.database = DEFAULT_SQLITE_FILE;
  if (storage.payloadMaxBytes === undefined) storage.payloadMaxBytes = payloadMaxBytes;
  return storage;
}

/** `storage.partitioning`, when set, is `{ period: 'day' | 'week' | 'month' }` and nothing more. */
function partitioningIssues(
  given: unknown,
  add: (path: string, message: string, value: unknown) => void,
): void {
  if (given === undefined) return;
  if (!isPlainObject(given)) {
    add('storage.partitioning', "must be an object such as { period: 'day' }", given);
    return;
  }
  for (const key of Object.keys(given)) {
    if (key !== 'period') {
      add(`storage.partitioning.${key}`, 'is not a known option of partitioning', given[key]);
    }
  }
  if (!PARTITION_PERIODS.includes(given.period as ArchivePartitioning['period'])) {
    add('storage.partitioning.period', "must be 'day', 'week' or 'month'", given.period);
  }
}

/** `given[key]`, when set, must be a non-empty string of at most `max` characters without NUL. */
function stringIssue(
  given: Record<string, unknown>,
  key: string,
  path: string,
  max: number,
  add: (path: string, message: string, value: unknown) => void,
): void {
  const v = given[key];
  if (
    v !== undefined &&
    (typeof v !== 'string' || v.length === 0 || v.length > max || v.includes('\u0000'))
  ) {
    add(`${path}.${key}`, `must be a non-empty string of at most ${max} characters`, v);
  }
}

/**
 * The connection fields of a server (`url`, `host`, `port`, `username`, `password`, `database`,
 * `poolSize`) under `path`, for a server storage and for its read replica alike.
 */
function serverConnectionIssues(
  given: Record<string, unknown>,
  path: string,
  what: string,
  add: (path: string, message: string, value: unknown) => void,
): void {
  for (const key of ['url', 'host', 'username', 'database']) {
    stringIssue(given, key, path, 4_096, add);
  }
  if (given.password !== undefined && typeof given.password !== 'string') {
    add(`${path}.password`, 'must be a string', '***');
  }
  for (const [key, min, max] of [
    ['port', 1, 65_535],
    ['poolSize', 1, 1_000],
  ] as const) {
    const v = given[key];
    if (v !== undefined && !satisfies(int(min, max), v)) {
      add(`${path}.${key}`, describeRule(int(min, max)), v);
    }
  }
  if (given.url === undefined && given.host === undefined) {
    add(path, `${what} needs a url or a host`, given);
  }
}

function isPlainObjectLike(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
