import { StorageDialect } from '../storage/job-storage';
import { mssqlSchemaDdl } from '../storage/mssql/mssql.schema';
import { quoteSchema } from '../storage/postgres/postgres.sql';
import { postgresSchemaScript } from '../storage/postgres/postgres.schema';
import { sqliteSchemaScript } from '../storage/sqlite/sqlite.schema';

/** Where the CLI writes; `process.stdout` / `process.stderr` in the real binary, buffers in tests. */
export interface CliWriter {
  write(text: string): unknown;
}

/** The dialects `chokaq schema` prints DDL for. */
export const SCHEMA_DIALECTS: readonly StorageDialect[] = ['mssql', 'postgres', 'sqlite'];

/**
 * The defaults of `createJobStorage`, repeated here so the CLI does not load TypeORM and every
 * driver just to print text (a spec pins them equal).
 */
export const DEFAULT_SCHEMA = 'chokaq';
/** Default SQLite table prefix (see {@link DEFAULT_SCHEMA}). */
export const DEFAULT_SQLITE_PREFIX = 'chokaq_';

/** Same rule as `createJobStorage`: a plain identifier, inlined into DDL. */
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Usage text of the CLI. */
export const CLI_USAGE = [
  'Usage: chokaq schema --dialect <mssql|postgres|sqlite> [--schema NAME]',
  '',
  'Prints the complete, idempotent ChokaQ DDL for DBAs who apply scripts by hand.',
  '  --dialect  mssql | postgres | sqlite',
  `  --schema   schema name (mssql, postgres; default ${DEFAULT_SCHEMA}) or table prefix (sqlite; default ${DEFAULT_SQLITE_PREFIX})`,
  '',
].join('\n');

/** The DDL of one dialect, exactly what `ensureSchema()` applies. */
export function schemaDdl(dialect: StorageDialect, schema?: string): string {
  switch (dialect) {
    case 'mssql':
      return mssqlSchemaDdl(schema ?? DEFAULT_SCHEMA);
    case 'postgres': {
      const name = schema ?? DEFAULT_SCHEMA;
      return `${postgresSchemaScript(quoteSchema(name), name)}\n`;
    }
    case 'sqlite':
      return sqliteSchemaScript(schema ?? DEFAULT_SQLITE_PREFIX);
  }
}

function option(args: readonly string[], name: string): string | undefined {
  const i = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i < 0) return undefined;
  const arg = args[i];
  return arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : args[i + 1];
}

/**
 * Runs `chokaq <args>` and returns the process exit code: 0 on success, 2 on a usage error.
 * Pure apart from the two writers, so it is testable without spawning a process.
 */
export function runCli(args: readonly string[], out: CliWriter, err: CliWriter): number {
  const [command, ...rest] = args;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    out.write(CLI_USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command !== 'schema') {
    err.write(`chokaq: unknown command '${command}'\n\n${CLI_USAGE}`);
    return 2;
  }
  const dialect = option(rest, '--dialect');
  if (!dialect || !SCHEMA_DIALECTS.includes(dialect as StorageDialect)) {
    err.write(
      `chokaq schema: --dialect must be one of ${SCHEMA_DIALECTS.join(', ')}\n\n${CLI_USAGE}`,
    );
    return 2;
  }
  const schema = option(rest, '--schema');
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    err.write(`chokaq schema: --schema must match ${SCHEMA_NAME.source}\n`);
    return 2;
  }
  out.write(schemaDdl(dialect as StorageDialect, schema));
  return 0;
}
