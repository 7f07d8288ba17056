import { DEFAULT_SCHEMA, DEFAULT_SQLITE_PREFIX } from '../../config/storage-defaults';
import type { StorageDialect } from '../../interfaces/job.interface';
import { mssqlSchemaDdl } from '../../storage/mssql/mssql.schema';
import { postgresSchemaScript } from '../../storage/postgres/postgres.schema';
import { quoteSchema } from '../../storage/postgres/sql';
import { sqliteSchemaScript } from '../../storage/sqlite/sqlite.schema';
import { SCHEMA_NAME } from '../../validation/limits';
import { defineCommand } from '../args/command-definition';
import { readChoice } from '../args/option-values';
import { stringValue } from '../args/shared-options';
import { CliUsageError } from '../errors/cli-usage.error';
import { text } from '../format/view';

/** The dialects `chokaq schema` prints DDL for. */
export const SCHEMA_DIALECTS: readonly StorageDialect[] = ['mssql', 'postgres', 'sqlite'];

/** The DDL of one dialect, exactly what `ensureSchema()` applies to a new database. */
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

/**
 * `chokaq schema --dialect D [--schema NAME]`: the DDL for DBAs who apply scripts by hand. It
 * needs no database, and loads no TypeORM and no driver (the schema files are plain text).
 */
export const schemaCommand = defineCommand({
  name: 'schema',
  summary: 'Print the complete DDL of a dialect, for DBAs who apply scripts by hand',
  synopsis: '--dialect <mssql|postgres|sqlite>',
  details: [
    'Idempotent on mssql and postgres; the sqlite script is for a new database (SQLite cannot add',
    "a missing column; 'chokaq migrate' upgrades an existing one). Needs no database.",
  ],
  options: {
    dialect: { type: 'string', value: 'NAME', description: 'mssql | postgres | sqlite' },
    schema: {
      type: 'string',
      value: 'NAME',
      description: `schema name (mssql, postgres; default ${DEFAULT_SCHEMA}) or table prefix (sqlite; default ${DEFAULT_SQLITE_PREFIX})`,
    },
  },
  positionals: { min: 0, max: 0 },
  database: 'none',
  parse(line) {
    const dialect = stringValue(line, 'dialect');
    if (dialect === undefined) {
      throw new CliUsageError(`--dialect is required: ${SCHEMA_DIALECTS.join(', ')}`, 'schema');
    }
    const schema = stringValue(line, 'schema');
    if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
      throw new CliUsageError(
        `--schema must match ${SCHEMA_NAME.source} (got '${schema}')`,
        'schema',
      );
    }
    return { dialect: readChoice('--dialect', dialect, SCHEMA_DIALECTS), schema };
  },
  run({ dialect, schema }) {
    const ddl = schemaDdl(dialect, schema);
    return Promise.resolve({ data: ddl, view: [text(ddl.replace(/\n$/, ''))] });
  },
});
