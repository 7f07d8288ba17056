import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { createJobStorage } from '../../../libs/chokaq/src/storage/create-storage';
import type { JobStorage, StorageOptions } from '../../../libs/chokaq/src';
import { PG_URL } from '../../support/env';
import { runsDdl } from './fault-processes';

/** The ChokaQ tables, by their logical name. */
export type FaultTable =
  'jobs_hot' | 'jobs_archive' | 'jobs_dlq' | 'stats_summary' | 'queues' | 'metric_buckets';

/**
 * One isolated ChokaQ database plus a runs table for the fault suites: a unique PostgreSQL schema
 * (dropped by `close()`), or a temp directory with the job file and a separate records file.
 * `sql()` / `runs()` read on connections of their own, never through a test's proxy.
 */
export interface FaultDb {
  readonly dialect: 'sqlite' | 'postgres';
  /** Storage options for workers and producers (without a proxy). */
  readonly storage: StorageOptions;
  /** The schema (PostgreSQL) or '' (SQLite). */
  readonly schema: string;
  /** Job file (SQLite). */
  readonly file: string;
  /** Where the fixtures record runs: `{ runsTable, recordPgUrl | recordFile }`. */
  readonly record: { runsTable: string; recordPgUrl?: string; recordFile?: string };
  /** A storage of this process on the database (opened once, closed by `close()`). */
  readonly storageHere: JobStorage;
  table(name: FaultTable): string;
  /** Raw SQL on the job database with `?` placeholders. */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /** Raw SQL on the records database. */
  runs<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  count(table: FaultTable, where?: string): Promise<number>;
  close(): Promise<void>;
}

export async function createFaultDb(
  dialect: 'sqlite' | 'postgres',
  overrides: Partial<StorageOptions> = {},
): Promise<FaultDb> {
  return dialect === 'postgres' ? createPg(overrides) : createSqlite(overrides);
}

async function createPg(overrides: Partial<StorageOptions>): Promise<FaultDb> {
  const schema = `chokaq_faults_${process.pid}_${randomBytes(4).toString('hex')}`;
  const pool = new Pool({ connectionString: PG_URL, max: 3 });
  pool.on('error', () => undefined);
  const storage = { type: 'postgres', url: PG_URL, schema, poolSize: 4 } as StorageOptions;
  const storageHere = await createJobStorage({ ...storage, ...overrides } as StorageOptions);
  const runsTable = `${schema}.fault_runs`;
  await pool.query(runsDdl(runsTable));
  const sql = async <T>(query: string, params: unknown[] = []): Promise<T[]> => {
    let i = 0;
    return (
      await pool.query(
        query.replace(/\?/g, () => `$${++i}`),
        params,
      )
    ).rows as T[];
  };
  return {
    dialect: 'postgres',
    storage,
    schema,
    file: '',
    record: { runsTable, recordPgUrl: PG_URL },
    storageHere,
    table: (name) => `${schema}.${name}`,
    sql,
    runs: sql,
    async count(table, where) {
      const [row] = await sql<{ n: string }>(
        `SELECT COUNT(*) AS n FROM ${schema}.${table}${where ? ` WHERE ${where}` : ''}`,
      );
      return Number(row.n);
    },
    async close() {
      await storageHere.close().catch(() => undefined);
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
      await pool.end();
    },
  };
}

async function createSqlite(overrides: Partial<StorageOptions>): Promise<FaultDb> {
  const dir = mkdtempSync(join(tmpdir(), 'chokaq-faults-'));
  const file = join(dir, 'jobs.db');
  const recordFile = join(dir, 'runs.db');
  const storage = { type: 'sqlite', database: file } as StorageOptions;
  const storageHere = await createJobStorage({ ...storage, ...overrides } as StorageOptions);
  const rec = new Database(recordFile);
  rec.pragma('journal_mode = WAL');
  rec.pragma('busy_timeout = 2000');
  rec.exec(runsDdl('fault_runs'));
  // Read-only use here; a short busy wait keeps the test process responsive during a lock test.
  const jobs = new Database(file);
  jobs.pragma('busy_timeout = 2000');
  const run = <T>(db: Database.Database, query: string, params: unknown[]): T[] => {
    const statement = db.prepare(query);
    return (statement.reader ? statement.all(...params) : (statement.run(...params), [])) as T[];
  };
  return {
    dialect: 'sqlite',
    storage,
    schema: '',
    file,
    record: { runsTable: 'fault_runs', recordFile },
    storageHere,
    table: (name) => `chokaq_${name}`,
    sql: async (query, params = []) => run(jobs, query, params),
    runs: async (query, params = []) => run(rec, query, params),
    async count(table, where) {
      const [row] = run<{ n: number }>(
        jobs,
        `SELECT COUNT(*) AS n FROM chokaq_${table}${where ? ` WHERE ${where}` : ''}`,
        [],
      );
      return Number(row.n);
    },
    async close() {
      await storageHere.close().catch(() => undefined);
      jobs.close();
      rec.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Checks the pillars after a run: every id in `accepted` is in exactly one of Archive and DLQ, the
 * hot table is empty, and the lifetime counters equal the rows (nothing was purged; `resurrected`
 * DLQ → hot moves each removed one DLQ row). Returns the violations (empty when all hold).
 */
export async function pillarViolations(
  db: FaultDb,
  accepted: readonly string[],
  { allowExtra = [] as readonly string[] } = {},
): Promise<string[]> {
  const violations: string[] = [];
  const ids = async (t: FaultTable) =>
    (await db.sql<{ id: string }>(`SELECT id FROM ${db.table(t)}`)).map((r) => r.id);
  const [hot, archive, dlq] = [
    await ids('jobs_hot'),
    await ids('jobs_archive'),
    await ids('jobs_dlq'),
  ];
  if (hot.length > 0) violations.push(`${hot.length} job(s) still hot`);
  const archived = new Set(archive);
  const both = dlq.filter((id) => archived.has(id));
  if (both.length > 0)
    violations.push(`${both.length} job(s) in Archive and DLQ: ${both.slice(0, 5)}`);
  const everywhere = new Set([...hot, ...archive, ...dlq]);
  const lost = accepted.filter((id) => !everywhere.has(id));
  if (lost.length > 0) violations.push(`${lost.length} accepted job(s) lost: ${lost.slice(0, 5)}`);
  const known = new Set([...accepted, ...allowExtra]);
  const unknown = [...everywhere].filter((id) => !known.has(id));
  if (unknown.length > 0)
    violations.push(`${unknown.length} job(s) nobody enqueued: ${unknown.slice(0, 5)}`);
  const [c] = await db.sql<Record<string, unknown>>(
    `SELECT SUM(succeeded_total) AS ok, SUM(failed_total) AS failed, SUM(cancelled_total) AS cancelled, ` +
      `SUM(resurrected_total) AS resurrected FROM ${db.table('stats_summary')}`,
  );
  const ok = Number(c.ok ?? 0);
  const moved = Number(c.failed ?? 0) + Number(c.cancelled ?? 0);
  const resurrected = Number(c.resurrected ?? 0);
  if (ok !== archive.length)
    violations.push(`SucceededTotal ${ok} ≠ ${archive.length} archive rows`);
  if (moved !== dlq.length + resurrected) {
    violations.push(
      `FailedTotal + CancelledTotal ${moved} ≠ ${dlq.length} DLQ rows + ${resurrected} resurrected`,
    );
  }
  return violations;
}
