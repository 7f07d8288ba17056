import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { StorageOptions } from '../../../libs/chokaq/src';
import { MSSQL_URL, PG_URL, mssqlAvailable, pgAvailable } from '../../support/env';
import { dropMssqlSchema } from '../../support/mssql-schema';

/** The dialects the end-to-end suites run on: SQL Server only with CHOKAQ_MSSQL_URL. */
export type E2eDialect = 'sqlite' | 'postgres' | 'mssql';

/** Logical tables, named per dialect by {@link E2eDatabase.table}. */
export type E2eTable =
  'jobs_hot' | 'jobs_archive' | 'jobs_dlq' | 'stats_summary' | 'queues' | 'recurring_jobs';

/**
 * One isolated ChokaQ database for one test file: a temp SQLite file, or a unique PostgreSQL
 * schema that `close()` drops. `sql()` reads it on a separate connection for assertions.
 */
export interface E2eDatabase {
  readonly dialect: E2eDialect;
  /** What to pass as `storage` to `ChokaQModule.forRoot`. */
  readonly storage: StorageOptions;
  table(name: E2eTable): string;
  /**
   * Raw SQL with `?` placeholders (rewritten to `$n` on PostgreSQL, `@n` on SQL Server, where
   * snake_case column names also become the PascalCase of SPEC §2: `worker_id` → `WorkerId`).
   */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  count(table: E2eTable, where?: string, params?: unknown[]): Promise<number>;
  close(): Promise<void>;
}

/**
 * Runs `body` once per available dialect: PostgreSQL when the global setup reached it, SQL Server
 * when CHOKAQ_MSSQL_URL is set and the suite does not opt out (`mssql: false`, for suites whose
 * worker processes or raw SQL are written for the other two).
 */
export function describeEachE2e(
  title: string,
  body: (dialect: E2eDialect) => void,
  { mssql = true }: { mssql?: boolean } = {},
): void {
  describe(`${title} [sqlite]`, () => body('sqlite'));
  (pgAvailable() ? describe : describe.skip)(`${title} [postgres]`, () => body('postgres'));
  if (mssql) {
    (mssqlAvailable() ? describe : describe.skip)(`${title} [mssql]`, () => body('mssql'));
  }
}

export async function createE2eDatabase(dialect: E2eDialect): Promise<E2eDatabase> {
  if (dialect === 'sqlite') return createSqlite();
  return dialect === 'postgres' ? createPostgres() : createMssql();
}

function createSqlite(): E2eDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'chokaq-e2e-'));
  const file = join(dir, 'chokaq.db');
  let raw: Database.Database | undefined;
  const db = () => {
    // Opened lazily: the file is created by ChokaQ's schema bootstrap.
    raw ??= new Database(file);
    raw.pragma('busy_timeout = 5000');
    return raw;
  };
  const sql = async <T>(query: string, params: unknown[] = []): Promise<T[]> => {
    const statement = db().prepare(query);
    return (statement.reader ? statement.all(...params) : (statement.run(...params), [])) as T[];
  };
  return {
    dialect: 'sqlite',
    storage: { type: 'sqlite', database: file },
    table: (name) => `chokaq_${name}`,
    sql,
    async count(table, where, params) {
      const rows = await sql<{ n: number }>(
        `SELECT COUNT(*) AS n FROM chokaq_${table}${where ? ` WHERE ${where}` : ''}`,
        params,
      );
      return Number(rows[0].n);
    },
    async close() {
      raw?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function createPostgres(): E2eDatabase {
  const schema = `chokaq_e2e_${process.pid}_${randomBytes(4).toString('hex')}`;
  const pool = new Pool({ connectionString: PG_URL, max: 3 });
  const sql = async <T>(query: string, params: unknown[] = []): Promise<T[]> => {
    let i = 0;
    const text = query.replace(/\?/g, () => `$${++i}`);
    return (await pool.query(text, params)).rows as T[];
  };
  return {
    dialect: 'postgres',
    storage: { type: 'postgres', url: PG_URL, schema, poolSize: 5 },
    table: (name) => `${schema}.${name}`,
    sql,
    async count(table, where, params) {
      const rows = await sql<{ n: string }>(
        `SELECT COUNT(*) AS n FROM ${schema}.${table}${where ? ` WHERE ${where}` : ''}`,
        params,
      );
      return Number(rows[0].n);
    },
    async close() {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
      await pool.end();
    },
  };
}

const MSSQL_TABLES: Record<E2eTable, string> = {
  jobs_hot: 'JobsHot',
  jobs_archive: 'JobsArchive',
  jobs_dlq: 'JobsDLQ',
  stats_summary: 'StatsSummary',
  queues: 'Queues',
  recurring_jobs: 'RecurringJobs',
};

/**
 * The e2e suites' raw SQL in T-SQL spelling: `?` → `@0…`, and snake_case identifiers outside
 * string literals → PascalCase (`worker_id` → `WorkerId`; one-word columns already match, since
 * SQL Server compares identifiers case-insensitively under the default collations).
 */
export function toMssqlQuery(query: string): string {
  let i = 0;
  return query
    .split(/('(?:[^']|'')*')/)
    .map((part, index) =>
      index % 2 === 1
        ? part
        : part
            .replace(/\?/g, () => `@${i++}`)
            .replace(/\b[a-z]+(?:_[a-z]+)+\b/g, (word) =>
              word.replace(/(?:^|_)([a-z])/g, (_m, c: string) => c.toUpperCase()),
            ),
    )
    .join('');
}

async function createMssql(): Promise<E2eDatabase> {
  const schema = `chokaq_e2e_${process.pid}_${randomBytes(4).toString('hex')}`;
  const raw = new DataSource({
    type: 'mssql',
    url: MSSQL_URL,
    options: { encrypt: true, trustServerCertificate: true },
  } as never);
  await raw.initialize();
  const table = (name: E2eTable) => `[${schema}].[${MSSQL_TABLES[name]}]`;
  const sql = async <T>(query: string, params: unknown[] = []): Promise<T[]> =>
    (await raw.query(toMssqlQuery(query), params)) as T[];
  return {
    dialect: 'mssql',
    storage: {
      type: 'mssql',
      url: MSSQL_URL,
      schema,
      options: { trustServerCertificate: true },
    },
    table,
    sql,
    async count(name, where, params) {
      const rows = await sql<{ n: number }>(
        `SELECT COUNT(*) AS n FROM ${table(name)}${where ? ` WHERE ${where}` : ''}`,
        params,
      );
      return Number(rows[0].n);
    },
    async close() {
      await dropMssqlSchema(raw, schema);
      await raw.destroy();
    },
  };
}
