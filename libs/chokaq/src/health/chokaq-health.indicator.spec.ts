import { Logger } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import type { ChokaQAdmin } from '../admin/chokaq-admin.service';
import { ChokaQValidationError } from '../errors';
import type { QueueHealth } from '../interfaces/job-view.interface';
import type { QueueInfo } from '../interfaces/job.interface';
import type { SchemaStatus } from '../interfaces/schema-status.interface';
import type { LocalWorkerHealth } from '../interfaces/worker.interface';
import { ChokaQHealthIndicator } from './chokaq-health.indicator';

/** The part of ChokaQAdmin the indicator reads, with answers a test sets. */
class FakeAdmin {
  schema: SchemaStatus | Error | 'hang' = status(8, 8);
  worker: LocalWorkerHealth | null = running();
  health: QueueHealth[] = [];
  queues: QueueInfo[] = [];
  reads = 0;

  async getSchemaStatus(): Promise<SchemaStatus> {
    this.reads++;
    if (this.schema === 'hang') return new Promise(() => undefined);
    if (this.schema instanceof Error) throw this.schema;
    return this.schema;
  }
  localWorkerHealth(): LocalWorkerHealth | null {
    return this.worker;
  }
  async getQueueHealth(): Promise<QueueHealth[]> {
    this.reads++;
    return this.health;
  }
  async listQueues(): Promise<QueueInfo[]> {
    return this.queues;
  }
}

/**
 * A `schemaStatus()` answer: the ledger records versions 1 to `current` (past `latest` when a
 * newer release migrated it), this release knows 1 to `latest`; the script is elided.
 */
function status(current: number, latest: number): SchemaStatus {
  const pending: SchemaStatus['pending'] = [];
  for (let v = current + 1; v <= latest; v++) pending.push({ version: v, description: `v${v}` });
  return {
    dialect: 'postgres',
    schema: 'chokaq',
    currentVersion: current,
    latestVersion: latest,
    pending,
    script: pending.length > 0 ? '-- the pending versions' : '',
  };
}

function running(overrides: Partial<LocalWorkerHealth> = {}): LocalWorkerHealth {
  return {
    workerId: 'host:1:abcd',
    state: 'running',
    heartbeatAgeMs: 1_200,
    heartbeatIntervalMs: 10_000,
    heartbeatFailures: 0,
    buffered: 3,
    running: 2,
    concurrency: 10,
    ...overrides,
  };
}

function lag(queue: string, duePending: number, maxLagMs: number): QueueHealth {
  return {
    queue,
    duePending,
    heldPending: 0,
    heldUntilUtc: null,
    avgLagMs: maxLagMs / 2,
    maxLagMs,
    active: 0,
    maxWorkers: null,
    saturation: null,
    startLag: { started: 0, meanMs: null, maxMs: null },
  };
}

function control(name: string, patch: Partial<QueueInfo> = {}): QueueInfo {
  return { name, isPaused: false, isActive: true, ...patch } as QueueInfo;
}

describe('ChokaQHealthIndicator', () => {
  let admin: FakeAdmin;
  let indicator: ChokaQHealthIndicator;
  beforeEach(() => {
    admin = new FakeAdmin();
    indicator = new ChokaQHealthIndicator(
      new HealthIndicatorService(),
      admin as unknown as ChokaQAdmin,
    );
  });
  afterEach(() => jest.useRealTimers());

  describe('storage()', () => {
    it('is up at the expected schema version, with the versions and the response time', async () => {
      expect(await indicator.storage()).toEqual({
        'chokaq-storage': {
          status: 'up',
          schemaVersion: 8,
          expectedSchemaVersion: 8,
          responseTimeMs: expect.any(Number),
        },
      });
    });

    it('is up on a newer schema (a newer release migrated it), under the key given', async () => {
      admin.schema = status(9, 8);
      expect(await indicator.storage('db')).toEqual({
        db: expect.objectContaining({ status: 'up', schemaVersion: 9, expectedSchemaVersion: 8 }),
      });
    });

    it('is down without a schema, or behind the expected version, saying how to migrate', async () => {
      admin.schema = status(0, 8);
      expect((await indicator.storage())['chokaq-storage']).toMatchObject({
        status: 'down',
        reason: 'schema-missing',
        schemaVersion: 0,
        expectedSchemaVersion: 8,
        message: expect.stringContaining('chokaq migrate'),
      });
      admin.schema = status(6, 8);
      expect((await indicator.storage())['chokaq-storage']).toMatchObject({
        status: 'down',
        reason: 'schema-behind',
        schemaVersion: 6,
        expectedSchemaVersion: 8,
        message: expect.stringContaining('version 6; this release needs 8 (missing 7, 8)'),
      });
    });

    it('is down when the read fails, with a stable code; the driver text only in the log', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      try {
        admin.schema = Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:5432'), {
          code: 'ECONNREFUSED',
        });
        expect((await indicator.storage())['chokaq-storage']).toEqual({
          status: 'down',
          reason: 'unreachable',
          code: 'ECONNREFUSED',
          message: 'The database read failed (ECONNREFUSED); the server log has the details.',
          timeoutMs: 3_000,
        });
        expect(String(warn.mock.calls[0]?.[0])).toContain('connect ECONNREFUSED 10.1.2.3:5432');
        // No code anywhere in the chain: the error's class name.
        admin.schema = new TypeError('relation "chokaq".jobs_hot does not exist');
        expect((await indicator.storage())['chokaq-storage']).toMatchObject({ code: 'TypeError' });
      } finally {
        warn.mockRestore();
      }
    });

    it('is down after timeoutMs when the database does not answer, and polls share the hung read', async () => {
      jest.useFakeTimers();
      admin.schema = 'hang';
      const first = indicator.storage('db', { timeoutMs: 500 });
      await jest.advanceTimersByTimeAsync(500);
      expect((await first).db).toMatchObject({ status: 'down', reason: 'timeout', timeoutMs: 500 });
      const second = indicator.storage('db', { timeoutMs: 500 });
      await jest.advanceTimersByTimeAsync(500);
      expect((await second).db).toMatchObject({ status: 'down', reason: 'timeout' });
      expect(admin.reads).toBe(1);
      expect(jest.getTimerCount()).toBe(0);
    });

    it('refuses bad arguments with every problem at once', async () => {
      await expect(indicator.storage('', { timeoutMs: 0 })).rejects.toThrow(ChokaQValidationError);
      await expect(
        indicator.storage('db', { timeoutMs: 1.5, timout: 3 } as never),
      ).rejects.toMatchObject({
        issues: [
          { path: 'options.timeoutMs', message: 'must be an integer from 1 to 2147483647' },
          { path: 'options.timout', message: 'is not a known option' },
        ],
      });
      expect(admin.reads).toBe(0);
    });
  });

  describe('worker()', () => {
    it('is up while running with a fresh heartbeat; stale after three intervals by default', async () => {
      expect(await indicator.worker()).toEqual({
        'chokaq-worker': {
          status: 'up',
          workerId: 'host:1:abcd',
          state: 'running',
          heartbeatAgeMs: 1_200,
          heartbeatStaleMs: 30_000,
          heartbeatFailures: 0,
          buffered: 3,
          running: 2,
          concurrency: 10,
        },
      });
      admin.worker = running({ heartbeatAgeMs: 30_000 });
      expect((await indicator.worker())['chokaq-worker'].status).toBe('up');
      admin.worker = running({ heartbeatAgeMs: 30_001, heartbeatFailures: 3 });
      expect((await indicator.worker())['chokaq-worker']).toMatchObject({
        status: 'down',
        reason: 'heartbeat-stale',
        heartbeatAgeMs: 30_001,
        heartbeatFailures: 3,
      });
    });

    it('takes heartbeatStaleMs from the options', async () => {
      admin.worker = running({ heartbeatAgeMs: 2_000 });
      expect((await indicator.worker('w', { heartbeatStaleMs: 1_500 })).w).toMatchObject({
        status: 'down',
        reason: 'heartbeat-stale',
        heartbeatStaleMs: 1_500,
      });
    });

    it.each(['starting', 'draining', 'stopped'] as const)('is down while %s', async (state) => {
      admin.worker = running({ state });
      expect((await indicator.worker())['chokaq-worker']).toMatchObject({
        status: 'down',
        reason: state,
        state,
      });
    });

    it('is down where no worker runs (producer-only)', async () => {
      admin.worker = null;
      expect((await indicator.worker())['chokaq-worker']).toMatchObject({
        status: 'down',
        reason: 'no-worker',
      });
    });

    it('refuses a bad staleness', async () => {
      await expect(indicator.worker('w', { heartbeatStaleMs: -1 })).rejects.toThrow(
        'options.heartbeatStaleMs must be an integer ≥ 1',
      );
    });
  });

  describe('queues()', () => {
    const thresholds = { lagDegradedMs: 60_000, lagUnhealthyMs: 300_000 };

    it('is up and healthy below the degraded threshold, naming the worst queue', async () => {
      admin.health = [lag('emails', 4, 1_000), lag('billing', 0, 0), lag('pdf', 9, 5_000)];
      expect(await indicator.queues(thresholds)).toEqual({
        'chokaq-queues': {
          status: 'up',
          level: 'healthy',
          worstQueue: 'pdf',
          lagMs: 5_000,
          duePending: 9,
          heldPending: 0,
          lagDegradedMs: 60_000,
          lagUnhealthyMs: 300_000,
          queuesChecked: 3,
          degraded: [],
          unhealthy: [],
        },
      });
    });

    it('stays up but degraded between the thresholds, and is down at the unhealthy one', async () => {
      admin.health = [lag('emails', 4, 60_000), lag('pdf', 1, 10)];
      expect((await indicator.queues('lag', thresholds)).lag).toMatchObject({
        status: 'up',
        level: 'degraded',
        worstQueue: 'emails',
        lagMs: 60_000,
        degraded: ['emails'],
      });
      admin.health = [lag('emails', 4, 60_000), lag('pdf', 2, 300_000)];
      expect((await indicator.queues('lag', thresholds)).lag).toMatchObject({
        status: 'down',
        level: 'unhealthy',
        worstQueue: 'pdf',
        lagMs: 300_000,
        duePending: 2,
        heldPending: 0,
        degraded: ['emails'],
        unhealthy: ['pdf'],
      });
    });

    it('counts the jobs an open circuit holds: a queue with nothing due but held jobs waiting lags', async () => {
      admin.health = [{ ...lag('partner', 0, 90_000), heldPending: 3 }, lag('pdf', 1, 10)];
      expect((await indicator.queues('lag', thresholds)).lag).toMatchObject({
        status: 'up',
        level: 'degraded',
        worstQueue: 'partner',
        lagMs: 90_000,
        duePending: 0,
        heldPending: 3,
        degraded: ['partner'],
      });
    });

    it('leaves paused and retired queues out unless named', async () => {
      admin.health = [lag('paused', 5, 900_000), lag('retired', 5, 900_000), lag('ok', 1, 5)];
      admin.queues = [
        control('paused', { isPaused: true }),
        control('retired', { isActive: false }),
        control('ok'),
      ];
      expect((await indicator.queues(thresholds))['chokaq-queues']).toMatchObject({
        status: 'up',
        worstQueue: 'ok',
        queuesChecked: 1,
      });
      expect(
        (await indicator.queues({ ...thresholds, queues: ['paused', 'missing'] }))['chokaq-queues'],
      ).toMatchObject({ status: 'down', worstQueue: 'paused', queuesChecked: 1 });
    });

    it('takes its key first or not at all', async () => {
      expect(Object.keys(await indicator.queues('lag', thresholds))).toEqual(['lag']);
      expect(Object.keys(await indicator.queues(thresholds))).toEqual(['chokaq-queues']);
      const fromJs = indicator.queues as (key: unknown, o: unknown) => Promise<object>;
      expect(Object.keys(await fromJs.call(indicator, undefined, thresholds))).toEqual([
        'chokaq-queues',
      ]);
    });

    it('with nothing due, is healthy with no worst queue', async () => {
      admin.health = [lag('emails', 0, 0)];
      expect((await indicator.queues(thresholds))['chokaq-queues']).toMatchObject({
        status: 'up',
        level: 'healthy',
        worstQueue: null,
        lagMs: 0,
        duePending: 0,
        heldPending: 0,
      });
    });

    it('refuses missing or crossed thresholds and bad queue names, all at once', async () => {
      await expect(indicator.queues({} as never)).rejects.toMatchObject({
        issues: [
          expect.objectContaining({ path: 'options.lagDegradedMs' }),
          expect.objectContaining({ path: 'options.lagUnhealthyMs' }),
        ],
      });
      await expect(
        indicator.queues({ lagDegradedMs: 10, lagUnhealthyMs: 5, queues: ['ok', 'bad name'] }),
      ).rejects.toMatchObject({
        issues: [
          { path: 'options.lagDegradedMs', message: 'must be at most lagUnhealthyMs (5)' },
          expect.objectContaining({ path: 'options.queues[1]' }),
        ],
      });
      expect(admin.reads).toBe(0);
    });
  });
});
