import { ParseArgsConfig, parseArgs } from 'node:util';
import { libraryVersion } from '../common/version';
import { DEFAULT_SCHEMA, DEFAULT_SQLITE_PREFIX } from '../config/storage-defaults';
import type { StorageDialect } from '../interfaces/job.interface';
import { mssqlSchemaDdl } from '../storage/mssql/mssql.schema';
import { postgresSchemaScript } from '../storage/postgres/postgres.schema';
import { quoteSchema } from '../storage/postgres/postgres.sql';
import { sqliteSchemaScript } from '../storage/sqlite/sqlite.schema';
import { SCHEMA_NAME } from '../validation/limits';

/** Where the CLI writes; `process.stdout` / `process.stderr` in the real binary, buffers in tests. */
export interface CliWriter {
  write(text: string): unknown;
}

/** The dialects `chokaq schema` prints DDL for. */
export const SCHEMA_DIALECTS: readonly StorageDialect[] = ['mssql', 'postgres', 'sqlite'];

/** Usage text of the CLI. */
export const CLI_USAGE = [
  'Usage: chokaq schema --dialect <mssql|postgres|sqlite> [--schema NAME]',
  '       chokaq --help | --version',
  '',
  'Prints the complete ChokaQ DDL for DBAs who apply scripts by hand (idempotent on mssql and',
  'postgres; the sqlite script is for a new database, as SQLite cannot add a missing column).',
  '  --dialect NAME  mssql | postgres | sqlite',
  `  --schema NAME   schema name (mssql, postgres; default ${DEFAULT_SCHEMA}) or table prefix (sqlite; default ${DEFAULT_SQLITE_PREFIX})`,
  '  -h, --help      print this text',
  '  -v, --version   print the version of @chokaq/nestjs',
  '',
  'Without a local install: npx @chokaq/nestjs schema --dialect postgres',
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

/** Every option the CLI knows; anything else is a usage error. */
const CLI_OPTIONS = {
  dialect: { type: 'string' },
  schema: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const satisfies ParseArgsConfig['options'];

type ParsedArgs = {
  values: { dialect?: string; schema?: string; help?: boolean; version?: boolean };
  positionals: string[];
};

/**
 * Parses strictly: a misspelt flag (`--schmea`) must stop the command, not be dropped while the
 * DDL for the default schema is printed. The unknown option is found through the parser's tokens,
 * so the message names it whatever wording Node's own error has; the strict pass then reports
 * the rest (a missing value, a value given to a boolean flag).
 */
function parseCliArgs(args: readonly string[]): ParsedArgs | { error: string } {
  const { tokens } = parseArgs({
    args: [...args],
    options: CLI_OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const unknown = tokens.find((t) => t.kind === 'option' && !Object.hasOwn(CLI_OPTIONS, t.name));
  if (unknown?.kind === 'option') return { error: `unknown option '${unknown.rawName}'` };
  try {
    return parseArgs({
      args: [...args],
      options: CLI_OPTIONS,
      strict: true,
      allowPositionals: true,
    });
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * Runs `chokaq <args>` and returns the process exit code: 0 on success, 2 on a usage error (the
 * message and the usage on `err`). Pure apart from the two writers and reading the package
 * version, so it is testable without spawning a process.
 */
export function runCli(args: readonly string[], out: CliWriter, err: CliWriter): number {
  const usageError = (message: string): number => {
    err.write(`chokaq: ${message}\n\n${CLI_USAGE}`);
    return 2;
  };
  const parsed = parseCliArgs(args);
  if ('error' in parsed) return usageError(parsed.error);
  const { values, positionals } = parsed;
  const [command, ...extra] = positionals;
  if (values.help || command === 'help') {
    out.write(CLI_USAGE);
    return 0;
  }
  if (values.version) {
    out.write(`${libraryVersion()}\n`);
    return 0;
  }
  if (command === undefined) {
    err.write(CLI_USAGE);
    return 2;
  }
  if (command !== 'schema') return usageError(`unknown command '${command}'`);
  if (extra.length > 0) return usageError(`unexpected argument '${extra[0]}'`);
  const { dialect, schema } = values;
  if (!dialect || !SCHEMA_DIALECTS.includes(dialect as StorageDialect)) {
    return usageError(`schema: --dialect must be one of ${SCHEMA_DIALECTS.join(', ')}`);
  }
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    err.write(`chokaq schema: --schema must match ${SCHEMA_NAME.source}\n`);
    return 2;
  }
  out.write(schemaDdl(dialect as StorageDialect, schema));
  return 0;
}
