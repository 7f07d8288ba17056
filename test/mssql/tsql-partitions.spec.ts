import {
  MSSQL_TABLES,
  PARTITION_COLUMNS,
  PARTITION_LOCK_BUSY_ERROR,
  PARTITION_LOCK_WAIT_MS,
  SCHEMA_LOCK_WAIT_MS,
  mssqlSchemaDdl,
  partitionFunctionName,
  partitionSchemeName,
  type MssqlPartitionedTable,
} from '../../libs/chokaq/src/storage/mssql/mssql.schema';
import * as SQL from '../../libs/chokaq/src/storage/mssql/sql';
import { CatalogueEntry, PARTITION_FROM, PARTITION_TO, catalogue } from './support/statements';

/**
 * A partitioned Archive and DLQ (`storage.partitioning`) in T-SQL: the order of each change's
 * steps, its locks, and that its partition DDL (dynamic SQL, which the grammar test cannot parse)
 * names the table's own function and scheme. The texts are pinned whole by the golden files; this
 * spells out why each part is where it is.
 */
const TABLES: readonly MssqlPartitionedTable[] = ['archive', 'dlq'];

/** Each needle's position in `sql`: all found, in this order. */
function inOrder(sql: string, needles: readonly string[]): boolean {
  let from = 0;
  for (const needle of needles) {
    const at = sql.indexOf(needle, from);
    if (at < 0) return false;
    from = at + needle.length;
  }
  return true;
}

describe('SQL Server partitioned Archive and DLQ: the statements', () => {
  const entries = catalogue();
  const one = (operation: string, variant: string): CatalogueEntry =>
    entries.find((e) => e.operation === operation && e.name === `${operation} [${variant}]`)!;

  it('names one partition function and scheme per table and per ChokaQ schema (they are database-scoped)', () => {
    const names = ['chokaq', 'tenant_42'].flatMap((schema) =>
      TABLES.flatMap((table) => [
        partitionFunctionName(schema, table),
        partitionSchemeName(schema, table),
      ]),
    );
    expect(new Set(names).size).toBe(names.length);
    expect(partitionFunctionName('chokaq', 'archive')).toBe('PF_chokaq_JobsArchive');
    expect(partitionSchemeName('chokaq', 'dlq')).toBe('PS_chokaq_JobsDLQ');
    // The longest schema name validation lets through keeps the name an identifier (128).
    expect(partitionFunctionName('s'.repeat(63), 'archive').length).toBeLessThanOrEqual(128);
  });

  describe.each(TABLES)('%s', (table) => {
    const name = `[chokaq].[${MSSQL_TABLES[table]}]`;
    const column = PARTITION_COLUMNS[table];
    const pf = partitionFunctionName('chokaq', table);
    const ps = partitionSchemeName('chokaq', table);
    const onScheme = `ON [${ps}] (${column});`;

    it('the conversion: under the schema applock, a function and scheme of its own, then each index rebuilt once on the scheme, the key holding the time column', () => {
      const sql = one('convertToPartitioned', table).statement.sql;
      expect(
        inOrder(sql, [
          "sp_getapplock @Resource = N'chokaq:schema:chokaq'",
          `SET LOCK_TIMEOUT ${SCHEMA_LOCK_WAIT_MS};`,
          `IF NOT EXISTS (SELECT 1 FROM sys.indexes AS c INNER JOIN sys.partition_schemes AS ps ON ps.data_space_id = c.data_space_id WHERE c.object_id = OBJECT_ID(N'${name}') AND c.index_id IN (0, 1) AND ps.name = N'${ps}')`,
          `CREATE PARTITION FUNCTION [${pf}] (datetime2(3)) AS RANGE RIGHT FOR VALUES (@b);', N'@b datetime2(3)', @b = @b;`,
          `CREATE PARTITION SCHEME [${ps}] AS PARTITION [${pf}] ALL TO ([PRIMARY]);`,
          `ALTER PARTITION SCHEME [${ps}] NEXT USED [PRIMARY];`,
          `ALTER PARTITION FUNCTION [${pf}]() SPLIT RANGE (@b);`,
          `DROP INDEX IF EXISTS [IX_${MSSQL_TABLES[table]}_`,
          `ALTER TABLE ${name} DROP CONSTRAINT [PK_${MSSQL_TABLES[table]}];`,
          `ALTER TABLE ${name} ADD CONSTRAINT [PK_${MSSQL_TABLES[table]}] PRIMARY KEY CLUSTERED (Id, ${column}) WITH (DATA_COMPRESSION = PAGE) ${onScheme}`,
          'CREATE NONCLUSTERED INDEX',
          'COMMIT;',
          'SELECT @Converted AS Converted, @KeptRows AS KeptRows;',
        ]),
      ).toBe(true);
      // Every index is dropped before the key and built after it (never rebuilt twice), and the
      // split is unguarded: no table is on the function yet.
      const lastDrop = sql.lastIndexOf('DROP INDEX IF EXISTS');
      expect(lastDrop).toBeLessThan(sql.indexOf('DROP CONSTRAINT'));
      expect(sql).not.toContain(`x.${column} >= @b`);
      // The boundaries come from the one parameter, never from the text.
      expect(sql).not.toMatch(/'\d{4}-\d{2}-\d{2}/);
      expect(sql).toContain('OPENJSON(@0)');
    });

    it('the conversion rebuilds exactly the nonclustered indexes the schema defines for the table, each aligned', () => {
      const sql = one('convertToPartitioned', table).statement.sql;
      const defined = [
        ...mssqlSchemaDdl('chokaq').matchAll(
          new RegExp(
            `CREATE NONCLUSTERED INDEX \\[(\\w+)\\] ON \\[chokaq\\]\\.\\[${MSSQL_TABLES[table]}\\] [^;]*;`,
            'g',
          ),
        ),
      ].map((m) => ({ name: m[1], statement: m[0] }));
      expect(defined.length).toBeGreaterThanOrEqual(4);
      const rebuilt = [...sql.matchAll(/EXEC\(N'(CREATE NONCLUSTERED INDEX \[(\w+)\][^;]*;)'\);/g)];
      expect(rebuilt.map((m) => m[2]).sort()).toEqual(defined.map((d) => d.name).sort());
      for (const { name: index, statement } of defined) {
        expect(sql).toContain(`DROP INDEX IF EXISTS [${index}] ON ${name};`);
        // The schema's definition, placed on the scheme.
        expect(sql).toContain(`EXEC(N'${statement.replace(/;$/, ` ${onScheme}`)}');`);
      }
    });

    it('the boundaries ahead: under the partitions applock and a short lock wait, each split only where no row is at or after it, only on a table on its scheme', () => {
      const sql = one('makePartitionsAhead', table).statement.sql;
      expect(
        inOrder(sql, [
          'BEGIN TRAN;',
          'BEGIN TRY',
          `sp_getapplock @Resource = N'chokaq:partitions:chokaq', @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = ${PARTITION_LOCK_WAIT_MS};`,
          `THROW ${PARTITION_LOCK_BUSY_ERROR},`,
          `SET LOCK_TIMEOUT ${PARTITION_LOCK_WAIT_MS};`,
          `AND ps.name = N'${ps}')`,
          `n.Boundary > (SELECT MAX(CAST(v.value AS datetime2(3))) FROM sys.partition_range_values AS v INNER JOIN sys.partition_functions AS f ON f.function_id = v.function_id WHERE f.name = N'${pf}')`,
          `IF NOT EXISTS (SELECT 1 FROM ${name} AS x WHERE x.${column} >= @b)`,
          `ALTER PARTITION SCHEME [${ps}] NEXT USED [PRIMARY];`,
          `EXEC sys.sp_executesql N'ALTER PARTITION FUNCTION [${pf}]() SPLIT RANGE (@b);', N'@b datetime2(3)', @b = @b;`,
          'COMMIT;',
          'END TRY',
        ]),
      ).toBe(true);
    });

    it('the removal of a partition: re-read under the lock, its rows settled with the row-by-row fragments, then TRUNCATE of that partition and MERGE of its lower boundary, one transaction', () => {
      const sql = one('dropPartition', table).statement.sql;
      const rowWise = one('applyRetention', table).statement.sql;
      const attempts =
        'DELETE x FROM [chokaq].[JobAttempts] AS x INNER JOIN @Gone AS g ON g.Id = x.JobId;';
      const edges = rowWise.slice(
        rowWise.indexOf('IF EXISTS (SELECT 1 FROM @Gone AS g'),
        rowWise.indexOf('END;', rowWise.indexOf('IF EXISTS (SELECT 1 FROM @Gone AS g')) + 4,
      );
      expect(edges).toContain('[JobDependencies]');
      const read =
        table === 'dlq' ? `FROM ${name} AS x WITH (TABLOCK, HOLDLOCK)\n` : `FROM ${name} AS x\n`;
      expect(
        inOrder(sql, [
          'BEGIN TRAN;',
          'BEGIN TRY',
          "sp_getapplock @Resource = N'chokaq:partitions:chokaq'",
          `SET LOCK_TIMEOUT ${PARTITION_LOCK_WAIT_MS};`,
          'lo.boundary_id = @partition - 1',
          'hi.boundary_id = @partition',
          `WHERE pf.name = N'${pf}' AND CAST(lo.value AS datetime2(3)) = @from AND CAST(hi.value AS datetime2(3)) = @to AND @to <= @cutoff;`,
          'IF @found = 1',
          'INSERT INTO @Gone (Id, HasDependents, WaitingOn)',
          read,
          `WHERE x.${column} >= @from AND x.${column} < @to;`,
          attempts,
          edges,
          `SET @truncate = N'TRUNCATE TABLE ${name} WITH (PARTITIONS (' + CAST(@partition AS nvarchar(10)) + N'));';`,
          'EXEC sys.sp_executesql @truncate;',
          `EXEC sys.sp_executesql N'ALTER PARTITION FUNCTION [${pf}]() MERGE RANGE (@b);', N'@b datetime2(3)', @b = @from;`,
          'COMMIT;',
          'END TRY',
          'SELECT @found AS Removed, COUNT_BIG(*) AS Affected FROM @Gone;',
        ]),
      ).toBe(true);
      expect(rowWise).toContain(attempts);
      // The Archive's expired rows never change: no lock of the whole table while it is settled.
      if (table === 'archive') expect(sql).not.toMatch(/TABLOCK/);
      expect(one('dropPartition', table).statement.params.map((p) => p.value)).toEqual([
        2,
        PARTITION_FROM.toISOString().slice(0, 23),
        PARTITION_TO.toISOString().slice(0, 23),
        86_400_000,
      ]);
    });

    it('row by row, a partitioned table deletes only outside the periods’ partitions: the plain statement with one range predicate more', () => {
      const plain = one('applyRetention', table).statement.sql;
      const partitioned = one('applyRetention', `${table} partitioned`).statement.sql;
      expect(partitioned).toBe(
        plain.replace(
          `WHERE x.${column} < @cutoff\n`,
          `WHERE x.${column} < @cutoff AND (x.${column} < CONVERT(datetime2(3), @2, 126) OR x.${column} >= CONVERT(datetime2(3), @3, 126))\n`,
        ),
      );
      expect(partitioned).not.toBe(plain);
    });
  });

  it('every change ends a lock wait past its timeout (1222) as the non-transient 51001, rolled back, and raises any other error as it was', () => {
    const changes = entries.filter((e) =>
      ['makePartitionsAhead', 'dropPartition'].includes(e.operation),
    );
    expect(changes).toHaveLength(4);
    const handler = [
      'BEGIN CATCH',
      '  IF XACT_STATE() <> 0 ROLLBACK;',
      '  IF ERROR_NUMBER() = 1222',
      `    THROW ${PARTITION_LOCK_BUSY_ERROR}, 'ChokaQ: a partition change waited ${PARTITION_LOCK_WAIT_MS} ms for a table lock; the next maintenance pass tries again.', 1;`,
      '  THROW;',
      'END CATCH;',
    ].join('\n');
    for (const e of changes) {
      expect([e.name, e.statement.sql.includes(handler)]).toEqual([e.name, true]);
      expect([
        e.name,
        e.statement.sql.indexOf('COMMIT;') < e.statement.sql.indexOf('END TRY'),
      ]).toEqual([e.name, true]);
    }
  });

  it('the layout read: catalog views only, both tables, the boundaries in order with the database clock', () => {
    const sql = SQL.partitionLayout('chokaq').sql;
    expect(sql).not.toMatch(/\[chokaq\]\.\[Jobs(Archive|DLQ)\] AS/);
    for (const table of TABLES) {
      expect(sql).toContain(
        `SELECT '${table}' AS Pillar, N'[chokaq].[${MSSQL_TABLES[table]}]' AS TableName, N'${partitionSchemeName('chokaq', table)}' AS SchemeName, N'${partitionFunctionName('chokaq', table)}' AS FunctionName, N'${PARTITION_COLUMNS[table]}' AS TimeColumn`,
      );
    }
    expect(sql).toContain('pf.boundary_value_on_right = 1');
    expect(sql).toContain('k.partition_ordinal = 1');
    expect(sql.trimEnd().endsWith('ORDER BY t.Pillar, v.boundary_id;')).toBe(true);
  });
});
