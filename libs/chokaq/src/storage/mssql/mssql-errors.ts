/**
 * SQL Server error numbers that are worth retrying: the operation had no effect and may succeed
 * on a second attempt (SPEC §3 "Transient errors").
 * - 1205 deadlock victim, 1222 lock request timeout, -2 client timeout;
 * - 4060 cannot open database, 40197 / 40501 / 40613 Azure SQL service busy / reconfiguring /
 *   database unavailable, 49918–49920 Azure SQL not enough resources / too many operations.
 */
export const MSSQL_TRANSIENT_NUMBERS: ReadonlySet<number> = new Set([
  1205, 1222, -2, 4060, 40197, 40501, 40613, 49918, 49919, 49920,
]);

/** Driver codes of dropped or timed-out connections (tedious / mssql `ConnectionError`, `RequestError`). */
export const MSSQL_TRANSIENT_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ESOCKET',
  'ETIMEOUT',
  'ECONNCLOSED',
]);

/** Unique-key violations: 2601 unique index, 2627 primary key / unique constraint. */
export const MSSQL_DUPLICATE_KEY_NUMBERS: ReadonlySet<number> = new Set([2601, 2627]);

/**
 * The errors in the chain TypeORM and mssql build: `QueryFailedError.driverError` is an mssql
 * `RequestError` whose `originalError` is tedious's, whose `cause` may be a socket error; a
 * batch can carry `precedingErrors`.
 */
function chain(error: unknown): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const queue: unknown[] = [error];
  while (queue.length > 0 && out.length < 16) {
    const e = queue.shift();
    if (e === null || typeof e !== 'object' || out.includes(e as Record<string, unknown>)) continue;
    const r = e as Record<string, unknown>;
    out.push(r);
    queue.push(r.driverError, r.originalError, r.cause);
    if (Array.isArray(r.precedingErrors)) queue.push(...r.precedingErrors);
  }
  return out;
}

/** The SQL Server error numbers found anywhere in an error's chain. */
export function mssqlErrorNumbers(error: unknown): number[] {
  const numbers: number[] = [];
  for (const e of chain(error)) {
    if (typeof e.number === 'number') numbers.push(e.number);
    const info = e.info as Record<string, unknown> | undefined;
    if (info && typeof info.number === 'number') numbers.push(info.number);
  }
  return numbers;
}

/** True when the error is a deadlock, lock timeout, Azure throttling or a dropped connection. */
export function isTransientMssqlError(error: unknown): boolean {
  if (mssqlErrorNumbers(error).some((n) => MSSQL_TRANSIENT_NUMBERS.has(n))) return true;
  return chain(error).some((e) => typeof e.code === 'string' && MSSQL_TRANSIENT_CODES.has(e.code));
}

/** True when the error is a duplicate key (2601 / 2627). */
export function isDuplicateKeyError(error: unknown): boolean {
  return mssqlErrorNumbers(error).some((n) => MSSQL_DUPLICATE_KEY_NUMBERS.has(n));
}
