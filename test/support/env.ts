import { join } from 'node:path';

/**
 * Where the test suites find their databases. PostgreSQL is a real server (CHOKAQ_PG_URL, default
 * the local trust-auth server); SQL Server only when CHOKAQ_MSSQL_URL is set.
 */
export const PG_URL = process.env.CHOKAQ_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const MSSQL_URL = process.env.CHOKAQ_MSSQL_URL;

/** Set by the global setup after probing the server once. */
export function pgAvailable(): boolean {
  return process.env.CHOKAQ_PG_AVAILABLE === '1';
}

export function mssqlAvailable(): boolean {
  return !!MSSQL_URL;
}

/**
 * The TypeScript loader of the processes tests start (`-r` with this path): SWC with a compile
 * cache shared by every process of the run (test/support/register.js).
 */
export const TS_LOADER = join(__dirname, 'register.js');
