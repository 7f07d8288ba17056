/// <reference lib="dom" />
/**
 * The deck scenario (issue 14, "Fast at size"): The Deck over the admin-reads data set on
 * PostgreSQL, in the system's Chromium. A Nest app (ChokaQ producer-only + the Deck behind a
 * cookie guard) listens on a free port in the bench process; the bench measures
 *   (a) the bytes of the first load (page, every asset, the first API calls and stream events),
 *   (b) each panel's time from navigation to its data, in the page,
 *   (c) the live tick: `DeckSnapshotService.read()` on the server, and the statements it sends.
 * The figures are reported by `lib/deck-report.ts`.
 */
import 'reflect-metadata';
import {
  CanActivate,
  DynamicModule,
  ExecutionContext,
  INestApplication,
  Injectable,
  Module,
  UnauthorizedException,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { loadavg } from 'node:os';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type CDPSession, type Page } from 'playwright-core';
import { ChokaQAdmin } from '../../libs/chokaq/src/admin/chokaq-admin.service';
import { ChokaQModule } from '../../libs/chokaq/src/chokaq.module';
import { ChokaQDeckModule } from '../../libs/chokaq/src/deck';
import { DECK_OPTIONS } from '../../libs/chokaq/src/deck/deck.constants';
import type { ResolvedDeckOptions } from '../../libs/chokaq/src/deck/deck-options';
import { DeckSnapshotService } from '../../libs/chokaq/src/deck/deck-snapshot.service';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { SEED_QUEUES } from '../lib/admin-reads-seed';
import type { DeckSizes } from '../lib/args';
import type {
  DeckRun,
  FirstLoad,
  LoadGroup,
  PanelTiming,
  TickRead,
  TickTiming,
} from '../lib/deck-report';
import { captureStatements } from '../lib/statement-capture';
import { percentile } from '../lib/stats';
import type { ReadsData } from './reads-data';

type Log = (message: string) => void;

/** The system's Chromium (a Debian package here); playwright-core downloads nothing. */
const CHROMIUM = process.env.CHOKAQ_CHROMIUM ?? '/usr/bin/chromium';
const SESSION = { name: 'deck_session', value: 'bench-operator' };
const ACTOR = 'bench-operator';
/** Rows per page of the Deck's lists (what its tables ask for). */
const PAGE_ROWS = 50;
/** Bound of one navigation, and of the first load. */
const NAVIGATION_TIMEOUT_MS = 30_000;
/** Rounds of pause/resume of one queue, for the audit log (two entries each). */
const AUDIT_ROUNDS = 20;

/** A cookie-session app's guard, as the Deck's own browser tests use. */
@Injectable()
class BenchSessionGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string | undefined>; user?: unknown }>();
    const cookies = (req.headers.cookie ?? '').split(/;\s*/);
    if (!cookies.includes(`${SESSION.name}=${SESSION.value}`)) {
      throw new UnauthorizedException('session required');
    }
    req.user = { username: ACTOR };
    return true;
  }
}

@Module({})
class DeckBenchModule {}

/** A producer-only app with the Deck, as a dashboard pod runs it. */
async function startApp(data: ReadsData): Promise<{ app: INestApplication; url: string }> {
  const root: DynamicModule = {
    module: DeckBenchModule,
    imports: [
      ChokaQModule.forRoot({ storage: data.target.options, worker: { enabled: false } }),
      ChokaQDeckModule.forRoot({ path: 'chokaq', guards: [BenchSessionGuard] }),
    ],
  };
  const app = await NestFactory.create(root, { logger: ['error', 'warn'] });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${port}/chokaq` };
}

/**
 * What the other panels need beyond the admin-reads rows: a recurring job per queue whose last
 * run is the newest archived job of its queue, and operator actions in the audit log (the
 * upserts, and pause/resume rounds of the queue the seed paused, which it leaves paused).
 */
async function seedForDeck(admin: ChokaQAdmin, data: ReadsData): Promise<number> {
  for (const [i, queue] of SEED_QUEUES.entries()) {
    await admin.upsertRecurringJob(
      {
        name: `${queue}.nightly`,
        cron: `${i} 3 * * *`,
        timeZone: 'UTC',
        queue,
        type: `${queue}.cleanup`,
        payload: { batch: 500 },
      },
      ACTOR,
    );
  }
  await data.target.exec(
    `UPDATE ${data.target.table('recurring_jobs')} r SET last_job_id = (
       SELECT a.id FROM ${data.target.table('jobs_archive')} a
       WHERE a.queue = r.queue ORDER BY a.finished_at_utc DESC LIMIT 1)`,
  );
  for (let i = 0; i < AUDIT_ROUNDS; i++) {
    await admin.resumeQueue('cleanup', ACTOR);
    await admin.pauseQueue('cleanup', ACTOR);
  }
  return SEED_QUEUES.length;
}

// ------------------------------------------------------------------ (c) the live tick

/** The `ChokaQAdmin` reads a tick makes (DeckSnapshotService.read), timed per call. */
const TICK_READS = [
  'getSummary',
  'getThroughput',
  'listQueues',
  'getQueueStats',
  'getQueueHealth',
  'getQueueOutcomes',
  'listWorkers',
] as const;

async function measureTick(app: INestApplication, ticks: number, log: Log): Promise<TickTiming> {
  const snapshots = app.get(DeckSnapshotService);
  const admin = app.get(ChokaQAdmin) as unknown as Record<
    string,
    (...args: unknown[]) => Promise<unknown>
  >;
  const first = await snapshots.read();
  if (!first.ok) throw new Error(`The snapshot failed: ${first.error}`);
  const captured = await captureStatements('postgres', () => snapshots.read());

  // Each read, timed by an own property that shadows the prototype's method for the measurement.
  const calls = new Map<string, number[]>(TICK_READS.map((r) => [r, []]));
  const perTick = new Map<string, number>();
  for (const name of TICK_READS) {
    const original = admin[name].bind(admin);
    admin[name] = async (...args: unknown[]) => {
      const started = performance.now();
      try {
        return await original(...args);
      } finally {
        calls.get(name)!.push(performance.now() - started);
      }
    };
  }
  const samples: number[] = [];
  try {
    for (let i = 0; i < ticks; i++) {
      const started = performance.now();
      const snapshot = await snapshots.read();
      samples.push(performance.now() - started);
      if (!snapshot.ok) throw new Error(`The snapshot failed: ${snapshot.error}`);
    }
  } finally {
    for (const name of TICK_READS) delete admin[name];
  }
  for (const [name, values] of calls) perTick.set(name, values.length / ticks);
  const sorted = [...samples].sort((a, b) => a - b);
  const reads: TickRead[] = TICK_READS.map((name) => {
    const values = [...calls.get(name)!].sort((a, b) => a - b);
    return {
      read: name,
      callsPerTick: perTick.get(name)!,
      p95: percentile(values, 95),
      max: values[values.length - 1],
    };
  });
  const tick: TickTiming = {
    samplesMs: samples,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    max: sorted[sorted.length - 1],
    statements: captured.length,
    distinctStatements: new Set(captured.map((c) => c.sql)).size,
    reads,
  };
  log(
    `  live tick: p50 ${tick.p50.toFixed(1)} ms, p95 ${tick.p95.toFixed(1)} ms, ` +
      `${tick.statements} statements (${tick.distinctStatements} distinct)`,
  );
  return tick;
}

// ------------------------------------------------------------------ (a) the first load

/** One response as the DevTools protocol reported it. */
interface Seen {
  url: string;
  headerBytes: number;
  streamed: number;
  bytes: number;
  finished: boolean;
  failed: boolean;
}

/** Records every request of the page through its own DevTools session. */
function watchNetwork(cdp: CDPSession): Map<string, Seen> {
  const seen = new Map<string, Seen>();
  cdp.on('Network.requestWillBeSent', (e) => {
    seen.set(e.requestId, {
      url: e.request.url,
      headerBytes: 0,
      streamed: 0,
      bytes: 0,
      finished: false,
      failed: false,
    });
  });
  cdp.on('Network.responseReceived', (e) => {
    const r = seen.get(e.requestId);
    if (r) r.headerBytes = e.response.encodedDataLength;
  });
  cdp.on('Network.dataReceived', (e) => {
    const r = seen.get(e.requestId);
    if (r) r.streamed += e.encodedDataLength;
  });
  cdp.on('Network.loadingFinished', (e) => {
    const r = seen.get(e.requestId);
    if (r) Object.assign(r, { bytes: e.encodedDataLength, finished: true });
  });
  cdp.on('Network.loadingFailed', (e) => {
    const r = seen.get(e.requestId);
    if (r) Object.assign(r, { finished: true, failed: true });
  });
  return seen;
}

const isStream = (url: string) => new URL(url).pathname.endsWith('/api/stream');

/** Which part of the Deck a URL is. */
function groupOf(base: string, url: string): [string, string] {
  const path = new URL(url).pathname.slice(new URL(base).pathname.length).replace(/^\//, '');
  if (path === '') return ['page shell', 'index.html'];
  if (path.startsWith('assets/vendor/')) return ['vendored code', path.slice('assets/'.length)];
  if (path.startsWith('assets/')) return ["the Deck's modules, styles, icon", path.slice(7)];
  if (path.startsWith('api/')) return ['API and stream', path.slice(4)];
  return ['other', path];
}

async function firstLoad(page: Page, cdp: CDPSession, url: string, log: Log): Promise<FirstLoad> {
  const seen = watchNetwork(cdp);
  await cdp.send('Network.enable');
  await page.goto(`${url}#/overview`, { waitUntil: 'commit' });
  const shown = await page.evaluate(waitForPanel, OVERVIEW_LOAD);
  if (!shown.ok) throw new Error(`The first load did not show the Overview: ${shown.shown}`);
  // Done when nothing but the stream is in flight (bounded).
  const deadline = Date.now() + NAVIGATION_TIMEOUT_MS;
  while ([...seen.values()].some((r) => !r.finished && !isStream(r.url))) {
    if (Date.now() > deadline) throw new Error('The first load kept requests in flight');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const groups = new Map<string, LoadGroup>();
  let requests = 0;
  for (const [id, r] of seen) {
    if (r.failed) continue;
    requests++;
    const bytes = r.finished ? r.bytes : r.headerBytes + r.streamed;
    let gzipBytes = bytes;
    if (r.finished) {
      const body = (await cdp.send('Network.getResponseBody', { requestId: id })) as {
        body: string;
        base64Encoded: boolean;
      };
      const raw = Buffer.from(body.body, body.base64Encoded ? 'base64' : 'utf8');
      gzipBytes = bytes - raw.length + gzipSync(raw, { level: 6 }).length;
    }
    const [group, name] = groupOf(url, r.url);
    const g = groups.get(group) ?? { group, requests: 0, bytes: 0, gzipBytes: 0, names: [] };
    g.requests++;
    g.bytes += bytes;
    g.gzipBytes += gzipBytes;
    g.names.push(r.finished ? name : `${name} (open; bytes until then)`);
    groups.set(group, g);
  }
  const list = [...groups.values()];
  const load: FirstLoad = {
    ms: shown.ms,
    requests,
    bytes: list.reduce((s, g) => s + g.bytes, 0),
    gzipBytes: list.reduce((s, g) => s + g.gzipBytes, 0),
    groups: list,
  };
  log(
    `  first load: ${requests} requests, ${(load.bytes / 1_000).toFixed(1)} KB ` +
      `(${(load.gzipBytes / 1_000).toFixed(1)} KB gzipped), Overview with data at ${load.ms.toFixed(0)} ms`,
  );
  return load;
}

// ------------------------------------------------------------------ (b) the panels

/** What the page waits for, and how it navigates there (evaluated in the page). */
interface WaitSpec {
  /** The panel's heading. */
  title: string;
  how: 'load' | 'link' | 'hash';
  /** The nav link's href, or the hash to set. */
  to: string;
  check: 'overview' | 'cards' | 'rows' | 'filtered' | 'job';
  /** The table (a CSS selector under `main.panel`) whose body rows count. */
  table?: string;
  min?: number;
  /** `filtered`: every row's cell at this index reads `value`. */
  column?: number;
  value?: string;
  timeoutMs: number;
}

interface WaitResult {
  ok: boolean;
  ms: number;
  /** The panel's API calls that started after the navigation and ended before the condition. */
  api: Array<{ route: string; start: number; end: number }>;
  /** What the panel showed when the bound ran out. */
  shown: string;
}

/**
 * Runs in the page: navigates (clicks the nav link, or sets the hash) and resolves when the
 * panel's condition holds, checked on every DOM mutation and every animation frame. Elements of
 * the panel present before the navigation are marked and do not count. Self-contained: the
 * function is serialised into the page.
 */
function waitForPanel(spec: WaitSpec): Promise<WaitResult> {
  const OLD = 'data-bench-old';
  const main = () => document.querySelector('main.panel');
  if (spec.how !== 'load') {
    main()
      ?.querySelectorAll('*')
      .forEach((el) => el.setAttribute(OLD, ''));
    performance.clearResourceTimings();
  }
  const fresh = (selector: string) =>
    Array.from(document.querySelectorAll(selector)).filter((el) => !el.hasAttribute(OLD));
  let canvasPending = false;
  const drawn = (canvas: HTMLCanvasElement): boolean => {
    if (canvas.width === 0 || canvas.height === 0) return false;
    const pixels = canvas.getContext('2d')?.getImageData(0, 0, canvas.width, canvas.height).data;
    if (pixels) for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) return true;
    return false;
  };
  const met = (): boolean => {
    const panel = main();
    if (!panel || panel.querySelector('h1')?.textContent !== spec.title) return false;
    const min = spec.min ?? 1;
    switch (spec.check) {
      case 'overview': {
        const pending = fresh('main.panel [data-figure="pending"]')[0];
        const canvas = fresh('main.panel .chart canvas')[0] as HTMLCanvasElement | undefined;
        if (!pending || !/\d/.test(pending.textContent ?? '') || !canvas) return false;
        canvasPending = !drawn(canvas);
        return !canvasPending;
      }
      case 'cards':
        return fresh('main.panel article.card').length >= min;
      case 'rows':
        return fresh(`main.panel ${spec.table} tbody tr`).length >= min;
      case 'filtered': {
        const rows = Array.from(document.querySelectorAll(`main.panel ${spec.table} tbody tr`));
        return (
          rows.length >= min &&
          rows.every((r) => r.children[spec.column ?? 0]?.textContent?.trim() === spec.value)
        );
      }
      case 'job':
        return fresh('main.panel article.job pre[data-field="payload"]').length > 0;
    }
  };
  return new Promise<WaitResult>((resolve) => {
    const t0 = spec.how === 'load' ? 0 : performance.now();
    let finished = false;
    const finish = (ok: boolean) => {
      if (finished) return;
      finished = true;
      const at = performance.now();
      observer.disconnect();
      clearTimeout(bound);
      const api = (performance.getEntriesByType('resource') as PerformanceResourceTiming[])
        .filter((e) => {
          const path = new URL(e.name).pathname;
          return (
            path.includes('/api/') &&
            !path.endsWith('/api/stream') &&
            e.startTime >= t0 &&
            e.responseEnd > 0 &&
            e.responseEnd <= at
          );
        })
        .map((e) => ({
          route: new URL(e.name).pathname.replace(/^.*\/api\//, ''),
          start: e.startTime - t0,
          end: e.responseEnd - t0,
        }));
      const shown = ok ? '' : (main()?.textContent ?? '').replace(/\s+/g, ' ').slice(0, 200);
      resolve({ ok, ms: at - t0, api, shown });
    };
    const check = () => {
      if (finished) return;
      if (met()) finish(true);
      // uPlot draws in a microtask after it adds its canvas: look again right after.
      else if (canvasPending) setTimeout(check, 0);
    };
    const observer = new MutationObserver(check);
    observer.observe(document, { subtree: true, childList: true, characterData: true });
    const frame = () => {
      check();
      if (!finished) requestAnimationFrame(frame);
    };
    const bound = setTimeout(() => finish(false), spec.timeoutMs);
    if (spec.how === 'link') {
      const link = document.querySelector<HTMLAnchorElement>(`nav.panels a[href$="${spec.to}"]`);
      if (!link) throw new Error(`no nav link ${spec.to}`);
      link.click();
    } else if (spec.how === 'hash') {
      location.hash = spec.to;
    }
    requestAnimationFrame(frame);
    check();
  });
}

const OVERVIEW_CONDITION =
  'the pending tile shows a number and the throughput chart (uPlot) has drawn pixels on its canvas';

const OVERVIEW_LOAD: WaitSpec = {
  title: 'Overview',
  how: 'load',
  to: '',
  check: 'overview',
  timeoutMs: NAVIGATION_TIMEOUT_MS,
};

/** A panel of the timed rounds: its name in the report, how to reach it, what counts as shown. */
interface PanelSpec {
  panel: string;
  how: string;
  condition: string;
  wait: WaitSpec;
}

function panelSpecs(data: ReadsData, dlqJobId: string, recurring: number): PanelSpec[] {
  const rows = (n: number) => Math.min(PAGE_ROWS, n);
  const table = (
    panel: string,
    title: string,
    to: string,
    selector: string,
    min: number,
    what: string,
  ): PanelSpec => ({
    panel,
    how: 'nav link',
    condition: `${min} new row(s) in \`${selector}\` (${what})`,
    wait: {
      title,
      how: 'link',
      to,
      check: 'rows',
      table: selector,
      min,
      timeoutMs: NAVIGATION_TIMEOUT_MS,
    },
  });
  const queue = SEED_QUEUES[0];
  return [
    {
      panel: 'Overview',
      how: 'nav link',
      condition: OVERVIEW_CONDITION,
      wait: { ...OVERVIEW_LOAD, how: 'link', to: '#/overview' },
    },
    {
      panel: 'Queues',
      how: 'nav link',
      condition: `${SEED_QUEUES.length} new queue cards (\`article.card\`, from the snapshot)`,
      wait: {
        title: 'Queues',
        how: 'link',
        to: '#/queues',
        check: 'cards',
        min: SEED_QUEUES.length,
        timeoutMs: NAVIGATION_TIMEOUT_MS,
      },
    },
    table(
      'Live jobs',
      'Live jobs',
      '#/live',
      'table.jobs',
      rows(data.counts.jobs_hot),
      'a page of the hot table',
    ),
    {
      panel: 'Job inspector (a DLQ job)',
      how: 'hash `#/jobs/<id>`',
      condition: 'the job article with its pretty-printed payload (`pre[data-field="payload"]`)',
      wait: {
        title: 'Job inspector',
        how: 'hash',
        to: `#/jobs/${dlqJobId}`,
        check: 'job',
        timeoutMs: NAVIGATION_TIMEOUT_MS,
      },
    },
    table('DLQ', 'DLQ', '#/dlq', 'table.jobs', rows(data.counts.jobs_dlq), 'the newest page'),
    {
      panel: `DLQ, filter queue + reason`,
      how: `hash \`#/dlq?queue=${queue}&reason=0\` (as Apply does)`,
      condition: `every row of \`table.jobs\` has queue \`${queue}\` (at least one row; the unfiltered page has other queues)`,
      wait: {
        title: 'DLQ',
        how: 'hash',
        to: `#/dlq?queue=${queue}&reason=${FailureReason.MaxRetriesExceeded}`,
        check: 'filtered',
        table: 'table.jobs',
        column: 1,
        value: queue,
        min: 1,
        timeoutMs: NAVIGATION_TIMEOUT_MS,
      },
    },
    table(
      'Archive',
      'Archive',
      '#/archive',
      'table.jobs',
      rows(data.counts.jobs_archive),
      'the newest page',
    ),
    table('Top errors', 'Top errors', '#/errors', 'table.errors', 1, 'error families'),
    table('Recurring', 'Recurring', '#/recurring', 'table.recurring', recurring, 'every schedule'),
    table('Workers', 'Workers', '#/workers', 'table.workers', 6, 'every Workers row'),
    table('Audit log', 'Audit log', '#/audit', 'table.audit', PAGE_ROWS, 'the newest page'),
  ];
}

/** Navigates to `spec`; throws when the page never showed it (for the unmeasured steps). */
async function visit(page: Page, spec: WaitSpec): Promise<WaitResult> {
  const result = await page.evaluate(waitForPanel, spec);
  if (!result.ok) throw new Error(`${spec.title} never showed its data: ${result.shown}`);
  return result;
}

async function measurePanels(
  page: Page,
  specs: PanelSpec[],
  rounds: number,
  log: Log,
): Promise<PanelTiming[]> {
  const results = new Map<PanelSpec, WaitResult[]>(specs.map((s) => [s, []]));
  const failures = new Map<PanelSpec, string[]>(specs.map((s) => [s, []]));
  // Every round starts from the last panel, so the first navigation changes panel too.
  await visit(page, specs[specs.length - 1].wait);
  for (let round = 0; round <= rounds; round++) {
    for (const spec of specs) {
      const result = await page.evaluate(waitForPanel, spec.wait);
      if (round === 0) {
        if (!result.ok) throw new Error(`${spec.panel} never showed its data: ${result.shown}`);
        continue;
      }
      if (result.ok) results.get(spec)!.push(result);
      else {
        failures.get(spec)!.push(`timed out showing: ${result.shown}`);
        // Start the next navigation from a page that shows the Overview again.
        await page.reload({ waitUntil: 'commit' });
        await visit(page, OVERVIEW_LOAD);
      }
    }
    if (round > 0) log(`  panels: round ${round}/${rounds} done`);
  }
  return specs.map((spec) => {
    const samples = results.get(spec)!;
    const times = samples.map((s) => s.ms).sort((a, b) => a - b);
    const byRoute = new Map<string, { ends: number[]; durations: number[]; calls: number }>();
    const renders: number[] = [];
    for (const s of samples) {
      const last = new Map<string, { start: number; end: number }>();
      const calls = new Map<string, number>();
      for (const call of s.api) {
        const route = call.route.replace(/^jobs\/[^/]+$/, 'jobs/:id');
        const prev = last.get(route);
        if (!prev || call.end > prev.end) last.set(route, call);
        calls.set(route, (calls.get(route) ?? 0) + 1);
      }
      for (const [route, call] of last) {
        const entry = byRoute.get(route) ?? { ends: [], durations: [], calls: 0 };
        entry.ends.push(call.end);
        entry.durations.push(call.end - call.start);
        entry.calls = Math.max(entry.calls, calls.get(route)!);
        byRoute.set(route, entry);
      }
      const lastEnd = Math.max(0, ...[...last.values()].map((c) => c.end));
      renders.push(s.ms - lastEnd);
    }
    const p50 = (values: number[]) =>
      percentile(
        [...values].sort((a, b) => a - b),
        50,
      );
    return {
      panel: spec.panel,
      how: spec.how,
      condition: spec.condition,
      samplesMs: samples.map((s) => s.ms),
      p50: percentile(times, 50),
      max: times.length ? times[times.length - 1] : NaN,
      api: [...byRoute].map(([route, v]) => ({
        route,
        p50EndMs: p50(v.ends),
        p50DurationMs: p50(v.durations),
        maxCalls: v.calls,
      })),
      renderP50: p50(renders),
      failures: failures.get(spec)!,
    };
  });
}

// ------------------------------------------------------------------ the scenario

/**
 * The deck scenario over a seeded data set (PostgreSQL). Boots the app, adds what the Recurring
 * and Audit panels show, times the live tick with no browser open, then loads the Deck in
 * Chromium and times every panel. Leaves the data set with those additions; closes the app and
 * the browser whatever happens.
 */
export async function runDeck(
  data: ReadsData,
  sizes: DeckSizes,
  log: Log,
  waitForQuiet: () => Promise<void>,
): Promise<DeckRun> {
  if (data.dialect !== 'postgres') throw new Error('The deck scenario runs on PostgreSQL only');
  const { app, url } = await startApp(data);
  let browser: Browser | undefined;
  try {
    const admin = app.get(ChokaQAdmin);
    const options = app.get<ResolvedDeckOptions>(DECK_OPTIONS);
    const recurring = await seedForDeck(admin, data);
    const auditEntries = (await admin.getAuditLog({ limit: 1_000 })).items.length;
    // The inspector opens the DLQ job with the largest payload of the newest page.
    const newest = await admin.listDlq({ limit: PAGE_ROWS });
    const inspected = [...newest.items].sort((a, b) => b.payloadBytes - a.payloadBytes)[0];
    if (!inspected) throw new Error('The DLQ is empty');

    await waitForQuiet();
    const loadBefore = loadavg()[0];
    const tick = await measureTick(app, sizes.ticks, log);

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addCookies([{ url, ...SESSION }]);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    const cdp = await context.newCDPSession(page);
    const load = await firstLoad(page, cdp, url, log);
    await cdp.detach();

    await waitForQuiet();
    const panels = await measurePanels(
      page,
      panelSpecs(data, inspected.id, recurring),
      sizes.panelRounds,
      log,
    );
    for (const p of panels) {
      log(
        `  ${p.panel}: p50 ${p.p50.toFixed(0)} ms, max ${p.max.toFixed(0)} ms` +
          (p.api.length
            ? ` (${p.api.map((a) => `${a.route} ${a.p50DurationMs.toFixed(0)} ms`).join(', ')})`
            : '') +
          (p.failures.length ? `, ${p.failures.length} timed out` : ''),
      );
    }
    if (problems.length > 0) log(`  the page reported: ${problems.slice(0, 5).join(' | ')}`);
    const loadAfter = loadavg()[0];
    return {
      counts: data.counts,
      queues: SEED_QUEUES.length,
      recurring,
      auditEntries,
      inspected: { id: inspected.id, payloadBytes: inspected.payloadBytes },
      chromium: `Chromium ${browser.version()}`,
      refreshMs: options.refreshMs,
      firstLoad: load,
      panels,
      tick,
      loadBefore,
      loadAfter,
    };
  } finally {
    await browser?.close().catch(() => undefined);
    await app.close();
  }
}
