import { PARTITION_LOCK_BUSY_ERROR, SCHEMA_LOCK_BUSY_ERROR } from './mssql.schema';

/**
 * SQL Server error numbers that are worth retrying: the operation had no effect and may succeed
 * on a second attempt (SPEC §3 "Transient errors").
 * - 1205 deadlock victim, 1222 lock request timeout, -2 client timeout (the driver's
 *   `requestTimeout`);
 * - 601 a `NOLOCK` scan lost its position to data movement (a telemetry read; nothing changed);
 * - 3960 snapshot update conflict: only a caller's SNAPSHOT transaction can meet it (ChokaQ's own
 *   batches pin READ COMMITTED), and there the caller retries its whole transaction;
 * - 4060 cannot open database, 4221 login to a readable secondary waits for row versioning;
 * - Azure SQL: 10928 / 10929 resource limits, 40143 / 40197 / 40540 service errors while
 *   processing the request, 40501 service busy, 40613 database unavailable, 49918–49920 not enough
 *   resources / too many operations;
 * - the connection broke under the request (reported with these numbers by some network stacks):
 *   64 network name no longer available, 233 no process on the other end of the pipe, 10053
 *   connection aborted, 10054 connection reset by the peer, 10060 connection timed out;
 * - {@link SCHEMA_LOCK_BUSY_ERROR} (51000), ChokaQ's own: the schema bootstrap's applock stayed busy
 *   past its wait (another process is upgrading the schema); its start retries.
 */
export const MSSQL_TRANSIENT_NUMBERS: ReadonlySet<number> = new Set([
  1205,
  1222,
  -2,
  601,
  SCHEMA_LOCK_BUSY_ERROR,
  3960,
  4060,
  4221,
  10928,
  10929,
  40143,
  40197,
  40501,
  40540,
  40613,
  49918,
  49919,
  49920,
  64,
  233,
  10053,
  10054,
  10060,
]);

/**
 * Driver codes of dropped or timed-out connections (tedious / mssql `ConnectionError`,
 * `RequestError`); `ENOTOPEN` is mssql's "connection not yet open", met while the pool reconnects.
 */
export const MSSQL_TRANSIENT_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ESOCKET',
  'ETIMEOUT',
  'ECONNCLOSED',
  'ENOTOPEN',
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

/**
 * True when a partition change of maintenance gave up on a lock ({@link PARTITION_LOCK_BUSY_ERROR},
 * raised by the batch itself for a busy partitions applock or a lock wait past its `LOCK_TIMEOUT`):
 * left to the next retention pass, never retried at once.
 */
export function isPartitionLockBusy(error: unknown): boolean {
  return mssqlErrorNumbers(error).includes(PARTITION_LOCK_BUSY_ERROR);
}
