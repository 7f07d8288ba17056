import { randomBytes, randomUUID } from 'node:crypto';
import { ChokaQStorageUnavailableError, ChokaQValidationError } from '../../libs/chokaq/src/errors';
import { Pillar, QueueStats } from '../../libs/chokaq/src/interfaces/job-view.interface';
import {
  ClaimedJobs,
  FetchRequest,
  HandledJobs,
  JobLease,
  NewJob,
} from '../../libs/chokaq/src/interfaces/job.interface';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TableName, TestDatabase } from '../support/test-database';

/*
 * Helpers of the storage contract suite. Assertions go through the storage API wherever it can say
 * what is asserted; raw SQL (written once, see `TestSchema.query`) is only used to count rows per
 * table, to find which pillar holds a row, and to make a lease or a row look old (the database
 * clock cannot be moved, rows can).
 */

let sequence = 0;

/** A queue name no other test of the same database uses. */
export function uniqueQueue(prefix = 'q'): string {
  sequence += 1;
  return `${prefix}.${sequence}.${randomBytes(3).toString('hex')}`;
}

/** A worker id shaped like the runtime's (`hostname:pid:random`). */
export function newWorkerId(name = 'w'): string {
  return `test-host:${process.pid}:${name}-${randomBytes(4).toString('hex')}`;
}

/** Handled set with queue-wide handlers only. */
export function queues(...names: string[]): HandledJobs {
  return { queues: names, types: [] };
}

/** One claim call and its fencing token. */
export interface Claim {
  rows: ClaimedJobs;
  workerId: string;
  leaseId: string;
  leases: JobLease[];
}

/**
 * The fixture's storage plus independent ones from `openAnother` (own connection pools of 2, to
 * stay well inside max_connections): `serverCount` more on a server, `sqliteCount` more on the
 * same SQLite file. Close them with {@link closeClaimers}.
 */
export async function openClaimers(
  db: TestDatabase,
  serverCount: number,
  sqliteCount: number,
): Promise<JobStorage[]> {
  const count = db.dialect === 'sqlite' ? sqliteCount : serverCount;
  const others = await Promise.all(
    Array.from({ length: count }, () => db.openAnother({ poolSize: 2 })),
  );
  return [db.storage, ...others];
}

/** Closes the storages {@link openClaimers} opened (not the fixture's own). */
export async function closeClaimers(db: TestDatabase, storages: JobStorage[]): Promise<void> {
  await Promise.all(storages.filter((s) => s !== db.storage).map((s) => s.close()));
}

/** Calls `fetchNextBatch` with a fresh lease id. */
export async function claim(
  storage: JobStorage,
  handled: HandledJobs | string,
  limit: number,
  workerId = newWorkerId(),
  extra: Pick<FetchRequest, 'start' | 'budgetedQueues' | 'ahead'> = {},
): Promise<Claim> {
  const leaseId = randomUUID();
  const rows = await storage.fetchNextBatch({
    workerId,
    leaseId,
    limit,
    handled: typeof handled === 'string' ? queues(handled) : handled,
    ...extra,
  });
  return { rows, workerId, leaseId, leases: rows.map((r) => ({ id: r.id, workerId, leaseId })) };
}

/**
 * Enqueues one job (with a unique type unless one is given), claims exactly it and (unless
 * `fetchedOnly`) starts it; returns its lease.
 */
export async function startJob(
  storage: JobStorage,
  queue: string,
  job: NewJob = {},
  options: { workerId?: string; fetchedOnly?: boolean } = {},
): Promise<JobLease> {
  // A type of its own, so the claim takes exactly this job even when the queue holds others.
  const type = job.type ?? `started.${randomBytes(4).toString('hex')}`;
  const { id } = await storage.enqueue({ queue, ...job, type });
  const c = await claim(storage, { queues: [], types: [{ queue, type }] }, 1, options.workerId);
  if (c.rows.length !== 1 || c.rows[0].id !== id) {
    throw new Error(
      `startJob: expected to claim ${id}, got [${c.rows.map((r) => r.id).join(', ')}]`,
    );
  }
  const lease = c.leases[0];
  if (!options.fetchedOnly) {
    const started = await storage.markAsProcessing([lease]);
    if (started.length !== 1) throw new Error(`startJob: markAsProcessing(${id}) returned []`);
  }
  return lease;
}

/** Claims repeatedly until a claim comes back empty; returns every claim. */
export async function claimAll(
  storage: JobStorage,
  handled: HandledJobs | string,
  limit = 100,
  workerId = newWorkerId(),
): Promise<Claim[]> {
  const claims: Claim[] = [];
  for (let i = 0; i < 10_000; i++) {
    const c = await claim(storage, handled, limit, workerId);
    if (c.rows.length === 0) return claims;
    claims.push(c);
  }
  throw new Error('claimAll: did not drain');
}

/** What {@link inTransaction} needs of a TypeORM `QueryRunner` (1.x and 0.3 alike). */
interface TransactionRunner {
  connect(): Promise<unknown>;
  startTransaction(): Promise<void>;
  commitTransaction(): Promise<void>;
  rollbackTransaction(): Promise<void>;
  release(): Promise<void>;
}

/**
 * Runs `body` in a caller's transaction on a new `QueryRunner` of `dataSource`, then commits it
 * (`commit`) or rolls it back; the runner is released either way.
 */
export async function inTransaction<R extends TransactionRunner>(
  dataSource: { createQueryRunner(): R },
  body: (runner: R) => Promise<void>,
  commit: boolean,
): Promise<void> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  await runner.startTransaction();
  try {
    await body(runner);
    if (commit) await runner.commitTransaction();
    else await runner.rollbackTransaction();
  } finally {
    await runner.release();
  }
}

/** Retries an operation that failed only with `ChokaQStorageUnavailableError` (a busy SQLite file). */
export async function retryUnavailable<T>(operation: () => Promise<T>, attempts = 20): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof ChokaQStorageUnavailableError) || i >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 40));
    }
  }
}

// ------------------------------------------------------------------ raw SQL, dialect-neutral

function placeholders(db: TestDatabase, count: number, from = 1): string {
  return Array.from({ length: count }, (_, i) => db.param(from + i)).join(', ');
}

/** Rows of `table`, optionally only those whose snake_case column equals the value. */
export async function countRows(
  db: TestDatabase,
  table: TableName,
  where?: Record<string, string | number>,
): Promise<number> {
  const entries = Object.entries(where ?? {});
  return db.count(
    table,
    entries.length ? entries.map(([c]) => `${c} = ?`).join(' AND ') : undefined,
    entries.map(([, v]) => v),
  );
}

/** Rows of the dedupe key table for `key` (`Key` is a reserved word in T-SQL, hence the brackets). */
export async function dedupeKeyRows(db: TestDatabase, key: string): Promise<number> {
  return db.count('keys', `${db.dialect === 'mssql' ? '[Key]' : 'key'} = ?`, [key]);
}

/** Rows of each pillar for one queue. */
export async function pillarCounts(
  db: TestDatabase,
  queue: string,
): Promise<{ hot: number; archive: number; dlq: number }> {
  return {
    hot: await countRows(db, 'hot', { queue }),
    archive: await countRows(db, 'archive', { queue }),
    dlq: await countRows(db, 'dlq', { queue }),
  };
}

/** Which tables hold a row with this id (raw SQL, independent of the storage's own reads). */
export async function pillarsOf(db: TestDatabase, id: string): Promise<Pillar[]> {
  const found: Pillar[] = [];
  for (const pillar of ['hot', 'archive', 'dlq'] as const) {
    if ((await countRows(db, pillar, { id })) > 0) found.push(pillar);
  }
  return found;
}

/** Asserts the job is in exactly `expected` (raw count) and that `getJob` agrees. */
export async function expectOnlyIn(db: TestDatabase, id: string, expected: Pillar): Promise<void> {
  expect(await pillarsOf(db, id)).toEqual([expected]);
  const view = await db.storage.getJob(id);
  expect(view?.pillar).toBe(expected);
  for (const pillar of ['hot', 'archive', 'dlq'] as const) {
    expect(await countRows(db, pillar, { id })).toBe(pillar === expected ? 1 : 0);
  }
}

/**
 * Moves a time column of some rows back by `ms` (a stale lease, an expired heartbeat, an old
 * archive row). Nulls stay null. SQLite stores epoch milliseconds.
 */
export async function backdate(
  db: TestDatabase,
  table: TableName,
  snakeColumn: string,
  ids: readonly string[],
  ms: number,
): Promise<void> {
  if (ids.length === 0) return;
  const c = db.column(snakeColumn);
  const id = db.column('id');
  const set =
    db.dialect === 'sqlite'
      ? `${c} = ${c} - ${db.param(1)}`
      : db.dialect === 'postgres'
        ? `${c} = ${c} - (${db.param(1)}::bigint * interval '1 millisecond')`
        : // DATEADD's number is an int (Msg 8115 past about 24.8 days of milliseconds): whole
          // seconds first, then the rest in milliseconds.
          // https://learn.microsoft.com/en-us/sql/t-sql/functions/dateadd-transact-sql#arguments
          `${c} = DATEADD(millisecond, -CAST(${db.param(1)} % 1000 AS int), ` +
          `DATEADD(second, -CAST(${db.param(1)} / 1000 AS int), ${c}))`;
  await db.sql(
    `UPDATE ${db.table(table)} SET ${set} WHERE ${id} IN (${placeholders(db, ids.length, 2)})`,
    [ms, ...ids],
  );
}

/**
 * Moves hot rows' due time back by `ms`: the given time column (`enqueued_at_utc`, or
 * `scheduled_at_utc` for a row that has one), and on SQL Server its stored due time with it
 * (`DueAtUtc`, which the claim and the health read use).
 */
export async function backdateDue(
  db: TestDatabase,
  ids: readonly string[],
  ms: number,
  column: 'enqueued_at_utc' | 'scheduled_at_utc' = 'enqueued_at_utc',
): Promise<void> {
  await backdate(db, 'hot', column, ids, ms);
  if (db.dialect === 'mssql') await backdate(db, 'hot', 'due_at_utc', ids, ms);
}

/** Worker id stored on each hot row of a queue. */
export async function ownersOf(
  db: TestDatabase,
  queue: string,
): Promise<Map<string, string | null>> {
  const rows = await db.query<Record<string, unknown>>(
    `SELECT id AS id, worker_id AS w FROM ${db.table('hot')} WHERE queue = ?`,
    [queue],
  );
  return new Map(rows.map((r) => [String(r.id), r.w === null ? null : String(r.w)]));
}

// ------------------------------------------------------------------ reads through the API

/** The stats row of one queue (throws when the queue has none). */
export async function statsOf(storage: JobStorage, queue: string): Promise<QueueStats> {
  const stats = (await storage.getQueueStats()).find((s) => s.queue === queue);
  if (!stats) throw new Error(`no QueueStats for ${queue}`);
  return stats;
}

/** The lifetime counters of one queue. */
export async function countersOf(
  storage: JobStorage,
  queue: string,
): Promise<{
  succeededTotal: number;
  failedTotal: number;
  cancelledTotal: number;
  retriedTotal: number;
  deferredTotal: number;
  resurrectedTotal: number;
}> {
  const s = await statsOf(storage, queue);
  return {
    succeededTotal: s.succeededTotal,
    failedTotal: s.failedTotal,
    cancelledTotal: s.cancelledTotal,
    retriedTotal: s.retriedTotal,
    deferredTotal: s.deferredTotal,
    resurrectedTotal: s.resurrectedTotal,
  };
}

/** Fetched + Processing rows of a queue, through `getQueueStats`. */
export async function activeOf(storage: JobStorage, queue: string): Promise<number> {
  const s = await statsOf(storage, queue);
  return s.fetched + s.processing;
}

/** Expects a `ChokaQValidationError` with an issue whose path starts with `path`. */
export async function expectValidationError(
  promise: Promise<unknown>,
  path: string,
): Promise<ChokaQValidationError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ChokaQValidationError);
  const error = caught as ChokaQValidationError;
  expect(error.issues.map((i) => i.path)).toEqual(
    expect.arrayContaining([expect.stringMatching(new RegExp(`^${escapeRegExp(path)}`))]),
  );
  expect(error.message).toContain(path);
  return error;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Expects the promise to reject (the error surfaced) and returns the error. Use it, not
 * `.rejects.toThrow()`, where the error may come straight from a driver: better-sqlite3's native
 * addon keeps the `SqliteError` constructor of the first test file that loaded it in a Jest worker
 * process (`addon.setErrorConstructor`, once per process), so in the files that run after it a
 * `SqliteError` is no `Error` of their realm (`instanceof Error` is false, its tag
 * `[object Object]`) and `toThrow` reports "did not throw" for a promise that did reject, depending
 * on which files shared the worker before.
 */
export async function expectRejects(promise: Promise<unknown>): Promise<unknown> {
  let caught: unknown = undefined;
  let rejected = false;
  try {
    await promise;
  } catch (error) {
    rejected = true;
    caught = error;
  }
  expect(rejected).toBe(true);
  return caught;
}

/** A stale lease: same id, the given worker and lease ids. */
export function leaseOf(id: string, workerId: string, leaseId: string): JobLease {
  return { id, workerId, leaseId };
}
