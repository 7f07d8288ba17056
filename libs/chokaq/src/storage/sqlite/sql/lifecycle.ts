/** The schema ledger, the database clock and the change counter `subscribe` polls. */
import { SQLITE_NOW_MS, SqliteTables } from './fragments';

/** The schema ledger, the database clock and the change counter `subscribe` polls. */
export function lifecycleStatements(t: SqliteTables) {
  const { migrations } = t;
  return {
    /** ensureSchema: the versions the ledger records. */
    selectAppliedVersions: `SELECT version FROM ${migrations}`,

    /** schemaStatus: whether the ledger exists yet (@name: its table name), read without creating it. */
    selectLedgerExists: `SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = @name`,

    /** ensureSchema: records one applied version. */
    recordMigration: `INSERT INTO ${migrations} (version, description, applied_at_utc)
      VALUES (@version, @description, ${SQLITE_NOW_MS}) ON CONFLICT (version) DO NOTHING`,

    /** The database clock (`now`). */
    now: `SELECT ${SQLITE_NOW_MS} AS now_ms`,

    /**
     * subscribe: changes whenever another connection commits to the file (cross-process wake-ups).
     */
    subscribe: 'PRAGMA data_version',
  };
}
