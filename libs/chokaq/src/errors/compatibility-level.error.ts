import { ChokaQUnsupportedServerError } from './unsupported-server.error';

/**
 * The SQL Server / Azure SQL database runs at a compatibility level below the one ChokaQ's T-SQL
 * needs (130, SQL Server 2016: `OPENJSON`, which the claim and every move use). Startup fails
 * instead of letting every claim fail at run time (the policy of {@link ChokaQUnsupportedServerError}
 * on every server dialect; `found` and `needed` are levels here). Raise the level (a database-wide setting, so
 * check the application's own queries with it first), or give ChokaQ a database of its own.
 *
 * @publicApi
 */
export class ChokaQCompatibilityLevelError extends ChokaQUnsupportedServerError {
  constructor(
    /** The database that was checked (`DB_NAME()`). */
    readonly database: string,
    /** Its `compatibility_level` in `sys.databases`. */
    override readonly found: number,
    /** The lowest level ChokaQ runs on. */
    readonly required: number,
  ) {
    super(
      'mssql',
      found,
      required,
      `SQL Server database "${database}" has compatibility level ${found}; ChokaQ needs ${required} ` +
        `or higher (OPENJSON). Raise it with ALTER DATABASE [${database.replace(/]/g, ']]')}] ` +
        `SET COMPATIBILITY_LEVEL = ${required}; (a database-wide setting: check your own queries with ` +
        `it first), or use a database of its own for ChokaQ.`,
    );
  }
}
