import Database from 'better-sqlite3';
import { Client } from 'pg';
import type { BenchDialect } from './args';

/** One statement a storage call sent, with its parameters. */
export interface CapturedStatement {
  sql: string;
  params: unknown;
}

/** Statements that only manage a transaction or a session: nothing to explain. */
const CONTROL = /^\s*(BEGIN|COMMIT|ROLLBACK|SET|SAVEPOINT|RELEASE)\b/i;

/**
 * Runs `call` once and returns the statements it sent, by wrapping the driver's entry points
 * (`pg`'s `Client.query`; better-sqlite3's `Statement` methods) for the duration of the call.
 * Bench only: the scenario explains the statements of a read that missed its target.
 */
export async function captureStatements(
  dialect: BenchDialect,
  call: () => Promise<unknown>,
): Promise<CapturedStatement[]> {
  const captured: CapturedStatement[] = [];
  const record = (sql: unknown, params: unknown) => {
    if (typeof sql === 'string' && !CONTROL.test(sql)) captured.push({ sql, params });
  };
  if (dialect === 'postgres') {
    type Query = (this: Client, ...args: unknown[]) => unknown;
    const proto = Client.prototype as unknown as { query: Query };
    const original = proto.query;
    proto.query = function (this: Client, ...args: unknown[]) {
      const first = args[0] as string | { text?: string; values?: unknown[] };
      if (typeof first === 'string') record(first, Array.isArray(args[1]) ? args[1] : []);
      else if (first && typeof first === 'object') record(first.text, first.values ?? []);
      return original.apply(this, args);
    };
    try {
      await call();
    } finally {
      proto.query = original;
    }
    return captured;
  }
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<
    string,
    (this: { source: string }, ...args: unknown[]) => unknown
  >;
  probe.close();
  const methods = ['all', 'get', 'run', 'iterate'] as const;
  const originals = methods.map((m) => proto[m]);
  methods.forEach((m, i) => {
    proto[m] = function (this: { source: string }, ...args: unknown[]) {
      record(this.source, args[0] ?? {});
      return originals[i].apply(this, args);
    };
  });
  try {
    await call();
  } finally {
    methods.forEach((m, i) => (proto[m] = originals[i]));
  }
  return captured;
}

/** `EXPLAIN (ANALYZE, BUFFERS)` of each statement, over a connection of its own. */
export async function explainPostgres(
  url: string,
  statements: readonly CapturedStatement[],
): Promise<string[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const plans: string[] = [];
    for (const { sql, params } of statements) {
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, BUFFERS) ${sql}`,
        params as unknown[],
      );
      plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
    }
    return plans;
  } finally {
    await client.end();
  }
}

/** `EXPLAIN QUERY PLAN` of each statement as an indented tree, over a read-only connection. */
export function explainSqlite(file: string, statements: readonly CapturedStatement[]): string[] {
  const db = new Database(file, { readonly: true });
  try {
    return statements.map(({ sql, params }) => {
      const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params as object) as Array<{
        id: number;
        parent: number;
        detail: string;
      }>;
      const depth = new Map<number, number>([[0, -1]]);
      return rows
        .map((r) => {
          const level = (depth.get(r.parent) ?? -1) + 1;
          depth.set(r.id, level);
          return `${'  '.repeat(level)}${r.detail}`;
        })
        .join('\n');
    });
  } finally {
    db.close();
  }
}
