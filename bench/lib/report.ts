import { existsSync, readFileSync } from 'node:fs';
import type { BenchSystem } from '../systems/bench-system';
import { ResultSet, type ScenarioResult } from './results';
import { writeMarkdown } from './markdown';
import type { Summary } from './stats';

/** The heading that starts the hand-written part of RESULTS.md, kept when the suite rewrites it. */
export const PROFILE_HEADING = '## Profile and next steps';

/**
 * The heading of the section the admin-reads scenario writes (between the suite's tables and the
 * profile section); the suite keeps it when it rewrites its own part, and the scenario replaces
 * only it.
 */
export const ADMIN_READS_HEADING = '## Admin reads';

/**
 * The heading of the section the deck scenario writes (after the admin-reads section, before the
 * profile section); kept like the others when the suite or another scenario rewrites its part.
 */
export const DECK_HEADING = '## The Deck at size';

/**
 * The heading of the section the metrics A/B writes (after the suite's tables, before the
 * admin-reads section); kept like that one when the suite rewrites its own part.
 */
export const METRICS_AB_HEADING = '## Metrics A/B';

function fmt(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 1_000) return Math.round(value).toLocaleString('en-US');
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function cell(s: Summary | undefined, failure: string | undefined): string {
  if (!s) return failure ? `failed` : '—';
  return `**${fmt(s.median)}** (${fmt(s.min)}–${fmt(s.max)})`;
}

/** ChokaQ's median ÷ the peer's median, oriented so that > 1 always means ChokaQ is better. */
export function advantage(row: ScenarioResult, chokaq: Summary, peer: Summary): number {
  return row.higherIsBetter ? chokaq.median / peer.median : peer.median / chokaq.median;
}

/** The Markdown table of one dialect: ChokaQ, then every peer with ChokaQ's advantage. */
export function markdownTable(results: ResultSet, dialect: string, systems: BenchSystem[]): string {
  const peers = systems.filter((s) => s.peer);
  const header = ['Scenario', 'unit', 'ChokaQ', ...peers.flatMap((p) => [p.label, '×']), 'load 1m'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const row of results.rows.filter((r) => r.dialect === dialect)) {
    const mine = ResultSet.summary(row, 'chokaq');
    const cells = [
      row.scenario,
      `${row.unit} ${row.higherIsBetter ? '↑' : '↓'}`,
      cell(mine, row.failures.get('chokaq')),
    ];
    for (const peer of peers) {
      const theirs = ResultSet.summary(row, peer.id);
      cells.push(cell(theirs, row.failures.get(peer.id)));
      cells.push(mine && theirs ? `${advantage(row, mine, theirs).toFixed(2)}×` : '—');
    }
    const loads = row.loads.length
      ? `${Math.min(...row.loads).toFixed(1)}–${Math.max(...row.loads).toFixed(1)}`
      : '—';
    cells.push(loads);
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** One JSON object per scenario and dialect (the `--json` contract). */
export function jsonLines(results: ResultSet, systems: BenchSystem[]): string[] {
  return results.rows.map((row) => {
    const mine = ResultSet.summary(row, 'chokaq');
    const peers: Record<
      string,
      { median: number; min: number; max: number; chokaqAdvantage: number | null }
    > = {};
    for (const peer of systems.filter((s) => s.peer && s.dialect === row.dialect)) {
      const theirs = ResultSet.summary(row, peer.id);
      if (theirs) {
        peers[peer.id] = {
          ...theirs,
          chokaqAdvantage: mine ? round(advantage(row, mine, theirs)) : null,
        };
      }
    }
    return JSON.stringify({
      dialect: row.dialect,
      scenario: row.scenario,
      unit: row.unit,
      better: row.higherIsBetter ? 'higher' : 'lower',
      runs: (row.values.get('chokaq') ?? []).map(round),
      median: mine ? round(mine.median) : null,
      min: mine ? round(mine.min) : null,
      max: mine ? round(mine.max) : null,
      peers,
      failures: Object.fromEntries(row.failures),
      load1m: row.loads.map((l) => round(l)),
    });
  });
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/**
 * The suite's new RESULTS.md: `generated`, then the rest of the `previous` file (undefined when
 * there was none): the metrics A/B, admin-reads and deck sections (from {@link METRICS_AB_HEADING},
 * {@link ADMIN_READS_HEADING} or {@link DECK_HEADING}), which other invocations wrote, and the
 * hand-written profile section (from {@link PROFILE_HEADING} on).
 */
export function mergeResults(previous: string | undefined, generated: string): string {
  let kept = `${PROFILE_HEADING}\n\n_Not written yet: run \`npm run bench -- --profile\`._\n`;
  if (previous !== undefined) {
    const found = [METRICS_AB_HEADING, ADMIN_READS_HEADING, DECK_HEADING, PROFILE_HEADING]
      .map((heading) => previous.indexOf(heading))
      .filter((at) => at >= 0);
    if (found.length > 0) kept = previous.slice(Math.min(...found));
  }
  return `${generated.trimEnd()}\n\n${kept}`;
}

/** Rewrites RESULTS.md with `generated` (see {@link mergeResults}). */
export async function writeResults(path: string, generated: string): Promise<void> {
  const previous = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  await writeMarkdown(path, mergeResults(previous, generated));
}
