import { hostname } from 'node:os';
import { ChokaQValidationError } from '../errors';
import { ChokaQModuleOptions } from '../interfaces/module-options.interface';
import { CHOKAQ_DEFAULTS, resolveChokaQOptions } from './resolve-options';

function issuesOf(options: unknown): Array<{ path: string; message: string; value: unknown }> {
  try {
    resolveChokaQOptions(options as ChokaQModuleOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(ChokaQValidationError);
    return [...(error as ChokaQValidationError).issues];
  }
  throw new Error('expected a ChokaQValidationError');
}

describe('resolveChokaQOptions', () => {
  it('applies every SPEC §6 default', () => {
    const r = resolveChokaQOptions();
    expect(r.retry).toEqual({
      maxAttempts: 3,
      baseDelayMs: 3_000,
      multiplier: 2,
      maxDelayMs: 3_600_000,
      jitterMs: 1_000,
      maxJobAgeMs: 86_400_000,
    });
    expect(r.execution).toEqual({ timeoutMs: 900_000 });
    expect(r.heartbeat).toEqual({
      intervalMs: 10_000,
      failureThreshold: 10,
      cancelOnHeartbeatFailure: true,
    });
    expect(r.rescue).toEqual({
      intervalMs: 60_000,
      fetchedJobTimeoutMs: 600_000,
      zombieTimeoutMs: 600_000,
    });
    expect(r.worker).toMatchObject({
      enabled: true,
      concurrency: 10,
      prefetch: 128,
      startAhead: 128,
      batchSize: 20,
      pollIntervalMs: 1_000,
      shutdownGracePeriodMs: 30_000,
    });
    expect(r.payload).toEqual({ maxBytes: 1_000_000 });
    expect(r.retention).toEqual({
      auditMs: 90 * 86_400_000,
      archiveMs: 7 * 86_400_000,
      dlqMs: 30 * 86_400_000,
      metricsMs: 86_400_000,
      workersMs: 86_400_000,
      intervalMs: 3_600_000,
    });
    expect(r.circuitBreaker).toEqual({
      failureThreshold: 5,
      windowMs: 60_000,
      breakDurationMs: 30_000,
      halfOpenProbes: 1,
    });
    expect(r.storage).toEqual({
      type: 'sqlite',
      database: 'chokaq.db',
      payloadMaxBytes: 1_000_000,
    });
  });

  it('generates a hostname:pid:random worker id, different per call', () => {
    const a = resolveChokaQOptions().worker.workerId;
    const b = resolveChokaQOptions().worker.workerId;
    expect(a).toMatch(
      new RegExp(
        `^${hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:${process.pid}:[0-9a-f]{8}$`,
      ),
    );
    expect(a).not.toEqual(b);
  });

  it('keeps given values and fills the rest of a section', () => {
    const r = resolveChokaQOptions({
      retry: { maxAttempts: 5 },
      worker: { workerId: 'w1', enabled: false },
    });
    expect(r.retry.maxAttempts).toBe(5);
    expect(r.retry.baseDelayMs).toBe(3_000);
    expect(r.worker.workerId).toBe('w1');
    expect(r.worker.enabled).toBe(false);
    expect(r.worker.concurrency).toBe(10);
  });

  it('treats undefined values as absent', () => {
    expect(resolveChokaQOptions({ retry: { maxAttempts: undefined } }).retry.maxAttempts).toBe(3);
  });

  it('does not mutate the input or the defaults', () => {
    const input: ChokaQModuleOptions = {
      retry: { maxAttempts: 4 },
      storage: { type: 'sqlite', database: ':memory:' },
    };
    const copy = JSON.parse(JSON.stringify(input));
    const r = resolveChokaQOptions(input);
    r.retry.maxAttempts = 99;
    expect(input).toEqual(copy);
    expect(CHOKAQ_DEFAULTS.retry.maxAttempts).toBe(3);
    expect(resolveChokaQOptions().retry.maxAttempts).toBe(3);
  });

  it('reports the example message of the brief', () => {
    expect(() => resolveChokaQOptions({ retry: { maxAttempts: 0 } })).toThrow(
      'retry.maxAttempts must be an integer ≥ 1 (got 0)',
    );
  });

  it('reports every problem at once, each with its path and value', () => {
    const issues = issuesOf({
      retry: { maxAttempts: 0, baseDelayMs: -1, multiplier: 0.5 },
      worker: { concurrency: 1.5, enabled: 'yes' },
      heartbeat: { cancelOnHeartbeatFailure: 1 },
    });
    expect(issues.map((i) => [i.path, i.value])).toEqual([
      ['retry.maxAttempts', 0],
      ['retry.baseDelayMs', -1],
      ['retry.multiplier', 0.5],
      ['heartbeat.cancelOnHeartbeatFailure', 1],
      ['worker.concurrency', 1.5],
      ['worker.enabled', 'yes'],
    ]);
  });

  it.each([
    ['retry.maxAttempts', { retry: { maxAttempts: 2.5 } }],
    ['retry.maxAttempts', { retry: { maxAttempts: '3' } }],
    ['retry.baseDelayMs', { retry: { baseDelayMs: Number.NaN } }],
    ['retry.maxDelayMs', { retry: { maxDelayMs: Infinity } }],
    ['retry.jitterMs', { retry: { jitterMs: -5 } }],
    ['retry.maxJobAgeMs', { retry: { maxJobAgeMs: 0 } }],
    ['execution.timeoutMs', { execution: { timeoutMs: 0 } }],
    ['execution.timeoutMs', { execution: { timeoutMs: 2 ** 31 } }],
    ['heartbeat.intervalMs', { heartbeat: { intervalMs: 0 } }],
    ['heartbeat.failureThreshold', { heartbeat: { failureThreshold: 0 } }],
    ['rescue.intervalMs', { rescue: { intervalMs: -1 } }],
    ['worker.concurrency', { worker: { concurrency: 0 } }],
    ['worker.concurrency', { worker: { concurrency: 10_001 } }],
    ['worker.prefetch', { worker: { prefetch: 0 } }],
    ['worker.startAhead', { worker: { startAhead: -1 } }],
    ['worker.startAhead', { worker: { startAhead: 1.5 } }],
    ['worker.startAhead', { worker: { startAhead: 10_001 } }],
    ['worker.batchSize', { worker: { batchSize: 0 } }],
    ['worker.pollIntervalMs', { worker: { pollIntervalMs: 0 } }],
    ['worker.shutdownGracePeriodMs', { worker: { shutdownGracePeriodMs: -1 } }],
    ['worker.workerId', { worker: { workerId: '' } }],
    ['worker.workerId', { worker: { workerId: 'a\u0000b' } }],
    ['worker.workerId', { worker: { workerId: 'x'.repeat(101) } }],
    ['payload.maxBytes', { payload: { maxBytes: 0 } }],
    ['retention.archiveMs', { retention: { archiveMs: -1 } }],
    ['retention.intervalMs', { retention: { intervalMs: 0 } }],
    ['circuitBreaker.failureThreshold', { circuitBreaker: { failureThreshold: 0 } }],
    ['circuitBreaker.halfOpenProbes', { circuitBreaker: { halfOpenProbes: 0.5 } }],
  ])('rejects a bad %s', (path, options) => {
    expect(issuesOf(options).map((i) => i.path)).toEqual([path]);
  });

  it('rejects unknown keys at the top level and in every section', () => {
    const issues = issuesOf({ retries: 3, retry: { maxAttempt: 3 }, worker: { threads: 2 } });
    expect(issues.map((i) => `${i.path} ${i.message}`)).toEqual([
      'retries is not a known option',
      'retry.maxAttempt is not a known option',
      'worker.threads is not a known option',
    ]);
  });

  it('rejects a section that is not an object', () => {
    expect(issuesOf({ retry: 3, worker: [] }).map((i) => i.path)).toEqual(['retry', 'worker']);
  });

  it('rejects options that are not an object', () => {
    expect(issuesOf('sqlite').map((i) => i.path)).toEqual(['options']);
  });

  it('checks cross-field rules', () => {
    expect(
      issuesOf({ retry: { baseDelayMs: 5_000, maxDelayMs: 1_000 } }).map((i) => i.path),
    ).toEqual(['retry.maxDelayMs']);
    expect(issuesOf({ worker: { prefetch: 5, batchSize: 10 } }).map((i) => i.path)).toEqual([
      'worker.batchSize',
    ]);
    expect(
      issuesOf({
        heartbeat: { intervalMs: 1_000 },
        rescue: { fetchedJobTimeoutMs: 1_200, zombieTimeoutMs: 1_000 },
      }).map((i) => i.path),
    ).toEqual(['rescue.fetchedJobTimeoutMs', 'rescue.zombieTimeoutMs']);
    expect(
      issuesOf({
        rescue: { zombieTimeoutMs: 3_600_000 },
        retention: { workersMs: 3_599_999 },
      }).map((i) => i.path),
    ).toEqual(['retention.workersMs']);
  });

  it('keeps Workers rows at least as long as the zombie timeout, given or by default', () => {
    const long = 2 * 86_400_000;
    expect(resolveChokaQOptions({ rescue: { zombieTimeoutMs: long } }).retention.workersMs).toBe(
      long,
    );
    expect(
      resolveChokaQOptions({
        rescue: { zombieTimeoutMs: 60_000 },
        retention: { workersMs: 60_000 },
      }).retention.workersMs,
    ).toBe(60_000);
  });

  it('accepts short intervals used by tests', () => {
    const r = resolveChokaQOptions({
      heartbeat: { intervalMs: 200 },
      rescue: { intervalMs: 200, fetchedJobTimeoutMs: 1_000, zombieTimeoutMs: 1_000 },
      retry: { baseDelayMs: 10, jitterMs: 0 },
      worker: { pollIntervalMs: 20 },
    });
    expect(r.rescue.zombieTimeoutMs).toBe(1_000);
    expect(r.retry.jitterMs).toBe(0);
  });

  describe('storage', () => {
    it('accepts the dialects and fills sqlite defaults', () => {
      expect(resolveChokaQOptions({ storage: { type: 'sqlite' } }).storage).toEqual({
        type: 'sqlite',
        database: 'chokaq.db',
        payloadMaxBytes: 1_000_000,
      });
      expect(
        resolveChokaQOptions({ storage: { type: 'postgres', url: 'postgres://x/y' } }).storage,
      ).toMatchObject({
        type: 'postgres',
        url: 'postgres://x/y',
      });
      expect(
        resolveChokaQOptions({
          storage: {
            type: 'mssql',
            host: 'db',
            port: 1433,
            options: { encrypt: false },
            requestTimeoutMs: 120_000,
            schemaTimeoutMs: 0,
          },
        }).storage,
      ).toMatchObject({ type: 'mssql', host: 'db', requestTimeoutMs: 120_000, schemaTimeoutMs: 0 });
    });

    it('passes payload.maxBytes down unless the storage sets its own', () => {
      expect(resolveChokaQOptions({ payload: { maxBytes: 10 } }).storage.payloadMaxBytes).toBe(10);
      expect(
        resolveChokaQOptions({
          payload: { maxBytes: 10 },
          storage: { type: 'sqlite', payloadMaxBytes: 20 },
        }).storage.payloadMaxBytes,
      ).toBe(20);
    });

    it('takes a read replica of PostgreSQL storage and of a borrowed DataSource, its password unechoed', () => {
      const readReplica = { url: 'postgres://r/db', poolSize: 3 };
      expect(
        resolveChokaQOptions({ storage: { type: 'postgres', host: 'h', readReplica } }).storage,
      ).toMatchObject({ readReplica });
      const dataSource = { options: { type: 'postgres' }, initialize: async () => undefined };
      expect(
        resolveChokaQOptions({ storage: { dataSource, readReplica } as never }).storage,
      ).toMatchObject({ readReplica });
      expect(
        issuesOf({
          storage: { type: 'postgres', host: 'h', readReplica: { host: 'r', password: 1 } },
        } as never),
      ).toEqual([
        { path: 'storage.readReplica.password', message: 'must be a string', value: '***' },
      ]);
    });

    it('takes partitioning on PostgreSQL, SQL Server and a borrowed DataSource, never on SQLite', () => {
      for (const period of ['day', 'week', 'month'] as const) {
        expect(
          resolveChokaQOptions({
            storage: { type: 'postgres', host: 'h', partitioning: { period } },
          }).storage,
        ).toMatchObject({ partitioning: { period } });
      }
      expect(
        resolveChokaQOptions({
          storage: { type: 'mssql', host: 'h', partitioning: { period: 'month' } },
        }).storage,
      ).toMatchObject({ partitioning: { period: 'month' } });
      const dataSource = { options: { type: 'postgres' }, initialize: async () => undefined };
      expect(
        resolveChokaQOptions({ storage: { dataSource, partitioning: { period: 'week' } } } as never)
          .storage,
      ).toMatchObject({ partitioning: { period: 'week' } });
      expect(
        issuesOf({ storage: { type: 'sqlite', partitioning: { period: 'day' } } } as never),
      ).toEqual([
        {
          path: 'storage.partitioning',
          message: 'is not a known option of sqlite storage',
          value: { period: 'day' },
        },
      ]);
    });

    it('checks the SQL Server and schema-timeout options where they apply, and only names them elsewhere', () => {
      const dataSource = { options: { type: 'mssql' }, initialize: async () => undefined };
      const mssql = (extra: object) =>
        issuesOf({ storage: { type: 'mssql', host: 'h', ...extra } });
      const postgres = (extra: object) =>
        issuesOf({ storage: { type: 'postgres', host: 'h', ...extra } });
      const unknown = (key: string, value: unknown) => ({
        path: `storage.${key}`,
        message: 'is not a known option of postgres storage',
        value,
      });
      const paths = (issues: Array<{ path: string }>) => issues.map((i) => i.path);

      expect(mssql({ options: 5 })).toEqual([
        { path: 'storage.options', message: 'must be an object of mssql driver options', value: 5 },
      ]);
      expect(postgres({ options: 5 })).toEqual([unknown('options', 5)]);
      // Under a second a driver timer would cancel ordinary claims and moves of a busy server.
      expect(paths(mssql({ requestTimeoutMs: 999 }))).toEqual(['storage.requestTimeoutMs']);
      expect(postgres({ requestTimeoutMs: 999 })).toEqual([unknown('requestTimeoutMs', 999)]);
      expect(paths(mssql({ schemaTimeoutMs: -1 }))).toEqual(['storage.schemaTimeoutMs']);
      expect(paths(issuesOf({ storage: { dataSource, schemaTimeoutMs: -1 } } as never))).toEqual([
        'storage.schemaTimeoutMs',
      ]);
      expect(postgres({ schemaTimeoutMs: -1 })).toEqual([unknown('schemaTimeoutMs', -1)]);
    });

    it('names each wrong part of partitioning', () => {
      const postgres = (partitioning: unknown) =>
        issuesOf({ storage: { type: 'postgres', host: 'h', partitioning } } as never);
      expect(postgres('day')).toEqual([
        {
          path: 'storage.partitioning',
          message: "must be an object such as { period: 'day' }",
          value: 'day',
        },
      ]);
      expect(postgres({ period: 'hour', ahead: 3 })).toEqual([
        {
          path: 'storage.partitioning.ahead',
          message: 'is not a known option of partitioning',
          value: 3,
        },
        {
          path: 'storage.partitioning.period',
          message: "must be 'day', 'week' or 'month'",
          value: 'hour',
        },
      ]);
      expect(postgres({})).toEqual([
        {
          path: 'storage.partitioning.period',
          message: "must be 'day', 'week' or 'month'",
          value: undefined,
        },
      ]);
    });

    it("checks a read replica's connection fields as the storage's own, each issue whole", () => {
      expect(
        issuesOf({
          storage: { type: 'postgres', host: 'h', readReplica: 'postgres://u:secret@r/db' },
        } as never),
      ).toEqual([
        {
          path: 'storage.readReplica',
          message: 'must be an object with a url or a host',
          value: 'postgres://u:***@r/db',
        },
      ]);
      const string = 'must be a non-empty string of at most 4096 characters';
      expect(
        issuesOf({
          storage: {
            type: 'postgres',
            host: 'h',
            readReplica: {
              ssl: true,
              url: 'x'.repeat(4_097),
              // 4,096 characters is the bound itself: accepted.
              host: 'y'.repeat(4_096),
              username: 'a\u0000b',
              database: 7,
              password: 'fine',
              port: 0,
              poolSize: 1_001,
            },
          },
        } as never),
      ).toEqual([
        {
          path: 'storage.readReplica.ssl',
          message: 'is not a known option of a read replica',
          value: true,
        },
        { path: 'storage.readReplica.url', message: string, value: expect.any(String) },
        { path: 'storage.readReplica.username', message: string, value: 'a\u0000b' },
        { path: 'storage.readReplica.database', message: string, value: 7 },
        {
          path: 'storage.readReplica.port',
          message: 'must be an integer from 1 to 65535',
          value: 0,
        },
        {
          path: 'storage.readReplica.poolSize',
          message: 'must be an integer from 1 to 1000',
          value: 1_001,
        },
      ]);
      expect(
        issuesOf({ storage: { type: 'postgres', host: 'h', readReplica: { host: '' } } } as never),
      ).toEqual([{ path: 'storage.readReplica.host', message: string, value: '' }]);
      expect(
        issuesOf({ storage: { type: 'postgres', host: 'h', readReplica: {} } } as never),
      ).toEqual([
        { path: 'storage.readReplica', message: 'a read replica needs a url or a host', value: {} },
      ]);
    });

    it('keeps a borrowed DataSource by reference', () => {
      const dataSource = { options: { type: 'postgres' }, initialize: async () => undefined };
      const r = resolveChokaQOptions({ storage: { dataSource } as never });
      expect((r.storage as { dataSource: unknown }).dataSource).toBe(dataSource);
    });

    it.each([
      ['storage.type', { type: 'mysql' }],
      ['storage', 'sqlite'],
      ['storage.database', { type: 'sqlite', database: '' }],
      ['storage.busyTimeoutMs', { type: 'sqlite', busyTimeoutMs: -1 }],
      ['storage.dataVersionPollMs', { type: 'sqlite', dataVersionPollMs: 1.5 }],
      ['storage.url', { type: 'sqlite', url: 'x' }],
      ['storage', { type: 'postgres' }],
      ['storage.port', { type: 'postgres', host: 'h', port: 70_000 }],
      ['storage.poolSize', { type: 'postgres', host: 'h', poolSize: 0 }],
      ['storage.notify', { type: 'postgres', host: 'h', notify: 'no' }],
      ['storage.notify', { type: 'mssql', host: 'h', notify: true }],
      ['storage.notifyReconnectMs', { type: 'postgres', host: 'h', notifyReconnectMs: 0 }],
      ['storage.notifyReconnectMs', { type: 'sqlite', notifyReconnectMs: 1_000 }],
      ['storage.preparedStatements', { type: 'postgres', host: 'h', preparedStatements: 1 }],
      ['storage.preparedStatements', { type: 'sqlite', preparedStatements: true }],
      ['storage.options', { type: 'mssql', host: 'h', options: 'encrypt' }],
      ['storage.requestTimeoutMs', { type: 'mssql', host: 'h', requestTimeoutMs: 999 }],
      ['storage.requestTimeoutMs', { type: 'mssql', host: 'h', requestTimeoutMs: 2 ** 31 }],
      ['storage.requestTimeoutMs', { type: 'postgres', host: 'h', requestTimeoutMs: 60_000 }],
      ['storage.schemaTimeoutMs', { type: 'mssql', host: 'h', schemaTimeoutMs: -1 }],
      ['storage.schemaTimeoutMs', { type: 'mssql', host: 'h', schemaTimeoutMs: 2 ** 31 }],
      ['storage.schemaTimeoutMs', { type: 'postgres', host: 'h', schemaTimeoutMs: 60_000 }],
      ['storage.dataSource', { dataSource: {} }],
      ['storage.autoCreateSchema', { type: 'sqlite', autoCreateSchema: 'yes' }],
      ['storage.schema', { type: 'sqlite', schema: '' }],
      ['storage.readReplica', { type: 'sqlite', readReplica: { host: 'r' } }],
      ['storage.readReplica', { type: 'mssql', host: 'h', readReplica: { host: 'r' } }],
      ['storage.readReplica', { type: 'postgres', host: 'h', readReplica: 'postgres://r/db' }],
      ['storage.readReplica', { type: 'postgres', host: 'h', readReplica: { poolSize: 2 } }],
      [
        'storage.readReplica.port',
        { type: 'postgres', host: 'h', readReplica: { host: 'r', port: 0 } },
      ],
      [
        'storage.readReplica.poolSize',
        { type: 'postgres', host: 'h', readReplica: { host: 'r', poolSize: 1.5 } },
      ],
      ['storage.readReplica.url', { type: 'postgres', host: 'h', readReplica: { url: '' } }],
      [
        'storage.readReplica.notify',
        { type: 'postgres', host: 'h', readReplica: { host: 'r', notify: false } },
      ],
    ])('rejects %s in %j', (path, storage) => {
      expect(issuesOf({ storage }).map((i) => i.path)).toEqual([path]);
    });

    it('checks transientRetry like the other options: its waits are timers too', () => {
      const issues = issuesOf({
        storage: {
          type: 'sqlite',
          transientRetry: { maxAttempts: 0, baseDelayMs: -1, maxDelayMs: 2 ** 31, floor: 1 },
        } as never,
      });
      expect(issues).toEqual([
        {
          path: 'storage.transientRetry.maxAttempts',
          message: 'must be an integer ≥ 1',
          value: 0,
        },
        {
          path: 'storage.transientRetry.baseDelayMs',
          message: 'must be an integer from 0 to 2147483647',
          value: -1,
        },
        {
          path: 'storage.transientRetry.maxDelayMs',
          message: 'must be an integer from 0 to 2147483647',
          value: 2 ** 31,
        },
        { path: 'storage.transientRetry.floor', message: 'is not a known option', value: 1 },
      ]);
      const ok = { maxAttempts: 2, baseDelayMs: 0, maxDelayMs: 2 ** 31 - 1 };
      expect(
        resolveChokaQOptions({ storage: { type: 'sqlite', transientRetry: ok } }).storage
          .transientRetry,
      ).toEqual(ok);
    });

    it('never echoes a password', () => {
      const issues = issuesOf({ storage: { type: 'postgres', host: 'h', password: 42 } });
      expect(issues).toEqual([
        { path: 'storage.password', message: 'must be a string', value: '***' },
      ]);
    });

    it('never echoes the password of a refused url or of the options beside it', () => {
      for (const storage of [
        // A refused url (a NUL in it), and the SQL Server connection-string form.
        { type: 'postgres', url: 'postgres://app:s3cret@db:5432/jobs\u0000' },
        { type: 'mssql', url: 'Server=db;User Id=sa;Password=s3cret;\u0000' },
        // Neither url nor host: the issue's value is the storage options themselves.
        { type: 'postgres', username: 'app', password: 's3cret' },
      ]) {
        let error: unknown;
        try {
          resolveChokaQOptions({ storage } as ChokaQModuleOptions);
        } catch (thrown) {
          error = thrown;
        }
        expect(error).toBeInstanceOf(ChokaQValidationError);
        const { message, issues } = error as ChokaQValidationError;
        expect(message).not.toContain('s3cret');
        expect(JSON.stringify(issues)).not.toContain('s3cret');
      }
    });

    it('reports storage problems together with the others', () => {
      const issues = issuesOf({ storage: { type: 'mysql' }, retry: { maxAttempts: 0 } });
      expect(issues.map((i) => i.path)).toEqual(['retry.maxAttempts', 'storage.type']);
    });
  });

  describe('metrics', () => {
    it('is on by default, with a budget of 100 values per attribute and the queue gauges', () => {
      expect(resolveChokaQOptions().metrics).toEqual({
        enabled: true,
        maxAttributeValues: 100,
        queueGauges: true,
      });
    });

    it('keeps the MeterProvider it is given, by reference', () => {
      const meterProvider = { getMeter: () => ({}) };
      const r = resolveChokaQOptions({ metrics: { meterProvider, queueGauges: false } });
      expect(r.metrics.meterProvider).toBe(meterProvider);
      expect(r.metrics.queueGauges).toBe(false);
    });

    it('refuses what is not a MeterProvider, a bad budget and unknown keys', () => {
      const issues = issuesOf({
        metrics: {
          enabled: 'yes',
          maxAttributeValues: 0,
          meterProvider: { getMeters: () => ({}) },
          exporter: 'prometheus',
        },
      });
      expect(issues.map((i) => [i.path, i.message])).toEqual([
        ['metrics.enabled', 'must be a boolean'],
        ['metrics.maxAttributeValues', 'must be an integer from 1 to 100000'],
        ['metrics.exporter', 'is not a known option'],
        ['metrics.meterProvider', 'must be an OpenTelemetry MeterProvider (with getMeter)'],
      ]);
    });
  });

  describe('tracing', () => {
    it('is on by default, on the global TracerProvider', () => {
      expect(resolveChokaQOptions().tracing).toEqual({ enabled: true });
    });

    it('keeps the TracerProvider it is given, by reference', () => {
      const tracerProvider = { getTracer: () => ({}) };
      const r = resolveChokaQOptions({ tracing: { tracerProvider, enabled: false } });
      expect(r.tracing.tracerProvider).toBe(tracerProvider);
      expect(r.tracing.enabled).toBe(false);
    });

    it('refuses what is not a TracerProvider, a bad flag and unknown keys', () => {
      const issues = issuesOf({
        tracing: {
          enabled: 1,
          tracerProvider: { getMeter: () => ({}) },
          storageSpans: true,
        },
      });
      expect(issues.map((i) => [i.path, i.message])).toEqual([
        ['tracing.enabled', 'must be a boolean'],
        ['tracing.storageSpans', 'is not a known option'],
        ['tracing.tracerProvider', 'must be an OpenTelemetry TracerProvider (with getTracer)'],
      ]);
    });
  });
});
