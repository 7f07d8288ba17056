/// <reference lib="dom" />
/**
 * Chromium for the browser suites: the system's own build (a Debian package here, installed by
 * `.ci/run` when missing), driven by playwright-core, which downloads nothing. Every page records
 * its console errors, uncaught errors, CSP violations and dialogs, for the suites to assert none.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, BrowserContext, Page, chromium } from 'playwright-core';
import { BEARER_TOKEN } from './deck-app';

export const CHROMIUM = process.env.CHOKAQ_CHROMIUM ?? '/usr/bin/chromium';

/** Whether the browser suites can run (CI installs Chromium; elsewhere they say they skipped). */
export function browserAvailable(): boolean {
  return existsSync(CHROMIUM);
}

export const describeBrowser = (title: string, body: () => void): void =>
  (browserAvailable() ? describe : describe.skip)(title, body);

/** One Chromium for the tests of the enclosing block: launched before them, closed after. */
export function sharedBrowser(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return () => browser!;
}

/** Signs in to a bearer-token Deck (the test app's token) and waits for the live badge. */
export async function signIn(page: Page, url: string): Promise<void> {
  await page.goto(url);
  // The card shows the app's own 401 message (its guard's hint of where the token comes from).
  await page.getByText('The app says: bearer token required').waitFor();
  await page.getByLabel('Token').fill(BEARER_TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/** What went wrong in a page, as the suites assert it: nothing. */
export interface PageProblems {
  console: string[];
  errors: string[];
  dialogs: string[];
}

export async function openPage(
  browser: Browser,
  options: { cookie?: { url: string; name: string; value: string } } = {},
): Promise<{ context: BrowserContext; page: Page; problems: PageProblems }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  if (options.cookie) await context.addCookies([options.cookie]);
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const problems: PageProblems = { console: [], errors: [], dialogs: [] };
  page.on('console', (m) => {
    // A 401 the sign-in flow expects is logged by Chromium as a failed resource; the rest count.
    if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.console.push(m.text());
  });
  page.on('pageerror', (e) => problems.errors.push(e.message));
  page.on('dialog', (d) => {
    problems.dialogs.push(d.message());
    void d.dismiss();
  });
  return { context, page, problems };
}

const AXE = readFileSync(join(require.resolve('axe-core'), '..', 'axe.min.js'), 'utf8');

/**
 * Runs axe-core in the page. The Deck's CSP refuses an injected script tag and `eval`, so the
 * library's source is evaluated as a DevTools-protocol expression (`page.evaluate` of a string),
 * which CSP does not govern. Resolves to the serious and critical violations.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE);
  return page.evaluate(async () => {
    type Result = {
      violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
    };
    const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<Result> } })
      .axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v) =>
          `${v.id}: ${v.nodes
            .map((n) => n.target.join(' '))
            .slice(0, 3)
            .join(', ')}`,
      );
  });
}
