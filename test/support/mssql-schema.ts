import type { DataSource } from 'typeorm';

/**
 * Drops a test's SQL Server schema: its tables first (SQL Server has no `DROP SCHEMA … CASCADE`;
 * dropping a table drops its triggers), then the schema. Best effort: cleanup never hides the
 * test's own failure.
 */
export async function dropMssqlSchema(raw: DataSource, schema: string): Promise<void> {
  const tables = (await raw.query(`SELECT name FROM sys.tables WHERE schema_id = SCHEMA_ID(@0)`, [
    schema,
  ])) as Array<{ name: string }>;
  for (const { name } of tables) {
    await raw.query(`DROP TABLE [${schema}].[${name}]`).catch(() => undefined);
  }
  await raw.query(`DROP SCHEMA IF EXISTS [${schema}]`).catch(() => undefined);
}
