import { Logger, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Client } from 'pg';
import { startOwnCluster, startStandby, type OwnCluster } from '../../bench/lib/pg-cluster';
import {
  ChokaQAdmin,
  ChokaQModule,
  JobClient,
  defineJob,
  type ChokaQModuleOptions,
} from '../../libs/chokaq/src';
import { CHOKAQ_READ_REPLICA } from '../../libs/chokaq/src/chokaq.constants';
import { runCli } from '../../libs/chokaq/src/cli/run-cli';
import { ChokaQDeckModule } from '../../libs/chokaq/src/deck';
import { ChokaQHealthIndicator, ChokaQHealthModule } from '../../libs/chokaq/src/health';
import type { DeckSnapshot } from '../../libs/chokaq/src/deck/deck-snapshot.service';
import type { JobStorage } from '../../libs/chokaq/src/storage';
import { browserAvailable, launchBrowser, openPage } from '../e2e/deck/browser';
import { FAST_OPTIONS, mergeOptions, quietLogger } from '../e2e/support/e2e-app';
import { meterHarness, pointLines } from '../support/metric-reader';
import { describePostgres } from '../support/test-database';
import { waitFor } from '../support/wait-for';

/*
 * `storage.readReplica` on real clusters the test makes itself: a primary (`initdb`, as the
 * `postgres` OS user) and a streaming hot standby of it (`pg_basebackup -R`), each on a free port
 * under a temporary directory, both logging every statement with the session's application name
 * (`chokaq` on the primary's pool, `chokaq-reads` on the replica's). The statement logs say where
 * each read went. The shared test server is never touched.
 */

const LOGGED = ['log_statement=all', "log_line_prefix='[%a] '"];
const Note = defineJob<{ n: number }>('replica', 'note.v1');

/**
 * The statements a server logged after `from` (a length of its log), each as one `[app] …` entry
 * (a statement's text spans lines; every entry of the log starts with the prefix).
 */
function statementsAfter(cluster: OwnCluster, from: number): string[] {
  return cluster
    .log()
    .slice(from)
    .split(/\n(?=\[)/)
    .filter((entry) => /^\[[^\]]*\] LOG: {2}(statement|execute [^:]*):/.test(entry));
}

/** A producer-only app with ChokaQ and the Deck (anonymous), listening on a free port. */
async function startApp(
  options: ChokaQModuleOptions,
): Promise<{ app: INestApplication; deck: string }> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ChokaQModule.forRoot(mergeOptions(FAST_OPTIONS, options)),
      ChokaQDeckModule.forRoot({ path: 'chokaq', guards: [], allowAnonymous: true }),
      ChokaQHealthModule,
    ],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: quietLogger() });
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as { port: number }).port;
  return { app, deck: `http://127.0.0.1:${port}/chokaq` };
}

describePostgres('PostgreSQL read replica: the dashboard-grade reads go to a hot standby', () => {
  let primary: OwnCluster;
  let standby: OwnCluster;
  let app: INestApplication;
  let deck: string;
  let admin: ChokaQAdmin;
  let jobs: JobClient;
  let onStandby: Client;
  const meter = meterHarness();

  beforeAll(async () => {
    primary = await startOwnCluster(LOGGED);
    standby = await startStandby(primary, LOGGED);
    onStandby = new Client({ connectionString: standby.url, application_name: 'test' });
    await onStandby.connect();
    const options: ChokaQModuleOptions = {
      storage: {
        type: 'postgres',
        url: primary.url,
        poolSize: 4,
        readReplica: { url: standby.url, poolSize: 2 },
      },
      worker: { enabled: false },
      metrics: { meterProvider: meter.provider },
    };
    ({ app, deck } = await startApp(options));
    admin = app.get(ChokaQAdmin);
    jobs = app.get(JobClient);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await onStandby?.end();
    await standby?.stop();
    await primary?.stop();
  }, 60_000);

  async function get<T>(path: string): Promise<T> {
    const response = await fetch(`${deck}/api/${path}`);
    expect(response.status).toBe(200);
    return (await response.json()) as T;
  }

  it('the Deck, the queue gauges and the CLI read the standby; the primary logs none of their statements', async () => {
    const kept = await jobs.enqueue(Note, { n: 1 });
    await jobs.enqueue(Note, { n: 2 });
    const dead = await jobs.enqueue(Note, { n: 3 });
    await admin.cancel([dead], 'ops');
    // Replication is asynchronous: the standby shows the rows once it has replayed them.
    await waitFor('the standby to show two pending jobs and one in the DLQ', async () => {
      const [stats] = await admin.getQueueStats();
      return stats?.pending === 2 && (await admin.countExactly({ pillar: 'dlq' })) === 1;
    });
    const primaryMark = primary.log().length;
    const standbyMark = standby.log().length;

    const snapshot = await get<Extract<DeckSnapshot, { ok: true }>>('snapshot');
    expect(snapshot.ok).toBe(true);
    expect(snapshot.summary.pending).toBe(2);
    expect(snapshot.reads).toEqual({ from: 'replica', lagMs: expect.any(Number) });
    const active = await get<{ items: { id: string }[] }>('active');
    expect(active.items.map((j) => j.id).sort()).toEqual([kept, expect.any(String)].sort());
    expect((await get<{ items: { id: string }[] }>('dlq')).items.map((j) => j.id)).toEqual([dead]);
    expect((await get<{ items: unknown[] }>('archive')).items).toEqual([]);
    await get('series?range=hour');
    await get('errors');
    await get('workers');
    expect((await get<{ items: unknown[] }>('audit')).items.length).toBeGreaterThan(0);
    await get('recurring');
    expect(pointLines(await meter.collect())).toEqual(
      expect.arrayContaining([
        'chokaq.queue.pending{queue=replica} 2',
        'chokaq.queue.dlq_size{queue=replica} 1',
      ]),
    );
    // The app's primary pool sent nothing at all for these.
    expect(statementsAfter(primary, primaryMark)).toEqual([]);

    const cliMark = primary.log().length;
    let out = '';
    const code = await runCli(
      ['stats', '--url', primary.url, '--read-replica', standby.url, '--json'],
      {
        out: { write: (t: string) => (out += t) },
        err: { write: () => undefined },
        env: {},
        now: () => Date.now(),
        defaultActor: () => 'cli:test',
      },
    );
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ summary: { pending: 2 } });

    // The CLI's primary session checks the server and the schema there, and reads nothing else.
    const cliOnPrimary = statementsAfter(primary, cliMark);
    expect(cliOnPrimary.length).toBeGreaterThan(0);
    expect(
      cliOnPrimary.filter((line) => !/server_version_num|to_regclass|schema_migrations/.test(line)),
    ).toEqual([]);
    const read = statementsAfter(standby, standbyMark);
    for (const table of ['jobs_hot', 'jobs_archive', 'jobs_dlq', 'audit_log', 'workers']) {
      expect(
        read.filter((line) => line.startsWith('[chokaq-reads]') && line.includes(table)),
      ).not.toEqual([]);
    }
  });

  it('a job, a preview, the health check and an action read the primary; while replay is paused the lists trail it and the Deck shows the lag', async () => {
    await onStandby.query('SELECT pg_wal_replay_pause()');
    try {
      const before = (await admin.getSummary()).pending;
      const id = await jobs.enqueue(Note, { n: 4 });
      const standbyMark = standby.log().length;
      // A job's page reads the job on the primary: the new job is there at once.
      expect((await get<{ job: { id: string } }>(`jobs/${id}`)).job.id).toBe(id);
      const preview = await fetch(`${deck}/api/dlq/preview`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-chokaq-deck': '1' },
        body: JSON.stringify({ action: 'purge', filter: { queue: 'replica' } }),
      });
      expect(preview.status).toBe(200);
      expect(await preview.json()).toMatchObject({ matched: 1 });
      // Of the job's page, only its audit entries (history) read the standby.
      const read = statementsAfter(standby, standbyMark).filter((l) =>
        l.startsWith('[chokaq-reads]'),
      );
      expect(read.filter((line) => !line.includes('audit_log'))).toEqual([]);
      // The health check reads the primary too: an orchestrator acts on it.
      const healthMark = standby.log().length;
      const primaryMark = primary.log().length;
      await app
        .get(ChokaQHealthIndicator)
        .queues('queues', { lagDegradedMs: 3_600_000, lagUnhealthyMs: 3_600_000 });
      expect(
        statementsAfter(standby, healthMark).filter((l) => l.startsWith('[chokaq-reads]')),
      ).toEqual([]);
      expect(statementsAfter(primary, primaryMark).length).toBeGreaterThan(0);
      // An action works on the primary, where the job is, whatever the standby has replayed.
      expect(await admin.cancel([id], 'ops')).toMatchObject({ cancelled: [id] });

      // The lists read the paused standby: the job is not there yet, and the lag grows.
      const lagging = await waitFor('the Deck to show a lag', async () => {
        const snapshot = await get<Extract<DeckSnapshot, { ok: true }>>('snapshot');
        return snapshot.reads.from === 'replica' && (snapshot.reads.lagMs ?? 0) > 0
          ? snapshot
          : undefined;
      });
      expect(lagging.summary.pending).toBe(before);
      if (browserAvailable()) {
        // And in a real browser: the overview's tile shows the lag while replay is paused.
        const browser = await launchBrowser();
        try {
          const { page, problems } = await openPage(browser);
          await page.goto(deck);
          const tile = page.locator('[data-figure="replica-lag"]');
          await tile.waitFor();
          await page.waitForFunction(
            () =>
              !/^(0 ms|–)$/.test(
                document.querySelector('[data-figure="replica-lag"]')?.textContent?.trim() ?? '',
              ),
          );
          expect(problems).toEqual({ console: [], errors: [], dialogs: [] });
        } finally {
          await browser.close();
        }
      }
      expect(lagging.queues.find((q) => q.name === 'replica')).toMatchObject({ pending: 2 });
    } finally {
      await onStandby.query('SELECT pg_wal_replay_resume()');
    }
    await waitFor('the standby to catch up', async () => {
      const snapshot = await get<Extract<DeckSnapshot, { ok: true }>>('snapshot');
      return snapshot.reads.from === 'replica' && snapshot.reads.lagMs === 0;
    });
  });
  it('a replica that does not answer at startup does not stop the app: the Deck says the reads failed, the primary works; one that is not a standby shows no lag', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const down = await startApp({
      storage: {
        type: 'postgres',
        url: primary.url,
        schema: 'replica_down',
        transientRetry: { maxAttempts: 2, baseDelayMs: 5, maxDelayMs: 10 },
        // Port 1 on the loopback: nothing listens, the connection is refused at once.
        readReplica: { url: 'postgres://postgres@127.0.0.1:1/postgres' },
      },
      worker: { enabled: false },
      metrics: { queueGauges: false },
    });
    try {
      expect(warn.mock.calls.some(([m]) => String(m).includes('read replica did not answer'))).toBe(
        true,
      );
      const snapshot = (await (await fetch(`${down.deck}/api/snapshot`)).json()) as DeckSnapshot;
      expect(snapshot.ok).toBe(false);
      const id = await down.app.get(JobClient).enqueue(Note, { n: 5 });
      expect((await down.app.get(ChokaQAdmin).getJob(id))?.id).toBe(id);
    } finally {
      warn.mockRestore();
      await down.app.close();
    }
    // The primary named as its own replica: read-only sessions, and no lag to show.
    const self = await startApp({
      storage: { type: 'postgres', url: primary.url, readReplica: { url: primary.url } },
      worker: { enabled: false },
      metrics: { queueGauges: false },
    });
    try {
      expect(await self.app.get(ChokaQAdmin).readSource()).toEqual({
        from: 'replica',
        lagMs: null,
      });
      // Its sessions refuse a write, whichever server they reach.
      const replica = self.app.get<JobStorage>(CHOKAQ_READ_REPLICA);
      await expect(replica.enqueue({ queue: 'replica', type: 'note.v1' })).rejects.toThrow(
        /read-only transaction/,
      );
    } finally {
      await self.app.close();
    }
  });
});
