import { loadavg } from 'node:os';
import { ChokaQAdmin } from '../../libs/chokaq/src/admin/chokaq-admin.service';
import { resolveChokaQOptions } from '../../libs/chokaq/src/config/resolve-options';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import type {
  CountQuery,
  ListPage,
  ListQuery,
} from '../../libs/chokaq/src/interfaces/job-view.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import {
  misses,
  PAGE_ROWS,
  targetMs,
  type AdminReadsRun,
  type ReadKind,
  type ReadTiming,
} from '../lib/admin-reads-report';
import { readFilters, SEARCH_TERM } from '../lib/admin-reads-seed';
import type { ReadSizes } from '../lib/args';
import { captureStatements } from '../lib/statement-capture';
import { percentile } from '../lib/stats';
import type { ReadsData } from './reads-data';

type Log = (message: string) => void;

/** Rows per page of every timed list read: what a dashboard table shows. */
const PAGE = PAGE_ROWS;
/** Rows per page while walking to the deep page (not timed). */
const WALK_PAGE = 1_000;

/** The cursor after `rows` rows of a list (walked in pages of {@link WALK_PAGE}), or null if it has fewer. */
async function cursorAfter<F>(
  list: (query: ListQuery<F>) => Promise<ListPage>,
  filter: F | undefined,
  rows: number,
): Promise<string | null> {
  let cursor: string | undefined;
  let seen = 0;
  while (seen < rows) {
    const page = await list({ filter, limit: Math.min(WALK_PAGE, rows - seen), cursor });
    seen += page.items.length;
    if (!page.nextCursor) return null;
    cursor = page.nextCursor;
  }
  return cursor ?? null;
}

/** One timed read: a name, whether it is a search, and the call. */
interface Read {
  name: string;
  kind: ReadKind;
  call: () => Promise<unknown>;
  /** Says what the call returned (checked on the warm-up call). */
  describe?: (result: unknown) => string;
  skipped?: string;
}

/** Every read of the scenario, as `ChokaQAdmin` calls. */
async function buildReads(
  admin: ChokaQAdmin,
  sizes: ReadSizes,
  nowMs: number,
  log: Log,
): Promise<Read[]> {
  const { queue, type, from, to } = readFilters(nowMs);
  const deepAfter = sizes.deepRow - PAGE;
  const rowsOf = (k: number) => `${k.toLocaleString('en-US')} row${k === 1 ? '' : 's'}`;
  const pageNote = (result: unknown) => {
    const page = result as ListPage;
    return `${rowsOf(page.items.length)}${page.scanLimited ? ', stopped at the scan bound' : ''}`;
  };
  const reads: Read[] = [
    { name: 'getSummary', kind: 'read', call: () => admin.getSummary() },
    { name: 'getQueueStats', kind: 'read', call: () => admin.getQueueStats() },
    { name: 'getQueueHealth', kind: 'read', call: () => admin.getQueueHealth() },
    {
      name: 'getQueueOutcomes, 5 min',
      kind: 'read',
      call: () => admin.getQueueOutcomes(),
      describe: (r) => `${(r as unknown[]).length} queues`,
    },
    {
      name: 'getQueueOutcomes, 24 h',
      kind: 'read',
      call: () => admin.getQueueOutcomes({ minutes: 1_440 }),
      describe: (r) => `${(r as unknown[]).length} queues`,
    },
    {
      name: 'listActive, first page',
      kind: 'read',
      call: () => admin.listActive({ limit: PAGE }),
      describe: pageNote,
    },
  ];
  const lists = [
    {
      label: 'listArchive',
      pillar: 'archive' as const,
      list: (q: ListQuery<object>) => admin.listArchive(q),
      filters: [
        ['', undefined],
        ['queue', { queue }],
        ['queue + type', { queue, type }],
        ['time range', { from, to }],
      ] as Array<[string, object | undefined]>,
    },
    {
      label: 'listDlq',
      pillar: 'dlq' as const,
      list: (q: ListQuery<object>) => admin.listDlq(q),
      filters: [
        ['', undefined],
        ['queue', { queue }],
        ['queue + type', { queue, type }],
        ['reason', { reason: FailureReason.MaxRetriesExceeded }],
        ['time range', { from, to }],
      ] as Array<[string, object | undefined]>,
    },
  ];
  for (const { label, pillar, list, filters } of lists) {
    for (const [what, filter] of filters) {
      const suffix = what ? `, ${what}` : '';
      // How many rows the filter matches, counted once (not timed), to say where a page sits.
      const matching = await admin.countExactly({ pillar, filter } as CountQuery);
      const of = `of ${matching.toLocaleString('en-US')} matching`;
      reads.push({
        name: `${label}, first page${suffix}`,
        kind: 'read',
        call: () => list({ filter, limit: PAGE }),
        describe: (r) => `${pageNote(r)} ${of}`,
      });
      log(`  walking ${label}${suffix} to row ${deepAfter} (not timed)`);
      const cursor = await cursorAfter(list, filter, deepAfter);
      const name = `${label}, deep page${suffix}`;
      reads.push(
        cursor === null
          ? { name, kind: 'read', call: async () => undefined, skipped: `only ${rowsOf(matching)}` }
          : {
              name,
              kind: 'read',
              call: () => list({ filter, limit: PAGE, cursor }),
              describe: (r) =>
                `${pageNote(r)} from row ${(deepAfter + 1).toLocaleString('en-US')} ${of}`,
            },
      );
    }
  }
  const seriesTo = new Date(nowMs);
  const seriesFrom = new Date(nowMs - 24 * 3_600_000);
  reads.push(
    {
      name: 'getThroughputSeries, 24 h at 1 min',
      kind: 'read',
      call: () => admin.getThroughputSeries({ from: seriesFrom, to: seriesTo, stepMs: 60_000 }),
      describe: (r) => `${(r as unknown[]).length} points`,
    },
    {
      name: 'getThroughputSeries, 24 h at 1 min, one queue',
      kind: 'read',
      call: () =>
        admin.getThroughputSeries({ queue, from: seriesFrom, to: seriesTo, stepMs: 60_000 }),
      describe: (r) => `${(r as unknown[]).length} points`,
    },
    {
      name: 'getTopErrors',
      kind: 'read',
      call: () => admin.getTopErrors(),
      describe: (r) => `${(r as unknown[]).length} families`,
    },
    {
      name: 'listWorkers',
      kind: 'read',
      call: () => admin.listWorkers(),
      describe: (r) => `${(r as unknown[]).length} workers`,
    },
    {
      name: `listArchive, search '${SEARCH_TERM}'`,
      kind: 'search',
      call: () => admin.listArchive({ filter: { search: SEARCH_TERM }, limit: PAGE }),
      describe: pageNote,
    },
    {
      name: `listDlq, search '${SEARCH_TERM}'`,
      kind: 'search',
      call: () => admin.listDlq({ filter: { search: SEARCH_TERM }, limit: PAGE }),
      describe: pageNote,
    },
  );
  return reads;
}

/**
 * The admin-reads scenario on one dialect (issue 13, "Measure it"), over a data set seeded by
 * {@link seedReadsData}: every dashboard read as a `ChokaQAdmin` call (built without Nest over
 * `createJobStorage`, as the module wires it), one unmeasured round, then `repetitions` rounds of
 * every read in turn (a dashboard refresh asks them all), each call timed end to end. No worker
 * runs. Leaves the data set as it found it.
 */
export async function runAdminReads(
  data: ReadsData,
  sizes: ReadSizes,
  log: Log,
  waitForQuiet: () => Promise<void>,
): Promise<AdminReadsRun> {
  const { dialect, target, nowMs, counts } = data;
  let storage: JobStorage | undefined;
  try {
    storage = await createJobStorage(target.options);
    const admin = new ChokaQAdmin(
      storage,
      resolveChokaQOptions({ storage: target.options }),
      new WorkerRegistry(),
    );
    const reads = await buildReads(admin, sizes, nowMs, log);
    const live = reads.filter((r) => !r.skipped);

    await waitForQuiet();
    const loadBefore = loadavg()[0];
    const notes = new Map<Read, string>();
    // Warm-up round: each read once, unmeasured (plans cached, pages in memory).
    for (const read of live) {
      const result = await read.call();
      if (read.describe) notes.set(read, read.describe(result));
    }
    const samples = new Map<Read, number[]>(live.map((r) => [r, []]));
    for (let round = 0; round < sizes.repetitions; round++) {
      for (const read of live) {
        const started = performance.now();
        await read.call();
        samples.get(read)!.push(performance.now() - started);
      }
    }
    const loadAfter = loadavg()[0];

    const timings: ReadTiming[] = reads.map((read) => {
      if (read.skipped) {
        return {
          name: read.name,
          kind: read.kind,
          samplesMs: [],
          p50: NaN,
          p95: NaN,
          max: NaN,
          skipped: read.skipped,
        };
      }
      const values = samples.get(read)!;
      const sorted = [...values].sort((a, b) => a - b);
      return {
        name: read.name,
        kind: read.kind,
        samplesMs: values,
        p50: percentile(sorted, 50),
        p95: percentile(sorted, 95),
        max: sorted[sorted.length - 1],
        note: notes.get(read),
      };
    });
    for (const t of timings) {
      if (t.skipped) log(`  ${t.name}: not run (${t.skipped})`);
      else
        log(
          `  ${t.name}: p50 ${t.p50.toFixed(1)} ms, p95 ${t.p95.toFixed(1)} ms ` +
            `(target ${targetMs(dialect, t.kind)})${t.note ? `, ${t.note}` : ''}`,
        );
    }

    const run: AdminReadsRun = {
      dialect,
      seedSeconds: data.seedSeconds,
      analyzeSeconds: data.analyzeSeconds,
      counts,
      queueShares: [...data.archivedByQueue.values()].map(
        (k) => k / Math.max(1, counts.jobs_archive),
      ),
      sizeMb: data.sizeMb,
      loadBefore,
      loadAfter,
      timings,
      plans: [],
      partitions: data.partitions,
    };
    // A read over its target: the statements it sends, explained, for whoever decides the fix.
    for (const miss of misses(run)) {
      const read = reads.find((r) => r.name === miss.name)!;
      const captured = await captureStatements(dialect, read.call);
      const plans = await target.explain(captured);
      run.plans.push({
        read: miss.name,
        p95: miss.p95,
        statements: captured.map((c, i) => ({ sql: c.sql, plan: plans[i] })),
      });
      log(`  ${miss.name} missed its target: ${captured.length} statement(s) explained`);
    }
    return run;
  } finally {
    await storage?.close().catch(() => undefined);
  }
}
