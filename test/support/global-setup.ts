import { Client } from 'pg';
import { MSSQL_URL, PG_URL } from './env';

/**
 * Probes PostgreSQL once for the whole run. With CHOKAQ_REQUIRE_PG=1 (CI) an unreachable server
 * fails the run; otherwise the PostgreSQL suites are skipped and one line says so.
 */
export default async function globalSetup(): Promise<void> {
  const client = new Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    process.env.CHOKAQ_PG_AVAILABLE = '1';
  } catch (error) {
    if (process.env.CHOKAQ_REQUIRE_PG === '1') {
      throw new Error(
        `CHOKAQ_REQUIRE_PG=1 but PostgreSQL at ${PG_URL} is unreachable: ${String(error)}`,
      );
    }
    process.env.CHOKAQ_PG_AVAILABLE = '0';
    console.log(
      `\nPostgreSQL suites SKIPPED: no server at ${PG_URL} (set CHOKAQ_PG_URL, or CHOKAQ_REQUIRE_PG=1 to fail instead).`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
  if (!MSSQL_URL) {
    console.log(
      'SQL Server live suites SKIPPED: CHOKAQ_MSSQL_URL is not set (the T-SQL grammar and golden tests still run).',
    );
  }
}
