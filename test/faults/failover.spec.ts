import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { startOwnCluster, startStandby } from '../../bench/lib/pg-cluster';
import { ChokaQStorageUnavailableError, type ChokaQModuleOptions } from '../../libs/chokaq/src';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { describePostgres } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import {
  FaultWorker,
  killAllFaultWorkers,
  pillarViolations,
  runsDdl,
  startFaultWorker,
  steadyProducer,
} from './support/fault-processes';
import { TcpProxy } from './support/tcp-proxy';

/*
 * A primary that dies mid-drain and its standby promoted (issue 31, part 5), on clusters this test
 * makes itself: a primary (`initdb`) with synchronous or asynchronous replication to a streaming
 * standby (`pg_basebackup -R`), on free ports under temporary directories. The workers and a producer
 * reach the database through one endpoint, as they do behind an HA tool (a virtual IP, HAProxy
 * with health checks, PgBouncer, a managed service's DNS name): a TCP proxy of this test, moved to
 * the promoted standby when the primary is gone. ChokaQ knows nothing of the failover: its pools
 * drop the dead sessions, its transient retry rides out the gap, and its LISTEN session reconnects.
 * The runs are recorded in a SQLite file, outside both clusters.
 */
jest.setTimeout(180_000);

const SCHEMA = 'failover';

afterAll(killAllFaultWorkers);

/** What one failover left behind, read on the new primary and from the runs' records. */
interface FailoverOutcome {
  /** Jobs enqueued before the drain (bulk) and by the producer during it, acknowledged. */
  accepted: string[];
  /** The producer's calls that threw (their jobs may exist) and the errors they threw. */
  failedIds: string[];
  errors: unknown[];
  /** Archive rows on the old primary when it crashed, out of every accepted job. */
  archivedBefore: number;
  /** `pillarViolations` of the accepted jobs on the new primary. */
  violations: string[];
  /** Acknowledged enqueues that are in no table of the new primary. */
  lost: string[];
  /** DLQ rows on the new primary: id, failure reason, and whether its handler ever started. */
  dlq: Array<{ id: string; reason: number; ran: boolean }>;
  /** Jobs whose handler started more than once. */
  rerun: string[];
  /**
   * Of those, the ones whose first run's lease the new primary knows (in its Archive, DLQ or
   * attempt history): a rerun whose first claim was not lost with the old primary.
   */
  rerunOfKnownLease: string[];
  /** Jobs whose handler started at all. */
  started: number;
  /** Whether every worker process is still running. */
  workersAlive: boolean;
}

/**
 * One failover: a primary (synchronous replication to its standby, or asynchronous), a standby,
 * the endpoint in front of the primary, `jobs` jobs of `sleepMs` drained by two worker processes of
 * `concurrency` each while a producer enqueues one job at a time; once 300 are archived the
 * primary crashes, the standby is promoted and the endpoint moves to it; then every job drains
 * on the new primary. Stops everything it started.
 */
async function failover(run: {
  synchronous: boolean;
  jobs: number;
  concurrency: number;
  sleepMs: number;
}): Promise<FailoverOutcome> {
  const stops: Array<() => Promise<unknown> | unknown> = [];
  try {
    const primary = await startOwnCluster(run.synchronous ? ["synchronous_standby_names='*'"] : []);
    stops.push(() => primary.stop());
    const standby = await startStandby(primary);
    stops.push(() => standby.stop());
    const direct = new Pool({ connectionString: primary.url, max: 1 });
    try {
      await waitFor('the standby to stream', async () => {
        const { rows } = await direct.query<{ sync_state: string }>(
          'SELECT sync_state FROM pg_stat_replication',
        );
        return rows.some((r) => r.sync_state === (run.synchronous ? 'sync' : 'async'));
      });
    } finally {
      await direct.end();
    }

    const proxy = new TcpProxy('127.0.0.1', primary.port);
    const endpoint = `postgres://postgres@127.0.0.1:${await proxy.listen()}/postgres`;
    stops.push(() => proxy.close());
    const storage = { type: 'postgres', url: endpoint, schema: SCHEMA, poolSize: 6 } as const;
    const here = await createJobStorage({ ...storage, notify: false });
    stops.push(() => here.close());
    // In calls of at most 10,000 (enqueueMany's bound).
    const bulk: string[] = [];
    for (let from = 0; from < run.jobs; from += 10_000) {
      const jobs = Array.from({ length: Math.min(10_000, run.jobs - from) }, (_, k) => ({
        queue: 'faults',
        payload: { sleepMs: run.sleepMs, n: from + k },
      }));
      bulk.push(...(await here.enqueueMany(jobs)).map((r) => r.id));
    }

    const dir = mkdtempSync(join(tmpdir(), 'chokaq-failover-'));
    stops.push(() => rmSync(dir, { recursive: true, force: true }));
    const recordFile = join(dir, 'runs.db');
    const records = new Database(recordFile);
    stops.push(() => records.close());
    records.pragma('journal_mode = WAL');
    records.exec(runsDdl('fault_runs'));
    // A heartbeat every 500 ms (a run is aborted only after 10 of them fail in a row, 5 s, well
    // above the failover's gap) and rows of a lost lease rescued after 5 s, so a claim whose reply
    // was lost with the primary comes back within the test.
    const options: ChokaQModuleOptions = {
      storage: { ...storage, notifyReconnectMs: 200 },
      worker: { concurrency: run.concurrency, pollIntervalMs: 100 },
      heartbeat: { intervalMs: 500 },
      rescue: { intervalMs: 500, zombieTimeoutMs: 5_000, fetchedJobTimeoutMs: 5_000 },
    };
    const workers: FaultWorker[] = [];
    stops.push(() => Promise.all(workers.map((w) => w.kill())));
    for (const n of [1, 2]) {
      workers.push(
        await startFaultWorker({
          workerId: `failover-${n}`,
          runsTable: 'fault_runs',
          recordFile,
          options,
        }),
      );
    }

    const pool = new Pool({ connectionString: endpoint, max: 2 });
    pool.on('error', () => undefined);
    stops.push(() => pool.end());
    const count = async (table: string) =>
      Number(
        (await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${SCHEMA}.${table}`)).rows[0].n,
      );
    await waitFor('the drain to be under way', async () => (await count('jobs_archive')) >= 300, {
      timeoutMs: 60_000,
      intervalMs: 20,
    });

    // A producer keeps enqueueing through the endpoint, one job at a time with its own id.
    const produced = steadyProducer(
      (id) => here.enqueue({ id, queue: 'faults', payload: { n: -1 } }),
      20,
    );
    stops.push(() => produced.stop());
    await waitFor('the producer to have enqueued', () => produced.accepted.length >= 5);

    // The failover: the primary crashes (no checkpoint, every session cut), the standby is
    // promoted, and the endpoint moves to it.
    const archivedBefore = await count('jobs_archive');
    proxy.cut();
    primary.crash();
    standby.promote();
    proxy.retarget(standby.port);
    proxy.restore();

    const enqueuedAtFailover = produced.accepted.length;
    await waitFor(
      'the producer to enqueue on the new primary',
      () => produced.accepted.length >= enqueuedAtFailover + 5,
      { timeoutMs: 30_000 },
    );
    await produced.stop();
    await waitFor(
      'every job to leave the hot table of the new primary',
      async () => (await count('jobs_hot').catch(() => -1)) === 0,
      { timeoutMs: 90_000, intervalMs: 200 },
    );

    const accepted = [...bulk, ...produced.accepted];
    const db = {
      query: async <T>(sql: string) => (await pool.query(sql)).rows as T[],
      table: (name: string) => `${SCHEMA}.${name === 'stats' ? 'stats_summary' : `jobs_${name}`}`,
    };
    const present = new Set(
      (
        await db.query<{ id: string }>(
          `SELECT id FROM ${SCHEMA}.jobs_hot UNION ALL SELECT id FROM ${SCHEMA}.jobs_archive
           UNION ALL SELECT id FROM ${SCHEMA}.jobs_dlq`,
        )
      ).map((r) => r.id),
    );
    const lost = accepted.filter((id) => !present.has(id));
    const dlq = await db.query<{ id: string; failure_reason: number }>(
      `SELECT id, failure_reason FROM ${SCHEMA}.jobs_dlq`,
    );
    // Each job's runs, oldest first; a job run more than once, with the lease of its first run.
    const runsOf = new Map<string, string[]>();
    for (const r of records
      .prepare("SELECT job_id, lease_id FROM fault_runs WHERE phase = 'start' ORDER BY at_ms")
      .all() as Array<{ job_id: string; lease_id: string }>) {
      runsOf.set(r.job_id, [...(runsOf.get(r.job_id) ?? []), r.lease_id]);
    }
    const reruns = [...runsOf]
      .filter(([, leases]) => leases.length > 1)
      .map(([job_id, leases]) => ({ job_id, lease_id: leases[0] }));
    const knownLeases = new Set(
      (
        await db.query<{ lease_id: string }>(
          `SELECT lease_id FROM ${SCHEMA}.jobs_archive WHERE lease_id IS NOT NULL
           UNION SELECT lease_id FROM ${SCHEMA}.jobs_dlq WHERE lease_id IS NOT NULL
           UNION SELECT lease_id FROM ${SCHEMA}.job_attempts WHERE lease_id IS NOT NULL`,
        )
      ).map((r) => r.lease_id),
    );
    return {
      accepted,
      failedIds: produced.failedIds,
      errors: produced.errors,
      archivedBefore,
      // A job lost with the old primary is a violation here too ("accepted job(s) lost"); the
      // asynchronous case leaves that one out and counts `lost` instead.
      violations: await pillarViolations(db, accepted, {
        allowExtra: produced.failedIds,
      }),
      lost,
      dlq: dlq.map((r) => ({ id: r.id, reason: Number(r.failure_reason), ran: runsOf.has(r.id) })),
      rerun: reruns.map((r) => r.job_id),
      rerunOfKnownLease: reruns.filter((r) => knownLeases.has(r.lease_id)).map((r) => r.job_id),
      started: runsOf.size,
      workersAlive: workers.every((w) => w.child.exitCode === null),
    };
  } finally {
    for (const stop of stops.reverse()) await Promise.resolve(stop()).catch(() => undefined);
  }
}

/**
 * The drain of both cases: no-op jobs at concurrency 25 in each of the two workers, so many claims
 * and archives commit every millisecond when the primary dies (5,000 to 10,000 jobs/s here). Enough
 * of them that the drain is still under way when the producer has started and the primary dies:
 * with 6,000, two workers once drained them all before the crash, and the test's premise failed.
 */
const WORKLOAD = { jobs: 20_000, concurrency: 25, sleepMs: 0 };

/** What a failover lost and repeated, printed with CHOKAQ_FAULTS_VERBOSE=1 (docs/storage.md). */
function report(replication: string, outcome: FailoverOutcome): void {
  if (process.env.CHOKAQ_FAULTS_VERBOSE !== '1') return;
  process.stdout.write(
    `${replication} failover: ${outcome.accepted.length} jobs acknowledged, ` +
      `${outcome.archivedBefore} archived before the crash, ${outcome.lost.length} lost, ` +
      `${outcome.rerun.length} run twice, ${outcome.dlq.length} zombies in the DLQ ` +
      `(${outcome.dlq.filter((row) => !row.ran).length} never ran)\n`,
  );
}

describePostgres('PostgreSQL failover: a standby promoted mid-drain', () => {
  it('with synchronous replication every job ends once on the new primary, and only the last claims before the crash run again', async () => {
    const outcome = await failover({ synchronous: true, ...WORKLOAD });
    report('synchronous', outcome);
    expect(outcome.archivedBefore).toBeLessThan(WORKLOAD.jobs);
    // An enqueue that failed (its reply lost with the primary) may have committed: allowed.
    for (const error of outcome.errors) expect(error).toBeInstanceOf(ChokaQStorageUnavailableError);
    // Every job in exactly one of Archive and DLQ, the counters equal to the rows; none lost.
    expect(outcome.violations).toEqual([]);
    expect(outcome.lost).toEqual([]);
    // Synchronous replication kept every move the workers were told had committed (archives, DLQ
    // moves, enqueues: synchronous commits), and the moves cut off were retried on the new
    // primary within the transient retry's budget. Two documented at-least-once cases remain, as
    // after a crash of a single server (README, "What it guarantees"):
    // - a claim commits without waiting (`synchronous_commit = off`, for the standby too), so the
    //   last claims before the crash can be lost: their jobs, run once already, are Pending on the
    //   new primary and run again. So a rerun's first run holds a lease the new primary never
    //   had, and there are at most what the two workers' claims can have started (concurrency +
    //   startAhead each);
    // - a claim that committed while its reply was lost started rows no worker knew of: zombies
    //   that never ran (FailureReason.Zombie, 2; with retryZombies they would run once).
    expect(outcome.rerunOfKnownLease).toEqual([]);
    expect(outcome.rerun.length).toBeLessThanOrEqual(2 * (WORKLOAD.concurrency + 128));
    expect(outcome.dlq.filter((row) => row.reason !== 2 || row.ran)).toEqual([]);
    expect(outcome.started + outcome.dlq.length).toBeGreaterThanOrEqual(outcome.accepted.length);
    expect(outcome.workersAlive).toBe(true);
  });

  /*
   * With asynchronous replication a commit the old primary acknowledged may not have reached the
   * standby: an enqueue (lost), a claim (the job is Pending again and runs a second time), an
   * archive (the job is Processing again under a lease its worker no longer runs: a zombie once its
   * heartbeat is older than the zombie timeout, 5 s here, in the DLQ as a Zombie, never run again
   * since its queue does not retry zombies). What holds whatever was lost: no job in
   * two pillars, nothing left hot, the counters equal to the rows. What was lost is measured
   * (CHOKAQ_FAULTS_VERBOSE=1 prints it; docs/storage.md, "Failover", has the figures).
   */
  it('with asynchronous replication what the old primary acknowledged may be lost, and every job that remains ends once', async () => {
    const outcome = await failover({ synchronous: false, ...WORKLOAD });
    report('asynchronous', outcome);
    expect(outcome.archivedBefore).toBeLessThan(WORKLOAD.jobs);
    expect(outcome.violations.filter((v) => !/lost/.test(v))).toEqual([]);
    // A job that came back from a lost claim or archive reran or reached the DLQ as a zombie
    // (FailureReason.Zombie, 2): nothing else.
    expect(outcome.dlq.filter((row) => row.reason !== 2)).toEqual([]);
    expect(outcome.rerunOfKnownLease).toEqual([]);
    expect(outcome.workersAlive).toBe(true);
  });
});
