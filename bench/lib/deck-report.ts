import { existsSync, readFileSync } from 'node:fs';
import type { DeckSizes, ReadSizes } from './args';
import { writeMarkdown } from './markdown';
import { DECK_HEADING, PROFILE_HEADING } from './report';

/** Issue 14's targets ("Fast at size"). */
export const DECK_TARGETS = {
  /** Bytes of the first load (1 KB = 1,000 bytes, as DevTools counts). */
  firstLoadBytes: 300_000,
  /** Navigation to data, per panel, every repetition. */
  panelMs: 1_000,
  /** The admin-reads budget of one read on PostgreSQL (issue 13), held against the tick's p95. */
  tickMs: 50,
} as const;

/** Requests of the first load that share a role (page shell, the Deck's modules, vendored code, API). */
export interface LoadGroup {
  group: string;
  requests: number;
  /** Bytes received (headers and body as sent, from Chromium's `encodedDataLength`). */
  bytes: number;
  /** What the bodies would weigh gzipped (level 6), headers as sent: the headroom of a compression middleware. */
  gzipBytes: number;
  /** The files or routes of the group. */
  names: string[];
}

/** The first load of the Deck in a fresh browser context. */
export interface FirstLoad {
  /** Navigation to the Overview showing its data with no request but the stream in flight. */
  ms: number;
  requests: number;
  bytes: number;
  gzipBytes: number;
  groups: LoadGroup[];
}

/** One panel's time from navigation to its data, over the timed rounds. */
export interface PanelTiming {
  panel: string;
  /** How the navigation was made (a nav link clicked, or the hash set). */
  how: string;
  /** The DOM condition that counts as "shows its data". */
  condition: string;
  samplesMs: number[];
  p50: number;
  max: number;
  /**
   * The API calls the navigation waited for, by route: p50 of when the last call of the route
   * ended (ms from the navigation) and of its duration, and the most calls of the route one
   * navigation made (more than one: a refresh started a new read before the panel showed data).
   */
  api: Array<{ route: string; p50EndMs: number; p50DurationMs: number; maxCalls: number }>;
  /** Time after the last awaited API response until the condition held (p50 over rounds). */
  renderP50: number;
  /** Navigations that never met the condition within the bound, with what the page showed. */
  failures: string[];
}

/** One read of `ChokaQAdmin` inside a snapshot tick. */
export interface TickRead {
  read: string;
  callsPerTick: number;
  /** p95 over every call of the timed ticks, ms (calls of one tick run concurrently). */
  p95: number;
  max: number;
}

/** `DeckSnapshotService.read()` timed on the server. */
export interface TickTiming {
  samplesMs: number[];
  p50: number;
  p95: number;
  max: number;
  /** SQL statements one tick sends (transaction control excluded), and how many are distinct. */
  statements: number;
  distinctStatements: number;
  reads: TickRead[];
}

/** The deck scenario's figures. */
export interface DeckRun {
  counts: Record<string, number>;
  queues: number;
  recurring: number;
  auditEntries: number;
  inspected: { id: string; payloadBytes: number };
  chromium: string;
  refreshMs: number;
  firstLoad: FirstLoad;
  panels: PanelTiming[];
  tick: TickTiming;
  loadBefore: number;
  loadAfter: number;
}

const n = (value: number): string => value.toLocaleString('en-US');

function ms(value: number): string {
  if (!Number.isFinite(value)) return '—';
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

const kb = (bytes: number): string => `${(bytes / 1_000).toFixed(1)} KB`;

/** The first load, group by group, against its target. */
export function firstLoadTable(run: DeckRun): string {
  const f = run.firstLoad;
  const lines = [
    '| First load | requests | transferred | gzipped (estimate) | what |',
    '|---|---|---|---|---|',
    ...f.groups.map(
      (g) =>
        `| ${g.group} | ${g.requests} | ${kb(g.bytes)} | ${kb(g.gzipBytes)} | ${g.names.join(', ')} |`,
    ),
    `| **total** | ${f.requests} | **${kb(f.bytes)}** | ${kb(f.gzipBytes)} | target < ${kb(DECK_TARGETS.firstLoadBytes)}: ${f.bytes < DECK_TARGETS.firstLoadBytes ? 'met' : '**missed**'}; Overview showed its data ${ms(f.ms)} ms after navigation |`,
  ];
  return lines.join('\n');
}

/** Each panel's navigation-to-data time against the 1 s target (judged on the slowest round). */
export function panelsTable(run: DeckRun): string {
  const lines = [
    '| Panel | p50 ms | max ms | target | verdict | API awaited (p50 duration, p50 end) | render after API, p50 ms | shows its data when |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const p of run.panels) {
    const verdict =
      p.failures.length > 0
        ? `**missed** (${p.failures.length} timed out)`
        : p.max < DECK_TARGETS.panelMs
          ? 'met'
          : '**missed**';
    const api =
      p.api.length === 0
        ? 'none (the snapshot)'
        : p.api
            .map(
              (a) =>
                `\`${a.route}\` ${ms(a.p50DurationMs)} ms, done at ${ms(a.p50EndMs)} ms${a.maxCalls > 1 ? ` (up to ${a.maxCalls} calls)` : ''}`,
            )
            .join('; ');
    lines.push(
      `| ${p.panel} | **${ms(p.p50)}** | ${ms(p.max)} | < ${n(DECK_TARGETS.panelMs)} ms | ${verdict} | ${api} | ${ms(p.renderP50)} | ${p.how}; ${p.condition} |`,
    );
  }
  return lines.join('\n');
}

/** The live tick and its reads against the admin-reads budget. */
export function tickTable(run: DeckRun): string {
  const t = run.tick;
  const lines = [
    '| Live tick | per tick | p50 ms | p95 ms | max ms | budget | verdict |',
    '|---|---|---|---|---|---|---|',
    `| **\`DeckSnapshotService.read()\`**, whole tick | ${t.statements} statements (${t.distinctStatements} distinct) | ${ms(t.p50)} | **${ms(t.p95)}** | ${ms(t.max)} | < ${DECK_TARGETS.tickMs} ms (p95) | ${t.p95 < DECK_TARGETS.tickMs ? 'met' : '**missed**'} |`,
    ...t.reads.map(
      (r) =>
        `| ↳ \`${r.read}\` | ${r.callsPerTick} call(s) | | ${ms(r.p95)} | ${ms(r.max)} | < ${DECK_TARGETS.tickMs} ms (p95) | ${r.p95 < DECK_TARGETS.tickMs ? 'met' : '**missed**'} |`,
    ),
  ];
  return lines.join('\n');
}

/** The three tables, as stdout shows them. */
export function deckTables(run: DeckRun): string {
  return [firstLoadTable(run), panelsTable(run), tickTable(run)].join('\n\n');
}

/** What missed its target, in one sentence each (empty when everything met its target). */
export function deckMisses(run: DeckRun): string[] {
  const out: string[] = [];
  if (run.firstLoad.bytes >= DECK_TARGETS.firstLoadBytes)
    out.push(`first load ${kb(run.firstLoad.bytes)}`);
  for (const p of run.panels) {
    if (p.failures.length > 0 || p.max >= DECK_TARGETS.panelMs)
      out.push(
        `${p.panel} (max ${ms(p.max)} ms${p.failures.length ? `, ${p.failures.join('; ')}` : ''})`,
      );
  }
  if (run.tick.p95 >= DECK_TARGETS.tickMs) out.push(`live tick (p95 ${ms(run.tick.p95)} ms)`);
  return out;
}

/** What the section says about the run besides the tables. */
export interface DeckMeta {
  command: string;
  started: Date;
  ended: Date;
  machine: string;
  postgres: string;
  reads: ReadSizes;
  deck: DeckSizes;
  /** Whether the admin-reads scenario ran on the same data set first in this invocation. */
  sharedWithAdminReads: boolean;
}

/** The deck section of RESULTS.md. */
export function deckSection(run: DeckRun, meta: DeckMeta): string {
  const missed = deckMisses(run);
  const lines = [
    DECK_HEADING,
    '',
    `_Generated by \`${meta.command}\`; each run of the scenario rewrites this section, and the other scenarios keep it._`,
    '',
    `- Run: ${meta.started.toISOString()} → ${meta.ended.toISOString()}`,
    `- Machine: ${meta.machine}; PostgreSQL ${meta.postgres} on the same host; ${run.chromium} (headless, the system's build, driven by playwright-core) on the same host too.`,
    `- Data: the admin-reads data set (${n(run.counts.jobs_archive)} archived, ${n(run.counts.jobs_dlq)} in the DLQ, ${n(run.counts.jobs_hot)} pending, over ${run.queues} queues; see "Admin reads" above for how it is made)` +
      (meta.sharedWithAdminReads
        ? ', seeded once in this invocation and timed by admin-reads first.'
        : ', seeded for this invocation.') +
      ` Added for the Deck's other panels: ${run.recurring} recurring jobs (\`upsertRecurringJob\`, each with a last run in the archive) and ${n(run.auditEntries)} audit entries from operator actions through \`ChokaQAdmin\`.`,
    `- The app: \`NestFactory.create\` of \`ChokaQModule.forRoot\` (PostgreSQL, \`worker: { enabled: false }\`, as a dashboard pod runs) and \`ChokaQDeckModule.forRoot({ path: 'chokaq', guards: [a cookie-session guard] })\` with the default \`refreshMs\` (${n(run.refreshMs)} ms), on Express, in the bench process. No worker runs; the app is the only client of its schema.`,
    '- **First load**: a fresh browser context opens the Deck at `#/overview`; every response is counted by the DevTools protocol (`Network.loadingFinished.encodedDataLength`: headers and body as received; for the event stream, which stays open, the bytes received until then). The load ends when the Overview shows its data (below) and no request but the stream is in flight. The Deck sends no `Content-Encoding`; the gzip column is what an app-level compression middleware would send (bodies gzipped at level 6 by the bench, headers unchanged).',
    `- **Panels**: one unmeasured round over every panel, then ${meta.deck.panelRounds} timed rounds, panel after panel in the order below, in the page left by the first load. Each navigation is clicked on the panel's nav link (or, where no link leads, the hash is set as the page's own links do), timed in the page from just before the click until a DOM condition holds (checked on every DOM mutation and every animation frame; elements present before the click do not count). "API awaited" are the panel's own requests started by the navigation (Resource Timing), each with its p50 duration; "render after API" is the time from the last of them to the condition. The event stream stays open meanwhile, so a snapshot tick may run during a navigation, as it does for an operator. Target: every round under 1 s (the verdict is on the max).`,
    `- **Live tick**: \`DeckSnapshotService.read()\` (the one set of reads a tick shares between every open Deck) called directly on the server with no browser open: one unmeasured call, then ${meta.deck.ticks} timed calls one after another. Its \`ChokaQAdmin\` calls run concurrently on the storage's pool; each is timed by wrapping the instance's method for the measurement. Statements counted by wrapping \`pg\`'s \`Client.query\` for one tick (BEGIN/COMMIT/SET excluded). Budget: the admin-reads target of one read on PostgreSQL, p95 under 50 ms, held against the whole tick and against each read in it.`,
    `- 1-min load average: ${run.loadBefore.toFixed(2)} before the timed parts, ${run.loadAfter.toFixed(2)} after (2 cores, shared).`,
    '',
    '### First load',
    '',
    firstLoadTable(run),
    '',
    '### Panels',
    '',
    panelsTable(run),
    '',
    '### Live tick',
    '',
    tickTable(run),
    '',
    missed.length === 0 ? 'Every figure met its target.' : `Missed: ${missed.join('; ')}.`,
    '',
  ];
  return lines.join('\n');
}

/**
 * Puts `section` (starting with {@link DECK_HEADING}) into RESULTS.md in place of the previous one,
 * or before the hand-written profile section when there was none, and leaves every other part of
 * the file as it was.
 */
export function spliceDeck(previous: string, section: string): string {
  const body = `${section.trimEnd()}\n\n`;
  const at = previous.indexOf(DECK_HEADING);
  const profile = previous.indexOf(PROFILE_HEADING, at >= 0 ? at : 0);
  if (at >= 0) {
    const end = profile > at ? profile : previous.length;
    return `${previous.slice(0, at)}${body}${previous.slice(end)}`;
  }
  if (profile >= 0) return `${previous.slice(0, profile)}${body}${previous.slice(profile)}`;
  return `${previous.trimEnd()}\n\n${body}`;
}

/** Writes `section` into the RESULTS.md at `path` (see {@link spliceDeck}). */
export async function writeDeckSection(path: string, section: string): Promise<void> {
  const previous = existsSync(path) ? readFileSync(path, 'utf8') : '# ChokaQ benchmark results\n';
  await writeMarkdown(path, spliceDeck(previous, section));
}

/** One JSON object for the run (the `--json` contract of this scenario). */
export function deckJson(run: DeckRun): string {
  return JSON.stringify({ dialect: 'postgres', scenario: 'deck', targets: DECK_TARGETS, ...run });
}
