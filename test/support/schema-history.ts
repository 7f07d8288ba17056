import {
  POSTGRES_MIGRATIONS,
  bootstrapStatements,
} from '../../libs/chokaq/src/storage/postgres/postgres.schema';
import { quoteSchema } from '../../libs/chokaq/src/storage/postgres/sql';
import {
  SQLITE_MIGRATIONS,
  schemaMigrationsDdl,
} from '../../libs/chokaq/src/storage/sqlite/sqlite.schema';
import type { TestSchema } from './test-database';

/** What {@link createSchemaBefore} adds to the history of a release below `before`. */
export interface SchemaHistoryOptions {
  /**
   * Versions from `before` on whose statements run too, in version order, as a later release's DDL
   * applied without its ledger row: `ensureSchema` then applies them again (each may run twice).
   */
  alsoApply?: (version: number) => boolean;
  /** Which of the `alsoApply` versions the ledger records all the same. */
  alsoRecord?: (version: number) => boolean;
}

/**
 * Gives `db` the schema that a release whose newest version is below `before` left: the ledger,
 * then every earlier version applied and recorded, as that release's `ensureSchema` did (not the
 * current schema with ledger rows deleted: a migration need not be able to run twice), and what
 * `options` adds. Returns the identifier the migrations take: the quoted schema (PostgreSQL) or
 * the table prefix (SQLite).
 */
export async function createSchemaBefore(
  db: TestSchema,
  before: number,
  { alsoApply = () => false, alsoRecord = () => false }: SchemaHistoryOptions = {},
): Promise<string> {
  if (db.dialect !== 'sqlite' && db.dialect !== 'postgres') {
    throw new Error(`createSchemaBefore: no migration history for ${db.dialect}`);
  }
  const all = db.dialect === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
  const s = db.dialect === 'sqlite' ? db.schema : quoteSchema(db.schema);
  if (db.dialect === 'sqlite') await db.sql(schemaMigrationsDdl(s));
  else for (const statement of bootstrapStatements(s)) await db.sql(statement);
  for (const migration of all.filter((m) => m.version < before || alsoApply(m.version))) {
    for (const statement of migration.statements(s)) await db.sql(statement);
    if (migration.version >= before && !alsoRecord(migration.version)) continue;
    await db.query(
      `INSERT INTO ${db.table('migrations')} (version, description, applied_at_utc) VALUES (?, ?, ?)`,
      [migration.version, migration.description, db.dialect === 'sqlite' ? Date.now() : new Date()],
    );
  }
  return s;
}
