import {
  BINARY_KEY_COLLATION,
  SEARCH_COLLATION,
  mssqlBinaryKeysScript,
  mssqlSchemaDdl,
} from '../../libs/chokaq/src/storage/mssql/mssql.schema';
import { catalogue } from './support/statements';
import { preparse, tsqlSyntaxErrors } from './support/tsql-grammar';

/**
 * Keys that differ only by case (SQL Server round 3, item 3). A new install declares its key
 * columns (queue, job type, idempotency key, queue and recurring job names) in a binary collation;
 * an install of an earlier release keeps the database's until `chokaq migrate --binary-keys`. Two
 * column collations meet in `=` only when they are the same (error 468 otherwise), and a table
 * variable's columns, like `OPENJSON`'s, take the database's default. So on a binary-key install
 * every batch declares its table variables' key columns in the binary collation and casts the
 * keys it reads from `OPENJSON` before it groups or combines them; on an older install the batch
 * is exactly what it was. Checked over every statement of the catalogue, built both ways. The
 * keys of schema version 17 (a job's group, a queue's walk cursor) are new columns with no value in
 * another collation, so they are binary on every install, in the tables and in every table
 * variable that holds them.
 */
const KEY_NAMES = ['Queue', 'Type', 'IdempotencyKey', 'Name'];
/**
 * The keys binary on EVERY install (schema version 17: a job's group and a queue's walk cursor,
 * new columns whose existing rows held no value in another collation), so every batch, on every
 * install, declares them binary wherever a table variable holds them.
 */
const ALWAYS_BINARY = ['GroupKey', 'GroupCursor'];
const COLLATE = `COLLATE ${BINARY_KEY_COLLATION}`;
/** A declaration of an always-binary key: `GroupKey nvarchar(255) COLLATE …`. */
const ALWAYS_BINARY_DECLARATION = new RegExp(
  `\\b(${ALWAYS_BINARY.join('|')}) nvarchar\\(255\\) ${COLLATE}`,
  'g',
);

/** The column definitions of every `DECLARE @x TABLE (…)` of a batch, as `@x.Column type…`. */
function tableVariableColumns(sql: string): string[] {
  const out: string[] = [];
  for (const m of sql.matchAll(/DECLARE (@\w+) TABLE \((.*)\);/g)) {
    for (const part of m[2].split(/,(?![^(]*\))/)) out.push(`${m[1]}.${part.trim()}`);
  }
  return out;
}

/** The key columns a batch reads from `OPENJSON … WITH (…) AS alias`, as `alias.Column`. */
function openJsonKeys(sql: string): string[] {
  const out: string[] = [];
  for (const m of sql.matchAll(/OPENJSON\([^)]*\) WITH \(([^)]*(?:\([^)]*\)[^)]*)*)\) AS (\w+)/g)) {
    for (const def of m[1].split(/,(?![^(]*\))/)) {
      const name = def.trim().split(' ')[0];
      if (KEY_NAMES.includes(name)) out.push(`${m[2]}.${name}`);
    }
  }
  return out;
}

describe('SQL Server key columns compare byte for byte on a new install', () => {
  const legacy = catalogue();
  const binary = catalogue({ name: 'chokaq', binaryKeys: true });
  // Parsed ahead in the parse thread (support/tsql-grammar.ts, `preparse`).
  beforeAll(
    () => preparse([...binary.map((e) => e.statement.sql), mssqlBinaryKeysScript('chokaq')]),
    120_000,
  );

  it('a new install declares exactly the key columns in the binary collation', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    const declared = [...ddl.matchAll(/^ {4}(\w+) (\S+) COLLATE (\w+)/gm)].map((m) => [m[1], m[3]]);
    expect(new Set(declared.map(([name]) => name))).toEqual(
      new Set([...KEY_NAMES, ...ALWAYS_BINARY]),
    );
    expect(new Set(declared.map(([, collation]) => collation))).toEqual(
      new Set([BINARY_KEY_COLLATION]),
    );
    // Queue in the three pillars, the counters, the buckets, the recurring jobs, the groups'
    // windows and the batches' callbacks; Type in the three pillars, the recurring jobs and the
    // callbacks; IdempotencyKey in the pillars; Queues and RecurringJobs' names; GroupKey in the
    // pillars, the groups' windows and the callbacks; Queues' GroupCursor.
    expect(declared).toHaveLength(8 + 5 + 3 + 2 + 5 + 1);
    // JobGroups (schema version 17): its Queue in the collation of JobsHot.Queue, so an install of
    // an earlier release creates it through EXEC without one (the database's); GroupKey binary.
    expect(ddl).toContain(
      `EXEC(N'CREATE TABLE [chokaq].[JobGroups] (Queue varchar(255) NOT NULL, GroupKey nvarchar(255) ${COLLATE} NOT NULL,`,
    );
    // BatchCallbacks (schema version 18) the same way: its Queue and Type in the collation of
    // JobsHot.Queue, its GroupKey binary.
    expect(ddl).toMatch(
      new RegExp(
        `EXEC\\(N'CREATE TABLE \\[chokaq\\]\\.\\[BatchCallbacks\\] \\([^;]*Queue varchar\\(255\\) NOT NULL, Type nvarchar\\(255\\) NOT NULL,[^;]*GroupKey nvarchar\\(255\\) ${COLLATE} NULL`,
      ),
    );
    // Added to an install of an earlier release binary too, so the conversion leaves them alone.
    for (const table of ['JobsHot', 'JobsArchive', 'JobsDLQ']) {
      expect(ddl).toContain(
        `ALTER TABLE [chokaq].[${table}] ADD GroupKey nvarchar(255) ${COLLATE} NULL;`,
      );
    }
    expect(ddl).toContain(
      `ALTER TABLE [chokaq].[Queues] ADD GroupCursor nvarchar(255) ${COLLATE} NULL;`,
    );
    expect(mssqlBinaryKeysScript('chokaq')).not.toMatch(/ALTER COLUMN (GroupKey|GroupCursor)\b/);
    // Ids, leases and worker ids are the library's own (UUIDs, host:pid:random): left alone.
    expect(ddl).not.toMatch(/\b(Id|LeaseId|WorkerId|JobId) \S+ COLLATE/);
    // DedupeKeys.[Key] (schema version 16; bracketed, a reserved word): binary on every install,
    // since the table is new, so the conversion of an earlier install's keys never names it.
    expect(ddl).toMatch(
      new RegExp(
        `CREATE TABLE \\[chokaq\\]\\.\\[DedupeKeys\\] \\(\\n {4}\\[Key\\] nvarchar\\(255\\) ${COLLATE} NOT NULL,`,
      ),
    );
    expect(mssqlBinaryKeysScript('chokaq')).not.toMatch(/DedupeKeys/);
  });

  it('an install of an earlier release: the batches declare no key collation (as before), but the always-binary keys', () => {
    for (const e of legacy) {
      const rest = e.statement.sql
        .replace(new RegExp(` COLLATE ${SEARCH_COLLATION}`, 'g'), '')
        .replace(ALWAYS_BINARY_DECLARATION, '$1 nvarchar(255)');
      if (e.kind === 'ddl') continue;
      expect([e.name, rest]).toEqual([e.name, expect.not.stringContaining('COLLATE')]);
    }
  });

  it('on every install, every always-binary key a table variable holds is declared binary', () => {
    const failures: string[] = [];
    let seen = 0;
    for (const e of [...legacy, ...binary]) {
      for (const column of tableVariableColumns(e.statement.sql)) {
        const [, name] = /^@\w+\.\[?(\w+)\]?/.exec(column)!;
        if (!ALWAYS_BINARY.includes(name)) continue;
        seen++;
        if (!column.includes(COLLATE)) failures.push(`${e.name}: ${column}`);
      }
    }
    // Every move's @Moved and the claim's @Claimed hold GroupKey, on both kinds of install.
    expect(seen).toBeGreaterThan(40);
    expect(failures).toEqual([]);
  });

  it('a binary-key install: every key column of a table variable is declared in the binary collation', () => {
    const failures: string[] = [];
    let seen = 0;
    for (const e of binary) {
      for (const column of tableVariableColumns(e.statement.sql)) {
        const [, name] = /^@\w+\.\[?(\w+)\]?/.exec(column)!;
        if (!KEY_NAMES.includes(name) || !/char\(/.test(column)) continue;
        seen++;
        if (!column.includes(COLLATE)) failures.push(`${e.name}: ${column}`);
      }
    }
    expect(seen).toBeGreaterThan(100);
    expect(failures).toEqual([]);
  });

  it('a binary-key install: a key read from OPENJSON is cast to the binary collation wherever it is not simply stored', () => {
    const failures: string[] = [];
    let seen = 0;
    for (const e of binary) {
      // Each statement of the batch on its own: an alias names the OPENJSON rowset only there.
      for (const statement of e.statement.sql.split(';')) {
        // An INSERT into a table variable stores the value in that variable's (binary) column:
        // its SELECT list is an assignment, and only the clauses after FROM compare.
        const compared = /^\s*INSERT INTO @\w+/.test(statement)
          ? statement.slice(statement.search(/\sFROM\s/))
          : statement;
        for (const ref of openJsonKeys(statement)) {
          const pattern = new RegExp(`\\b${ref.replace('.', '\\.')}\\b([^,\\n]*)`, 'g');
          for (const m of compared.matchAll(pattern)) {
            seen++;
            if (!/^ (COLLATE \w+|IS NOT NULL)/.test(m[1])) failures.push(`${e.name}: ${m[0]}`);
          }
        }
      }
    }
    expect(seen).toBeGreaterThan(0);
    expect(failures).toEqual([]);
  });

  it('the search compares case-insensitively in an explicit collation, whatever the columns', () => {
    const searches = binary.filter((e) => e.name.includes('search'));
    expect(searches.length).toBeGreaterThan(5);
    for (const e of searches) {
      expect([e.name, e.statement.sql]).toEqual([
        e.name,
        expect.stringMatching(new RegExp(`\\.Type COLLATE ${SEARCH_COLLATION} LIKE @\\d+`)),
      ]);
    }
  });

  it('the batches that differ on a binary-key install, and the conversion script, parse as T-SQL', () => {
    const differing = binary.filter((e, i) => e.statement.sql !== legacy[i].statement.sql);
    expect(differing.length).toBeGreaterThan(20);
    const failures = [
      ...differing.map((e) => [e.name, e.statement.sql] as const),
      ['convertKeysToBinary', mssqlBinaryKeysScript('chokaq')] as const,
    ].flatMap(([name, sql]) =>
      tsqlSyntaxErrors(sql).map((x) => `${name} ${x.line}:${x.column} ${x.message}`),
    );
    expect(failures).toEqual([]);
  }, 120_000);

  it('the conversion drops what names a key column, alters every key column and builds it all again, once', () => {
    const script = mssqlBinaryKeysScript('chokaq');
    // Guarded: an install whose keys are binary already changes nothing.
    expect(script).toContain(
      `IF EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(N'[chokaq].[JobsHot]') AND name = N'Queue' AND collation_name <> N'${BINARY_KEY_COLLATION}')`,
    );
    const dropped = [...script.matchAll(/DROP INDEX IF EXISTS \[(\w+)\]/g)].map((m) => m[1]);
    const created = [...script.matchAll(/CREATE (?:UNIQUE )?NONCLUSTERED INDEX \[(\w+)\]/g)].map(
      (m) => m[1],
    );
    expect(created).toEqual(dropped);
    expect(dropped).toEqual(
      expect.arrayContaining([
        'IX_JobsHot_Claim',
        'IX_JobsHot_ClaimType',
        'UX_JobsHot_IdempotencyKey',
        'IX_JobsHot_Held',
        'IX_JobsHot_GroupPending',
        'IX_JobsHot_GroupActive',
        'IX_JobsArchive_Type',
        'IX_JobsDLQ_Queue',
      ]),
    );
    // Every index of the new install's DDL that names a key column is among them.
    const ddl = mssqlSchemaDdl('chokaq');
    for (const m of ddl.matchAll(
      /CREATE (?:UNIQUE )?NONCLUSTERED INDEX \[(\w+)\] ON \S+ \(([^)]*)\)(?: INCLUDE \(([^)]*)\))?/g,
    )) {
      const columns = `${m[2]}, ${m[3] ?? ''}`.split(',').map((c) => c.trim().split(' ')[0]);
      if (columns.some((c) => KEY_NAMES.includes(c))) expect(dropped).toContain(m[1]);
    }
    const altered = [
      ...script.matchAll(/ALTER TABLE \[chokaq\]\.\[(\w+)\] ALTER COLUMN (\w+) \S+ (COLLATE \w+)/g),
    ];
    expect(altered).toHaveLength(8 + 5 + 3 + 2);
    expect(new Set(altered.map((m) => m[3]))).toEqual(new Set([COLLATE]));
    for (const pk of [
      'PK_StatsSummary',
      'PK_MetricBuckets',
      'PK_Queues',
      'PK_RecurringJobs',
      'PK_JobGroups',
    ]) {
      expect(script).toContain(`DROP CONSTRAINT [${pk}]`);
      expect(script).toContain(`ADD CONSTRAINT [${pk}] PRIMARY KEY CLUSTERED`);
    }
    // The drops come before the ALTERs, the rebuilds after, all in one transaction under the applock.
    expect(script.indexOf('sp_getapplock')).toBeLessThan(script.indexOf('DROP INDEX'));
    expect(script.lastIndexOf('DROP INDEX')).toBeLessThan(script.indexOf('ALTER COLUMN'));
    expect(script.lastIndexOf('ALTER COLUMN')).toBeLessThan(script.indexOf('ADD CONSTRAINT'));
    expect(script.match(/BEGIN TRAN;/g)).toHaveLength(1);
    expect(script.trimEnd().endsWith('COMMIT;\nSELECT @converted AS Converted;')).toBe(true);
  });
});
