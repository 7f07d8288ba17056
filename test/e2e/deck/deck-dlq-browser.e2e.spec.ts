/// <reference lib="dom" />
/**
 * The DLQ panel and the job inspector in Chromium: a filter in the URL, a preview that counts
 * right, a typed confirmation, bulk resurrect and purge reaching the database with their audit
 * rows, an edited payload that the retried job runs with, its failed first run in the history,
 * the stored result of an archived job (through the app's `redact`), and a delayed Pending job
 * run now and edited.
 */
import type { Page } from 'playwright-core';
import { JobStatus, type JobView, getJobStorageToken } from '../../../libs/chokaq/src';
import type { JobStorage } from '../../../libs/chokaq/src/storage';
import { archiveDirectly } from '../../support/archive-directly';
import { describeEachDialect } from '../../support/test-database';
import { waitFor } from '../../support/wait-for';
import { e2eDatabase } from '../support/e2e-app';
import { DeckApp, startAsWorker, startDeckApp } from './deck-app';
import {
  PageProblems,
  axeViolations,
  describeBrowser,
  openPage,
  sharedBrowser,
  signIn,
} from './browser';

/** The app's `redact`: masks the `token` of a stored result, and leaves everything else as it is. */
function redactResult(job: JobView): JobView {
  const { result } = job;
  if (result === null || typeof result !== 'object' || !('token' in result)) return job;
  return { ...job, result: { ...result, token: '***' } };
}

describeBrowser('The Deck: DLQ and job inspector in a browser', () => {
  const browser = sharedBrowser();

  describeEachDialect(
    'bulk actions and edits',
    (dialect) => {
      const db = e2eDatabase(dialect.name);
      let deck: DeckApp;
      let page: Page;
      let problems: PageProblems;
      const records: string[] = [];
      const fails: string[] = [];

      beforeAll(async () => {
        // The failures here are on purpose: keep the type's circuit closed so a retry runs at once.
        deck = await startDeckApp({
          db,
          worker: true,
          chokaq: { circuitBreaker: { failureThreshold: 1_000 } },
          deck: { redact: redactResult },
        });
        for (let n = 0; n < 3; n++) {
          records.push(await deck.client.enqueue('deck', { fail: true, n }, { type: 'record' }));
        }
        for (let n = 0; n < 2; n++) {
          fails.push(await deck.client.enqueue('deck', { message: `boom ${n}` }, { type: 'fail' }));
        }
        await waitFor(
          'five jobs in the DLQ',
          async () => (await deck.admin.listDlq()).items.length === 5,
        );
        ({ page, problems } = await openPage(browser()));
        await signIn(page, deck.url);
      });
      afterAll(async () => {
        await page?.context().close();
        await deck?.close();
        await db.close();
      });

      async function confirmBulk(action: 'resurrect' | 'purge', count: number): Promise<void> {
        await page.getByRole('button', { name: `Preview ${action}` }).click();
        await page
          .locator('[data-preview="counts"]')
          .filter({ hasText: `${count} matched; ${action} will affect ${count}.` })
          .waitFor();
        const submit = page.getByRole('button', {
          name: action === 'resurrect' ? 'Resurrect' : 'Purge',
          exact: true,
        });
        await page.getByLabel(/Type ".*" to confirm/).fill(`${action} ${count + 1}`);
        expect(await submit.isDisabled()).toBe(true);
        await page.getByLabel(/Type ".*" to confirm/).fill(`${action} ${count}`);
        await submit.click();
        await page
          .getByRole('status')
          .filter({
            hasText: `${action === 'resurrect' ? 'Resurrected' : 'Purged'} ${count} job(s).`,
          })
          .waitFor();
      }

      it('filters by URL, previews, and resurrects after the typed confirmation', async () => {
        await deck.admin.pauseQueue('deck', 'test'); // keep the resurrected jobs pending
        await page.goto(`${deck.url}#/dlq?type=record`);
        for (const id of records) await page.getByRole('row').filter({ hasText: id }).waitFor();
        expect(await page.getByRole('row').filter({ hasText: fails[0] }).count()).toBe(0);

        await confirmBulk('resurrect', 3);
        for (const id of records) {
          const job = await deck.admin.getJob(id);
          expect({ id, pillar: job?.pillar, status: job?.status }).toEqual({
            id,
            pillar: 'hot',
            status: JobStatus.Pending,
          });
        }
        for (const id of fails) expect((await deck.admin.getJob(id))?.pillar).toBe('dlq');
        const audit = await deck.admin.getAuditLog({ action: 'dlq.resurrect-by-filter' });
        expect(audit.items).toHaveLength(1);
        expect(audit.items[0]).toMatchObject({ actor: 'bearer-operator', rowsAffected: 3 });
        expect(problems).toEqual({ console: [], errors: [], dialogs: [] });
      });

      it('purges the same way', async () => {
        await page.goto(`${deck.url}#/dlq?type=fail`);
        for (const id of fails) await page.getByRole('row').filter({ hasText: id }).waitFor();
        await confirmBulk('purge', 2);
        for (const id of fails) expect(await deck.admin.getJob(id)).toBeNull();
        const audit = await deck.admin.getAuditLog({ action: 'dlq.purge-by-filter' });
        expect(audit.items[0]).toMatchObject({ actor: 'bearer-operator', rowsAffected: 2 });
        expect(problems).toEqual({ console: [], errors: [], dialogs: [] });
      });

      it('edits a payload in the inspector and retries: the job runs with the edit', async () => {
        await deck.admin.resumeQueue('deck', 'test');
        const id = await deck.client.enqueue('deck', { fail: true, n: 9 }, { type: 'record' });
        await waitFor(
          'the job in the DLQ',
          async () => (await deck.admin.getJob(id))?.pillar === 'dlq',
        );
        await page.goto(`${deck.url}#/jobs/${id}`);
        await page.locator('[data-field="status"]').filter({ hasText: 'Failed' }).waitFor();
        await page.getByLabel('Payload (JSON)').fill('{ "fail": false, "edited": true }');
        await page.getByLabel('Priority').fill('5');
        await page.getByRole('button', { name: 'Resurrect', exact: true }).click();
        await page.getByRole('status').filter({ hasText: 'Resurrected' }).waitFor();
        await waitFor(
          'the edited job archived',
          async () => (await deck.admin.getJob(id))?.pillar === 'archive',
        );
        expect(deck.jobs.recorded).toContainEqual({ fail: false, edited: true });
        const job = await deck.admin.getJob(id);
        expect(job?.priority).toBe(5);
        // The inspector lists the operator's action on this job.
        await page.reload();
        await page.getByRole('cell', { name: 'dlq.resurrect' }).waitFor();
        // Its first run, which ended in the DLQ, is in the attempt history; the run that
        // succeeded is the archive row itself, so it adds none.
        const attempts = page.locator('table.attempts tbody tr');
        await attempts.filter({ hasText: 'Failed' }).waitFor();
        expect(await attempts.count()).toBe(1);
        expect(problems).toEqual({ console: [], errors: [], dialogs: [] });
      });

      it("shows an archived job's stored result, through redact; no Result block without one", async () => {
        const storage = deck.app.get<JobStorage>(getJobStorageToken());
        const stored = { total: 42, lines: ['a', 'b'], token: 'secret-token' };
        const withResult = await archiveDirectly(storage, 'inspect', 'deck-test:1:inspect', stored);
        const withoutResult = await archiveDirectly(storage, 'inspect', 'deck-test:1:inspect');
        expect((await deck.admin.getJob(withResult))?.result).toEqual(stored);
        expect((await deck.admin.getJob(withoutResult))?.result).toBeNull();

        await page.goto(`${deck.url}#/jobs/${withResult}`);
        const job = page.getByRole('article', { name: `Job ${withResult}` });
        await job.getByRole('heading', { level: 2, name: 'Result', exact: true }).waitFor();
        const shown = job.locator('[data-field="result"]');
        // Pretty JSON, as the payload is, and what the app's redact left of it.
        expect(JSON.parse((await shown.textContent()) ?? '')).toEqual({ ...stored, token: '***' });
        expect(await shown.textContent()).toContain('\n  "total": 42,');
        expect(await job.getByText('secret-token').count()).toBe(0);

        await page.goto(`${deck.url}#/jobs/${withoutResult}`);
        const plain = page.getByRole('article', { name: `Job ${withoutResult}` });
        await plain.locator('[data-field="status"]').filter({ hasText: 'Succeeded' }).waitFor();
        await plain.locator('[data-field="payload"]').waitFor();
        expect(await plain.getByRole('heading', { name: 'Result' }).count()).toBe(0);
        expect(await plain.locator('[data-field="result"]').count()).toBe(0);
        expect(problems).toEqual({ console: [], errors: [], dialogs: [] });
      });

      it('runs a delayed Pending job now and edits its priority in the inspector', async () => {
        // A queue no handler of this app claims from: the job stays Pending for the test to read.
        const id = await deck.client.enqueue(
          'pending',
          { n: 1 },
          {
            type: 'edit',
            priority: 1,
            delayMs: 3_600_000,
            dedupe: { key: 'edit:1', mode: 'unique', states: ['pending'] },
          },
        );
        await page.goto(`${deck.url}#/jobs/${id}`);
        const job = page.getByRole('article', { name: `Job ${id}` });
        await job.locator('[data-field="status"]').filter({ hasText: 'Pending' }).waitFor();
        // The dedupe key it holds, and its rule.
        expect(await job.locator('[data-field="dedupe"]').textContent()).toBe(
          'edit:1 · unique while pending',
        );
        expect(await axeViolations(page)).toEqual([]);
        const runNow = job.getByRole('button', { name: 'Run now' });
        await runNow.click();
        await job.getByRole('status').filter({ hasText: 'Run now: the job is due' }).waitFor();
        await waitFor(
          'the job due now in the database',
          async () => (await deck.admin.getJob(id))?.scheduledAtUtc === null,
        );
        // The reloaded job is due: no button to make it so.
        await runNow.waitFor({ state: 'detached' });

        await job.getByLabel('Priority').fill('8');
        await job.getByRole('button', { name: 'Save', exact: true }).click();
        await job.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
        await waitFor(
          'the edited priority in the database',
          async () => (await deck.admin.getJob(id))?.priority === 8,
        );
        // The inspector reloads the job after a save: wait for that reload to land, or it could
        // read the row after the worker below claims it and take the form away before the edit.
        await job.locator('[data-field="priority"]').filter({ hasText: /^8$/ }).waitFor();
        // Only the priority was sent: the rest is as it was.
        expect(await deck.admin.getJob(id)).toMatchObject({
          status: JobStatus.Pending,
          payload: { n: 1 },
          tags: [],
          scheduledAtUtc: null,
        });
        const audit = await deck.admin.getAuditLog({ target: id });
        expect(audit.items.map((a) => [a.action, a.actor])).toEqual([
          ['job.update', 'bearer-operator'],
          ['job.update', 'bearer-operator'],
        ]);
        expect(problems).toEqual({ console: [], errors: [], dialogs: [] });

        // A worker claims it meanwhile: the next edit is refused with the server's reason.
        expect(await startAsWorker(deck.app, 'pending', 'edit')).toEqual([id]);
        await job.getByLabel('Priority').fill('9');
        await job.getByRole('button', { name: 'Save', exact: true }).click();
        await job
          .getByRole('alert')
          .filter({ hasText: `Job ${id} cannot be edited: it is Processing` })
          .waitFor();
        expect((await deck.admin.getJob(id))?.priority).toBe(8);
        // Chromium logs the refused request; that one line, and nothing else.
        expect(problems.console.splice(0)).toEqual([expect.stringMatching(/status of 409/)]);
        expect(problems).toEqual({ console: [], errors: [], dialogs: [] });
      });
    },
    { only: ['sqlite', 'postgres'] },
  );
});
