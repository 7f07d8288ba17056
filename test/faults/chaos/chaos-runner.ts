/**
 * The chaos run (issue 6, part 3): several real worker processes and two producers on one
 * database, with random handler failures, timeouts, late results, SIGKILLs of workers (restarted),
 * queue pauses and resumes, cancels and admin resurrects. Then it stops producing, waits (bounded)
 * until the rescue intervals have drained the hot table, and checks the SPEC §8 invariants over the
 * whole database. Prints a summary line `CHAOS SUMMARY {json}` and exits non-zero on any violation.
 *
 * Entry point: `npm run chaos -- --seconds N [--dialect postgres|sqlite] [--workers K] [--seed S]`
 * (scripts/chaos/run.ts). Output goes through process.stdout, not console (the library lint rule).
 *
 * What is checked, precisely (no purge or retention runs during a chaos run):
 * 1. Accounting: every accepted id (an id an enqueue call returned) is in exactly one of Archive and
 *    DLQ; the hot table is empty; no row exists that nobody enqueued.
 * 2. Counters: `SucceededTotal` = archive rows (every success is one accepted hot → archive move);
 *    `FailedTotal + CancelledTotal` = DLQ rows + `ResurrectedTotal` (every DLQ move added one DLQ
 *    row, every resurrect removed one); `ResurrectedTotal` = the resurrects this run performed.
 * 3. Leases: handlers record `start` / `ok` / `error` with their lease id. A lease id starts at most
 *    once per job. The run that owns the finalising lease (the lease stored on the Archive row) ended
 *    `ok`, and no other run of that job started while it ran — otherwise two leases were valid at
 *    once. Runs whose lease was lost may still have been running (allowed); their result must be
 *    refused, which check 4 sees.
 * 4. Finalisations: per job, the accepted terminal outcomes workers report (succeeded / failed /
 *    cancelled with `applied`) are at most 1 + the resurrects of that job, and an accepted success
 *    means the job is in the Archive. (Outcome records of a SIGKILLed worker may be missing, which
 *    only makes this bound looser, never a false alarm.)
 */
import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  ChokaQAdmin,
  ChokaQModule,
  ChokaQModuleOptions,
  JobClient,
  StorageOptions,
  flowStep,
} from '../../../libs/chokaq/src';
import type { FaultPayload } from '../fixtures/fault-worker';
import type { TableName } from '../../support/test-database';
import {
  FaultWorker,
  killAllFaultWorkers,
  openFaultDatabase,
  startFaultWorker,
} from '../support/fault-processes';

export interface ChaosOptions {
  seconds: number;
  dialect: 'postgres' | 'sqlite';
  workers: number;
  seed: number;
}

export interface ChaosSummary {
  dialect: string;
  seconds: number;
  workers: number;
  seed: number;
  jobs: number;
  enqueueCalls: number;
  enqueueErrors: number;
  archive: number;
  dlq: number;
  dlqByReason: Record<string, number>;
  hot: number;
  runs: number;
  kills: number;
  restarts: number;
  pauses: number;
  cancels: number;
  resurrects: number;
  /** Flows enqueued (children and a parent waiting on them) and their parents that ran. */
  flows: number;
  flowParentsRan: number;
  counters: Record<string, number>;
  conflicts: number;
  lateResults: number;
  drainMs: number;
  violations: string[];
}

const QUEUES = ['chaos.a', 'chaos.b'] as const;
const QUEUE_TIMEOUT_MS = 800;

/** A small seeded PRNG (mulberry32), so a failing run can be replayed with its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function say(line: string): void {
  process.stdout.write(`[chaos] ${line}\n`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The value after `--name` in `argv`, if any. */
export function flagValue(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
}

export function parseArgs(argv: readonly string[]): ChaosOptions {
  const get = (name: string) => flagValue(argv, name);
  const seconds = Number(get('seconds') ?? 30);
  const dialect = (get('dialect') ?? 'sqlite') as ChaosOptions['dialect'];
  const workers = Number(get('workers') ?? 3);
  const seed = Number(get('seed') ?? Math.floor(Math.random() * 2 ** 31));
  if (!(seconds > 0) || !['postgres', 'sqlite'].includes(dialect) || !(workers >= 1)) {
    throw new Error(
      'usage: npm run chaos -- --seconds N [--dialect postgres|sqlite] [--workers K] [--seed S]',
    );
  }
  return {
    seconds,
    dialect,
    workers: Math.floor(workers),
    seed,
  };
}

/** The database of one run: ChokaQ's tables, the runs table, raw access, cleanup (exported for the checker's own test). */
export interface ChaosDb {
  dialect: 'postgres' | 'sqlite';
  storage: StorageOptions;
  record: { runsTable: string; recordPgUrl?: string; recordFile?: string };
  /** A ChokaQ table by its logical name (the one test fixture's vocabulary). */
  table(name: TableName): string;
  sql<T = Record<string, unknown>>(query: string): Promise<T[]>;
  runs<T = Record<string, unknown>>(query: string): Promise<T[]>;
  close(): Promise<void>;
}

/**
 * The one test fixture's database plus the fault suites' runs table (in the schema on PostgreSQL,
 * a separate records file on SQLite). On SQLite the workers get a longer transient bound than the
 * default: several processes contend for one write lock.
 */
async function openDb(o: ChaosOptions): Promise<ChaosDb> {
  const db = await openFaultDatabase(o.dialect);
  const storage: StorageOptions =
    o.dialect === 'sqlite'
      ? { ...db.options, transientRetry: { maxAttempts: 12, baseDelayMs: 20, maxDelayMs: 500 } }
      : db.options;
  return {
    dialect: o.dialect,
    storage,
    record: db.record,
    table: (name) => db.table(name),
    sql: (query) => db.sql(query),
    runs: (query) => db.runs(query),
    async close() {
      if (process.env.CHOKAQ_CHAOS_KEEP === '1') say(`kept ${db.file || `schema ${db.schema}`}`);
      else await db.close();
    },
  };
}

function workerOptions(storage: StorageOptions): ChokaQModuleOptions {
  return {
    storage,
    worker: {
      concurrency: 4,
      prefetch: 12,
      batchSize: 6,
      pollIntervalMs: 50,
      shutdownGracePeriodMs: 1_000,
    },
    heartbeat: { intervalMs: 250, failureThreshold: 20 },
    rescue: { intervalMs: 300, fetchedJobTimeoutMs: 1_500, zombieTimeoutMs: 1_500 },
    retry: { maxAttempts: 3, baseDelayMs: 100, multiplier: 2, jitterMs: 50 },
    execution: { timeoutMs: QUEUE_TIMEOUT_MS },
    // The injected failure rate opens circuits; short breaks keep that path in play (releases
    // with a delay, no attempt spent) without parking a whole queue for the default 30 s.
    circuitBreaker: {
      failureThreshold: 20,
      windowMs: 2_000,
      breakDurationMs: 400,
      halfOpenProbes: 2,
    },
  };
}

/** A random job: mostly quick successes, plus every kind of failure the runtime handles. */
function randomPayload(rand: () => number): FaultPayload {
  const r = rand();
  if (r < 0.7) return { sleepMs: Math.floor(rand() * 60) };
  if (r < 0.8) return { sleepMs: 10, failAttempts: 1 + Math.floor(rand() * 2) }; // retried, then ok
  if (r < 0.85) return { failAttempts: 10 }; // DLQ MaxRetriesExceeded
  if (r < 0.88) return { fatal: true }; // DLQ FatalError
  if (r < 0.93) return { sleepMs: QUEUE_TIMEOUT_MS * 3 }; // DLQ Timeout, cooperative
  if (r < 0.96) return { ignoreSignalMs: QUEUE_TIMEOUT_MS + 400 }; // Timeout with a late result
  return { sleepMs: 300 + Math.floor(rand() * 400) }; // long enough to be caught by a SIGKILL
}

export async function runChaos(o: ChaosOptions): Promise<ChaosSummary> {
  const rand = prng(o.seed);
  const db = await openDb(o);
  let app: INestApplicationContext | undefined;
  const workers: FaultWorker[] = [];
  const summary: ChaosSummary = {
    dialect: o.dialect,
    seconds: o.seconds,
    workers: o.workers,
    seed: o.seed,
    jobs: 0,
    enqueueCalls: 0,
    enqueueErrors: 0,
    archive: 0,
    dlq: 0,
    dlqByReason: {},
    hot: 0,
    runs: 0,
    kills: 0,
    restarts: 0,
    pauses: 0,
    cancels: 0,
    resurrects: 0,
    flows: 0,
    flowParentsRan: 0,
    counters: {},
    conflicts: 0,
    lateResults: 0,
    drainMs: 0,
    violations: [],
  };
  try {
    // The producer side and the operator: a producer-only Nest app (JobClient, ChokaQAdmin).
    app = await NestFactory.createApplicationContext(
      ChokaQModule.forRoot({ storage: db.storage, worker: { enabled: false } }),
      { logger: ['error'] },
    );
    const jobs = app.get(JobClient);
    const admin = app.get(ChokaQAdmin);
    // chaos.b retries its zombies (RetryZombies), chaos.a sends them to the DLQ.
    await admin.setRetryZombies('chaos.b', true);
    await admin.updateQueue('chaos.a', {});

    let generation = 0;
    const spawn = async (slot: number) =>
      startFaultWorker(
        {
          ...db.record,
          workerId: `chaos-${slot}-${generation++}`,
          options: workerOptions(db.storage),
          recordOutcomes: true,
          logLevels: ['error'],
        },
        { timeoutMs: 60_000 },
      );
    workers.push(
      ...(await Promise.all(Array.from({ length: o.workers }, (_, slot) => spawn(slot)))),
    );
    say(`${o.workers} workers up on ${o.dialect} (seed ${o.seed})`);

    const accepted = new Set<string>();
    const resurrected = new Map<string, number>();
    /** Each flow's parent with its children. */
    const flows = new Map<string, string[]>();
    const deadline = Date.now() + o.seconds * 1_000;
    let producing = true;

    const producer = async (name: string) => {
      let n = 0;
      while (producing) {
        const queue = QUEUES[Math.floor(rand() * QUEUES.length)];
        summary.enqueueCalls++;
        try {
          if (rand() < 0.1) {
            // A flow: 2 to 5 children and a parent waiting on all of them, with `ignore` (it runs
            // whatever they did) or `cancel` (it goes to the DLQ unrun if one of them fails).
            const onFailure = rand() < 0.7 ? 'ignore' : 'cancel';
            const children = Array.from({ length: 2 + Math.floor(rand() * 4) }, (_, i) => [
              `c${i}`,
              flowStep(queue, randomPayload(rand)),
            ]);
            const { jobIds } = await jobs.enqueueFlow({
              ...Object.fromEntries(children),
              parent: flowStep(
                queue,
                { sleepMs: Math.floor(rand() * 30) },
                { after: children.map(([step]) => ({ step: step as string, onFailure })) },
              ),
            });
            for (const id of Object.values(jobIds)) accepted.add(id);
            flows.set(
              jobIds.parent,
              children.map(([step]) => jobIds[step as string]),
            );
            summary.flows++;
          } else if (rand() < 0.5) {
            const items = Array.from({ length: 1 + Math.floor(rand() * 8) }, () => ({
              payload: randomPayload(rand),
              priority: Math.floor(rand() * 20),
            }));
            for (const id of await jobs.enqueueMany(queue, items)) accepted.add(id);
          } else {
            const idempotencyKey = rand() < 0.2 ? `${name}-${Math.floor(rand() * 20)}` : undefined;
            accepted.add(
              await jobs.enqueue(queue, randomPayload(rand), {
                idempotencyKey,
                delayMs: rand() < 0.1 ? Math.floor(rand() * 500) : undefined,
              }),
            );
          }
        } catch (error) {
          // Allowed only as the typed, retryable unavailability (a busy SQLite file); anything
          // else is a violation. A failed call inserted nothing that anybody accepted.
          summary.enqueueErrors++;
          const name = (error as Error)?.constructor?.name;
          if (name !== 'ChokaQStorageUnavailableError') {
            summary.violations.push(`enqueue threw ${name}: ${String(error)}`);
          }
        }
        n++;
        await sleep(20 + Math.floor(rand() * 40));
      }
      return n;
    };

    // The first actions take each kind once, so a short run on a loaded machine (where a kill and
    // its restart can take seconds) still exercises every kind; then the kinds are drawn at random.
    const FIRST_ACTIONS = [0.4, 0.9, 0.6, 0.1]; // a pause, a cancel, a resurrect, a kill
    let actions = 0;
    const chaos = async () => {
      while (Date.now() < deadline) {
        await sleep(400 + Math.floor(rand() * 600));
        const drawn = rand();
        const r = actions < FIRST_ACTIONS.length ? FIRST_ACTIONS[actions] : drawn;
        actions++;
        try {
          if (r < 0.3) {
            const slot = Math.floor(rand() * workers.length);
            await workers[slot].kill();
            summary.kills++;
            workers[slot] = await spawn(slot);
            summary.restarts++;
          } else if (r < 0.5) {
            const queue = QUEUES[Math.floor(rand() * QUEUES.length)];
            await admin.pauseQueue(queue);
            summary.pauses++;
            await sleep(200 + Math.floor(rand() * 600));
            await admin.resumeQueue(queue);
          } else if (r < 0.8) {
            const max = 1 + Math.floor(rand() * 10);
            const { token } = await admin.previewDlq({}, { action: 'resurrect', max });
            // The DLQ changes under the chaos; a count that moved is a refusal, not a violation.
            const ids = await admin
              .resurrectByFilter({}, { token, tolerance: 0.1 })
              .catch((error: unknown) => {
                if ((error as Error)?.constructor?.name === 'ChokaQConfirmationError') return [];
                throw error;
              });
            for (const id of ids) resurrected.set(id, (resurrected.get(id) ?? 0) + 1);
            summary.resurrects += ids.length;
          } else {
            const pool = [...accepted];
            const pick = Array.from(
              { length: 1 + Math.floor(rand() * 3) },
              () => pool[Math.floor(rand() * pool.length)],
            ).filter(Boolean);
            if (pick.length > 0) {
              const result = await admin.cancel([...new Set(pick)]);
              summary.cancels += result.cancelled.length + result.cancelRequested.length;
            }
          }
        } catch (error) {
          const name = (error as Error)?.constructor?.name;
          if (name !== 'ChokaQStorageUnavailableError') {
            summary.violations.push(`chaos action threw ${name}: ${String(error)}`);
          }
        }
      }
    };

    const producers = [producer('p1'), producer('p2')];
    const progress = setInterval(() => {
      say(`${accepted.size} jobs, ${summary.kills} kills, ${summary.resurrects} resurrects`);
    }, 10_000);
    try {
      await chaos();
    } finally {
      producing = false;
      clearInterval(progress);
    }
    await Promise.all(producers);
    for (const queue of QUEUES) await admin.resumeQueue(queue);
    say(`producing stopped: ${accepted.size} jobs; draining`);

    // Drain (bounded): the rescue intervals return abandoned claims and zombies; retries come due.
    const drainStart = Date.now();
    const drainBound = Number(process.env.CHOKAQ_CHAOS_DRAIN_MS ?? 90_000);
    for (;;) {
      const [{ n }] = await db.sql<{ n: number | string }>(
        `SELECT COUNT(*) AS n FROM ${db.table('hot')}`,
      );
      if (Number(n) === 0) break;
      if (Date.now() - drainStart > drainBound) {
        const states = await db.sql<Record<string, unknown>>(
          `SELECT queue, status, COUNT(*) AS n FROM ${db.table('hot')} GROUP BY queue, status`,
        );
        summary.violations.push(
          `hot table not drained after ${drainBound} ms: ${JSON.stringify(states)}`,
        );
        for (const w of workers) say(`worker ${w.workerId} output:\n${w.output().slice(-3_000)}`);
        break;
      }
      await sleep(200);
    }
    summary.drainMs = Date.now() - drainStart;
    for (const w of workers) {
      try {
        const stats = await w.stats();
        summary.conflicts += stats.conflicts;
        summary.lateResults += stats.lateResults;
      } catch {
        // A worker that cannot answer is reported by its exit code below.
      }
    }
    await Promise.all(workers.map((w) => w.stop(10_000)));
    // Outcome records are written asynchronously; the stop above flushed them.

    summary.jobs = accepted.size;
    await check(db, summary, [...accepted], resurrected, flows);
  } catch (error) {
    summary.violations.push(`chaos run aborted: ${(error as Error)?.stack ?? String(error)}`);
  } finally {
    await killAllFaultWorkers();
    await app?.close().catch(() => undefined);
    await db.close().catch(() => undefined);
  }
  return summary;
}

export async function check(
  db: ChaosDb,
  summary: ChaosSummary,
  accepted: string[],
  resurrected: Map<string, number>,
  flows: ReadonlyMap<string, string[]> = new Map(),
): Promise<void> {
  const v = summary.violations;
  const ids = async (t: TableName) =>
    (await db.sql<{ id: string }>(`SELECT id FROM ${db.table(t)}`)).map((r) => r.id);
  const hot = await ids('hot');
  // PostgreSQL keeps the finalising lease on the archive row; the SQLite archive does not, so
  // there the finalising run is identified by its worker (the latest successful run it recorded).
  const hasLease = db.dialect === 'postgres';
  const archiveRows = await db.sql<{ id: string; lease_id: string | null; worker_id: string }>(
    `SELECT id, ${hasLease ? 'lease_id' : 'NULL AS lease_id'}, worker_id FROM ${db.table('archive')}`,
  );
  const dlqRows = await db.sql<{ id: string; failure_reason: number }>(
    `SELECT id, failure_reason FROM ${db.table('dlq')}`,
  );
  summary.hot = hot.length;
  summary.archive = archiveRows.length;
  summary.dlq = dlqRows.length;
  for (const r of dlqRows) {
    const key = String(r.failure_reason);
    summary.dlqByReason[key] = (summary.dlqByReason[key] ?? 0) + 1;
  }

  // 1. Accounting.
  const archived = new Set(archiveRows.map((r) => r.id));
  const inDlq = new Set(dlqRows.map((r) => r.id));
  if (hot.length > 0) v.push(`${hot.length} job(s) left in the hot table`);
  const both = [...inDlq].filter((id) => archived.has(id));
  if (both.length) v.push(`${both.length} job(s) in Archive and DLQ: ${both.slice(0, 5)}`);
  const lost = accepted.filter((id) => !archived.has(id) && !inDlq.has(id) && !hot.includes(id));
  if (lost.length) v.push(`${lost.length} accepted job(s) lost: ${lost.slice(0, 5)}`);
  const known = new Set(accepted);
  const unknown = [...archived, ...inDlq, ...hot].filter((id) => !known.has(id));
  if (unknown.length) v.push(`${unknown.length} row(s) nobody enqueued: ${unknown.slice(0, 5)}`);

  // 2. Counters.
  const [c] = await db.sql<Record<string, number | string | null>>(
    `SELECT SUM(succeeded_total) AS succeeded, SUM(failed_total) AS failed, ` +
      `SUM(cancelled_total) AS cancelled, SUM(retried_total) AS retried, ` +
      `SUM(resurrected_total) AS resurrected FROM ${db.table('stats')}`,
  );
  for (const [k, value] of Object.entries(c)) summary.counters[k] = Number(value ?? 0);
  const { succeeded, failed, cancelled, resurrected: resurrectedTotal } = summary.counters;
  if (succeeded !== archiveRows.length)
    v.push(`SucceededTotal ${succeeded} ≠ ${archiveRows.length} archive rows`);
  if (failed + cancelled !== dlqRows.length + resurrectedTotal) {
    v.push(
      `FailedTotal + CancelledTotal ${failed + cancelled} ≠ DLQ rows ${dlqRows.length} + ResurrectedTotal ${resurrectedTotal}`,
    );
  }
  if (resurrectedTotal !== summary.resurrects)
    v.push(`ResurrectedTotal ${resurrectedTotal} ≠ ${summary.resurrects} resurrects performed`);

  // 3. Leases.
  const runs = await db.runs<{
    job_id: string;
    worker_id: string;
    lease_id: string | null;
    phase: string;
    detail: string | null;
    at_ms: number | string;
  }>(`SELECT job_id, worker_id, lease_id, phase, detail, at_ms FROM ${db.record.runsTable}`);
  summary.runs = runs.filter((r) => r.phase === 'start').length;
  interface Run {
    lease: string;
    worker: string;
    start: number;
    end?: number;
    ok: boolean;
  }
  const byJob = new Map<string, Map<string, Run>>();
  const outcomes = new Map<string, { accepted: number; succeeded: number }>();
  // Starts first: rows of one run may come back in any order (and share a millisecond).
  const phaseOrder = (phase: string) => (phase === 'start' ? 0 : 1);
  runs.sort((a, b) => phaseOrder(a.phase) - phaseOrder(b.phase));
  for (const r of runs) {
    if (r.phase === 'outcome') {
      const [kind, applied] = String(r.detail).split(':');
      const o = outcomes.get(r.job_id) ?? { accepted: 0, succeeded: 0 };
      if (applied === '1' && ['succeeded', 'failed', 'cancelled'].includes(kind)) o.accepted++;
      if (applied === '1' && kind === 'succeeded') o.succeeded++;
      outcomes.set(r.job_id, o);
      continue;
    }
    const leases = byJob.get(r.job_id) ?? new Map<string, Run>();
    byJob.set(r.job_id, leases);
    const lease = String(r.lease_id);
    const at = Number(r.at_ms);
    if (r.phase === 'start') {
      if (leases.has(lease)) v.push(`job ${r.job_id}: lease ${lease} started twice`);
      leases.set(lease, { lease, worker: r.worker_id, start: at, ok: false });
    } else {
      const run = leases.get(lease);
      if (run) {
        run.end = at;
        run.ok = r.phase === 'ok';
      }
    }
  }
  for (const { id, lease_id, worker_id } of archiveRows) {
    const leases = byJob.get(id);
    const owner = lease_id
      ? leases?.get(lease_id)
      : [...(leases?.values() ?? [])]
          .filter((r) => r.worker === worker_id && r.ok)
          .sort((a, b) => b.start - a.start)[0];
    if (!owner || !owner.ok || owner.end === undefined) {
      v.push(
        `job ${id}: archived by ${worker_id}/${lease_id} without a successful run of that owner`,
      );
      continue;
    }
    for (const other of leases!.values()) {
      if (other.lease !== owner.lease && other.start > owner.start && other.start < owner.end) {
        v.push(`job ${id}: lease ${other.lease} started while ${owner.lease} was still valid`);
      }
    }
  }

  // 5. Flows: no count went below 0, an archived parent waits on nothing and every edge of it
  // settled, and a parent's first run started after the last of its edges settled (the release is
  // in the transaction of that settle: a run before it means a release before the last child).
  const negative = await db.sql<{ n: number | string }>(
    `SELECT COUNT(*) AS n FROM ${db.table('hot')} WHERE waiting_on < 0`,
  );
  if (Number(negative[0].n) > 0) v.push(`${negative[0].n} hot row(s) with waiting_on < 0`);
  const edges = await db.sql<{ job_id: string; state: number | string; settled: unknown }>(
    `SELECT job_id, state, ${db.dialect === 'postgres' ? `floor(extract(epoch FROM settled_at_utc) * 1000)` : 'settled_at_utc'} AS settled
     FROM ${db.table('dependencies')}`,
  );
  const edgesOf = new Map<string, { state: number; settled: number | null }[]>();
  for (const e of edges) {
    const list = edgesOf.get(e.job_id) ?? [];
    list.push({ state: Number(e.state), settled: e.settled === null ? null : Number(e.settled) });
    edgesOf.set(e.job_id, list);
  }
  for (const [parent, children] of flows) {
    const mine = edgesOf.get(parent) ?? [];
    if (mine.length !== children.length) {
      v.push(`flow ${parent}: ${mine.length} edge(s) for ${children.length} children`);
      continue;
    }
    const starts = [...(byJob.get(parent)?.values() ?? [])].map((r) => r.start);
    if (starts.length > 0) summary.flowParentsRan++;
    if (archived.has(parent) && mine.some((e) => e.state === 0 || e.settled === null)) {
      v.push(`flow ${parent}: archived with an edge still waiting`);
    }
    if (starts.length > 0) {
      const lastSettled = Math.max(...mine.map((e) => e.settled ?? Infinity));
      const first = Math.min(...starts);
      if (first < lastSettled) {
        v.push(`flow ${parent}: ran at ${first}, before its last edge settled at ${lastSettled}`);
      }
    }
  }

  // 4. Accepted finalisations.
  for (const [id, o] of outcomes) {
    const allowed = 1 + (resurrected.get(id) ?? 0);
    if (o.accepted > allowed)
      v.push(`job ${id}: ${o.accepted} accepted finalisations, at most ${allowed} possible`);
    if (o.succeeded > 0 && !archived.has(id))
      v.push(`job ${id}: a success was accepted but the job is not in the Archive`);
  }
}

/** CLI: runs, prints the summary, exits 1 on any violation. */
export async function main(argv: readonly string[]): Promise<void> {
  const options = parseArgs(argv);
  const stop = () => {
    void killAllFaultWorkers().then(() => process.exit(130));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const summary = await runChaos(options);
  say(
    `archive ${summary.archive}, dlq ${summary.dlq} ${JSON.stringify(summary.dlqByReason)}, ` +
      `hot ${summary.hot}, kills ${summary.kills}, resurrects ${summary.resurrects}, ` +
      `violations ${summary.violations.length}`,
  );
  for (const violation of summary.violations.slice(0, 50)) say(`VIOLATION ${violation}`);
  process.stdout.write(`CHAOS SUMMARY ${JSON.stringify(summary)}\n`);
  process.exitCode = summary.violations.length > 0 ? 1 : 0;
}
