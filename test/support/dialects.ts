import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { StorageDialect } from '../../libs/chokaq/src/interfaces/job.interface';
import { StorageOptions } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { MSSQL_URL, PG_URL, mssqlAvailable, pgAvailable } from './env';
import { dropMssqlSchema } from './mssql-schema';

/** Logical table names, the same on every dialect. */
export type TableName =
  'hot' | 'archive' | 'dlq' | 'stats' | 'buckets' | 'queues' | 'recurring' | 'migrations';

const BASE_NAMES: Record<TableName, { snake: string; pascal: string }> = {
  hot: { snake: 'jobs_hot', pascal: 'JobsHot' },
  archive: { snake: 'jobs_archive', pascal: 'JobsArchive' },
  dlq: { snake: 'jobs_dlq', pascal: 'JobsDLQ' },
  stats: { snake: 'stats_summary', pascal: 'StatsSummary' },
  buckets: { snake: 'metric_buckets', pascal: 'MetricBuckets' },
  queues: { snake: 'queues', pascal: 'Queues' },
  recurring: { snake: 'recurring_jobs', pascal: 'RecurringJobs' },
  migrations: { snake: 'schema_migrations', pascal: 'SchemaMigrations' },
};

/** A fresh, isolated ChokaQ schema on one dialect, with raw access for assertions. */
export interface TestDatabase {
  readonly dialect: StorageDialect;
  /** The storage under test (owns its DataSource). */
  readonly storage: JobStorage;
  /** Options that open another, independent storage on the same database and schema. */
  readonly options: StorageOptions;
  /** Qualified table name for raw SQL. */
  table(name: TableName): string;
  /** Runs raw SQL on a separate connection (for assertions and fault injection only). */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /** Opens another independent storage (own DataSource, own connections) on the same schema. */
  openAnother(overrides?: Partial<StorageOptions>): Promise<JobStorage>;
  /**
   * Makes every INSERT into `table` fail (a trigger that raises), to prove a move rolls back
   * completely. `clearFailure` removes it.
   */
  failInserts(table: TableName): Promise<void>;
  /**
   * Makes every INSERT and UPDATE of `table` fail. Counters (`stats`) and metric buckets may be
   * written by an UPDATE or an upsert, which an insert-only trigger would not catch.
   */
  failWrites(table: TableName): Promise<void>;
  /** Removes what `failInserts` / `failWrites` installed on `table`. */
  clearFailure(table: TableName): Promise<void>;
  /**
   * Opens another raw, initialised TypeORM `DataSource` on the same database (closed by `close()`),
   * e.g. to borrow it to a storage (`{ dataSource, schema }`) and test the `transaction` option.
   */
  openDataSource(): Promise<DataSource>;
  /** Closes everything and drops the schema (or file). */
  close(): Promise<void>;
}

/** One entry per dialect; `available` is false when its server is not reachable here. */
export interface DialectFixture {
  readonly name: StorageDialect;
  readonly available: boolean;
  create(overrides?: Partial<StorageOptions>): Promise<TestDatabase>;
}

/** Statements that install / remove a failing trigger; `updates` makes UPDATEs fail too. */
interface FailSql {
  add(t: string, trigger: string, updates: boolean): string[];
  drop(t: string, trigger: string): string[];
}

function uniqueName(prefix: string): string {
  return `${prefix}${process.pid}_${randomBytes(4).toString('hex')}`;
}

async function track(
  dialect: StorageDialect,
  options: StorageOptions,
  table: (name: TableName) => string,
  raw: DataSource,
  failSql: FailSql,
  newDataSource: () => DataSource,
  dropAll: () => Promise<void>,
): Promise<TestDatabase> {
  const storage = await createJobStorage(options);
  const others: JobStorage[] = [];
  const dataSources: DataSource[] = [];
  const triggerName = (t: TableName) => `chokaq_test_fail_${t}`;
  const writeTriggerName = (t: TableName) => `chokaq_test_failw_${t}`;
  return {
    dialect,
    storage,
    options,
    table,
    sql: (query, params) => raw.query(query, params),
    async openAnother(overrides) {
      const other = await createJobStorage({
        ...options,
        ...overrides,
        autoCreateSchema: false,
      } as StorageOptions);
      others.push(other);
      return other;
    },
    async failInserts(t) {
      for (const statement of failSql.add(table(t), triggerName(t), false))
        await raw.query(statement);
    },
    async failWrites(t) {
      for (const statement of failSql.add(table(t), writeTriggerName(t), true))
        await raw.query(statement);
    },
    async clearFailure(t) {
      for (const statement of failSql.drop(table(t), triggerName(t))) await raw.query(statement);
      for (const statement of failSql.drop(table(t), writeTriggerName(t)))
        await raw.query(statement);
    },
    async openDataSource() {
      const ds = newDataSource();
      await ds.initialize();
      dataSources.push(ds);
      return ds;
    },
    async close() {
      for (const other of others) await other.close().catch(() => undefined);
      for (const ds of dataSources) if (ds.isInitialized) await ds.destroy().catch(() => undefined);
      await storage.close().catch(() => undefined);
      await dropAll();
    },
  };
}

const sqlite: DialectFixture = {
  name: 'sqlite',
  available: true,
  async create(overrides) {
    const dir = mkdtempSync(join(tmpdir(), 'chokaq-test-'));
    const file = join(dir, 'chokaq.db');
    const prefix = 'chokaq_';
    const options = {
      type: 'sqlite',
      database: file,
      schema: prefix,
      ...overrides,
    } as StorageOptions;
    const raw = new DataSource({ type: 'better-sqlite3', database: file });
    await raw.initialize();
    await raw.query('PRAGMA busy_timeout = 5000');
    return track(
      'sqlite',
      options,
      (t) => `${prefix}${BASE_NAMES[t].snake}`,
      raw,
      {
        add: (t, trg, updates) => [
          `CREATE TRIGGER ${trg} BEFORE INSERT ON ${t} BEGIN SELECT RAISE(ABORT, 'chokaq test: injected failure'); END`,
          ...(updates
            ? [
                `CREATE TRIGGER ${trg}_u BEFORE UPDATE ON ${t} BEGIN SELECT RAISE(ABORT, 'chokaq test: injected failure'); END`,
              ]
            : []),
        ],
        drop: (_t, trg) => [`DROP TRIGGER IF EXISTS ${trg}`, `DROP TRIGGER IF EXISTS ${trg}_u`],
      },
      () => new DataSource({ type: 'better-sqlite3', database: file }),
      async () => {
        await raw.destroy();
        rmSync(dir, { recursive: true, force: true });
      },
    );
  },
};

const postgres: DialectFixture = {
  name: 'postgres',
  available: pgAvailable(),
  async create(overrides) {
    const schema = uniqueName('chokaq_t_');
    const options = {
      type: 'postgres',
      url: PG_URL,
      schema,
      poolSize: 10,
      ...overrides,
    } as StorageOptions;
    const raw = new DataSource({ type: 'postgres', url: PG_URL, poolSize: 4 });
    await raw.initialize();
    return track(
      'postgres',
      options,
      (t) => `${schema}.${BASE_NAMES[t].snake}`,
      raw,
      {
        add: (t, trg, updates) => [
          `CREATE OR REPLACE FUNCTION ${schema}.${trg}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'chokaq test: injected failure'; END $$`,
          `CREATE TRIGGER ${trg} BEFORE INSERT${updates ? ' OR UPDATE' : ''} ON ${t} FOR EACH ROW EXECUTE FUNCTION ${schema}.${trg}()`,
        ],
        drop: (t, trg) => [`DROP TRIGGER IF EXISTS ${trg} ON ${t}`],
      },
      () => new DataSource({ type: 'postgres', url: PG_URL, poolSize: 3 }),
      async () => {
        await raw.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await raw.destroy();
      },
    );
  },
};

const mssql: DialectFixture = {
  name: 'mssql',
  available: mssqlAvailable(),
  async create(overrides) {
    const schema = uniqueName('chokaq_t_');
    // Test servers (a container, a dev box) usually have a self-signed certificate.
    const options = {
      type: 'mssql',
      url: MSSQL_URL,
      schema,
      options: { trustServerCertificate: true },
      ...overrides,
    } as StorageOptions;
    const raw = new DataSource({
      type: 'mssql',
      url: MSSQL_URL,
      options: { encrypt: true, trustServerCertificate: true },
    } as never);
    await raw.initialize();
    return track(
      'mssql',
      options,
      (t) => `[${schema}].[${BASE_NAMES[t].pascal}]`,
      raw,
      {
        add: (t, trg, updates) => [
          `CREATE TRIGGER [${schema}].[${trg}] ON ${t} AFTER INSERT${updates ? ', UPDATE' : ''} AS BEGIN THROW 50001, 'chokaq test: injected failure', 1; END`,
        ],
        drop: (_t, trg) => [`DROP TRIGGER IF EXISTS [${schema}].[${trg}]`],
      },
      () =>
        new DataSource({
          type: 'mssql',
          url: MSSQL_URL,
          options: { encrypt: true, trustServerCertificate: true },
        } as never),
      async () => {
        await dropMssqlSchema(raw, schema);
        await raw.destroy();
      },
    );
  },
};

/** Every dialect, in the order the contract suite runs them. */
export const DIALECTS: readonly DialectFixture[] = [sqlite, postgres, mssql];

/**
 * `describe.each` over the dialects that can run here. Unavailable ones are skipped; the global
 * setup has already printed one line saying so.
 */
export function describeEachDialect(title: string, body: (fixture: DialectFixture) => void): void {
  for (const fixture of DIALECTS) {
    const run = fixture.available ? describe : describe.skip;
    run(`${title} [${fixture.name}]`, () => body(fixture));
  }
}
