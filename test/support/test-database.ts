import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { StorageDialect } from '../../libs/chokaq/src/interfaces/job.interface';
import { StorageOptions } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { qualify } from '../../libs/chokaq/src/storage/mssql/mssql.schema';
import { quoteSchema } from '../../libs/chokaq/src/storage/postgres/sql';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { MSSQL_URL, PG_URL, mssqlAvailable, pgAvailable } from './env';

/*
 * The one test database fixture. Every suite that needs a real ChokaQ database (contract, e2e,
 * faults, PostgreSQL-only, SQL Server live, runtime) opens it here, names tables by one logical
 * vocabulary and writes its raw SQL once: `query()` takes `?` placeholders and snake_case columns
 * and translates them per dialect (`$n` on PostgreSQL; `@n` and the PascalCase of SPEC §2 on SQL
 * Server), so the same assertion runs on SQL Server when CHOKAQ_MSSQL_URL is set.
 */

/** Logical table names, the same on every dialect. */
export type TableName =
  | 'hot'
  | 'archive'
  | 'dlq'
  | 'stats'
  | 'buckets'
  | 'queues'
  | 'recurring'
  | 'migrations'
  | 'workers'
  | 'audit'
  | 'attempts'
  | 'settings'
  | 'keys'
  | 'batches'
  | 'callbacks'
  | 'dependencies';

/** Table names on SQLite (after the prefix) and PostgreSQL; SQL Server's come from the library. */
const SNAKE_NAMES: Record<TableName, string> = {
  hot: 'jobs_hot',
  archive: 'jobs_archive',
  dlq: 'jobs_dlq',
  stats: 'stats_summary',
  buckets: 'metric_buckets',
  queues: 'queues',
  recurring: 'recurring_jobs',
  migrations: 'schema_migrations',
  workers: 'workers',
  audit: 'audit_log',
  attempts: 'job_attempts',
  settings: 'settings',
  keys: 'dedupe_keys',
  batches: 'batches',
  callbacks: 'batch_callbacks',
  dependencies: 'job_dependencies',
};

/** `worker_id` → `WorkerId`: SPEC §2's SQL Server spelling of a snake_case column. */
function pascalCase(snake: string): string {
  return snake.replace(/(?:^|_)([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** The SQLite table prefix the fixture uses (the library's default). */
const SQLITE_PREFIX = 'chokaq_';

/** How {@link createTestSchema} shapes the database. */
export interface TestSchemaOptions {
  /** Merged into the storage options (pool size, retention…). */
  readonly overrides?: Partial<StorageOptions>;
  /**
   * PostgreSQL and SQL Server: another database on the server of the suite's URL (a scratch
   * database a suite created), for the storage and every raw connection. Default: the URL's own.
   */
  readonly database?: string;
  /**
   * SQLite only: the busy wait of the raw connection (default 5,000 ms). A fault suite that holds
   * the write lock on purpose passes a short one so its own reads stay responsive.
   */
  readonly busyTimeoutMs?: number;
}

/**
 * A fresh, isolated ChokaQ database on one dialect (a temp SQLite file, or a uniquely named
 * PostgreSQL / SQL Server schema) with raw access for assertions. Nothing is created until a
 * storage opens it (`openStorage`, or {@link openTestDatabase}), so a suite can also test schema
 * creation itself, or hand {@link options} to a Nest app.
 */
export interface TestSchema {
  readonly dialect: StorageDialect;
  /** Options that open a storage on this database and schema. */
  readonly options: StorageOptions;
  /** The schema name (PostgreSQL, SQL Server) or the table prefix (SQLite). */
  readonly schema: string;
  /** The database file (SQLite), else ''. */
  readonly file: string;
  /** Qualified table name for raw SQL. */
  table(name: TableName): string;
  /** A column name in the dialect's spelling (snake_case, or PascalCase on SQL Server). */
  column(snake: string): string;
  /** The `i`-th (1-based) parameter placeholder of the dialect. */
  param(i: number): string;
  /** Runs dialect-native SQL on a separate connection (for assertions and fault injection only). */
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /**
   * Runs SQL written once for every dialect: `?` placeholders and snake_case columns, tables from
   * {@link table}. See {@link toDialectSql}.
   */
  query<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /** Rows of `table`, optionally filtered by a {@link query}-style `where` clause. */
  count(table: TableName, where?: string, params?: unknown[]): Promise<number>;
  /** Opens a storage (own DataSource, own connections) on this schema; `close()` closes it. */
  openStorage(overrides?: Partial<StorageOptions>): Promise<JobStorage>;
  /** Opens `n` independent storages in parallel (see {@link openStorage}). */
  openStorages(n: number, overrides?: Partial<StorageOptions>): Promise<JobStorage[]>;
  /**
   * Opens another raw, initialised TypeORM `DataSource` on the same database (closed by `close()`),
   * e.g. to borrow it to a storage (`{ dataSource, schema }`) and test the `transaction` option.
   * `poolSize` bounds its pool (servers only): 1 makes every query share one session.
   */
  openDataSource(options?: { poolSize?: number }): Promise<DataSource>;
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
  /** Closes every storage and connection it opened and drops the schema (or file). */
  close(): Promise<void>;
}

/** A {@link TestSchema} with a storage already open on it (which created the schema). */
export interface TestDatabase extends TestSchema {
  /** The storage under test (owns its DataSource). */
  readonly storage: JobStorage;
  /** Opens another independent storage on the same schema, without schema creation. */
  openAnother(overrides?: Partial<StorageOptions>): Promise<JobStorage>;
}

/** One entry per dialect; `available` is false when its server is not reachable here. */
export interface DialectFixture {
  readonly name: StorageDialect;
  readonly available: boolean;
  /** {@link openTestDatabase} on this dialect. */
  create(overrides?: Partial<StorageOptions>): Promise<TestDatabase>;
}

/**
 * SQL written once, in the dialect's spelling: `?` → `$1…` (PostgreSQL) or `@0…` (SQL Server,
 * where snake_case identifiers outside string literals also become PascalCase: `worker_id` →
 * `WorkerId`; one-word columns already match, since SQL Server compares identifiers
 * case-insensitively under the default collations). SQLite takes it as written.
 */
export function toDialectSql(dialect: StorageDialect, query: string): string {
  if (dialect === 'sqlite') return query;
  let i = 0;
  return query
    .split(/('(?:[^']|'')*')/)
    .map((part, index) => {
      if (index % 2 === 1) return part;
      if (dialect === 'postgres') return part.replace(/\?/g, () => `$${++i}`);
      return part.replace(/\?/g, () => `@${i++}`).replace(/\b[a-z]+(?:_[a-z]+)+\b/g, pascalCase);
    })
    .join('');
}

/** Statements that install / remove a failing trigger; `updates` makes UPDATEs fail too. */
interface FailSql {
  add(t: string, trigger: string, updates: boolean): string[];
  drop(t: string, trigger: string): string[];
}

/** What differs per dialect; everything else is {@link buildSchema}. */
interface DialectParts {
  readonly dialect: StorageDialect;
  readonly options: StorageOptions;
  readonly schema: string;
  readonly file: string;
  table(name: TableName): string;
  column(snake: string): string;
  param(i: number): string;
  readonly failSql: FailSql;
  newDataSource(poolSize?: number): DataSource;
  /** Runs after every storage and data source is closed. */
  dropAll(raw: DataSource | undefined): Promise<void>;
  /** Session settings of the raw connection. */
  prepareRaw?(raw: DataSource): Promise<void>;
}

function uniqueName(prefix: string): string {
  return `${prefix}${process.pid}_${randomBytes(4).toString('hex')}`;
}

/** `url` pointed at another `database` on the same server, or `url` itself. */
function onDatabase(url: string, database: string | undefined): string {
  if (database === undefined) return url;
  const other = new URL(url);
  other.pathname = `/${database}`;
  return other.toString();
}

/**
 * Drops a test's SQL Server schema: its tables first (SQL Server has no `DROP SCHEMA … CASCADE`;
 * dropping a table drops its triggers), then the schema. Best effort: cleanup never hides the
 * test's own failure.
 */
async function dropMssqlSchema(raw: DataSource, schema: string): Promise<void> {
  const tables = (await raw.query(`SELECT name FROM sys.tables WHERE schema_id = SCHEMA_ID(@0)`, [
    schema,
  ])) as Array<{ name: string }>;
  for (const { name } of tables) {
    await raw.query(`DROP TABLE [${schema}].[${name}]`).catch(() => undefined);
  }
  await raw.query(`DROP SCHEMA IF EXISTS [${schema}]`).catch(() => undefined);
}

function buildSchema(parts: DialectParts): TestSchema {
  const storages: JobStorage[] = [];
  const dataSources: DataSource[] = [];
  let raw: DataSource | undefined;
  let rawReady: Promise<DataSource> | undefined;
  // Opened lazily: nothing touches the database before the suite asks (a SQLite file is then
  // created by ChokaQ's schema bootstrap, a concurrency suite can race the schema creation).
  const rawSource = (): Promise<DataSource> =>
    (rawReady ??= (async () => {
      raw = parts.newDataSource();
      await raw.initialize();
      await parts.prepareRaw?.(raw);
      return raw;
    })());
  const sql = async <T>(query: string, params: unknown[] = []): Promise<T[]> =>
    (await rawSource()).query(query, params) as Promise<T[]>;
  const query = <T>(text: string, params: unknown[] = []): Promise<T[]> =>
    sql<T>(toDialectSql(parts.dialect, text), params);
  const triggerName = (t: TableName) => `chokaq_test_fail_${t}`;
  const writeTriggerName = (t: TableName) => `chokaq_test_failw_${t}`;
  const runAll = async (statements: string[]) => {
    for (const statement of statements) await sql(statement);
  };
  const openStorage = async (overrides?: Partial<StorageOptions>): Promise<JobStorage> => {
    // As the module does: the storage logs through Nest's Logger, so a test can record it there.
    const storage = await createJobStorage({ ...parts.options, ...overrides } as StorageOptions, {
      logger: (context) => new Logger(context),
    });
    storages.push(storage);
    return storage;
  };
  return {
    dialect: parts.dialect,
    options: parts.options,
    schema: parts.schema,
    file: parts.file,
    table: parts.table,
    column: parts.column,
    param: parts.param,
    sql,
    query,
    async count(table, where, params) {
      const rows = await query<{ n: unknown }>(
        `SELECT COUNT(*) AS n FROM ${parts.table(table)}${where ? ` WHERE ${where}` : ''}`,
        params,
      );
      return Number(rows[0].n);
    },
    openStorage,
    openStorages: (n, overrides) =>
      Promise.all(Array.from({ length: n }, () => openStorage(overrides))),
    async openDataSource(options) {
      const ds = parts.newDataSource(options?.poolSize);
      await ds.initialize();
      dataSources.push(ds);
      return ds;
    },
    async failInserts(t) {
      await runAll(parts.failSql.add(parts.table(t), triggerName(t), false));
    },
    async failWrites(t) {
      await runAll(parts.failSql.add(parts.table(t), writeTriggerName(t), true));
    },
    async clearFailure(t) {
      await runAll(parts.failSql.drop(parts.table(t), triggerName(t)));
      await runAll(parts.failSql.drop(parts.table(t), writeTriggerName(t)));
    },
    async close() {
      for (const storage of storages.splice(0).reverse())
        await storage.close().catch(() => undefined);
      for (const ds of dataSources.splice(0))
        if (ds.isInitialized) await ds.destroy().catch(() => undefined);
      if (rawReady) await rawReady.catch(() => undefined);
      await parts.dropAll(raw?.isInitialized ? raw : undefined);
    },
  };
}

function sqliteParts(options: TestSchemaOptions): DialectParts {
  const dir = mkdtempSync(join(tmpdir(), 'chokaq-test-'));
  const file = join(dir, 'chokaq.db');
  const raise = `SELECT RAISE(ABORT, 'chokaq test: injected failure')`;
  return {
    dialect: 'sqlite',
    options: {
      type: 'sqlite',
      database: file,
      schema: SQLITE_PREFIX,
      ...options.overrides,
    } as StorageOptions,
    schema: SQLITE_PREFIX,
    file,
    table: (t) => `${SQLITE_PREFIX}${SNAKE_NAMES[t]}`,
    column: (snake) => snake,
    param: () => '?',
    failSql: {
      add: (t, trg, updates) => [
        `CREATE TRIGGER ${trg} BEFORE INSERT ON ${t} BEGIN ${raise}; END`,
        ...(updates ? [`CREATE TRIGGER ${trg}_u BEFORE UPDATE ON ${t} BEGIN ${raise}; END`] : []),
      ],
      drop: (_t, trg) => [`DROP TRIGGER IF EXISTS ${trg}`, `DROP TRIGGER IF EXISTS ${trg}_u`],
    },
    newDataSource: () => new DataSource({ type: 'better-sqlite3', database: file }),
    prepareRaw: async (raw) => {
      await raw.query(`PRAGMA busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    },
    async dropAll(raw) {
      await raw?.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresParts(options: TestSchemaOptions): DialectParts {
  const schema = uniqueName('chokaq_t_');
  const quoted = quoteSchema(schema);
  const url = onDatabase(PG_URL, options.database);
  const newDataSource = (poolSize = 4) => new DataSource({ type: 'postgres', url, poolSize });
  return {
    dialect: 'postgres',
    options: {
      type: 'postgres',
      url,
      schema,
      poolSize: 10,
      // CHOKAQ_TEST_PARTITIONING=day|week|month: every PostgreSQL suite on a partitioned Archive
      // and DLQ (`storage.partitioning`), to run the contract against that layout by hand.
      ...(process.env.CHOKAQ_TEST_PARTITIONING
        ? { partitioning: { period: process.env.CHOKAQ_TEST_PARTITIONING } }
        : {}),
      ...options.overrides,
    } as StorageOptions,
    schema,
    file: '',
    table: (t) => `${quoted}.${SNAKE_NAMES[t]}`,
    column: (snake) => snake,
    param: (i) => `$${i}`,
    failSql: {
      add: (t, trg, updates) => [
        `CREATE OR REPLACE FUNCTION ${quoted}.${trg}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'chokaq test: injected failure'; END $$`,
        `CREATE TRIGGER ${trg} BEFORE INSERT${updates ? ' OR UPDATE' : ''} ON ${t} FOR EACH ROW EXECUTE FUNCTION ${quoted}.${trg}()`,
      ],
      drop: (t, trg) => [`DROP TRIGGER IF EXISTS ${trg} ON ${t}`],
    },
    newDataSource,
    async dropAll(raw) {
      const dropper = raw ?? newDataSource();
      if (!dropper.isInitialized) await dropper.initialize();
      await dropper.query(`DROP SCHEMA IF EXISTS ${quoted} CASCADE`).catch(() => undefined);
      await dropper.destroy();
    },
  };
}

function mssqlParts(options: TestSchemaOptions): DialectParts {
  const schema = uniqueName('chokaq_t_');
  const url = MSSQL_URL && onDatabase(MSSQL_URL, options.database);
  const newDataSource = (poolSize?: number) =>
    new DataSource({
      type: 'mssql',
      url,
      ...(poolSize === undefined ? {} : { pool: { max: poolSize } }),
      // Test servers (a container, a dev box) usually have a self-signed certificate.
      options: { encrypt: true, trustServerCertificate: true },
    } as never);
  return {
    dialect: 'mssql',
    options: {
      type: 'mssql',
      url,
      schema,
      options: { trustServerCertificate: true },
      ...options.overrides,
    } as StorageOptions,
    schema,
    file: '',
    table: (t) => qualify(schema, t),
    column: pascalCase,
    param: (i) => `@${i - 1}`,
    failSql: {
      add: (t, trg, updates) => [
        `CREATE TRIGGER [${schema}].[${trg}] ON ${t} AFTER INSERT${updates ? ', UPDATE' : ''} AS BEGIN THROW 50001, 'chokaq test: injected failure', 1; END`,
      ],
      drop: (_t, trg) => [`DROP TRIGGER IF EXISTS [${schema}].[${trg}]`],
    },
    newDataSource,
    async dropAll(raw) {
      const dropper = raw ?? newDataSource();
      if (!dropper.isInitialized) await dropper.initialize();
      await dropMssqlSchema(dropper, schema);
      await dropper.destroy();
    },
  };
}

/**
 * A fresh, empty database on `dialect` (nothing is created until a storage opens it). Synchronous,
 * so a `describe` block may hold one for all its tests.
 */
export function createTestSchema(
  dialect: StorageDialect,
  options: TestSchemaOptions = {},
): TestSchema {
  if (dialect === 'sqlite') return buildSchema(sqliteParts(options));
  return buildSchema(dialect === 'postgres' ? postgresParts(options) : mssqlParts(options));
}

/** A fresh database on `dialect` with a storage open on it (which created the schema). */
export async function openTestDatabase(
  dialect: StorageDialect,
  options: TestSchemaOptions = {},
): Promise<TestDatabase> {
  const schema = createTestSchema(dialect, options);
  try {
    const storage = await schema.openStorage();
    return {
      ...schema,
      storage,
      openAnother: (overrides) => schema.openStorage({ ...overrides, autoCreateSchema: false }),
    };
  } catch (error) {
    await schema.close();
    throw error;
  }
}

/** Whether `dialect` can run here (SQLite always; a server when the global setup found it). */
export function dialectAvailable(dialect: StorageDialect): boolean {
  if (dialect === 'postgres') return pgAvailable();
  return dialect === 'mssql' ? mssqlAvailable() : true;
}

function fixture(name: StorageDialect): DialectFixture {
  return {
    name,
    available: dialectAvailable(name),
    create: (overrides) => openTestDatabase(name, { overrides }),
  };
}

/** Every dialect, in the order the suites run them. */
export const DIALECTS: readonly DialectFixture[] = [
  fixture('sqlite'),
  fixture('postgres'),
  fixture('mssql'),
];

/**
 * `describe.each` over the dialects that can run here. Unavailable ones are skipped; the global
 * setup has already printed one line saying so. `only` narrows the set, for suites whose worker
 * processes or raw SQL are written for some dialects only (say which in the suite).
 */
export function describeEachDialect(
  title: string,
  body: (fixture: DialectFixture) => void,
  { only }: { only?: readonly StorageDialect[] } = {},
): void {
  for (const f of DIALECTS) {
    if (only && !only.includes(f.name)) continue;
    const run = f.available ? describe : describe.skip;
    run(`${title} [${f.name}]`, () => body(f));
  }
}

/**
 * `describe` when the global setup found PostgreSQL, else `describe.skip`. Chosen when called, not
 * when this module loads: worker processes of the fault suites import the fixture outside Jest,
 * where `describe` does not exist.
 */
export function describePostgres(title: string, body: () => void): void {
  (pgAvailable() ? describe : describe.skip)(title, body);
}
