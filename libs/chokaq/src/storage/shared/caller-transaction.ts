import { ChokaQTransactionError } from '../../errors';
import { queryRunnerDataSource } from './data-source';

/**
 * The caller's transaction (`EnqueueOptions.transaction`), recognised by its shape: what each
 * dialect can run its enqueue statements on. Nothing here imports an ORM: each shape is checked by
 * the methods it must have, and the two that need their library's own query builder (Drizzle)
 * load it only when such a transaction is given, as the application installed it.
 *
 * - `typeorm`: a TypeORM `QueryRunner` (the dialect checks it belongs to its `DataSource`).
 * - `pg`: a `pg` client (`Client`, or a `PoolClient` from `pool.connect()`) with a transaction open
 *   (`BEGIN` sent). Knex's transaction on PostgreSQL resolves to its client.
 * - `sqlite`: a better-sqlite3 `Database` with a transaction open. Knex's transaction on
 *   better-sqlite3 resolves to its database.
 * - `mssql`: a transaction of the `mssql` package (`new sql.Transaction(pool)`, begun).
 * - `kysely`: a Kysely transaction (`db.transaction().execute(trx => …)`): its statements go through
 *   the transaction's own connection, past its plugins, so a result plugin cannot rename the
 *   columns ChokaQ reads.
 * - `drizzle`: a Drizzle transaction (`db.transaction(tx => …)`), run with `tx.execute`.
 * - `prisma`: a Prisma interactive transaction (`prisma.$transaction(async tx => …)`), run with
 *   `tx.$queryRawUnsafe`.
 */
export type CallerTransaction =
  | { kind: 'typeorm'; runner: object }
  | { kind: 'pg'; client: PgClientLike }
  | { kind: 'sqlite'; db: SqliteDatabaseLike }
  | { kind: 'mssql'; transaction: MssqlTransactionLike }
  | { kind: 'kysely'; trx: KyselyTransactionLike }
  | { kind: 'drizzle'; tx: DrizzleTransactionLike }
  | { kind: 'prisma'; tx: PrismaTransactionLike };

/** What ChokaQ uses of a `pg` client. */
export interface PgClientLike {
  query(text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
  /** `I` idle, `T` in a transaction, `E` in a failed transaction, null before the first query. */
  getTransactionStatus(): string | null;
}

/** What ChokaQ uses of a better-sqlite3 `Database`. */
export interface SqliteDatabaseLike {
  prepare(sql: string): {
    all(params: object): unknown[];
    get(params: object): unknown;
    run(params: object): { changes: number };
  };
  readonly inTransaction: boolean;
  readonly open: boolean;
  /** The file it opened (`:memory:` or an empty string for a private database). */
  readonly name: string;
  readonly memory: boolean;
}

/** What ChokaQ uses of an `mssql` transaction. */
export interface MssqlTransactionLike {
  request(): {
    input(name: string, type: unknown, value: unknown): unknown;
    query(sql: string): Promise<{ recordset?: unknown[] }>;
  };
}

/** What ChokaQ uses of a Kysely transaction. */
export interface KyselyTransactionLike {
  readonly isTransaction: boolean;
  getExecutor(): {
    provideConnection<T>(
      consumer: (connection: {
        executeQuery(query: KyselyCompiledQuery): Promise<{ rows: unknown[] }>;
      }) => Promise<T>,
    ): Promise<T>;
  };
}

/** A raw query as Kysely's `CompiledQuery.raw` builds it. */
export interface KyselyCompiledQuery {
  sql: string;
  parameters: readonly unknown[];
  query: { kind: 'RawNode'; sqlFragments: readonly string[]; parameters: readonly unknown[] };
  queryId: { queryId: string };
}

/** What ChokaQ uses of a Drizzle transaction. */
export interface DrizzleTransactionLike {
  execute(query: unknown): Promise<{ rows: unknown[] } | unknown[]>;
}

/** What ChokaQ uses of a Prisma interactive transaction. */
export interface PrismaTransactionLike {
  $queryRawUnsafe(sql: string, ...values: unknown[]): Promise<unknown>;
}

/** Drizzle's entity marker: `static [Symbol.for('drizzle:entityKind')] = 'PgTransaction'`. */
const DRIZZLE_KIND = Symbol.for('drizzle:entityKind');

/**
 * Recognises `transaction` (never null or undefined here), or throws `ChokaQTransactionError`
 * saying what it is not. A library handle that is not a transaction (a Kysely or Drizzle database,
 * a whole `PrismaClient`, a finished Knex transaction) is refused here, and a driver handle outside
 * one by the dialect that runs on it ({@link openPgTransaction}, {@link openSqliteTransaction}):
 * the job would commit on its own, not with the caller's data.
 */
export async function recogniseTransaction(transaction: unknown): Promise<CallerTransaction> {
  if (typeof transaction !== 'object' && typeof transaction !== 'function') {
    throw new ChokaQTransactionError(`${describe(transaction)} is not a transaction`);
  }
  const t = transaction as Record<string | symbol, unknown>;
  if (queryRunnerDataSource(t) !== undefined && 'isTransactionActive' in t) {
    return { kind: 'typeorm', runner: t };
  }
  if (isKnexTransaction(t)) return knexConnection(t);
  if (typeof t.getTransactionStatus === 'function' && typeof t.query === 'function') {
    return { kind: 'pg', client: t as unknown as PgClientLike };
  }
  if (typeof t.prepare === 'function' && typeof t.inTransaction === 'boolean') {
    return { kind: 'sqlite', db: t as unknown as SqliteDatabaseLike };
  }
  if (typeof t.getExecutor === 'function' && typeof t.isTransaction === 'boolean') {
    if (!t.isTransaction) {
      throw new ChokaQTransactionError(
        'the Kysely instance is not a transaction (pass the trx of db.transaction().execute)',
      );
    }
    return { kind: 'kysely', trx: t as unknown as KyselyTransactionLike };
  }
  const drizzleKind = (t.constructor as unknown as Record<symbol, unknown> | undefined)?.[
    DRIZZLE_KIND
  ];
  if (typeof drizzleKind === 'string' && typeof t.execute === 'function') {
    if (!drizzleKind.endsWith('Transaction')) {
      throw new ChokaQTransactionError(
        `the Drizzle ${drizzleKind} is not a transaction (pass the tx of db.transaction)`,
      );
    }
    return { kind: 'drizzle', tx: t as unknown as DrizzleTransactionLike };
  }
  if (typeof t.$queryRawUnsafe === 'function') {
    if (typeof t.$transaction === 'function') {
      throw new ChokaQTransactionError(
        'the PrismaClient is not a transaction (pass the tx of prisma.$transaction(async (tx) => …))',
      );
    }
    return { kind: 'prisma', tx: t as unknown as PrismaTransactionLike };
  }
  if (typeof t.request === 'function' && typeof t.begin === 'function') {
    return { kind: 'mssql', transaction: t as unknown as MssqlTransactionLike };
  }
  if (typeof t.query === 'function' && typeof t.connect === 'function') {
    throw new ChokaQTransactionError(
      'a pg Pool is not a transaction (take a client with pool.connect() and send BEGIN)',
    );
  }
  throw new ChokaQTransactionError(`${describe(transaction)} is not a transaction ChokaQ knows`);
}

/** What a recognised transaction is, for the error of a dialect that cannot run on it. */
export function transactionLabel(caller: CallerTransaction): string {
  switch (caller.kind) {
    case 'typeorm':
      return 'a TypeORM QueryRunner';
    case 'pg':
      return 'a pg client';
    case 'sqlite':
      return 'a better-sqlite3 Database';
    case 'mssql':
      return 'an mssql transaction';
    case 'kysely':
      return 'a Kysely transaction';
    case 'drizzle':
      return 'a Drizzle transaction';
    case 'prisma':
      return 'a Prisma transaction';
  }
}

/** Refuses a transaction this dialect cannot run its statements on. */
export function unsupportedTransaction(
  caller: CallerTransaction,
  dialect: string,
  hint: string,
): ChokaQTransactionError {
  return new ChokaQTransactionError(
    `${transactionLabel(caller)} cannot carry a ${dialect} enqueue; ${hint}`,
  );
}

/** A Knex transaction: the function Knex hands `knex.transaction(async (trx) => …)`. */
function isKnexTransaction(t: Record<string | symbol, unknown>): boolean {
  const client = t.client as { acquireConnection?: unknown } | undefined;
  return t.isTransaction === true && typeof client?.acquireConnection === 'function';
}

/** The driver connection a Knex transaction runs on, recognised in turn. */
async function knexConnection(t: Record<string | symbol, unknown>): Promise<CallerTransaction> {
  if (typeof t.isCompleted === 'function' && (t.isCompleted as () => boolean).call(t)) {
    throw new ChokaQTransactionError('the Knex transaction has already ended');
  }
  // Knex's transaction client hands out the one connection its transaction runs on.
  const connection = await (
    t.client as { acquireConnection(): Promise<unknown> }
  ).acquireConnection();
  const c = connection as Record<string, unknown>;
  if (typeof c?.getTransactionStatus === 'function') {
    return { kind: 'pg', client: c as unknown as PgClientLike };
  }
  if (typeof c?.prepare === 'function' && typeof c.inTransaction === 'boolean') {
    return { kind: 'sqlite', db: c as unknown as SqliteDatabaseLike };
  }
  throw new ChokaQTransactionError(
    'the Knex transaction runs on a driver ChokaQ cannot use (Knex with pg or better-sqlite3 only)',
  );
}

/** `client`, when it is in an open transaction (`BEGIN` sent, no statement of it failed). */
export function openPgTransaction(client: PgClientLike): PgClientLike {
  const status = client.getTransactionStatus();
  if (status === 'T') return client;
  throw new ChokaQTransactionError(
    status === 'E'
      ? 'the pg client is in a failed transaction (roll it back first)'
      : 'the pg client has no open transaction (send BEGIN first)',
  );
}

/** `db`, when it is open and in a transaction. */
export function openSqliteTransaction(db: SqliteDatabaseLike): SqliteDatabaseLike {
  if (!db.open) throw new ChokaQTransactionError('the better-sqlite3 Database is closed');
  if (!db.inTransaction) {
    throw new ChokaQTransactionError(
      'the better-sqlite3 Database has no open transaction (run BEGIN, or enqueue inside db.transaction)',
    );
  }
  return db;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object' || typeof value === 'function') {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== 'Object' ? `a ${name}` : `an ${typeof value}`;
  }
  return `a ${typeof value}`;
}

/** `sql` with `parameters` as Kysely's `CompiledQuery.raw(sql, parameters)` builds it. */
export function kyselyRawQuery(sql: string, parameters: readonly unknown[]): KyselyCompiledQuery {
  return {
    sql,
    parameters,
    query: { kind: 'RawNode', sqlFragments: [sql], parameters: [] },
    queryId: { queryId: 'chokaq' },
  };
}

/** The part of `drizzle-orm` a statement is built with. */
interface DrizzleSqlTag {
  raw(text: string): unknown;
  param(value: unknown): unknown;
  join(chunks: unknown[]): unknown;
}

/**
 * Builds Drizzle queries from ChokaQ's statement texts: `placeholder` (global, one capture group:
 * the 1-based parameter number) marks where each value goes, and Drizzle numbers its own
 * parameters again. `drizzle-orm` is loaded at the first call, as the application installed it.
 */
export function drizzleQueryBuilder(
  placeholder: RegExp,
  load: () => unknown = () =>
    // Required lazily: only an application that passes a Drizzle transaction has drizzle-orm.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('drizzle-orm'),
): (text: string, params: readonly unknown[]) => unknown {
  const { sql } = load() as { sql: DrizzleSqlTag };
  return (text, params) => {
    const chunks: unknown[] = [];
    let last = 0;
    for (const match of text.matchAll(placeholder)) {
      chunks.push(sql.raw(text.slice(last, match.index)));
      chunks.push(sql.param(params[Number(match[1]) - 1]));
      last = match.index + match[0].length;
    }
    chunks.push(sql.raw(text.slice(last)));
    return sql.join(chunks);
  };
}
