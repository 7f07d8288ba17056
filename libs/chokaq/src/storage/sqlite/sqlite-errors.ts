/**
 * Thrown (and retried) when ChokaQ finds the shared SQLite connection inside a transaction it did not
 * open: the application borrowed the same `DataSource` and holds a `QueryRunner` transaction on its
 * single connection. ChokaQ must neither join that transaction (its writes would commit or roll back
 * with the application's) nor block the event loop waiting for it, so the operation backs off
 * asynchronously, with the mutex released, and tries again.
 */
export class SqliteConnectionInUseError extends Error {
  constructor() {
    super(
      'The SQLite connection is inside a transaction opened by the application; retrying later',
    );
    this.name = 'SqliteConnectionInUseError';
  }
}

/**
 * SQLite errors worth retrying: `SQLITE_BUSY*` (another connection holds the write lock past
 * `busy_timeout`), `SQLITE_LOCKED*` (a conflicting lock on the same connection or shared cache), and
 * {@link SqliteConnectionInUseError}. better-sqlite3 puts the extended code on `code`; TypeORM's
 * `QueryFailedError` copies it, and keeps the original as `driverError`.
 */
export function isSqliteTransient(error: unknown): boolean {
  if (error instanceof SqliteConnectionInUseError) return true;
  const candidates = [error, (error as { driverError?: unknown } | null)?.driverError];
  return candidates.some((e) => {
    const code = (e as { code?: unknown } | null | undefined)?.code;
    return (
      typeof code === 'string' &&
      (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))
    );
  });
}

/**
 * True when `error` is a primary-key or unique violation (`SQLITE_CONSTRAINT_PRIMARYKEY`,
 * `SQLITE_CONSTRAINT_UNIQUE`), on better-sqlite3's error or TypeORM's `QueryFailedError` over it.
 */
export function isDuplicateKeyError(error: unknown): boolean {
  const candidates = [error, (error as { driverError?: unknown } | null)?.driverError];
  return candidates.some((e) => {
    const code = (e as { code?: unknown } | null | undefined)?.code;
    return code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE';
  });
}
