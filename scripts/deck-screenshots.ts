/// <reference lib="dom" />
/**
 * `npm run deck:screenshots`: one PNG per panel of The Deck into docs/deck/, for the READMEs.
 * Boots a demo app (ChokaQ on a temporary SQLite file, a worker, the Deck), gives it a few
 * minutes' worth of work (successes, retries, failures into the DLQ, a job reporting progress, a
 * recurring job, operator actions, a second worker whose circuit for a partner API is open and
 * holds its jobs, a delayed job holding a dedupe key), and photographs each panel in the system's
 * Chromium, the job inspector twice (a failed job, a pending one).
 * CHOKAQ_CHROMIUM overrides the browser's path (default /usr/bin/chromium).
 */
import 'reflect-metadata';
import { Injectable, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import {
  ChokaQAdmin,
  ChokaQModule,
  JobClient,
  JobContext,
  JobHandler,
  RecurringJob,
  batchJob,
} from '../libs/chokaq/src';
import { ChokaQDeckModule } from '../libs/chokaq/src/deck';

const OUT = resolve(__dirname, '..', 'docs', 'deck');
const PANELS: Array<[string, string]> = [
  ['overview', 'Overview'],
  ['queues', 'Queues'],
  ['live', 'Live jobs'],
  ['jobs', 'Job inspector'],
  ['jobs-pending', 'Job inspector'],
  ['jobs-waiting', 'Job inspector'],
  ['batches', 'Batches'],
  ['dlq', 'DLQ'],
  ['archive', 'Archive'],
  ['errors', 'Top errors'],
  ['recurring', 'Recurring'],
  ['workers', 'Workers'],
  ['audit', 'Audit log'],
];

let release!: () => void;
const held = new Promise<void>((r) => (release = r));

@Injectable()
class DemoHandlers {
  @RecurringJob('emails.digest-hourly', '0 * * * *', { payload: { list: 'weekly' } })
  @JobHandler('emails', { type: 'digest.v1' })
  async digest(): Promise<void> {}

  @JobHandler('emails', { type: 'welcome.v1' })
  async welcome(payload: { to: string }, ctx: JobContext): Promise<void> {
    if (payload.to.endsWith('.invalid') && ctx.attempt === 1) {
      throw new Error(`SMTP 451 for ${payload.to}: try again later`);
    }
  }

  @JobHandler('billing', { type: 'charge.v2' })
  async charge(payload: { invoice: number; cents: number }): Promise<void> {
    if (payload.invoice % 3 === 0) {
      throw new Error(
        `Card declined for invoice ${payload.invoice} (code 5${payload.invoice % 7})`,
      );
    }
    if (payload.invoice % 5 === 0)
      throw new Error(`Timeout talking to the payment API after 3000 ms`);
  }

  @JobHandler('reports', { type: 'render.v1', timeoutMs: 600_000 })
  async render(_payload: unknown, ctx: JobContext): Promise<void> {
    await ctx.reportProgress(64, 'page 16 of 25');
    await held;
  }
}

/** A partner API that is down: the second worker's circuit for it opens and holds its jobs. */
@Injectable()
class PartnerHandlers {
  @JobHandler('partners', { type: 'sync.v1' })
  async sync(payload: { record: number }): Promise<void> {
    throw new Error(`partner API unavailable (503) for record ${payload.record}`);
  }
}

/**
 * A second worker on the same database that runs only the partner syncs, with a circuit that
 * opens after 3 failures and stays open for 10 minutes: the Queues panel shows it and the jobs it
 * holds, the Workers panel the circuit, the Live jobs panel each held job.
 */
async function startPartnerWorker(database: string) {
  @Module({
    imports: [
      ChokaQModule.forRoot({
        storage: { type: 'sqlite', database },
        retry: { maxAttempts: 1 },
        worker: { pollIntervalMs: 50, concurrency: 1 },
        heartbeat: { intervalMs: 500 },
        circuitBreaker: { failureThreshold: 3, breakDurationMs: 600_000 },
      }),
    ],
    providers: [PartnerHandlers],
  })
  class PartnerModule {}
  const app = await NestFactory.createApplicationContext(PartnerModule, { logger: ['error'] });
  await app.init();
  return app;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'chokaq-deck-shots-'));
  @Module({
    imports: [
      ChokaQModule.forRoot({
        storage: { type: 'sqlite', database: join(dir, 'demo.db') },
        retry: { maxAttempts: 2, baseDelayMs: 50, jitterMs: 0 },
        worker: { pollIntervalMs: 50, concurrency: 4 },
        circuitBreaker: { failureThreshold: 1_000 },
      }),
      ChokaQDeckModule.forRoot({ path: 'chokaq', allowAnonymous: true, refreshMs: 500 }),
    ],
    providers: [DemoHandlers],
  })
  class DemoModule {}

  const app = await NestFactory.create(DemoModule, { logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  const url = `http://127.0.0.1:${port}/chokaq`;
  const jobs = app.get(JobClient);
  const admin = app.get(ChokaQAdmin);

  for (let i = 1; i <= 24; i++) {
    await jobs.enqueue(
      'emails',
      { to: i % 8 === 0 ? `user${i}@mail.invalid` : `user${i}@example.com` },
      { type: 'welcome.v1' },
    );
    await jobs.enqueue(
      'billing',
      { invoice: 1000 + i, cents: 1999 + i },
      { type: 'charge.v2', tags: ['eu'] },
    );
  }
  // A batch half done: its welcome emails sent, its exports waiting (no process runs them).
  // Its emails run before the reports are enqueued, whose held runs take every slot of this worker.
  const batch = await jobs.enqueueBatch(
    [
      ...[1, 2, 3, 4].map((i) =>
        batchJob('emails', { to: `new${i}@example.com` }, { type: 'welcome.v1' }),
      ),
      ...[1, 2, 3].map((i) => batchJob('exports', { table: `signup${i}` }, { type: 'csv.v1' })),
    ],
    {
      onSuccess: batchJob('reports', { month: '2026-11', signups: 4 }, { type: 'render.v1' }),
      onFailure: batchJob('emails', { to: 'ops@example.com' }, { type: 'welcome.v1' }),
    },
  );
  const batchBy = Date.now() + 30_000;
  while (((await admin.getBatch(batch.batchId))?.succeeded ?? 0) < 4 && Date.now() < batchBy) {
    await new Promise((r) => setTimeout(r, 100));
  }
  await jobs.enqueue('reports', { month: '2026-11' }, { type: 'render.v1' });
  // A grouped queue: two of a tenant's reports at once, its card shows the busiest tenants.
  await admin.setGroupLimits('reports', { concurrency: 2 }, 'ops@example.com');
  for (const [tenant, n] of [
    ['acme', 6],
    ['globex', 3],
    ['initech', 1],
  ] as const) {
    for (let i = 0; i < n; i++) {
      await jobs.enqueue(
        'reports',
        { month: '2026-11', page: i },
        { type: 'render.v1', group: tenant },
      );
    }
  }
  await admin.pauseQueue('exports', 'ops@example.com');
  for (let i = 0; i < 5; i++) await jobs.enqueue('exports', { table: `t${i}` }, { type: 'csv.v1' });
  await admin.setMaxWorkers('billing', 2, 'ops@example.com');
  await admin.setRateLimit('emails', { max: 50, perMs: 1_000 }, 'ops@example.com');
  const partners = await startPartnerWorker(join(dir, 'demo.db'));
  for (let record = 1; record <= 3; record++) {
    await jobs.enqueue('partners', { record }, { type: 'sync.v1' });
  }
  const deadline = Date.now() + 30_000;
  while ((await admin.getSummary()).dlq < 13 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  for (let record = 4; record <= 7; record++) {
    await jobs.enqueue('partners', { record }, { type: 'sync.v1' });
  }
  const heldBy = Date.now() + 30_000;
  const partnerHealth = async () =>
    (await admin.getQueueHealth()).find((h) => h.queue === 'partners')?.heldPending ?? 0;
  const circuitReported = async () =>
    (await admin.listWorkers()).some((w) => w.circuits['partners/sync.v1'] === 'open');
  while (((await partnerHealth()) < 4 || !(await circuitReported())) && Date.now() < heldBy) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const failed = (await admin.listDlq({ limit: 1 })).items[0];
  // A delayed export that holds a throttle key: the inspector offers Run now and Edit.
  const pending = await jobs.enqueue(
    'exports',
    { table: 'daily', format: 'csv' },
    {
      type: 'csv.v1',
      delayMs: 6 * 3_600_000,
      dedupe: { key: 'export:daily', mode: 'throttle', windowMs: 24 * 3_600_000 },
    },
  );
  // A report that waits on the batch's three exports (which no process runs): Waiting, its edges.
  const waiting = await jobs.enqueue(
    'reports',
    { month: '2026-11', part: 'exports' },
    {
      type: 'render.v1',
      dependsOn: [
        ...batch.jobIds.slice(4, 6),
        { jobId: batch.jobIds[6], onFailure: 'ignore' as const },
      ],
    },
  );
  const inspected: Record<string, string | undefined> = {
    jobs: failed?.id,
    'jobs-pending': pending,
    'jobs-waiting': waiting,
    batches: batch.batchId,
  };

  mkdirSync(OUT, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHOKAQ_CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    for (const [id, title] of PANELS) {
      const target = inspected[id];
      const hash = target ? `#/${id === 'batches' ? 'batches' : 'jobs'}/${target}` : `#/${id}`;
      await page.goto(`${url}${hash}`);
      await page.getByRole('heading', { level: 1, name: title }).waitFor();
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      if (id === 'overview') await page.locator('.chart canvas').first().waitFor();
      if (id === 'dlq') {
        await page.getByRole('button', { name: 'Preview resurrect' }).click();
        await page.locator('[data-preview="counts"]').waitFor();
      }
      // The stream keeps the network busy: wait for the panel's own reads instead.
      await page.waitForFunction(() => {
        const text = document.querySelector('main.panel')?.textContent ?? '';
        return !text.includes('Loading') && !text.includes('Waiting for the first snapshot');
      });
      await page.screenshot({ path: join(OUT, `${id}.png`), fullPage: false });
      Logger.log(`docs/deck/${id}.png`, 'Screenshots');
      if (id === 'queues') {
        // The grouped queue's card alone: its group limits and busiest tenants.
        const card = page.getByRole('article', { name: 'Queue reports' });
        await card.locator('[data-figure="groups"]').waitFor();
        await card.screenshot({ path: join(OUT, 'queues-groups.png') });
        Logger.log('docs/deck/queues-groups.png', 'Screenshots');
      }
    }
  } finally {
    await browser.close();
    release();
    await partners.close();
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
