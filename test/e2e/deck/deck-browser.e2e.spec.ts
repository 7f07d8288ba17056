/// <reference lib="dom" />
/**
 * The Deck in Chromium: sign-in of a bearer-token app and of a cookie-session app, every panel
 * free of console errors, CSP violations and serious accessibility violations, live data from
 * another process, the Queues controls reaching the database, a moving progress bar, hostile
 * payloads rendered as text, a grouped queue's limits and busiest groups, a batch and its cancel,
 * an open circuit and the jobs it holds, and a read-only Deck without controls.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { JobStatus, batchJob } from '../../../libs/chokaq/src';
import { describeEachDialect } from '../../support/test-database';
import { waitFor } from '../../support/wait-for';
import { e2eDatabase } from '../support/e2e-app';
import { DeckApp, SESSION_COOKIE, startDeckApp } from './deck-app';
import {
  PageProblems,
  axeViolations,
  describeBrowser,
  openPage,
  sharedBrowser,
  signIn,
} from './browser';
import { TS_LOADER } from '../../support/env';

const PANELS = [
  'Overview',
  'Queues',
  'Live jobs',
  'Job inspector',
  'Batches',
  'DLQ',
  'Archive',
  'Top errors',
  'Recurring',
  'Workers',
  'Audit log',
];

const HOSTILE = `<script>alert('script')</script><img src=x onerror="alert('img')"><a href="javascript:alert('link')">click</a>`;

async function panel(page: Page, title: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Panels' }).getByRole('link', { name: title }).click();
  await page.getByRole('heading', { level: 1, name: title }).waitFor();
}

function expectClean(problems: PageProblems): void {
  expect(problems).toEqual({ console: [], errors: [], dialogs: [] });
}

describeBrowser('The Deck in a browser', () => {
  const browser = sharedBrowser();

  describeEachDialect(
    'with a bearer-token app',
    (dialect) => {
      const db = e2eDatabase(dialect.name);
      let deck: DeckApp;
      let page: Page;
      let problems: PageProblems;

      beforeAll(async () => {
        deck = await startDeckApp({ db, worker: true });
        ({ page, problems } = await openPage(browser()));
        await signIn(page, deck.url);
      });
      afterAll(async () => {
        await page?.context().close();
        await deck?.close();
        await db.close();
      });

      it('shows every panel with no console error, no CSP violation and no serious accessibility violation', async () => {
        await deck.client.enqueue('deck', { n: 1 }, { type: 'ok' });
        for (const title of PANELS) {
          await panel(page, title);
          if (title === 'Overview') await page.locator('.chart canvas').first().waitFor();
          expect({ title, violations: await axeViolations(page) }).toEqual({
            title,
            violations: [],
          });
        }
        expectClean(problems);
      });

      it('shows a job enqueued by another process within a bounded wait', async () => {
        await deck.admin.pauseQueue('inbox', 'test');
        await panel(page, 'Queues');
        const stdout = await promisify(execFile)(
          process.execPath,
          ['-r', TS_LOADER, join(__dirname, 'enqueue-process.ts')],
          {
            env: {
              ...process.env,
              CHOKAQ_DECK_ENQUEUE: JSON.stringify({
                storage: db.options,
                queue: 'inbox',
                type: 'ok',
                count: 3,
              }),
            },
          },
        );
        expect(JSON.parse(stdout.stdout)).toHaveLength(3);
        const card = page.getByRole('article', { name: 'Queue inbox' });
        await card.locator('[data-figure="pending"]').filter({ hasText: /^3$/ }).waitFor();
        expectClean(problems);
      });

      it('pauses and resumes a queue from its card, in the database', async () => {
        await panel(page, 'Queues');
        const card = page.getByRole('article', { name: 'Queue deck' });
        await card.getByRole('button', { name: 'Pause' }).click();
        await waitFor(
          'queue deck paused in the database',
          async () => (await deck.admin.listQueues()).find((q) => q.name === 'deck')?.isPaused,
        );
        await card.getByRole('button', { name: 'Resume' }).click();
        await waitFor(
          'queue deck resumed in the database',
          async () =>
            (await deck.admin.listQueues()).find((q) => q.name === 'deck')?.isPaused === false,
        );
        const audit = await deck.admin.getAuditLog({ actor: 'bearer-operator' });
        expect(audit.items.map((a) => a.action)).toEqual(['queue.resume', 'queue.pause']);
        expectClean(problems);
      });

      it('moves a progress bar as the handler reports progress', async () => {
        const id = await deck.client.enqueue('deck', {}, { type: 'progress' });
        await page.goto(`${deck.url}#/live`);
        const bar = page.getByRole('row').filter({ hasText: id }).getByRole('progressbar');
        const at = (value: number): Promise<boolean> =>
          waitFor(
            `the progress bar at ${value}`,
            async () => (await bar.getAttribute('aria-valuenow')) === String(value),
          );
        await at(10);
        for (const [i, gate] of deck.jobs.steps.entries()) {
          gate.open();
          if (i < 2) await at(10 + (i + 1) * 30);
        }
        await waitFor(
          'the progress job archived',
          async () => (await deck.admin.getJob(id))?.status === JobStatus.Succeeded,
        );
        expectClean(problems);
      });

      it('renders hostile payloads and error texts as text', async () => {
        const id = await deck.client.enqueue(
          'deck',
          { note: HOSTILE, link: "javascript:alert('payload')" },
          { type: 'fail' },
        );
        // `fail` throws its payload's message: make that hostile too.
        const failing = await deck.client.enqueue('deck', { message: HOSTILE }, { type: 'fail' });
        await waitFor(
          'both jobs in the DLQ',
          async () =>
            (await deck.admin.getJob(id))?.pillar === 'dlq' &&
            (await deck.admin.getJob(failing))?.pillar === 'dlq',
        );
        await page.goto(`${deck.url}#/dlq`);
        await page.getByRole('row').filter({ hasText: failing }).waitFor();
        await page.goto(`${deck.url}#/jobs/${failing}`);
        await page
          .locator('[data-field="error"]')
          .filter({ hasText: "<script>alert('script')</script>" })
          .waitFor();
        await page.goto(`${deck.url}#/jobs/${id}`);
        await page
          .locator('[data-field="payload"]')
          .filter({ hasText: '<img src=x onerror=' })
          .waitFor();
        await panel(page, 'Top errors');
        await page.getByRole('table').waitFor();
        const injected = await page.evaluate(() => ({
          scripts: Array.from(document.querySelectorAll('script')).filter((s) => !s.src).length,
          images: document.querySelectorAll('img').length,
          jsLinks: document.querySelectorAll('a[href^="javascript:"]').length,
        }));
        expect(injected).toEqual({ scripts: 0, images: 0, jsLinks: 0 });
        expectClean(problems);
      });

      it("shows a grouped queue's limits and busiest groups on its card, saves its group limits, and a job's group in the inspector", async () => {
        // No handler runs `tenants`: its jobs stay Pending.
        await deck.admin.setGroupLimits('tenants', {
          concurrency: 2,
          rateLimit: { max: 10, perMs: 60_000 },
        });
        const ids: string[] = [];
        for (const group of ['acme', 'acme', 'acme', 'globex', 'globex', undefined]) {
          ids.push(await deck.client.enqueue('tenants', {}, { type: 'ok', group }));
        }
        await panel(page, 'Queues');
        const card = page.getByRole('article', { name: 'Queue tenants' });
        await card
          .locator('[data-figure="groupLimits"]')
          .filter({ hasText: /^2 running per group, 10 per 60.000 ms$/ })
          .waitFor();
        const rows = card.locator('[data-figure="groups"] tbody tr');
        await rows.nth(2).waitFor();
        const cells = async (row: number) =>
          (await rows.nth(row).locator('td').allTextContents()).map((t) => t.trim());
        // Busiest first; the jobs without a group are the group "(none)".
        expect([await cells(0), await cells(1), await cells(2)]).toEqual([
          ['acme', '0', '3'],
          ['globex', '0', '2'],
          ['(none)', '0', '1'],
        ]);
        const plain = page.getByRole('article', { name: 'Queue deck' });
        expect(await plain.locator('[data-figure="groupLimits"]').textContent()).toBe('none');
        expect(await plain.locator('[data-figure="groups"]').count()).toBe(0);
        expect(await axeViolations(page)).toEqual([]);

        await card.getByLabel('Group concurrency').fill('3');
        await card.getByRole('button', { name: 'Save limits' }).click();
        await waitFor(
          'the group concurrency saved in the database',
          async () =>
            (await deck.admin.listQueues()).find((q) => q.name === 'tenants')?.groupConcurrency ===
            3,
        );
        expect((await deck.admin.listQueues()).find((q) => q.name === 'tenants')).toMatchObject({
          groupRateLimit: { max: 10, perMs: 60_000 },
        });

        await page.goto(`${deck.url}#/jobs/${ids[0]}`);
        await page
          .locator('[data-field="group"]')
          .filter({ hasText: /^acme$/ })
          .waitFor();
        await page.goto(`${deck.url}#/jobs/${ids[5]}`);
        await page.locator('[data-field="status"]').waitFor();
        expect(await page.locator('[data-field="group"]').count()).toBe(0);
        expectClean(problems);
      });

      it("shows a job's batch, its counts and callbacks, and cancels what it still has hot", async () => {
        // No handler runs `batched`: its jobs stay Pending until the batch is cancelled.
        const made = await deck.client.enqueueBatch(
          [1, 2, 3].map((n) => batchJob('batched', { n }, { type: 'ok' })),
          {
            onSuccess: batchJob('batched', {}, { type: 'done' }),
            onFailure: batchJob('batched', {}, { type: 'cancelled' }),
          },
        );
        await page.goto(`${deck.url}#/jobs/${made.jobIds[0]}`);
        await page.locator('[data-field="batch"] a').click();
        const batch = page.getByRole('article', { name: `Batch ${made.batchId}` });
        await batch.locator('[data-figure="pending"]').filter({ hasText: /^3$/ }).waitFor();
        expect(await batch.locator('[data-figure="total"]').textContent()).toBe('3');
        expect(await batch.locator('[data-figure="settled"]').textContent()).toBe('not yet');
        expect(await axeViolations(page)).toEqual([]);

        await batch.getByRole('button', { name: 'Cancel batch' }).click();
        await batch.locator('[data-figure="failed"]').filter({ hasText: /^3$/ }).waitFor();
        await page.getByRole('status').filter({ hasText: 'Cancelled 3 job(s)' }).waitFor();
        expect(await batch.locator('[data-figure="pending"]').textContent()).toBe('0');
        expect(await batch.getByRole('button', { name: 'Cancel batch' }).count()).toBe(0);
        // The failure callback fired: its row links to its job; the success callback did not.
        const fired = batch.locator('tr[data-kind="failure"] a');
        expect(await fired.textContent()).toBe('batched/cancelled');
        expect(await batch.locator('tr[data-kind="success"] a').count()).toBe(0);
        await fired.click();
        await page
          .getByRole('article', { name: `Job ${made.callbacks.failure}` })
          .locator('[data-field="batch"]')
          .filter({ hasText: made.batchId })
          .waitFor();
        expectClean(problems);
      });

      it("shows a waiting job's dependencies and its dependency's dependents, linked both ways", async () => {
        // No handler runs `waited`: the dependency stays Pending, so its dependent stays Waiting.
        const dependency = await deck.client.enqueue('waited', { n: 1 }, { type: 'first' });
        const waiting = await deck.client.enqueue(
          'waited',
          { n: 2 },
          { type: 'second', dependsOn: [{ jobId: dependency, onFailure: 'cancel' }] },
        );
        await page.goto(`${deck.url}#/jobs/${waiting}`);
        const job = page.getByRole('article', { name: `Job ${waiting}` });
        await job
          .locator('[data-field="status"]')
          .filter({ hasText: /^Waiting$/ })
          .waitFor();
        expect(await job.locator('[data-field="waiting-on"]').textContent()).toBe('1');
        const edge = job.locator('[data-field="depends-on"] tbody tr');
        expect(await edge.locator('td').allTextContents()).toEqual([
          dependency,
          'cancel',
          'waiting',
        ]);
        expect(await axeViolations(page)).toEqual([]);
        await edge.locator('a').click();
        const first = page.getByRole('article', { name: `Job ${dependency}` });
        await first.locator('[data-field="dependents"] a').filter({ hasText: waiting }).waitFor();
        expectClean(problems);
      });

      // Last of this app: the circuit it opens stays open for its break (30 s by default).
      it('shows an open circuit on its queue card, counts the jobs it holds, and marks each held job', async () => {
        const dlqOf = () => deck.admin.countExactly({ pillar: 'dlq', filter: { queue: 'outage' } });
        // Five failures within the window open the circuit (the default threshold).
        for (let i = 0; i < 5; i++) await deck.client.enqueue('outage', {}, { type: 'down' });
        await waitFor('five failures in the DLQ', async () => (await dlqOf()) === 5);
        const held = [
          await deck.client.enqueue('outage', {}, { type: 'down' }),
          await deck.client.enqueue('outage', {}, { type: 'down' }),
        ];
        await waitFor('both new jobs held by the open circuit', async () =>
          (await Promise.all(held.map((id) => deck.admin.getJob(id)))).every(
            (j) => j?.pillar === 'hot' && j.heldSinceUtc !== null,
          ),
        );
        expect(await dlqOf()).toBe(5);
        await panel(page, 'Queues');
        const card = page.getByRole('article', { name: 'Queue outage' });
        await card.getByText('Circuit open', { exact: true }).waitFor();
        await card.locator('[data-figure="held"]').filter({ hasText: /^2$/ }).waitFor();
        await card
          .locator('[data-figure="circuits"]')
          .filter({ hasText: /down open on 1 worker\. +2 jobs held until / })
          .waitFor();
        expect(
          Number(await card.locator('[data-figure="deferred"]').textContent()),
        ).toBeGreaterThanOrEqual(2);
        await page.goto(`${deck.url}#/jobs/${held[0]}`);
        await page
          .locator('[data-field="status"]')
          .filter({ hasText: /^Pending · held: circuit open until / })
          .waitFor();
        expectClean(problems);
      });
    },
    { only: ['sqlite', 'postgres'] },
  );

  describe('with a cookie-session app and read-only [sqlite]', () => {
    const db = e2eDatabase('sqlite');
    const apps: DeckApp[] = [];
    afterAll(async () => {
      for (const app of apps) await app.close();
      await db.close();
    });

    it('loads with the session cookie alone, and asks for nothing', async () => {
      const deck = await startDeckApp({ db, auth: 'cookie' });
      apps.push(deck);
      const [name, value] = SESSION_COOKIE.split('=');
      const { page, problems } = await openPage(browser(), {
        cookie: { url: deck.url, name, value },
      });
      try {
        await page.goto(deck.url);
        await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
        expect(await page.getByLabel('Token').count()).toBe(0);
        await panel(page, 'Queues');
        expectClean(problems);
      } finally {
        await page.context().close();
      }
    });

    it('shows no controls when read-only', async () => {
      const deck = await startDeckApp({ db, deck: { readOnly: true } });
      apps.push(deck);
      await deck.admin.pauseQueue('deck', 'test');
      const { page, problems } = await openPage(browser());
      try {
        await signIn(page, deck.url);
        await page.getByText('Read-only').waitFor();
        await panel(page, 'Queues');
        await page.getByRole('article', { name: 'Queue deck' }).waitFor();
        expect(
          await page.getByRole('button', { name: /Pause|Resume|Hide|Save limits/ }).count(),
        ).toBe(0);
        expectClean(problems);
      } finally {
        await page.context().close();
      }
    });
  });
});
