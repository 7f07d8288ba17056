/** SQLSTATEs retried as transient: serialization failure, deadlock, admin/crash shutdown, cannot connect now, connection exceptions (08xxx). */
const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '57P01', '57P02', '57P03']);
/** Node socket errors retried as transient. */
const TRANSIENT_NODE_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
]);
/** Driver messages of a lost connection (pg does not attach a code to them). */
const TRANSIENT_MESSAGE =
  /Connection terminated|connection timeout|Client has encountered a connection error|Connection is closed/i;

/** The message PostgreSQL gives (SQLSTATE 0A000) when a prepared statement's row shape changed. */
const STALE_PLAN_MESSAGE = /cached plan must not change result type/i;

/**
 * True for PostgreSQL errors worth retrying (SPEC §3): 40001, 40P01, 57P01, 57P03, 08xxx and
 * dropped connections, plus a prepared statement made stale by DDL (it is prepared again under a
 * new name). Looks through TypeORM's `QueryFailedError` to the driver error.
 */
export function isTransientPostgresError(error: unknown): boolean {
  for (const { code, message } of errorChain(error)) {
    if (typeof code === 'string') {
      if (TRANSIENT_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
      if (TRANSIENT_NODE_CODES.has(code)) return true;
    }
    if (typeof message === 'string' && TRANSIENT_MESSAGE.test(message)) return true;
  }
  return isStalePlanError(error);
}

/**
 * True when a prepared statement can no longer run because DDL changed the shape of its result
 * (`RETURNING j.*` after a column was added, say). PostgreSQL keeps refusing that statement on
 * that connection until it is prepared again.
 */
export function isStalePlanError(error: unknown): boolean {
  for (const { code, message } of errorChain(error)) {
    if (code === '0A000' && typeof message === 'string' && STALE_PLAN_MESSAGE.test(message)) {
      return true;
    }
  }
  return false;
}

/**
 * True when `error` is a unique or primary-key violation (SQLSTATE 23505), looking through
 * TypeORM's `QueryFailedError` to the driver error.
 */
export function isDuplicateKeyError(error: unknown): boolean {
  for (const { code } of errorChain(error)) if (code === '23505') return true;
  return false;
}

/**
 * True when a lock was not granted within the session's `lock_timeout` (SQLSTATE 55P03,
 * `lock_not_available`), looking through TypeORM's `QueryFailedError` to the driver error.
 */
export function isLockNotAvailableError(error: unknown): boolean {
  for (const { code } of errorChain(error)) if (code === '55P03') return true;
  return false;
}

/**
 * `error` and what it wraps, at most four deep: TypeORM's `QueryFailedError` holds the driver's
 * error as `driverError`, others hold theirs as `cause`.
 */
function* errorChain(error: unknown): Generator<{ code?: unknown; message?: unknown }> {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    yield e as { code?: unknown; message?: unknown };
    const next = e as { driverError?: unknown; cause?: unknown };
    e = next.driverError ?? next.cause;
  }
}
