import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** The database every bench run lives in, so nothing collides with tests in database `test`. */
export const BENCH_DATABASE = 'chokaq_bench';

/** `url` with its database replaced by `database`. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function withClient<T>(url: string, action: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    return await action(client);
  } finally {
    await client.end();
  }
}

/** Creates `chokaq_bench` if missing; returns its URL. */
export async function ensureBenchDatabase(serverUrl: string): Promise<string> {
  await withClient(serverUrl, async (client) => {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [
      BENCH_DATABASE,
    ]);
    if (found.rowCount === 0) {
      // Two bench processes may race here; the loser's "already exists" is fine.
      await client.query(`CREATE DATABASE ${BENCH_DATABASE}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04' && error.code !== '23505') throw error;
      });
    }
  });
  return withDatabase(serverUrl, BENCH_DATABASE);
}

/** A schema name unique to this process and run: `bench_<tag>_<pid>_<random>`. */
export function benchSchemaName(tag: string): string {
  return `bench_${tag}_${process.pid}_${randomBytes(3).toString('hex')}`;
}

/** Drops a run's schema (and everything in it). */
export async function dropSchema(url: string, schema: string): Promise<void> {
  if (!/^bench_[a-z0-9_]+$/.test(schema)) throw new Error(`refusing to drop schema '${schema}'`);
  await withClient(url, (client) => client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
}

/**
 * Drops schemas left by bench processes that no longer run (a SIGKILLed bench cannot clean up).
 * Only `bench_*` schemas in the bench database, and only those whose pid is dead.
 */
export async function sweepStaleSchemas(url: string): Promise<number> {
  const rows = await withClient(url, (client) =>
    client.query<{ nspname: string }>(
      `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'bench\\_%'`,
    ),
  );
  let dropped = 0;
  for (const { nspname } of rows.rows) {
    const pid = Number(/_(\d+)_[0-9a-f]+$/.exec(nspname)?.[1]);
    if (Number.isInteger(pid) && pid !== process.pid && !isAlive(pid)) {
      await dropSchema(url, nspname);
      dropped++;
    }
  }
  return dropped;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** One pooled-less query on its own connection (counts taken by the parent). */
export async function queryCount(
  client: Client,
  sql: string,
  params: unknown[] = [],
): Promise<number> {
  const result = await client.query<{ n: string }>(sql, params);
  return Number(result.rows[0].n);
}

/** The pids of the backends whose connections carry `applicationName` (from `pg_stat_activity`). */
export async function backendPids(url: string, applicationName: string): Promise<number[]> {
  const rows = await withClient(url, (client) =>
    client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [
      applicationName,
    ]),
  );
  return rows.rows.map((row) => row.pid);
}
