import { Controller, Get, INestApplication, Inject, Injectable } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import {
  ChokaQAdmin,
  ChokaQModule,
  ChokaQModuleOptions,
  JobClient,
  JobHandler,
  defineJob,
} from '../../libs/chokaq/src';
import { ChokaQHealthIndicator, ChokaQHealthModule } from '../../libs/chokaq/src/health';
import { MSSQL_SCHEMA_VERSION } from '../../libs/chokaq/src/storage/mssql/mssql.schema';
import { POSTGRES_SCHEMA_VERSION } from '../../libs/chokaq/src/storage/postgres/postgres.schema';
import { SQLITE_MIGRATIONS } from '../../libs/chokaq/src/storage/sqlite/sqlite.schema';
import { TcpProxy } from '../faults/support/tcp-proxy';
import { PG_URL } from '../support/env';
import { TestSchema, describeEachDialect, describePostgres } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import {
  FAST_OPTIONS,
  closeAndCheck,
  e2eDatabase,
  mergeOptions,
  quietLogger,
} from './support/e2e-app';

/**
 * The health checks of `@chokaq/nestjs/health` in a real Nest app, read the way an orchestrator
 * reads them: Terminus' `HealthCheckService` behind `GET /health` over HTTP (200 while every
 * check is up, 503 otherwise, each check's data in the body). The storage, worker and queues checks
 * on a running app; the queues' lag turning degraded (still 200) then unhealthy (503) with due
 * jobs and no worker; and, on PostgreSQL behind the fault suite's TCP proxy, a storage outage:
 * unhealthy within a bounded wait after the cut, healthy again after the restore.
 */
jest.setTimeout(60_000);

const Report = defineJob<{ n: number }>('health.reports', 'report.v1');
const Export = defineJob<{ n: number }>('health.exports', 'export.v1');

/** The newest version each dialect's migrations reach: what a current schema's ledger records. */
const EXPECTED_SCHEMA = {
  sqlite: SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1].version,
  postgres: POSTGRES_SCHEMA_VERSION,
  mssql: MSSQL_SCHEMA_VERSION,
};

const LAG_DEGRADED_MS = 60_000;
const LAG_UNHEALTHY_MS = 300_000;
/** Short bounds, so an outage shows within a few seconds (production keeps the defaults). */
const CHECK_TIMEOUT_MS = 1_000;
const HEARTBEAT_STALE_MS = 1_500;

@Injectable()
class ReportHandlers {
  @JobHandler(Report)
  async report(): Promise<void> {}
}

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    @Inject(ChokaQHealthIndicator) private readonly chokaq: ChokaQHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  all() {
    return this.health.check([
      () => this.storage(),
      () => this.chokaq.worker('worker', { heartbeatStaleMs: HEARTBEAT_STALE_MS }),
      () => this.queues(),
    ]);
  }

  @Get('queues')
  @HealthCheck()
  queuesOnly() {
    return this.health.check([() => this.queues()]);
  }

  @Get('worker')
  @HealthCheck()
  workerOnly() {
    return this.health.check([() => this.chokaq.worker('worker')]);
  }

  private storage() {
    return this.chokaq.storage('storage', { timeoutMs: CHECK_TIMEOUT_MS });
  }

  private queues() {
    return this.chokaq.queues('queues', {
      lagDegradedMs: LAG_DEGRADED_MS,
      lagUnhealthyMs: LAG_UNHEALTHY_MS,
      timeoutMs: CHECK_TIMEOUT_MS,
    });
  }
}

/** Terminus' response body. */
interface HealthBody {
  status: 'ok' | 'error' | 'shutting_down';
  info: Record<string, Record<string, unknown>>;
  error: Record<string, Record<string, unknown>>;
  details: Record<string, Record<string, unknown>>;
}

/** An HTTP app: ChokaQ, Terminus, the health module and `GET /health`, listening on a free port. */
async function healthApp(
  storage: ChokaQModuleOptions['storage'],
  options: ChokaQModuleOptions = {},
): Promise<{ app: INestApplication; get: (path: string) => Promise<[number, HealthBody]> }> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ChokaQModule.forRoot(mergeOptions(FAST_OPTIONS, { storage }, options)),
      // Terminus logs every failed check; the test reads them from the body instead.
      TerminusModule.forRoot({ logger: false }),
      ChokaQHealthModule,
    ],
    controllers: [HealthController],
    providers: [ReportHandlers],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: quietLogger() });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const get = async (path: string): Promise<[number, HealthBody]> => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      signal: AbortSignal.timeout(10_000),
    });
    return [response.status, (await response.json()) as HealthBody];
  };
  return { app, get };
}

/**
 * Makes every job of `queue` due `ms` earlier than it was (as if enqueued then): its enqueue time,
 * and on SQL Server its stored due time too, which the health read measures (`DueAtUtc`).
 */
async function backdateQueue(db: TestSchema, queue: string, ms: number): Promise<void> {
  const c = db.column('enqueued_at_utc');
  const due = db.column('due_at_utc');
  // DATEADD takes an int: whole seconds (the tests move by whole seconds).
  const back = (col: string) =>
    `${col} = DATEADD(second, -CAST(${db.param(1)} / 1000 AS int), ${col})`;
  const set =
    db.dialect === 'sqlite'
      ? `${c} = ${c} - ${db.param(1)}`
      : db.dialect === 'postgres'
        ? `${c} = ${c} - (${db.param(1)}::bigint * interval '1 millisecond')`
        : `${back(c)}, ${back(due)}`;
  await db.sql(
    `UPDATE ${db.table('hot')} SET ${set} WHERE ${db.column('queue')} = ${db.param(2)}`,
    [ms, queue],
  );
}

describeEachDialect('health checks through Terminus over HTTP', ({ name: dialect }) => {
  let db: TestSchema;
  beforeEach(() => (db = e2eDatabase(dialect)));
  afterEach(async () => db.close());

  it('storage, worker and queues are up on a running app, each with its data', async () => {
    const { app, get } = await healthApp(db.options);
    try {
      const id = await app.get(JobClient).enqueue(Report, { n: 1 });
      await waitFor(
        'the job archived',
        async () => (await app.get(ChokaQAdmin).getJob(id))?.pillar === 'archive',
      );
      const [status, body] = await get('/health');
      expect(status).toBe(200);
      expect(body.status).toBe('ok');
      expect(body.error).toEqual({});
      expect(body.info.storage).toEqual({
        status: 'up',
        schemaVersion: EXPECTED_SCHEMA[dialect],
        expectedSchemaVersion: EXPECTED_SCHEMA[dialect],
        responseTimeMs: expect.any(Number),
      });
      expect(body.info.worker).toMatchObject({
        status: 'up',
        state: 'running',
        workerId: expect.any(String),
        heartbeatAgeMs: expect.any(Number),
        heartbeatStaleMs: HEARTBEAT_STALE_MS,
        heartbeatFailures: 0,
      });
      expect(body.info.queues).toEqual({
        status: 'up',
        level: 'healthy',
        worstQueue: null,
        lagMs: 0,
        duePending: 0,
        heldPending: 0,
        lagDegradedMs: LAG_DEGRADED_MS,
        lagUnhealthyMs: LAG_UNHEALTHY_MS,
        queuesChecked: 1,
        degraded: [],
        unhealthy: [],
      });
    } finally {
      await closeAndCheck(app, db);
    }
  });

  it("the storage check reads the schema's ledger: down while it lacks a version, up when a newer release added one", async () => {
    const { app, get } = await healthApp(db.options);
    const latest = EXPECTED_SCHEMA[dialect];
    const ledger = db.table('migrations');
    const [version, description, appliedAt] = ['version', 'description', 'applied_at_utc'].map(
      (c) => db.column(c),
    );
    /** Records version `from + 1` in the ledger, copied from the row of version `from`. */
    const recordAfter = (from: number) =>
      db.sql(
        `INSERT INTO ${ledger} (${version}, ${description}, ${appliedAt}) ` +
          `SELECT ${version} + 1, ${description}, ${appliedAt} FROM ${ledger} WHERE ${version} = ${db.param(1)}`,
        [from],
      );
    try {
      // As if this release started on a schema it did not migrate: the newest version is missing.
      await db.sql(`DELETE FROM ${ledger} WHERE ${version} = ${db.param(1)}`, [latest]);
      let [status, body] = await get('/health');
      expect(status).toBe(503);
      expect(body.error.storage).toEqual({
        status: 'down',
        reason: 'schema-behind',
        schemaVersion: latest - 1,
        expectedSchemaVersion: latest,
        responseTimeMs: expect.any(Number),
        message: expect.stringContaining(`needs ${latest} (missing ${latest})`),
      });

      // A newer release migrated it past this one: every version this release needs is there.
      await recordAfter(latest - 1);
      await recordAfter(latest);
      [status, body] = await get('/health');
      expect(status).toBe(200);
      expect(body.info.storage).toEqual({
        status: 'up',
        schemaVersion: latest + 1,
        expectedSchemaVersion: latest,
        responseTimeMs: expect.any(Number),
      });
    } finally {
      await closeAndCheck(app, db);
    }
  });

  it('due jobs and no worker: the queues check turns degraded (still 200), then unhealthy (503)', async () => {
    // Producer-only: nothing claims, so the due jobs wait and their lag grows.
    const { app, get } = await healthApp(db.options, { worker: { enabled: false } });
    try {
      const jobs = app.get(JobClient);
      await jobs.enqueueMany(Report, [
        { payload: { n: 1 } },
        { payload: { n: 2 } },
        { payload: { n: 3 } },
      ]);
      let [status, body] = await get('/health/queues');
      expect(status).toBe(200);
      expect(body.info.queues).toMatchObject({
        level: 'healthy',
        worstQueue: 'health.reports',
        duePending: 3,
      });

      // Two minutes late: past the degraded threshold, not the unhealthy one.
      await backdateQueue(db, 'health.reports', 120_000);
      [status, body] = await get('/health/queues');
      expect(status).toBe(200);
      expect(body.status).toBe('ok');
      expect(body.info.queues).toMatchObject({
        status: 'up',
        level: 'degraded',
        worstQueue: 'health.reports',
        duePending: 3,
        degraded: ['health.reports'],
        unhealthy: [],
      });
      expect(body.info.queues.lagMs).toBeGreaterThanOrEqual(120_000);
      expect(body.info.queues.lagMs).toBeLessThan(LAG_UNHEALTHY_MS);

      // Another queue ten minutes late: the check is down and names it.
      await jobs.enqueue(Export, { n: 1 });
      await backdateQueue(db, 'health.exports', 600_000);
      [status, body] = await get('/health/queues');
      expect(status).toBe(503);
      expect(body.status).toBe('error');
      expect(body.error.queues).toMatchObject({
        status: 'down',
        level: 'unhealthy',
        worstQueue: 'health.exports',
        duePending: 1,
        queuesChecked: 2,
        degraded: ['health.reports'],
        unhealthy: ['health.exports'],
      });
      expect(body.error.queues.lagMs).toBeGreaterThanOrEqual(600_000);

      // An operator pauses it: its lag is a choice now, and the check is back to degraded.
      await app.get(ChokaQAdmin).pauseQueue('health.exports', 'ops');
      [status, body] = await get('/health/queues');
      expect(status).toBe(200);
      expect(body.info.queues).toMatchObject({ level: 'degraded', queuesChecked: 1 });

      // No worker runs in a producer-only process: its worker check says so.
      [status, body] = await get('/health/worker');
      expect(status).toBe(503);
      expect(body.error.worker).toMatchObject({ status: 'down', reason: 'no-worker' });
    } finally {
      await closeAndCheck(app, db);
    }
  });
});

describePostgres('health checks through a PostgreSQL outage', () => {
  let db: TestSchema;
  let proxy: TcpProxy;
  beforeEach(async () => {
    db = e2eDatabase('postgres');
    const target = new URL(PG_URL);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.listen();
  });
  afterEach(async () => {
    await proxy.close();
    await db.close();
  });

  it('is unhealthy within a bounded wait after the proxy is cut, healthy again after it is restored', async () => {
    const proxied = new URL(PG_URL);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    const { app, get } = await healthApp(
      { ...db.options, url: proxied.toString() } as ChokaQModuleOptions['storage'],
      // The worker rides the outage out (no job of it is aborted for missed heartbeats).
      { heartbeat: { failureThreshold: 1_000, cancelOnHeartbeatFailure: false } },
    );
    try {
      const [before] = await get('/health');
      expect(before).toBe(200);

      proxy.cut();
      // Every check that reads the database fails within its timeout, and the worker's heartbeat
      // goes stale: each poll below answers within about CHECK_TIMEOUT_MS.
      const down = await waitFor(
        'every check down',
        async () => {
          const [status, body] = await get('/health');
          return status === 503 && Object.keys(body.error).length === 3 ? body : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 100 },
      );
      expect(down.error.storage).toMatchObject({
        status: 'down',
        reason: expect.stringMatching(/^(unreachable|timeout)$/),
        timeoutMs: CHECK_TIMEOUT_MS,
      });
      expect(down.error.queues).toMatchObject({
        status: 'down',
        reason: expect.stringMatching(/^(unreachable|timeout)$/),
      });
      expect(down.error.worker).toMatchObject({
        status: 'down',
        reason: 'heartbeat-stale',
        state: 'running',
      });
      expect(down.error.worker.heartbeatAgeMs).toBeGreaterThan(HEARTBEAT_STALE_MS);

      // Given longer than the storage's transient-retry budget, the storage check reports that
      // the read gave up, by a stable code and a generic message: the driver's text (host, port,
      // schema) stays in the server log.
      const waited = await app.get(ChokaQHealthIndicator).storage('storage', { timeoutMs: 30_000 });
      expect(waited.storage).toMatchObject({
        status: 'down',
        reason: 'unreachable',
        code: expect.stringMatching(/^[A-Za-z0-9_]+$/),
        message: expect.stringContaining('the server log has the details'),
      });
      const shown = JSON.stringify([waited, down]);
      expect(shown).not.toContain(String(proxy.port));
      expect(shown).not.toContain(db.schema);

      proxy.restore();
      const up = await waitFor(
        'every check up again',
        async () => {
          const [status, body] = await get('/health');
          return status === 200 ? body : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 100 },
      );
      expect(Object.keys(up.info).sort()).toEqual(['queues', 'storage', 'worker']);
      expect(up.info.storage).toMatchObject({
        status: 'up',
        schemaVersion: POSTGRES_SCHEMA_VERSION,
      });
      expect(up.info.worker).toMatchObject({ status: 'up', state: 'running' });
    } finally {
      await closeAndCheck(app, db);
    }
  });
});
