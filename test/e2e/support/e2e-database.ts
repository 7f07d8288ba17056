import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import type { StorageOptions } from '../../../libs/chokaq/src';
import { PG_URL, pgAvailable } from '../../support/env';

/** The dialects the end-to-end suites run on here. */
export type E2eDialect = 'sqlite' | 'postgres';

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
  /** Raw SQL with `?` placeholders (rewritten to `$n` on PostgreSQL). */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  count(table: E2eTable, where?: string, params?: unknown[]): Promise<number>;
  close(): Promise<void>;
}

/** Runs `body` once per available dialect; PostgreSQL only when the global setup reached it. */
export function describeEachE2e(title: string, body: (dialect: E2eDialect) => void): void {
  describe(`${title} [sqlite]`, () => body('sqlite'));
  (pgAvailable() ? describe : describe.skip)(`${title} [postgres]`, () => body('postgres'));
}

export async function createE2eDatabase(dialect: E2eDialect): Promise<E2eDatabase> {
  return dialect === 'sqlite' ? createSqlite() : createPostgres();
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
