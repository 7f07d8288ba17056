import type BetterSqlite3 from 'better-sqlite3';
import { Client } from 'pg';
import { CapturedStatement, describeBindArgs, describePositional } from './capture';

/** Records what one storage sends to its driver while `record` runs; `uninstall` restores the driver. */
export interface Recorder {
  record<T>(operation: () => Promise<T>): Promise<{ result: T; statements: CapturedStatement[] }>;
  uninstall(): void;
}

type AnyFn = (this: unknown, ...args: unknown[]) => unknown;

/** Shared bookkeeping: statements are only kept while an operation is being recorded. */
class Tape {
  private active: CapturedStatement[] | null = null;

  push(statement: () => CapturedStatement): void {
    if (this.active) this.active.push(statement());
  }

  async record<T>(
    operation: () => Promise<T>,
  ): Promise<{ result: T; statements: CapturedStatement[] }> {
    if (this.active) throw new Error('recordings cannot overlap');
    const statements: CapturedStatement[] = [];
    this.active = statements;
    try {
      const result = await operation();
      return { result, statements };
    } finally {
      this.active = null;
    }
  }
}

/**
 * Wraps `pg`'s `Client.prototype.query`: every pooled TypeORM connection is a `pg.Client`, and
 * TypeORM's `PostgresQueryRunner.query` calls `client.query(text, parameters)` (so the transaction
 * control TypeORM sends, `START TRANSACTION` / `COMMIT`, is recorded too). The caller must have
 * checked that the DataSource's driver loaded this very `pg` module (Jest gives each test file its
 * own module registry). The per-run schema name is replaced by `chokaq`, the default schema, in
 * the recorded text (it also names the NOTIFY channels).
 */
export function recordPg(schema: string): Recorder {
  const tape = new Tape();
  const proto = Client.prototype as unknown as { query: AnyFn };
  const original = proto.query;
  const normalise = (text: string): string => text.split(schema).join('chokaq');
  proto.query = function (this: unknown, ...args: unknown[]): unknown {
    tape.push(() => {
      const [first, second] = args;
      const config =
        typeof first === 'string'
          ? { text: first, values: Array.isArray(second) ? (second as unknown[]) : undefined }
          : (first as { text: string; values?: unknown[] });
      return {
        method: 'query',
        sql: normalise(String(config.text)),
        params: describePositional(config.values),
      };
    });
    return original.apply(this, args);
  };
  return {
    record: (operation) => tape.record(operation),
    uninstall: () => {
      proto.query = original;
    },
  };
}

const STATEMENT_METHODS = ['run', 'get', 'all', 'iterate'] as const;

/**
 * Wraps the execution methods of better-sqlite3 statements (`run`, `get`, `all`, `iterate`, read
 * from a statement of `db` itself, so it is the prototype the storage's statements really have),
 * plus `Database.prototype.exec`. Execution, not `prepare`, is what is recorded: the storage keeps
 * a cache of prepared statements, so `prepare` runs once per text, while every BEGIN IMMEDIATE,
 * statement and COMMIT executes each time. Statement prototypes are native and shared by every
 * handle in the process: `uninstall` must run.
 */
export function recordSqlite(db: BetterSqlite3.Database): Recorder {
  const tape = new Tape();
  const statementProto = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<string, AnyFn>;
  const dbProto = Object.getPrototypeOf(db) as Record<string, AnyFn>;
  const originals = new Map<string, AnyFn>();
  for (const method of STATEMENT_METHODS) {
    const original = statementProto[method];
    originals.set(method, original);
    statementProto[method] = function (this: unknown, ...args: unknown[]): unknown {
      tape.push(() => ({
        method,
        sql: (this as BetterSqlite3.Statement).source,
        params: describeBindArgs(args),
      }));
      return original.apply(this, args);
    };
  }
  const originalExec = dbProto.exec;
  dbProto.exec = function (this: unknown, ...args: unknown[]): unknown {
    tape.push(() => ({ method: 'exec', sql: String(args[0]), params: [] }));
    return originalExec.apply(this, args);
  };
  return {
    record: (operation) => tape.record(operation),
    uninstall: () => {
      for (const [method, original] of originals) statementProto[method] = original;
      dbProto.exec = originalExec;
    },
  };
}
