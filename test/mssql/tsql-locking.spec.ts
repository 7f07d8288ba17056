import { isTransientMssqlError } from '../../libs/chokaq/src/storage/mssql/mssql-errors';
import {
  MSSQL_SCHEMA_VERSION,
  SCHEMA_LOCK_BUSY_ERROR,
  SCHEMA_LOCK_WAIT_MS,
  mssqlSchemaDdl,
} from '../../libs/chokaq/src/storage/mssql/mssql.schema';
import { mapJobView } from '../../libs/chokaq/src/storage/shared/row-mapper';
import { CatalogueEntry, catalogue } from './support/statements';
import { lockViolations } from './support/lock-rules';
import { preparse, tableHints } from './support/tsql-grammar';

/**
 * The lock hints and isolation of every statement (SPEC §3): the claim reads candidates without
 * update locks and then locks them by key `WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)`, counts
 * active rows `WITH (READCOMMITTEDLOCK)`, U-locks only the budgeted `Queues` rows, by key, and
 * never reads dirty; every pick under UPDLOCK is a seek by key (rows a predicate rejects are never
 * held); every move is `SET XACT_ABORT ON; BEGIN TRAN; … OUTPUT deleted.<columns> INTO @Moved
 * (<columns>) …; COMMIT`; counters, buckets and idempotency keys are locked in key order; `NOLOCK`
 * only in telemetry reads; never UPDLOCK with NOLOCK on one table reference. Hints are read from
 * the T-SQL parse tree, not by pattern over the text.
 */
describe('SQL Server lock hints and isolation', () => {
  const entries = catalogue();
  // Parsed ahead in the parse thread (support/tsql-grammar.ts, `preparse`).
  beforeAll(() => preparse(entries.map((e) => e.statement.sql)), 120_000);
  const one = (operation: string, variant?: string): CatalogueEntry =>
    entries.find((e) => e.operation === operation && (!variant || e.name.includes(variant)))!;

  it('every statement keeps the rules', () => {
    const failures = entries.flatMap((e) => lockViolations(e).map((v) => `${e.name}: ${v}`));
    expect(failures).toEqual([]);
  }, 180_000);

  it('classifies the claim, the moves and the telemetry reads', () => {
    const claims = new Set(entries.filter((e) => e.kind === 'claim').map((e) => e.operation));
    expect([...claims]).toEqual(['fetchNextBatch']);
    const moves = new Set(entries.filter((e) => e.kind === 'move').map((e) => e.operation));
    expect([...moves].sort()).toEqual(
      [
        'archiveSucceeded',
        'archiveZombies',
        'cancel',
        'moveToDlq',
        'resurrect',
        'resurrectByFilter',
      ].sort(),
    );
    const telemetry = new Set(
      entries.filter((e) => e.kind === 'telemetry').map((e) => e.operation),
    );
    expect([...telemetry].sort()).toEqual(
      [
        'getQueueHealth',
        'getQueueOutcomes',
        'getQueueStats',
        'getSummary',
        'getThroughput',
        'getThroughputSeries',
        'getTopDlqErrors',
      ].sort(),
    );
    // Telemetry really does use NOLOCK (approximate by design), and nothing else does.
    for (const e of entries) {
      expect([e.name, /NOLOCK/.test(e.statement.sql)]).toEqual([e.name, e.kind === 'telemetry']);
    }
  });

  it("the DDL's one result set is the versions it recorded, selected after COMMIT", () => {
    const ddl = mssqlSchemaDdl('chokaq');
    const inserts = ddl.match(/INSERT INTO \[chokaq\]\.\[SchemaMigrations\][^;]*;/g) ?? [];
    expect(inserts).toHaveLength(MSSQL_SCHEMA_VERSION);
    for (const insert of inserts) expect(insert).toContain('OUTPUT inserted.Version INTO @Applied');
    // No other SELECT returns rows: the start reads the first result set as the versions applied.
    const selects = ddl.split('\n').filter((line) => /^SELECT /.test(line));
    expect(selects).toEqual(['SELECT Version FROM @Applied ORDER BY Version;']);
    expect(ddl.trimEnd().endsWith('COMMIT;\nSELECT Version FROM @Applied ORDER BY Version;')).toBe(
      true,
    );
  });

  it('the DDL has the (queue, type) claim index and no lock escalation on JobsHot (version 2)', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(2);
    expect(ddl).toContain(
      'CREATE NONCLUSTERED INDEX [IX_JobsHot_ClaimType] ON [chokaq].[JobsHot] (Queue, Type, Priority DESC, DueAtUtc) WHERE Status = 0;',
    );
    // Set once, by the version-2 step, so a DBA's later choice is not undone on every start.
    expect(ddl).toContain(
      'IF NOT EXISTS (SELECT 1 FROM [chokaq].[SchemaMigrations] WHERE Version = 2)\n  ALTER TABLE [chokaq].[JobsHot] SET (LOCK_ESCALATION = DISABLE);',
    );
    expect(ddl).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(2, /,
    );
  });

  it('the DDL adds RecurringJobs.Source and LastJobId once, to a table of an earlier version (version 3)', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(3);
    // A new table has them from CREATE TABLE; a table of version 1 or 2 gets them here, once
    // (COL_LENGTH is NULL only while the column is missing), existing rows taking the default.
    expect(ddl).toContain(
      "IF COL_LENGTH(N'[chokaq].[RecurringJobs]', N'Source') IS NULL\n  ALTER TABLE [chokaq].[RecurringJobs] ADD Source varchar(10) NOT NULL CONSTRAINT [DF_RecurringJobs_Source] DEFAULT 'decorator' CONSTRAINT [CK_RecurringJobs_Source] CHECK (Source IN ('decorator', 'runtime'));",
    );
    expect(ddl).toContain(
      "IF COL_LENGTH(N'[chokaq].[RecurringJobs]', N'LastJobId') IS NULL\n  ALTER TABLE [chokaq].[RecurringJobs] ADD LastJobId varchar(36) NULL;",
    );
    expect(ddl).toMatch(/ {4}Source varchar\(10\) NOT NULL CONSTRAINT \[DF_RecurringJobs_Source\]/);
    expect(ddl).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(3, /,
    );
  });

  it('the DDL has the Workers table and the progress note, added where missing (version 4)', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(4);
    expect(ddl).toContain("IF OBJECT_ID(N'[chokaq].[Workers]', N'U') IS NULL");
    expect(ddl).toContain('CONSTRAINT [PK_Workers] PRIMARY KEY CLUSTERED (WorkerId)');
    // A new database gets the column from CREATE TABLE; an older one from the guarded ALTER.
    expect(ddl).toMatch(
      /CREATE TABLE \[chokaq\]\.\[JobsHot\] \([^;]*ProgressNote nvarchar\(500\) NULL/,
    );
    for (const table of ['JobsHot', 'JobsArchive', 'JobsDLQ']) {
      expect(ddl).toContain(
        `IF COL_LENGTH(N'[chokaq].[${table}]', N'ProgressNote') IS NULL\n  ALTER TABLE [chokaq].[${table}] ADD ProgressNote nvarchar(500) NULL;`,
      );
    }
    expect(ddl).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(4, /,
    );
  });

  it('claimRecurringSlot records the slot job in the compare-and-set, keeping the last one when none is enqueued', () => {
    const sql = one('claimRecurringSlot').statement.sql;
    expect(sql).toContain('LastJobId = COALESCE(CAST(@3 AS varchar(36)), LastJobId)');
  });

  it('upsertWorker updates under UPDLOCK, HOLDLOCK and inserts only when no row changed, in one transaction', () => {
    for (const variant of ['starting', 'beat']) {
      const sql = one('upsertWorker', variant).statement.sql;
      expect(sql).toMatch(
        /SET XACT_ABORT ON;[\s\S]*BEGIN TRAN;\nUPDATE w SET[\s\S]*FROM \[chokaq\]\.\[Workers\] AS w WITH \(UPDLOCK, HOLDLOCK\)\nWHERE w\.WorkerId = @0;\nIF @@ROWCOUNT = 0\n {2}INSERT INTO \[chokaq\]\.\[Workers\][\s\S]*\nCOMMIT;/,
      );
      expect(sql).not.toMatch(/\bMERGE\b/);
    }
  });

  it("the DDL has the keyset lists' indexes (version 5); each list statement orders by one of them and Id", () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(5);
    for (const index of [
      '[IX_JobsHot_Enqueued] ON [chokaq].[JobsHot] (EnqueuedAtUtc);',
      '[IX_JobsHot_QueueEnqueued] ON [chokaq].[JobsHot] (Queue, EnqueuedAtUtc);',
      '[IX_JobsArchive_Type] ON [chokaq].[JobsArchive] (Type, FinishedAtUtc) WITH (DATA_COMPRESSION = PAGE);',
    ]) {
      expect(ddl).toContain(`CREATE NONCLUSTERED INDEX ${index}`);
    }
    expect(ddl).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(5, /,
    );
    const keys = { hot: 'EnqueuedAtUtc', archive: 'FinishedAtUtc', dlq: 'FailedAtUtc' };
    for (const e of entries.filter((x) => x.operation.startsWith('listJobs.'))) {
      const pillar = e.operation.split('.')[1] as keyof typeof keys;
      const dir = e.name.includes('oldest') ? 'ASC' : 'DESC';
      expect([e.name, e.statement.sql]).toEqual([
        e.name,
        expect.stringContaining(`ORDER BY j.${keys[pillar]} ${dir}, j.Id ${dir}`),
      ]);
      // The payload is never selected: only its length, and a search term tested against it.
      const rest = e.statement.sql
        .replace('DATALENGTH(j.Payload) AS PayloadBytes', '')
        .replace(/j\.Payload COLLATE \w+ LIKE/g, '');
      expect([e.name, rest]).toEqual([e.name, expect.not.stringContaining('Payload')]);
    }
  });

  it('version 6: the start lag columns of MetricBuckets, added in place to an older table, and its queue index', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(6);
    // A new table has them from its CREATE; an older one gets them by ALTER, once.
    for (const column of ['LagCount', 'LagSumMs', 'LagMaxMs']) {
      expect(ddl).toContain(
        `  ${column} bigint NOT NULL CONSTRAINT [DF_MetricBuckets_${column}] DEFAULT 0`,
      );
      expect(ddl).toContain(
        `IF COL_LENGTH(N'[chokaq].[MetricBuckets]', N'${column}') IS NULL\n  ALTER TABLE [chokaq].[MetricBuckets] ADD ${column} bigint NOT NULL CONSTRAINT [DF_MetricBuckets_${column}] DEFAULT 0;`,
      );
    }
    expect(ddl).toContain(
      'CREATE NONCLUSTERED INDEX [IX_MetricBuckets_Queue] ON [chokaq].[MetricBuckets] (Queue, BucketUtc) WITH (DATA_COMPRESSION = PAGE);',
    );
    expect(ddl).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(6, /,
    );
  });

  it('version 7: the AuditLog and Settings tables, created where missing, and the audit index', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(7);
    for (const table of ['AuditLog', 'Settings']) {
      expect(ddl).toContain(`IF OBJECT_ID(N'[chokaq].[${table}]', N'U') IS NULL`);
    }
    expect(ddl).toContain(
      'CREATE NONCLUSTERED INDEX [IX_AuditLog_At] ON [chokaq].[AuditLog] (AtUtc, Id);',
    );
    expect(ddl).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(7, /,
    );
  });

  it("version 8: the audit log's target index keys a computed prefix of Target, added in place and indexed through EXEC", () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(8);
    // Target (up to 8,000 bytes) is no index key: the computed column holds its first 255
    // characters (510 bytes, within the 1,700-byte key limit).
    const add =
      "IF COL_LENGTH(N'[chokaq].[AuditLog]', N'TargetKey') IS NULL\n" +
      '  ALTER TABLE [chokaq].[AuditLog] ADD TargetKey AS CAST(LEFT(Target, 255) AS nvarchar(255));';
    const index =
      "  EXEC(N'CREATE NONCLUSTERED INDEX [IX_AuditLog_Target] ON [chokaq].[AuditLog] (TargetKey, AtUtc, Id);');";
    expect(ddl).toContain(add);
    expect(ddl).toContain(index);
    // The index is built after the column is added, and both before the version is recorded.
    const recorded = ddl.search(/VALUES \(8, N'audit log index by target'\);/);
    expect(recorded).toBeGreaterThan(ddl.indexOf(index));
    expect(ddl.indexOf(index)).toBeGreaterThan(ddl.indexOf(add));
    // The column is no column of the table's CREATE (a table of version 7 gets it the same way),
    // and no read selects it: reads name AUDIT_COLUMNS.
    const create = ddl.indexOf('CREATE TABLE [chokaq].[AuditLog]');
    expect(ddl.slice(create, ddl.indexOf('END;', create))).not.toContain('TargetKey');
    for (const e of entries.filter((x) => x.operation === 'getAuditLog')) {
      expect(e.statement.sql).not.toMatch(/SELECT[^\n]*TargetKey/);
    }
    // A read by target seeks the key with the column's own expression, and compares the whole target.
    const byTarget = one('getAuditLog', 'target').statement.sql;
    expect(byTarget).toContain(
      'a.TargetKey = CAST(LEFT(@1, 255) AS nvarchar(255)) AND a.Target = @1',
    );
  });

  it("version 11: the queues' rate limit columns, in CREATE TABLE and added where missing; the claim reads and spends them", () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(11);
    for (const column of [
      'RateLimitMax int',
      'RateLimitPerMs int',
      'RateWindowStart datetime2(3)',
      'RateWindowLast datetime2(3)',
      'RateWindowCount int',
      'RatePrevLast datetime2(3)',
      'RatePrevCount int',
    ]) {
      const name = column.split(' ')[0];
      expect(ddl).toMatch(
        new RegExp(`CREATE TABLE \\[chokaq\\]\\.\\[Queues\\] \\([^;]*${name} [^,]*NULL`),
      );
      expect(ddl).toContain(
        `IF COL_LENGTH(N'[chokaq].[Queues]', N'${name}') IS NULL\n  ALTER TABLE [chokaq].[Queues] ADD ${column} NULL;`,
      );
    }
    expect(ddl).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(11, /,
    );
    const claim = one('fetchNextBatch').statement.sql;
    expect(claim).toContain(
      'WHERE r.Budget IS NOT NULL OR r.RateMax IS NOT NULL OR r.Grouped = 1;',
    );
    expect(claim).toContain('UPDATE q SET q.RatePrevCount =');
    // Clearing a limit clears its window state.
    const cleared = one('updateQueue', 'rate limit removed').statement.sql;
    expect(cleared).toMatch(
      /RateWindowStart = CASE WHEN @\d+ = 1 THEN NULL ELSE RateWindowStart END/,
    );
  });

  it('version 9: TraceContext in every pillar, added where missing; every move and both enqueues carry it', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(9);
    // A new database gets the column from CREATE TABLE; an older one from the guarded ALTER.
    for (const table of ['JobsHot', 'JobsArchive', 'JobsDLQ']) {
      expect(ddl).toMatch(
        new RegExp(
          `CREATE TABLE \\[chokaq\\]\\.\\[${table}\\] \\([^;]*TraceContext varchar\\(2048\\) NULL`,
        ),
      );
      expect(ddl).toContain(
        `IF COL_LENGTH(N'[chokaq].[${table}]', N'TraceContext') IS NULL\n  ALTER TABLE [chokaq].[${table}] ADD TraceContext varchar(2048) NULL;`,
      );
    }
    expect(ddl).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(9, /,
    );
    // The moves capture the column of the deleted rows and insert it where they go: the archive,
    // the DLQ, and back into the hot table on a resurrect.
    const target = {
      archiveSucceeded: 'JobsArchive',
      moveToDlq: 'JobsDLQ',
      cancel: 'JobsDLQ',
      archiveZombies: 'JobsDLQ',
      resurrect: 'JobsHot',
      resurrectByFilter: 'JobsHot',
    } as const;
    for (const e of entries.filter((x) => x.kind === 'move')) {
      const into = target[e.operation as keyof typeof target];
      const sql = e.statement.sql;
      expect([e.name, sql]).toEqual([
        e.name,
        expect.stringMatching(/OUTPUT deleted\.[^;]*deleted\.TraceContext[^;]* INTO @Moved \(/),
      ]);
      expect([e.name, sql]).toEqual([
        e.name,
        expect.stringMatching(
          new RegExp(
            `INSERT INTO \\[chokaq\\]\\.\\[${into}\\] \\([^)]*TraceContext[^)]*\\)\\nSELECT [^;]*m\\.TraceContext`,
          ),
        ),
      ]);
    }
    for (const e of entries.filter((x) => x.operation.startsWith('enqueue'))) {
      expect([e.name, e.statement.sql]).toEqual([
        e.name,
        expect.stringMatching(/INSERT INTO \[chokaq\]\.\[JobsHot\] \([^)]*, TraceContext[,)]/),
      ]);
    }
  });

  it('version 12: PayloadVersion in every pillar (NOT NULL DEFAULT 1 in JobsHot, nullable in the history tables, so no upgrade rewrites them), added where missing; every move and both enqueues carry it; the claim filters exact pairs on it', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(12);
    for (const table of ['JobsHot', 'JobsArchive', 'JobsDLQ']) {
      const column =
        table === 'JobsHot'
          ? `PayloadVersion int NOT NULL CONSTRAINT [DF_${table}_PayloadVersion] DEFAULT 1`
          : 'PayloadVersion int NULL';
      expect(ddl).toMatch(
        new RegExp(
          `CREATE TABLE \\[chokaq\\]\\.\\[${table}\\] \\([^;]*${column.replace(/[[\]]/g, '\\$&')}`,
        ),
      );
      expect(ddl).toContain(
        `IF COL_LENGTH(N'[chokaq].[${table}]', N'PayloadVersion') IS NULL\n  ALTER TABLE [chokaq].[${table}] ADD ${column};`,
      );
    }
    expect(ddl).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(12, /,
    );
    const target = {
      archiveSucceeded: 'JobsArchive',
      moveToDlq: 'JobsDLQ',
      cancel: 'JobsDLQ',
      archiveZombies: 'JobsDLQ',
      resurrect: 'JobsHot',
      resurrectByFilter: 'JobsHot',
    } as const;
    for (const e of entries.filter((x) => x.kind === 'move')) {
      const into = target[e.operation as keyof typeof target];
      const sql = e.statement.sql;
      expect([e.name, sql]).toEqual([
        e.name,
        expect.stringMatching(/OUTPUT deleted\.[^;]*deleted\.PayloadVersion[^;]* INTO @Moved \(/),
      ]);
      expect([e.name, sql]).toEqual([
        e.name,
        expect.stringMatching(
          new RegExp(
            `INSERT INTO \\[chokaq\\]\\.\\[${into}\\] \\([^)]*PayloadVersion[^)]*\\)\\nSELECT [^;]*m\\.PayloadVersion`,
          ),
        ),
      ]);
    }
    for (const e of entries.filter((x) => x.operation.startsWith('enqueue'))) {
      expect([e.name, e.statement.sql]).toEqual([
        e.name,
        expect.stringMatching(/INSERT INTO \[chokaq\]\.\[JobsHot\] \([^)]*, PayloadVersion[,)]/),
      ]);
    }
    // A row dead-lettered before version 12 holds NULL: it goes back to the hot table as version 1.
    for (const e of entries.filter(
      (x) => x.operation.startsWith('resurrect') && x.kind === 'move',
    )) {
      expect([e.name, e.statement.sql]).toEqual([
        e.name,
        expect.stringMatching(
          /\nSELECT [^;]*ISNULL\(m\.PayloadVersion, 1\)[^;]*\nFROM @Moved AS m;/,
        ),
      ]);
    }
    // The history tables' NULL reads as 1, as the hot table's default would have written it.
    const historyRow = {
      Id: '01900000-0000-7000-8000-000000000001',
      Queue: 'q',
      Type: 't',
      Payload: '{}',
      Priority: 0,
      AttemptCount: 1,
      PayloadVersion: null,
      CreatedAtUtc: '2026-01-01T00:00:00.000',
      EnqueuedAtUtc: '2026-01-01T00:00:00.000',
      LastUpdatedUtc: '2026-01-01T00:00:00.000',
      Status: 3,
      FailureReason: 1,
      FailedAtUtc: '2026-01-01T00:00:00.000',
    };
    expect(mapJobView(historyRow, 'dlq').payloadVersion).toBe(1);
    expect(mapJobView({ ...historyRow, PayloadVersion: 3 }, 'dlq').payloadVersion).toBe(3);
    const claim = one('fetchNextBatch').statement.sql;
    expect(claim).toContain(
      'DECLARE @Types TABLE (Queue varchar(255) NOT NULL, Type nvarchar(255) NOT NULL, MinVersion int NOT NULL, MaxVersion int NOT NULL, PRIMARY KEY (Queue, Type));',
    );
    expect(claim).toContain(
      'WHERE h.Queue = y.Queue AND h.Type = y.Type AND h.Status = 0 AND h.DueAtUtc <= @now AND h.PayloadVersion BETWEEN y.MinVersion AND y.MaxVersion',
    );
    // Queue-wide handlers take every version: their candidate read has no version test.
    expect(claim).toContain('WHERE h.Queue = m.Queue AND h.Status = 0 AND h.DueAtUtc <= @now\n');
  });

  it('version 13: HeldSinceUtc and DeferredTotal added where missing, the held index compiled after them; an open circuit holds and counts a deferral, a retry clears the hold', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(13);
    expect(ddl).toMatch(
      /CREATE TABLE \[chokaq\]\.\[JobsHot\] \([^;]*HeldSinceUtc datetime2\(3\) NULL/,
    );
    const addHeld = ddl.indexOf(
      "IF COL_LENGTH(N'[chokaq].[JobsHot]', N'HeldSinceUtc') IS NULL\n  ALTER TABLE [chokaq].[JobsHot] ADD HeldSinceUtc datetime2(3) NULL;",
    );
    const index = ddl.indexOf(
      "EXEC(N'CREATE NONCLUSTERED INDEX [IX_JobsHot_Held] ON [chokaq].[JobsHot] (Queue, HeldSinceUtc) INCLUDE (DueAtUtc) WHERE Status = 0 AND HeldSinceUtc IS NOT NULL;');",
    );
    expect(addHeld).toBeGreaterThan(0);
    expect(index).toBeGreaterThan(addHeld);
    expect(ddl).toContain(
      "IF COL_LENGTH(N'[chokaq].[StatsSummary]', N'DeferredTotal') IS NULL\n  ALTER TABLE [chokaq].[StatsSummary] ADD DeferredTotal bigint NOT NULL CONSTRAINT [DF_StatsSummary_DeferredTotal] DEFAULT 0;",
    );
    // The history tables never get the column: no move copies it.
    expect(ddl).not.toMatch(/CREATE TABLE \[chokaq\]\.\[Jobs(Archive|DLQ)\] \([^;]*HeldSinceUtc/);
    for (const operation of ['release', 'unstart']) {
      const delayed = one(operation, 'delay').statement.sql;
      const plain = entries.find((e) => e.operation === operation && e.name.includes('no delay'))!
        .statement.sql;
      for (const sql of [delayed, plain]) {
        expect(sql).toContain(
          'h.HeldSinceUtc = CASE WHEN @due IS NULL THEN h.HeldSinceUtc ELSE ISNULL(h.HeldSinceUtc, h.DueAtUtc) END',
        );
        expect(sql).toMatch(/DeferredTotal/);
        expect(sql).not.toMatch(/RetriedTotal|MetricBuckets/);
      }
    }
    expect(one('rescheduleForRetry').statement.sql).toContain('h.HeldSinceUtc = NULL');
    expect(one('archiveZombies').statement.sql).toContain('h.HeldSinceUtc = NULL');
  });

  it('version 14: the claim index of exact pairs carries PayloadVersion (no key lookup per candidate), rebuilt where it lacks it, after the column exists', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(14);
    const rebuild = ddl.indexOf(
      "EXEC(N'CREATE NONCLUSTERED INDEX [IX_JobsHot_ClaimType] ON [chokaq].[JobsHot] (Queue, Type, Priority DESC, DueAtUtc) INCLUDE (PayloadVersion) WHERE Status = 0 WITH (DROP_EXISTING = ON);');",
    );
    const column = ddl.indexOf("IF COL_LENGTH(N'[chokaq].[JobsHot]', N'PayloadVersion') IS NULL");
    expect(column).toBeGreaterThan(0);
    expect(rebuild).toBeGreaterThan(column);
    expect(ddl.slice(0, rebuild)).toMatch(
      /IF NOT EXISTS \(SELECT 1 FROM sys\.index_columns [^\n]*N'IX_JobsHot_ClaimType' AND COL_NAME\(ic\.object_id, ic\.column_id\) = N'PayloadVersion'\)\n {2}$/,
    );
    // The claim's test of the version is on that index's rows: the pair's seek and the version.
    expect(one('fetchNextBatch').statement.sql).toContain(
      'h.Queue = y.Queue AND h.Type = y.Type AND h.Status = 0 AND h.DueAtUtc <= @now AND h.PayloadVersion BETWEEN y.MinVersion AND y.MaxVersion',
    );
  });

  it('version 15: JobsArchive.Result (nullable nvarchar(max), like the payload), added where missing; only the archive move of a batch with results names it; getJob and getBatchResults read it', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(15);
    // A new database gets the column from CREATE TABLE; an older one from the guarded ALTER, a
    // nullable column without a default (metadata only), in version 15's own step.
    expect(ddl).toMatch(
      /CREATE TABLE \[chokaq\]\.\[JobsArchive\] \([^;]*Payload nvarchar\(max\) NOT NULL[^;]*DurationMs bigint NULL,\n {4}Result nvarchar\(max\) NULL,\n/,
    );
    const add =
      "IF COL_LENGTH(N'[chokaq].[JobsArchive]', N'Result') IS NULL\n  ALTER TABLE [chokaq].[JobsArchive] ADD Result nvarchar(max) NULL;";
    expect(ddl.split(add)).toHaveLength(2);
    const step = ddl.split('\nBEGIN TRAN;\n')[15];
    expect(step).toContain(add);
    expect(step).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(15, /,
    );
    // The Archive only: the hot table and the DLQ never hold a result.
    expect(ddl).not.toMatch(/CREATE TABLE \[chokaq\]\.\[Jobs(Hot|DLQ)\] \([^;]*\bResult\b/);
    expect(ddl).not.toMatch(/ALTER TABLE \[chokaq\]\.\[Jobs(Hot|DLQ)\] ADD Result/);

    // The archive move: with results, the document's result goes through @In into the Archive in
    // the move's transaction; without, nothing names the column (the text of version 14).
    for (const e of entries.filter((x) => x.operation.startsWith('archiveSucceeded'))) {
      const sql = e.statement.sql;
      if (!e.name.includes('[results]')) {
        expect([e.name, /\bResult\b|\$\.result/.test(sql)]).toEqual([e.name, false]);
        continue;
      }
      expect(sql).toContain("Result nvarchar(max) '$.result'");
      expect(sql).toContain(
        'DurationMs bigint NULL, Result nvarchar(max) NULL, PRIMARY KEY (Id, LeaseId)',
      );
      expect(sql).toMatch(
        /INSERT INTO \[chokaq\]\.\[JobsArchive\] \([^)]*, DurationMs, Result\)\nSELECT [^\n]*, i\.DurationMs, i\.Result\nFROM @Moved AS m INNER JOIN @In AS i ON i\.Id = m\.Id AND i\.LeaseId = m\.LeaseId;/,
      );
      expect(e.statement.params).toHaveLength(1);
      const doc = JSON.parse(String(e.statement.params[0].value)) as Array<{ result: unknown }>;
      expect(doc.map((item) => item.result)).toEqual(
        e.operation === 'archiveSucceeded' ? ['{"rows":3}', null] : ['{"rows":3}'],
      );
    }
    // No other statement writes or reads the column but the job read and a page of a batch's
    // results.
    for (const e of entries) {
      if (e.operation.startsWith('archiveSucceeded') || e.kind === 'ddl') continue;
      expect([e.name, /\bResult\b/.test(e.statement.sql)]).toEqual([
        e.name,
        e.operation === 'getJob' || e.operation === 'getBatchResults',
      ]);
    }
    const read = one('getJob').statement.sql;
    expect(read).toMatch(/SELECT 3, 'archive', [^\n]*, a\.Result, /);
    expect(read).toMatch(/SELECT 1 AS PillarRank, 'hot' AS Pillar, [^\n]*, NULL AS Result, /);
    expect(read).toMatch(/SELECT 2, 'dlq', [^\n]*, NULL AS Result, /);
    // The row mapper parses it for an archive row, and shows null elsewhere.
    const row = {
      Id: '01900000-0000-7000-8000-000000000001',
      Queue: 'q',
      Type: 't',
      Payload: '{}',
      Priority: 0,
      AttemptCount: 1,
      CreatedAtUtc: '2026-01-01T00:00:00.000',
      EnqueuedAtUtc: '2026-01-01T00:00:00.000',
      LastUpdatedUtc: '2026-01-01T00:00:00.000',
      FinishedAtUtc: '2026-01-01T00:00:01.000',
      DurationMs: '7',
      Result: '{"rows":3}',
    };
    expect(mapJobView(row, 'archive').result).toEqual({ rows: 3 });
    expect(mapJobView({ ...row, Result: null }, 'archive').result).toBeNull();
  });

  it('version 16: DedupeKeys (binary key, clustered on it) and its job index, created where missing in their own step', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(16);
    const step = ddl.split('\nBEGIN TRAN;\n')[16];
    expect(step).toContain("IF OBJECT_ID(N'[chokaq].[DedupeKeys]', N'U') IS NULL");
    expect(step).toMatch(
      /CREATE TABLE \[chokaq\]\.\[DedupeKeys\] \(\n {4}\[Key\] nvarchar\(255\) COLLATE Latin1_General_100_BIN2 NOT NULL,\n {4}JobId varchar\(36\) NOT NULL,\n {4}Mode smallint NOT NULL,\n {4}States smallint NOT NULL,\n {4}WindowMs bigint NOT NULL,\n {4}WindowStartedUtc datetime2\(3\) NOT NULL,\n {4}WindowEndsUtc datetime2\(3\) NULL,\n {4}CONSTRAINT \[PK_DedupeKeys\] PRIMARY KEY CLUSTERED \(\[Key\]\)\n {2}\);/,
    );
    expect(step).toContain(
      "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[chokaq].[DedupeKeys]') AND name = N'IX_DedupeKeys_Job')\n  CREATE NONCLUSTERED INDEX [IX_DedupeKeys_Job] ON [chokaq].[DedupeKeys] (JobId);",
    );
    expect(step).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(16, /,
    );
    // Created once, in version 16's step only; no existing table is altered by it.
    expect(ddl.split('CREATE TABLE [chokaq].[DedupeKeys]')).toHaveLength(2);
    expect(step).not.toMatch(/ALTER TABLE/);
  });

  it("version 17: GroupKey in every pillar and the group columns of Queues (binary keys, added where missing), JobGroups in the collation of JobsHot.Queue, the grouped rows' filtered indexes compiled after the columns", () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(17);
    const step = ddl.split('\nBEGIN TRAN;\n')[17];
    const binary = 'COLLATE Latin1_General_100_BIN2';
    for (const table of ['JobsHot', 'JobsArchive', 'JobsDLQ']) {
      // A new database gets the column from CREATE TABLE; an older one from the guarded ALTER.
      expect(ddl).toMatch(
        new RegExp(
          `CREATE TABLE \\[chokaq\\]\\.\\[${table}\\] \\([^;]*GroupKey nvarchar\\(255\\) ${binary} NULL`,
        ),
      );
      expect(step).toContain(
        `IF COL_LENGTH(N'[chokaq].[${table}]', N'GroupKey') IS NULL\n  ALTER TABLE [chokaq].[${table}] ADD GroupKey nvarchar(255) ${binary} NULL;`,
      );
    }
    for (const column of [
      'GroupConcurrency int NULL',
      'GroupRateMax int NULL',
      'GroupRatePerMs int NULL',
      `GroupCursor nvarchar(255) ${binary} NULL`,
    ]) {
      const name = column.split(' ')[0];
      expect(step).toContain(
        `IF COL_LENGTH(N'[chokaq].[Queues]', N'${name}') IS NULL\n  ALTER TABLE [chokaq].[Queues] ADD ${column};`,
      );
    }
    // JobGroups: binary Queue where JobsHot.Queue is binary; else the database's, through EXEC,
    // its GroupKey binary either way.
    expect(step).toContain(
      "IF OBJECT_ID(N'[chokaq].[JobGroups]', N'U') IS NULL AND EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(N'[chokaq].[JobsHot]') AND name = N'Queue' AND collation_name = N'Latin1_General_100_BIN2')",
    );
    expect(step).toContain(
      `  CREATE TABLE [chokaq].[JobGroups] (\n    Queue varchar(255) ${binary} NOT NULL,\n    GroupKey nvarchar(255) ${binary} NOT NULL,`,
    );
    expect(step).toContain(
      `IF OBJECT_ID(N'[chokaq].[JobGroups]', N'U') IS NULL\n  EXEC(N'CREATE TABLE [chokaq].[JobGroups] (Queue varchar(255) NOT NULL, GroupKey nvarchar(255) ${binary} NOT NULL,`,
    );
    expect(ddl.split('CREATE TABLE [chokaq].[JobGroups]')).toHaveLength(3);
    expect(step).toContain('CONSTRAINT [PK_JobGroups] PRIMARY KEY CLUSTERED (Queue, GroupKey)');
    // The indexes name a column this batch may have added: compiled apart, after the ALTERs.
    for (const index of [
      '[IX_JobsHot_GroupPending] ON [chokaq].[JobsHot] (Queue, GroupKey, Priority DESC, DueAtUtc) INCLUDE (Type, PayloadVersion) WHERE Status = 0 AND GroupKey IS NOT NULL;',
      '[IX_JobsHot_GroupActive] ON [chokaq].[JobsHot] (Queue, GroupKey) WHERE Status IN (1, 2) AND GroupKey IS NOT NULL;',
    ]) {
      expect(step).toContain(`  EXEC(N'CREATE NONCLUSTERED INDEX ${index}');`);
      expect(step.indexOf(index)).toBeGreaterThan(step.lastIndexOf('ALTER TABLE'));
    }
    expect(step).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(17, /,
    );
    // Every move carries the group; a resurrect keeps it (or puts a job without one of a grouped
    // queue into the shared group); both enqueues store it.
    for (const e of entries.filter((x) => x.kind === 'move')) {
      expect([e.name, e.statement.sql]).toEqual([
        e.name,
        expect.stringMatching(/OUTPUT deleted\.[^;]*deleted\.GroupKey[^;]* INTO @Moved \(/),
      ]);
    }
    for (const e of entries.filter(
      (x) => x.operation.startsWith('resurrect') && x.kind === 'move',
    )) {
      expect([e.name, e.statement.sql]).toEqual([
        e.name,
        expect.stringContaining(
          "ISNULL(m.GroupKey, CASE WHEN EXISTS (SELECT 1 FROM [chokaq].[Queues] AS gq WHERE gq.Name = m.Queue AND (gq.GroupConcurrency IS NOT NULL OR gq.GroupRateMax IS NOT NULL)) THEN N'' END)",
        ),
      ]);
    }
    for (const e of entries.filter((x) => x.operation.startsWith('enqueue'))) {
      expect([e.name, e.statement.sql]).toEqual([
        e.name,
        expect.stringMatching(
          /INSERT INTO \[chokaq\]\.\[JobsHot\] \([^)]*, GroupKey\)[^;]*ISNULL\([^;]*THEN N'' END\)/,
        ),
      ]);
    }
    // updateQueue: the group limits, and the hot jobs of a queue left grouped into the shared group.
    const limits = one('updateQueue', 'group limits').statement.sql;
    expect(limits).toMatch(
      /GroupConcurrency = CASE WHEN @\d+ = 1 THEN @\d+ ELSE GroupConcurrency END/,
    );
    expect(limits).toContain(
      "  UPDATE h SET h.GroupKey = N'' FROM [chokaq].[JobsHot] AS h WHERE h.Queue = CAST(@0 AS varchar(255)) AND h.GroupKey IS NULL;",
    );
    expect(limits.indexOf("UPDATE h SET h.GroupKey = N''")).toBeGreaterThan(
      limits.indexOf('UPDATE [chokaq].[Queues] SET'),
    );
  });

  it("version 18: BatchId in every pillar (added where missing), Batches and BatchCallbacks (in the collation of JobsHot.Queue) with the callbacks' job index, the batch rows' filtered indexes compiled after the column (the Archive's keyed by batch and id)", () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(18);
    const step = ddl.split('\nBEGIN TRAN;\n')[18];
    for (const table of ['JobsHot', 'JobsArchive', 'JobsDLQ']) {
      // A new database gets the column from CREATE TABLE; an older one from the guarded ALTER.
      expect(ddl).toMatch(
        new RegExp(
          `CREATE TABLE \\[chokaq\\]\\.\\[${table}\\] \\([^;]*BatchId varchar\\(36\\) NULL`,
        ),
      );
      expect(step).toContain(
        `IF COL_LENGTH(N'[chokaq].[${table}]', N'BatchId') IS NULL\n  ALTER TABLE [chokaq].[${table}] ADD BatchId varchar(36) NULL;`,
      );
      // Only the rows of a batch, compiled apart, after the ALTERs; the Archive's in id order
      // (a page of a batch's results is one range of it).
      const keys = table === 'JobsArchive' ? 'BatchId, Id' : 'BatchId';
      const index = `[IX_${table}_Batch] ON [chokaq].[${table}] (${keys}) WHERE BatchId IS NOT NULL`;
      expect(step).toContain(`  EXEC(N'CREATE NONCLUSTERED INDEX ${index}`);
      expect(step.indexOf(index)).toBeGreaterThan(step.lastIndexOf('ALTER TABLE'));
    }
    // The hot table's index last: the workers' table waits the shortest time.
    expect(step.indexOf('[IX_JobsHot_Batch]')).toBeGreaterThan(step.indexOf('[IX_JobsDLQ_Batch]'));
    expect(step).toContain("IF OBJECT_ID(N'[chokaq].[Batches]', N'U') IS NULL");
    expect(step).toContain('CONSTRAINT [PK_Batches] PRIMARY KEY CLUSTERED (Id)');
    expect(step).toContain('Fired smallint NOT NULL CONSTRAINT [DF_Batches_Fired] DEFAULT 0');
    // BatchCallbacks: statically where JobsHot.Queue is binary, else through EXEC.
    expect(ddl.split('CREATE TABLE [chokaq].[BatchCallbacks]')).toHaveLength(3);
    expect(step).toContain(
      "IF OBJECT_ID(N'[chokaq].[BatchCallbacks]', N'U') IS NULL AND EXISTS (SELECT 1 FROM sys.columns WHERE object_id = OBJECT_ID(N'[chokaq].[JobsHot]') AND name = N'Queue' AND collation_name = N'Latin1_General_100_BIN2')",
    );
    for (const constraint of [
      'CONSTRAINT [PK_BatchCallbacks] PRIMARY KEY CLUSTERED (BatchId, Kind)',
      'CONSTRAINT [CK_BatchCallbacks_Kind] CHECK (Kind IN (1, 2, 4))',
    ]) {
      expect(step.split(constraint)).toHaveLength(3);
    }
    expect(step).toContain(
      "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[chokaq].[BatchCallbacks]') AND name = N'UX_BatchCallbacks_Job')\n  CREATE UNIQUE NONCLUSTERED INDEX [UX_BatchCallbacks_Job] ON [chokaq].[BatchCallbacks] (JobId);",
    );
    // Retention of batches: the settled ones, in the order they settled.
    expect(step).toContain(
      "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[chokaq].[Batches]') AND name = N'IX_Batches_Settled')\n  CREATE NONCLUSTERED INDEX [IX_Batches_Settled] ON [chokaq].[Batches] (SettledAtUtc) WHERE SettledAtUtc IS NOT NULL;",
    );
    expect(step).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(18, /,
    );
  });

  it('batches: every move out of the hot table settles its batches in its transaction, after the pillars and before the counters; the resurrect reopens them; the claim, getJob and both enqueues carry BatchId', () => {
    const settles = [
      ...entries.filter((x) => x.kind === 'move' && !x.operation.startsWith('resurrect')),
      ...entries.filter((x) => x.operation === 'archiveSucceeded.inCallerTransaction'),
    ];
    expect(new Set(settles.map((e) => e.operation))).toEqual(
      new Set([
        'archiveSucceeded',
        'archiveSucceeded.inCallerTransaction',
        'moveToDlq',
        'cancel',
        'archiveZombies',
      ]),
    );
    for (const e of settles) {
      const sql = e.statement.sql;
      const archive = e.operation.startsWith('archiveSucceeded');
      expect([e.name, sql]).toEqual([
        e.name,
        expect.stringMatching(/OUTPUT deleted\.[^;]*deleted\.BatchId[^;]* INTO @Moved \(/),
      ]);
      // The members' counts (callbacks left out), Archive rows as succeeded, DLQ rows as failed.
      expect([e.name, sql]).toEqual([
        e.name,
        expect.stringContaining(
          `SELECT mv.BatchId, ${archive ? 'COUNT(*), 0' : '0, COUNT(*)'} FROM @Moved AS mv\nWHERE mv.BatchId IS NOT NULL AND NOT EXISTS (SELECT 1 FROM [chokaq].[BatchCallbacks] AS x WHERE x.JobId = mv.Id)`,
        ),
      ]);
      // The bits this update fired: the row's Fired before and after the UPDATE, from its OUTPUT.
      expect(sql).toContain(
        'OUTPUT inserted.Id, deleted.Fired AS FiredBefore, inserted.Fired INTO @BatchSettled (Id, FiredBefore, Fired)',
      );
      expect(sql).toContain('(s.Fired & ~s.FiredBefore & c.Kind) <> 0;');
      expect(sql).toMatch(
        /INSERT INTO \[chokaq\]\.\[JobsHot\] \([^)]*BatchId, GroupKey\)\nSELECT c\.JobId, [^;]*ISNULL\(c\.GroupKey, CASE WHEN EXISTS/,
      );
      // Order: the pillar's rows, the batches' rows, the callbacks' hot rows, then the counters.
      const history = sql.search(/INSERT INTO \[chokaq\]\.\[(JobsArchive|JobsDLQ)\]/);
      const batches = sql.indexOf('UPDATE b SET b.Succeeded');
      const callbacks = sql.indexOf('INSERT INTO [chokaq].[JobsHot]');
      const counters = sql.indexOf('[StatsSummary]');
      expect([e.name, history < batches, batches < callbacks, callbacks < counters]).toEqual([
        e.name,
        true,
        true,
        true,
      ]);
      if (sql.includes('BEGIN TRAN;')) expect(sql.indexOf('BEGIN TRAN;')).toBeLessThan(batches);
      if (sql.includes('COMMIT;')) expect(counters).toBeLessThan(sql.indexOf('COMMIT;'));
    }
    for (const e of entries.filter(
      (x) => x.operation.startsWith('resurrect') && x.kind === 'move',
    )) {
      const sql = e.statement.sql;
      expect([e.name, sql]).toEqual([
        e.name,
        expect.stringMatching(
          /INSERT INTO \[chokaq\]\.\[JobsHot\] \([^)]*, BatchId[,)][^)]*\)\nSELECT [^;]*, m\.BatchId[,\n][^;]*FROM @Moved AS m;/,
        ),
      ]);
      const hot = sql.indexOf('INSERT INTO [chokaq].[JobsHot]');
      const reopen = sql.indexOf('UPDATE b SET b.Failed = b.Failed - d.N, b.SettledAtUtc = NULL');
      const counters = sql.indexOf('[StatsSummary]');
      expect([e.name, hot < reopen, reopen < counters]).toEqual([e.name, true, true]);
      expect(sql).not.toContain('UPDATE b SET b.Succeeded');
    }
    // Nothing else writes a batch's counts (retention deletes settled batches, below).
    for (const e of entries) {
      if (settles.includes(e) || e.operation.startsWith('resurrect')) continue;
      expect([e.name, /\[Batches\] AS b\b/.test(e.statement.sql)]).toEqual([
        e.name,
        e.operation === 'getBatch' || e.name === 'applyRetention [batches]',
      ]);
    }
    // Retention: settled batches only, oldest first, skipping the rows a move or a resurrect
    // holds; the predicate is evaluated under the DELETE's update lock, so a batch reopened after
    // the read fails it. Its callbacks go after it, in the same transaction.
    const retention = one('applyRetention', '[batches]').statement.sql;
    expect(retention).toContain(
      'FROM [chokaq].[Batches] AS b WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)\n  WHERE b.SettledAtUtc < @cutoff AND b.SettledAtUtc IS NOT NULL\n  ORDER BY b.SettledAtUtc',
    );
    const gone = retention.indexOf('DELETE FROM Expired OUTPUT deleted.Id INTO @Gone (Id);');
    const callbacksGone = retention.indexOf(
      'DELETE c FROM [chokaq].[BatchCallbacks] AS c INNER JOIN @Gone AS g ON g.Id = c.BatchId;',
    );
    expect(retention).toContain('SET XACT_ABORT ON;');
    expect([
      retention.indexOf('BEGIN TRAN;') < gone,
      gone < callbacksGone,
      callbacksGone < retention.indexOf('COMMIT;'),
    ]).toEqual([true, true, true]);
    expect(retention).not.toMatch(/UPDATE b SET/);
    for (const operation of ['fetchNextBatch', 'fetchNextBatchClaimed']) {
      expect(one(operation).statement.sql).toMatch(/, \w+\.BatchId[,\n]/);
    }
    expect(one('getJob').statement.sql.match(/\b[hda]\.BatchId\b/g)).toHaveLength(3);
    for (const e of entries.filter((x) => x.operation.startsWith('enqueue'))) {
      expect([e.name, e.statement.sql]).toEqual([
        e.name,
        expect.stringMatching(/INSERT INTO \[chokaq\]\.\[JobsHot\] \([^)]*, BatchId, GroupKey\)/),
      ]);
    }
  });

  it('version 19: WaitingOn and HasDependents in every pillar (HasDependents NOT NULL DEFAULT 0 in JobsHot, nullable in the history tables, so no upgrade rewrites them), added where missing; CK_JobsHot_Status admits 7, replaced once; JobDependencies with its indexes; the filtered index of the Waiting rows', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(19);
    const step = ddl.split('\nBEGIN TRAN;\n')[19];
    for (const table of ['JobsHot', 'JobsArchive', 'JobsDLQ']) {
      const hasDependents =
        table === 'JobsHot'
          ? `HasDependents bit NOT NULL CONSTRAINT [DF_${table}_HasDependents] DEFAULT 0`
          : 'HasDependents bit NULL';
      for (const column of ['WaitingOn int NULL', hasDependents]) {
        // A new database gets the column from CREATE TABLE; an older one from the guarded ALTER.
        expect(ddl).toMatch(
          new RegExp(
            `CREATE TABLE \\[chokaq\\]\\.\\[${table}\\] \\([^;]*${column.replace(/[[\]]/g, '\\$&')}`,
          ),
        );
        const name = column.split(' ')[0];
        expect(step).toContain(
          `IF COL_LENGTH(N'[chokaq].[${table}]', N'${name}') IS NULL\n  ALTER TABLE [chokaq].[${table}] ADD ${column};`,
        );
      }
    }
    // Status 7: a new table has it from CREATE TABLE; the constraint of an older one is replaced
    // once (the ledger guards it), dropped only where it exists, added with its rows validated.
    const check = 'CONSTRAINT [CK_JobsHot_Status] CHECK (Status IN (0, 1, 2, 7))';
    expect(ddl).toMatch(
      new RegExp(
        `CREATE TABLE \\[chokaq\\]\\.\\[JobsHot\\] \\([^;]*${check.replace(/[[\]()]/g, '\\$&')}`,
      ),
    );
    expect(step).toContain(
      [
        'IF NOT EXISTS (SELECT 1 FROM [chokaq].[SchemaMigrations] WHERE Version = 19)',
        'BEGIN',
        "  IF OBJECT_ID(N'[chokaq].[CK_JobsHot_Status]', N'C') IS NOT NULL",
        '    ALTER TABLE [chokaq].[JobsHot] DROP CONSTRAINT [CK_JobsHot_Status];',
        `  ALTER TABLE [chokaq].[JobsHot] ADD ${check};`,
        'END;',
      ].join('\n'),
    );
    expect(step).not.toMatch(/NOCHECK/);
    // The edges: keyed by the dependency first (a move reads the edges of the rows it moved),
    // their ids in the install's collation, as every id column.
    expect(step).toContain("IF OBJECT_ID(N'[chokaq].[JobDependencies]', N'U') IS NULL");
    for (const line of [
      '    DependsOn varchar(36) NOT NULL,',
      '    JobId varchar(36) NOT NULL,',
      '    OnFailure tinyint NOT NULL,',
      '    State tinyint NOT NULL,',
      '    NeedsCheck bit NOT NULL,',
      '    CreatedAtUtc datetime2(3) NOT NULL,',
      '    SettledAtUtc datetime2(3) NULL,',
      '    CONSTRAINT [PK_JobDependencies] PRIMARY KEY CLUSTERED (DependsOn, JobId),',
      '    CONSTRAINT [CK_JobDependencies_OnFailure] CHECK (OnFailure IN (0, 1, 2)),',
      '    CONSTRAINT [CK_JobDependencies_State] CHECK (State IN (0, 1, 2, 3, 4))',
    ]) {
      expect(step).toContain(line);
    }
    for (const index of [
      'CREATE NONCLUSTERED INDEX [IX_JobDependencies_Job] ON [chokaq].[JobDependencies] (JobId);',
      'CREATE NONCLUSTERED INDEX [IX_JobDependencies_Check] ON [chokaq].[JobDependencies] (CreatedAtUtc) WHERE NeedsCheck = 1;',
      'CREATE NONCLUSTERED INDEX [IX_JobsHot_Waiting] ON [chokaq].[JobsHot] (Queue, EnqueuedAtUtc) WHERE Status = 7;',
    ]) {
      expect(step).toContain(`\n  ${index}`);
    }
    // The hot table's index last: the workers' table waits the shortest time.
    expect(step.indexOf('[IX_JobsHot_Waiting]')).toBeGreaterThan(
      step.indexOf('[IX_JobDependencies_Check]'),
    );
    expect(step).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(19, /,
    );
  });

  it("dependencies: every move out of the hot table settles its dependents' edges in its transaction, after the pillar and before the batches and counters, dependents in id order and only while Waiting; the resurrect copies the columns and touches no edge", () => {
    const settles = [
      ...entries.filter((x) => x.kind === 'move' && !x.operation.startsWith('resurrect')),
      ...entries.filter((x) => x.operation === 'archiveSucceeded.inCallerTransaction'),
    ];
    expect(new Set(settles.map((e) => e.operation))).toEqual(
      new Set([
        'archiveSucceeded',
        'archiveSucceeded.inCallerTransaction',
        'moveToDlq',
        'cancel',
        'archiveZombies',
      ]),
    );
    for (const e of settles) {
      const sql = e.statement.sql;
      const archive = e.operation.startsWith('archiveSucceeded');
      expect([e.name, sql]).toEqual([
        e.name,
        expect.stringMatching(/OUTPUT deleted\.[^;]*deleted\.HasDependents[^;]* INTO @Moved \(/),
      ]);
      // Only moved rows that have dependents look up edges; each one's range of the primary key.
      expect(sql).toContain(
        'INSERT INTO @DepMoved (Id) SELECT mv.Id FROM @Moved AS mv WHERE mv.HasDependents = 1;\nIF EXISTS (SELECT 1 FROM @DepMoved)\nBEGIN\n',
      );
      const edges = sql.indexOf(
        'FROM @DepMoved AS m\nINNER LOOP JOIN [chokaq].[JobDependencies] AS e ON e.DependsOn = m.Id\n',
      );
      // The Archive: every waiting edge succeeded. The DLQ: ignore → ignored, cancel → failed and
      // marked for the check pass, block left waiting.
      expect([e.name, sql]).toEqual([
        e.name,
        expect.stringContaining(
          archive
            ? 'UPDATE e SET e.State = 1, e.NeedsCheck = 0, e.SettledAtUtc = @now\nOUTPUT inserted.JobId, inserted.State INTO @DepSettled (JobId, State)\nFROM @DepMoved AS m\nINNER LOOP JOIN [chokaq].[JobDependencies] AS e ON e.DependsOn = m.Id\nWHERE e.State = 0;'
            : 'UPDATE e SET e.State = CASE WHEN e.OnFailure = 1 THEN 2 ELSE 3 END, e.NeedsCheck = CASE WHEN e.OnFailure = 2 THEN 1 ELSE 0 END, e.SettledAtUtc = @now\nOUTPUT inserted.JobId, inserted.State INTO @DepSettled (JobId, State)\nFROM @DepMoved AS m\nINNER LOOP JOIN [chokaq].[JobDependencies] AS e ON e.DependsOn = m.Id\nWHERE e.State = 0 AND e.OnFailure <> 0;',
        ),
      ]);
      // Succeeded and ignored edges release; a failed one keeps counting.
      expect(sql).toContain(
        'SELECT s.JobId, COUNT(*) FROM @DepSettled AS s WHERE s.State IN (1, 2) GROUP BY s.JobId;',
      );
      const released = sql.indexOf(
        'FROM @DepReleased AS d\nINNER LOOP JOIN [chokaq].[JobsHot] AS h ON h.Id = d.JobId\nWHERE h.Status = 7;',
      );
      expect(sql).toContain(
        'UPDATE h SET h.WaitingOn = h.WaitingOn - d.N, h.Status = CASE WHEN h.WaitingOn - d.N = 0 THEN 0 ELSE 7 END,\n' +
          '  h.EnqueuedAtUtc = CASE WHEN h.WaitingOn - d.N = 0 THEN @now ELSE h.EnqueuedAtUtc END,\n' +
          '  h.DueAtUtc = CASE WHEN h.WaitingOn - d.N = 0 THEN ISNULL(h.ScheduledAtUtc, @now) ELSE h.DueAtUtc END,',
      );
      // Order: the pillar's rows, the edges, the dependents' hot rows, the batches, the counters.
      const history = sql.search(/INSERT INTO \[chokaq\]\.\[(JobsArchive|JobsDLQ)\]/);
      const batches = sql.indexOf('UPDATE b SET b.Succeeded');
      const counters = sql.indexOf('[StatsSummary]');
      expect([
        e.name,
        history < edges,
        edges < released,
        released < batches,
        batches < counters,
      ]).toEqual([e.name, true, true, true, true]);
      if (sql.includes('BEGIN TRAN;')) expect(sql.indexOf('BEGIN TRAN;')).toBeLessThan(edges);
      if (sql.includes('COMMIT;')) expect(counters).toBeLessThan(sql.indexOf('COMMIT;'));
    }
    // A cancel takes Waiting rows too; the check pass's move takes only a Waiting row; the other
    // moves by id take any hot row, as before.
    expect(one('cancel').statement.sql).toContain('WHERE h.Status IN (0, 1, 7);');
    expect(one('moveToDlq', 'waiting').statement.sql).toContain(
      'WHERE h.Id = CAST(@0 AS varchar(36)) AND h.Status = 7;',
    );
    expect(one('moveToDlq', 'admin').statement.sql).toContain(
      'WHERE h.Id = CAST(@0 AS varchar(36));',
    );
    // A dependency failed lands Cancelled and counts as a cancellation (dlqStatusFor).
    for (const variant of ['lease', 'admin', 'waiting']) {
      const sql = one('moveToDlq', variant).statement.sql;
      const why = variant === 'lease' ? '@3' : '@1';
      expect([variant, sql]).toEqual([
        variant,
        expect.stringContaining(
          `CASE WHEN ${why} IN (1, 12) THEN 5 WHEN ${why} IN (2) THEN 6 ELSE 4 END`,
        ),
      ]);
      expect(sql).toContain(`CancelledTotal bigint NOT NULL`);
      expect(sql).toContain(`SUM(CAST(CASE WHEN ${why} IN (1, 12) THEN 1 ELSE 0 END AS bigint))`);
      expect(sql).toContain(`CAST(CASE WHEN ${why} IN (1, 12) THEN 2 ELSE 1 END AS tinyint)`);
    }
    for (const e of entries.filter(
      (x) => x.operation.startsWith('resurrect') && x.kind === 'move',
    )) {
      expect([e.name, e.statement.sql]).toEqual([
        e.name,
        expect.stringMatching(
          /INSERT INTO \[chokaq\]\.\[JobsHot\] \([^)]*, WaitingOn, HasDependents\)\nSELECT [^;]*, m\.WaitingOn, ISNULL\(m\.HasDependents, 0\)\nFROM @Moved AS m;/,
        ),
      ]);
      expect(e.statement.sql).not.toContain('[JobDependencies]');
    }
    // What else touches the edges: the enqueue's insert, the check pass, purges and retention,
    // and the read of a job's edges.
    const touching = new Set(
      entries
        .filter((x) => x.statement.sql.includes('[JobDependencies]'))
        .filter((x) => !settles.includes(x) && x.kind !== 'ddl')
        .map((x) => x.name.replace(/ \[.*$/, '')),
    );
    expect([...touching].sort()).toEqual(
      [
        'applyRetention',
        'checkDone',
        'checkTake',
        'dropPartition',
        'getDependencies',
        'insertDependencies',
        'insertDependencies.inCallerTransaction',
        'purgeDlq',
        'purgeDlqByFilter',
      ].sort(),
    );
    for (const e of entries.filter((x) => x.operation === 'applyRetention')) {
      expect([e.name, e.statement.sql.includes('[JobDependencies]')]).toEqual([
        e.name,
        /^applyRetention \[(archive|dlq)( partitioned)?\]$/.test(e.name),
      ]);
    }
  });

  it('dependencies: purge and retention mark the waiting edges of the deleted dependencies removed for the check pass and delete the deleted dependents’ edges, in their transaction', () => {
    const removals = entries.filter(
      (x) =>
        ['purgeDlq', 'purgeDlqByFilter'].includes(x.operation) ||
        /^applyRetention \[(archive|dlq)( partitioned)?\]$/.test(x.name),
    );
    expect(removals.length).toBeGreaterThan(3);
    for (const e of removals) {
      const sql = e.statement.sql;
      const gone = sql.indexOf(
        'OUTPUT deleted.Id, deleted.HasDependents, deleted.WaitingOn INTO @Gone (Id, HasDependents, WaitingOn)',
      );
      const attempts = sql.indexOf('DELETE x FROM [chokaq].[JobAttempts] AS x');
      const guard = sql.indexOf(
        'IF EXISTS (SELECT 1 FROM @Gone AS g WHERE g.HasDependents = 1 OR g.WaitingOn IS NOT NULL)',
      );
      const removed = sql.indexOf(
        'UPDATE e SET e.State = 4, e.NeedsCheck = 1, e.SettledAtUtc = @now\nFROM @Gone AS g\nINNER LOOP JOIN [chokaq].[JobDependencies] AS e ON e.DependsOn = g.Id\nWHERE g.HasDependents = 1 AND e.State = 0\n  AND NOT EXISTS (SELECT 1 FROM @Gone AS x WHERE x.Id = e.JobId AND x.WaitingOn IS NOT NULL);',
      );
      const dropped = sql.indexOf(
        'DELETE e\nFROM @Gone AS g\nINNER LOOP JOIN [chokaq].[JobDependencies] AS e ON e.JobId = g.Id\nWHERE g.WaitingOn IS NOT NULL;',
      );
      expect([
        e.name,
        sql.indexOf('BEGIN TRAN;') < gone,
        gone < attempts,
        attempts < guard,
        guard < removed,
        removed < dropped,
        dropped < sql.indexOf('COMMIT;'),
      ]).toEqual([e.name, true, true, true, true, true, true]);
      expect(sql).toContain(
        'DECLARE @Gone TABLE (Id varchar(36) NOT NULL PRIMARY KEY, HasDependents bit NULL, WaitingOn int NULL);',
      );
      expect(sql).toContain('DECLARE @now datetime2(3) = SYSUTCDATETIME();');
    }
  });

  it('dependencies: an enqueue marks its dependencies by key (hot, then DLQ) to its COMMIT and writes its edges in its transaction; the check pass picks the marked edges by key, skipping those others hold; the counts and lists see status 7', () => {
    const hintsOf = (sql: string, table: string) =>
      tableHints(sql)
        .filter((r) => r.table.replace(/\s+/g, '') === `[chokaq].[${table}]`)
        .map((r) => r.hints.join(', '));
    for (const e of entries.filter((x) => x.operation.startsWith('locateDependencies'))) {
      const sql = e.statement.sql;
      const hot = sql.indexOf(
        'UPDATE h SET h.HasDependents = 1\nOUTPUT inserted.Id INTO @Hot (Id)\nFROM @Ids AS i\nINNER LOOP JOIN [chokaq].[JobsHot] AS h ON h.Id = i.Id;',
      );
      const dlq = sql.indexOf(
        'UPDATE d SET d.HasDependents = 1\nOUTPUT inserted.Id INTO @Dlq (Id)\nFROM @Ids AS i\nINNER LOOP JOIN [chokaq].[JobsDLQ] AS d ON d.Id = i.Id;',
      );
      // The Archive after both, in a statement of its own: it starts after a move the UPDATE
      // waited for committed. A plain read: archived rows never change.
      const archived = sql.indexOf(
        "SELECT a.Id, 'archive' FROM @Ids AS i INNER JOIN [chokaq].[JobsArchive] AS a ON a.Id = i.Id;",
      );
      expect([e.name, hot >= 0, hot < dlq, dlq < archived]).toEqual([e.name, true, true, true]);
      for (const table of ['JobsHot', 'JobsDLQ', 'JobsArchive']) {
        expect([e.name, table, hintsOf(sql, table).filter((h) => h !== '')]).toEqual([
          e.name,
          table,
          [],
        ]);
      }
    }
    const insert = one('insertDependencies').statement.sql;
    expect(insert).toContain(
      'INSERT INTO [chokaq].[JobDependencies] (DependsOn, JobId, OnFailure, State, NeedsCheck, CreatedAtUtc, SettledAtUtc)',
    );
    expect(insert).toContain(
      'UPDATE h SET h.WaitingOn = w.N, h.Status = CASE WHEN w.N = 0 THEN 0 ELSE 7 END, h.LastUpdatedUtc = @now\nFROM @Waits AS w\nINNER LOOP JOIN [chokaq].[JobsHot] AS h ON h.Id = w.Id\nWHERE h.Status = 7;',
    );
    // Every batch of an enqueue with dependencies runs in its transaction: none begins or ends one.
    for (const e of entries.filter((x) =>
      /^(locateDependencies|insertDependencies|checkTake|checkDone)\b/.test(x.operation),
    )) {
      expect([e.name, /\b(BEGIN\s+TRAN|COMMIT|ROLLBACK)\b/i.test(e.statement.sql)]).toEqual([
        e.name,
        false,
      ]);
    }
    for (const e of entries.filter(
      (x) => x.name.startsWith('enqueueMany') && x.name.includes('[waiting]'),
    )) {
      expect(e.statement.sql).toContain('i.Priority, 7, 0,');
    }
    // The check pass: candidates through the filtered index without update locks, then picked by
    // key, skipping the edges another pass holds; the mark re-checked under the lock.
    const take = one('checkTake').statement.sql;
    expect(hintsOf(take, 'JobDependencies').sort()).toEqual([
      'READCOMMITTEDLOCK, READPAST, ROWLOCK',
      'UPDLOCK, READPAST, ROWLOCK, FORCESEEK',
    ]);
    expect(take).toContain('WHERE c.NeedsCheck = 1\nORDER BY c.CreatedAtUtc;');
    expect(take).toContain(
      'FROM @Candidates AS c\nINNER LOOP JOIN [chokaq].[JobDependencies] AS e WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON e.DependsOn = c.DependsOn AND e.JobId = c.JobId\nWHERE e.NeedsCheck = 1;',
    );
    expect(one('checkDone').statement.sql).toContain(
      'UPDATE e SET e.NeedsCheck = 0\nFROM @Done AS d\nINNER LOOP JOIN [chokaq].[JobDependencies] AS e ON e.DependsOn = d.DependsOn AND e.JobId = d.JobId;',
    );
    // A job's edges: a plain read, at most 1,000 dependents and one more.
    const read = one('getDependencies').statement.sql;
    expect(tableHints(read).filter((r) => r.hints.length > 0)).toEqual([]);
    expect(read).toContain("SELECT TOP (1001) 'by' AS Dir");
    // The Waiting rows: counted (telemetry) and listed by the literal status 7.
    expect(one('getSummary').statement.sql).toContain(
      '(SELECT COUNT_BIG(*) FROM [chokaq].[JobsHot] AS c WITH (NOLOCK) WHERE c.Status = 7) AS Waiting',
    );
    expect(one('getQueueStats').statement.sql).toContain(
      'SELECT z.Queue, COUNT_BIG(*) AS Waiting FROM [chokaq].[JobsHot] AS z WITH (NOLOCK) WHERE z.Status = 7 GROUP BY z.Queue',
    );
    expect(one('listJobs.hot', 'waiting').statement.sql).toContain('j.Status = 7');
    expect(one('countExactly.hot', 'waiting').statement.sql).toContain('Status = 7');
  });

  it("groups: the claim's walk reads without update locks and one group per step; retention skips the rows others hold", () => {
    const hintsOf = (sql: string, table: string) =>
      tableHints(sql)
        .filter((r) => r.table.replace(/\s+/g, '') === `[chokaq].[${table}]`)
        .map((r) => r.hints.join(', '));
    for (const variant of ['[start]', '[start groups first]']) {
      const sql = one('fetchNextBatch', variant).statement.sql;
      // JobGroups: read by key (READCOMMITTEDLOCK, a seek), written by key, inserted range-locked.
      expect([variant, hintsOf(sql, 'JobGroups').sort()]).toEqual([
        variant,
        ['READCOMMITTEDLOCK, FORCESEEK', 'UPDLOCK, HOLDLOCK', 'UPDLOCK, ROWLOCK, FORCESEEK'],
      ]);
      // The walk: a TOP (1) per step in GroupKey order, after the last group, in a WHILE loop.
      expect(sql).toContain(
        'WHERE h.Queue = @gQueue AND h.Status = 0 AND h.GroupKey IS NOT NULL AND h.GroupKey > @gAfter\n        ORDER BY h.GroupKey;',
      );
      expect(sql).toMatch(/WHILE @gVisit < @6 AND @gFound < @gBudget\n/);
      expect(sql).toContain('IF @gNext IS NULL OR (@gWrapped = 1 AND @gPast = 1) BREAK;');
      // A group's running rows are counted as the queue's are: a locking read of committed rows.
      expect(sql).toContain(
        'SELECT @gRunning = COUNT(*) FROM [chokaq].[JobsHot] AS a WITH (READCOMMITTEDLOCK)',
      );
      // Round-robin over the picked rows only.
      expect(sql).toContain('ORDER BY b.Rn, b.N');
    }
    const groups = one('applyRetention', '[groups]').statement.sql;
    expect(hintsOf(groups, 'JobGroups')).toEqual(['READCOMMITTEDLOCK, READPAST, ROWLOCK']);
    expect(hintsOf(groups, 'Queues')).toEqual([]);
    const groupless = one('applyRetention', '[groupless]').statement.sql;
    expect(hintsOf(groupless, 'JobsHot')).toEqual(['READCOMMITTEDLOCK, READPAST, ROWLOCK']);
    expect(groupless).toContain("UPDATE Stray SET GroupKey = N''");
  });

  it("dedupe keys: the key's row (or range) update-locked to COMMIT by the take and the holder read, the holder's rows read unlocked, the replace guarded; retention skips held keys", () => {
    const hintsOf = (sql: string, table: string) =>
      tableHints(sql)
        .filter((r) => r.table.replace(/\s+/g, '') === `[chokaq].[${table}]`)
        .map((r) => r.hints.join(', '));
    for (const operation of ['dedupeTake', 'dedupeHolder']) {
      for (const e of entries.filter((x) => x.operation.startsWith(operation))) {
        const sql = e.statement.sql;
        // The key's one read, under UPDLOCK, HOLDLOCK: a key-range update lock where no row is.
        expect([e.name, hintsOf(sql, 'DedupeKeys')]).toEqual([e.name, ['UPDLOCK, HOLDLOCK']]);
        expect(sql).toMatch(/WITH \(UPDLOCK, HOLDLOCK\)\s+(WHERE k\.\[Key\] = @0|LEFT JOIN)/);
        // The holder's hot and archive rows are read, never locked beyond READ COMMITTED.
        for (const table of ['JobsHot', 'JobsArchive']) {
          expect([e.name, hintsOf(sql, table).filter((h) => h !== '')]).toEqual([e.name, []]);
        }
      }
    }
    const take = one('dedupeTake').statement.sql;
    expect(take).toContain(
      'WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[DedupeKeys] AS k WITH (UPDLOCK, HOLDLOCK) WHERE k.[Key] = @0);',
    );
    // Unique keys have no window end; the others end a window from the database clock's now.
    expect(take).toContain('CASE WHEN @2 = 3 THEN NULL ELSE DATEADD(MILLISECOND');
    const replace = one('dedupeReplace').statement.sql;
    expect(replace).toContain('WHERE h.Id = CAST(@0 AS varchar(36)) AND h.Status = 0;');
    expect(replace).toContain(
      'h.ScheduledAtUtc = @due, h.DueAtUtc = @due, h.LastUpdatedUtc = @now',
    );
    // The key's window moves only with a replaced holder, to end at its new run time.
    expect(replace).toContain(
      'UPDATE k SET k.WindowStartedUtc = @now, k.WindowEndsUtc = @due\nFROM [chokaq].[DedupeKeys] AS k\nWHERE k.[Key] = @5 AND EXISTS (SELECT 1 FROM @Replaced);',
    );
    // Every step runs inside the enqueue's transaction: none begins, commits or rolls back one.
    for (const e of entries.filter((x) => x.operation.startsWith('dedupe'))) {
      expect([e.name, /\b(BEGIN\s+TRAN|COMMIT|ROLLBACK)\b/i.test(e.statement.sql)]).toEqual([
        e.name,
        false,
      ]);
    }
    // Retention: the key rows an enqueue holds are skipped; the holder's rows are waited for.
    const retention = one('applyRetention', 'dedupe keys').statement.sql;
    expect(hintsOf(retention, 'DedupeKeys')).toEqual(['READCOMMITTEDLOCK, READPAST, ROWLOCK']);
    for (const table of ['JobsHot', 'JobsArchive']) {
      expect(hintsOf(retention, table).filter((h) => h !== '')).toEqual([]);
    }
    expect(retention).toContain('SELECT TOP (@0) k.[Key] FROM [chokaq].[DedupeKeys] AS k');
    expect(retention).toContain('SELECT COUNT_BIG(*) AS Affected FROM @Gone;');
    // The job's key (getJob): a plain read by the job index.
    expect(one('dedupeOfJob').statement.sql).toMatch(
      /FROM \[chokaq\]\.\[DedupeKeys\] AS k WHERE k\.JobId = CAST\(@0 AS varchar\(36\)\);$/,
    );
  });

  it('the bootstrap bounds each DDL lock wait (a waiting Sch-M queues the workers behind it), after taking the applock', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    const applock = ddl.indexOf('EXEC @lockResult = sp_getapplock');
    const bound = ddl.indexOf(`SET LOCK_TIMEOUT ${SCHEMA_LOCK_WAIT_MS};`);
    const firstDdl = ddl.search(/CREATE TABLE|ALTER TABLE|CREATE (UNIQUE )?NONCLUSTERED INDEX/);
    expect(SCHEMA_LOCK_WAIT_MS).toBeLessThanOrEqual(10_000);
    expect(applock).toBeGreaterThan(0);
    expect(bound).toBeGreaterThan(applock);
    expect(bound).toBeLessThan(firstDdl);
    // 1222 is what the bound raises: the storage's transient retry runs the bootstrap again.
    expect(isTransientMssqlError({ number: 1222 })).toBe(true);
  });

  it('each schema version commits on its own, under the applock taken again, with JobsHot altered last', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    const steps = ddl.split('\nBEGIN TRAN;\n').slice(1);
    expect(steps).toHaveLength(MSSQL_SCHEMA_VERSION);
    steps.forEach((step, i) => {
      // The applock first, the version's ledger row last, then COMMIT: a failed step rolls back
      // only itself, and the versions before it stay recorded.
      expect(step.startsWith('EXEC @lockResult = sp_getapplock')).toBe(true);
      const commit = step.indexOf('\nCOMMIT;');
      expect(commit).toBeGreaterThan(0);
      const body = step.slice(0, commit);
      expect(
        body.match(/INSERT INTO \[chokaq\]\.\[SchemaMigrations\][^;]*VALUES \((\d+),/g),
      ).toEqual([expect.stringContaining(`VALUES (${i + 1},`)]);
      expect(body).not.toContain('BEGIN TRAN');
      // Within a step, the history tables first and the hot table last: the workers' table is
      // locked for the shortest time.
      for (const column of [
        'ProgressNote',
        'TraceContext',
        'PayloadVersion',
        'WaitingOn',
        'HasDependents',
      ]) {
        const adds = [
          ...body.matchAll(
            new RegExp(`ALTER TABLE \\[chokaq\\]\\.\\[(\\w+)\\] ADD ${column}`, 'g'),
          ),
        ].map(([, table]) => table);
        if (adds.length > 0) expect(adds).toEqual(['JobsArchive', 'JobsDLQ', 'JobsHot']);
      }
    });
    // A busy applock (another process upgrading) is retried, not a failed start.
    expect(ddl).toContain(`THROW ${SCHEMA_LOCK_BUSY_ERROR},`);
    expect(isTransientMssqlError({ number: SCHEMA_LOCK_BUSY_ERROR })).toBe(true);
  });

  it('version 10: JobAttempts, created where missing; the moves that end a run write its row in their transaction, the archive move and the claim none; purge and retention delete the rows with their jobs', () => {
    const ddl = mssqlSchemaDdl('chokaq');
    expect(MSSQL_SCHEMA_VERSION).toBeGreaterThanOrEqual(10);
    expect(ddl).toContain("IF OBJECT_ID(N'[chokaq].[JobAttempts]', N'U') IS NULL");
    expect(ddl).toMatch(
      /CREATE TABLE \[chokaq\]\.\[JobAttempts\] \([^;]*CONSTRAINT \[PK_JobAttempts\] PRIMARY KEY CLUSTERED \(JobId, Seq\)/,
    );
    expect(ddl).toMatch(/Error nvarchar\(4000\) NULL/);
    expect(ddl).toMatch(
      /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\) OUTPUT inserted\.Version INTO @Applied \(Version\) VALUES \(10, /,
    );
    const writesAttempts = /INSERT INTO \[chokaq\]\.\[JobAttempts\] /;
    /** The attempt insert comes after the hot row changed and before COMMIT: one transaction. */
    const inTransaction = (sql: string, change: RegExp) => {
      const begin = sql.indexOf('BEGIN TRAN;');
      const changed = sql.search(change);
      const insert = sql.search(writesAttempts);
      return begin >= 0 && begin < changed && changed < insert && insert < sql.indexOf('COMMIT;');
    };
    for (const [operation, change] of [
      [
        'rescheduleForRetry',
        /OUTPUT inserted\.Id, inserted\.Queue, deleted\.AttemptCount, deleted\.WorkerId, deleted\.LeaseId, deleted\.StartedAtUtc INTO @Retried/,
      ],
      ['moveToDlq', /OUTPUT deleted\.Id, [^;]* INTO @Moved \(/],
      ['archiveZombies', /OUTPUT deleted\.Id, [^;]* INTO @Moved \(/],
    ] as const) {
      for (const e of entries.filter((x) => x.operation === operation)) {
        expect([e.name, inTransaction(e.statement.sql, change)]).toEqual([e.name, true]);
      }
    }
    // Only runs that started (Processing) have an attempt; a zombie's names its lost worker.
    expect(one('moveToDlq', 'lease').statement.sql).toContain(
      'FROM @Moved AS mv WHERE mv.Status = 2',
    );
    expect(one('archiveZombies').statement.sql).toMatch(
      /SELECT r\.Id, r\.AttemptCount, r\.WorkerId, r\.LeaseId, r\.StartedAtUtc, 'zombie' AS Outcome/,
    );
    for (const e of entries.filter((x) =>
      ['archiveSucceeded', 'fetchNextBatch', 'markAsProcessing', 'cancel', 'release'].includes(
        x.operation,
      ),
    )) {
      expect([e.name, writesAttempts.test(e.statement.sql)]).toEqual([e.name, false]);
    }
    for (const [operation, variant] of [
      ['purgeDlq', undefined],
      ['applyRetention', 'archive'],
      ['applyRetention', 'dlq'],
    ] as const) {
      const sql = one(operation, variant).statement.sql;
      const deleted = sql.search(/OUTPUT deleted\.Id\b[^;]* INTO @Gone \(Id\b/);
      const history = sql.indexOf(
        'DELETE x FROM [chokaq].[JobAttempts] AS x INNER JOIN @Gone AS g',
      );
      expect([operation, variant, sql.indexOf('BEGIN TRAN;') < deleted, deleted < history]).toEqual(
        [operation, variant, true, true],
      );
      expect(history).toBeLessThan(sql.indexOf('COMMIT;'));
    }
    for (const e of entries.filter((x) => x.operation === 'purgeDlqByFilter')) {
      expect(e.statement.sql).toContain('DELETE x FROM [chokaq].[JobAttempts] AS x');
    }
  });

  it('the audit row joins the transaction of its change: no transaction of its own, no COMMIT', () => {
    for (const e of entries.filter((x) => x.operation === 'recordAudit')) {
      expect([e.name, /\b(BEGIN TRAN|COMMIT|ROLLBACK)\b/.test(e.statement.sql)]).toEqual([
        e.name,
        false,
      ]);
    }
    // The secret: one row however many processes store one at once (a key-range update lock).
    expect(one('confirmationSecret').statement.sql).toContain('WITH (UPDLOCK, HOLDLOCK)');
  });

  it('the dashboard reads never count the archive or the DLQ; countExactly does, without NOLOCK', () => {
    for (const e of entries) {
      if (e.kind !== 'telemetry' || e.operation === 'getTopDlqErrors') continue;
      expect([e.name, /FROM \[chokaq\]\.\[(JobsArchive|JobsDLQ)\]/.test(e.statement.sql)]).toEqual([
        e.name,
        false,
      ]);
    }
    // The top errors read a bounded window: the newest rows of the last 24 hours, at most TOP (n).
    const top = one('getTopDlqErrors', 'no filter').statement.sql;
    expect(top).toMatch(/SELECT TOP \(@0\) /);
    expect(top).toContain('d.FailedAtUtc >= @since');
    expect(top).toContain('ORDER BY d.FailedAtUtc DESC;');
    const exact = one('countExactly.archive', 'filter none').statement.sql;
    expect(exact).toMatch(
      /\nSELECT COUNT_BIG\(\*\) AS Total FROM \[chokaq\]\.\[JobsArchive\] AS j;$/,
    );
  });

  it('getSummary estimates the archive and the DLQ from sys.partitions instead of counting them', () => {
    const sql = one('getSummary').statement.sql;
    expect(sql).not.toMatch(/FROM \[chokaq\]\.\[(JobsArchive|JobsDLQ)\]/);
    for (const table of ['JobsArchive', 'JobsDLQ']) {
      expect(sql).toContain(
        `FROM sys.partitions AS p WHERE p.object_id = OBJECT_ID(N'[chokaq].[${table}]') AND p.index_id IN (0, 1)`,
      );
    }
  });

  describe('fails on deliberately broken statements', () => {
    const broken = (entry: CatalogueEntry, from: string | RegExp, to: string): CatalogueEntry => {
      const sql = entry.statement.sql.replace(from, to);
      expect(sql).not.toBe(entry.statement.sql);
      return { ...entry, statement: { ...entry.statement, sql } };
    };

    it('a claim without READPAST', () => {
      const claim = one('fetchNextBatch');
      expect(
        lockViolations(
          broken(
            claim,
            'WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)',
            'WITH (UPDLOCK, ROWLOCK, FORCESEEK)',
          ),
        ),
      ).toContain('claim: candidates are not read WITH (UPDLOCK, READPAST, ROWLOCK)');
    });

    it('a claim that ranks the backlog with ROW_NUMBER()', () => {
      const claim = one('fetchNextBatch', 'start');
      const ranked = broken(
        claim,
        'SELECT TOP (2 * m.Slots) h.Priority,',
        'SELECT TOP (2 * m.Slots) ROW_NUMBER() OVER (PARTITION BY h.Queue ORDER BY h.Priority DESC) AS R, h.Priority,',
      );
      expect(lockViolations(claim)).toEqual([]);
      expect(lockViolations(ranked)).toContain('claim: ROW_NUMBER() over the backlog (O(backlog))');
    });

    it('a claim whose active count may come from a snapshot', () => {
      const claim = one('fetchNextBatch');
      expect(
        lockViolations(
          broken(
            claim,
            'AS h WITH (READCOMMITTEDLOCK)\n  WHERE h.Status IN (1, 2)',
            'AS h\n  WHERE h.Status IN (1, 2)',
          ),
        ),
      ).toContain('claim: the active count is not read WITH (READCOMMITTEDLOCK)');
    });

    it('a claim that reads dirty', () => {
      const claim = one('fetchNextBatch');
      expect(lockViolations(broken(claim, 'WITH (READCOMMITTEDLOCK)', 'WITH (NOLOCK)'))).toContain(
        'dirty read (NOLOCK / READ UNCOMMITTED) outside a telemetry read',
      );
    });

    it('UPDLOCK with NOLOCK on one table reference', () => {
      const claim = one('fetchNextBatch');
      const violations = lockViolations(
        broken(claim, 'WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)', 'WITH (UPDLOCK, NOLOCK)'),
      );
      expect(violations.some((v) => v.includes('UPDLOCK/XLOCK together with NOLOCK'))).toBe(true);
    });

    it('a move without XACT_ABORT, or capturing nothing', () => {
      const move = one('archiveSucceeded');
      expect(lockViolations(broken(move, 'SET XACT_ABORT ON;', '')).join('\n')).toMatch(
        /XACT_ABORT/,
      );
      expect(
        lockViolations(broken(move, /OUTPUT deleted\.[^;]*? INTO @Moved \([^)]*\)/, '')).join('\n'),
      ).toMatch(/missing .*OUTPUT deleted/);
      expect(lockViolations(broken(move, /COMMIT;/, '')).join('\n')).toMatch(/COMMIT/);
    });

    it('a purge or retention batch whose READPAST has no READCOMMITTEDLOCK', () => {
      for (const entry of [
        one('purgeDlqByFilter', 'no filter'),
        one('applyRetention', 'dlq'),
        one('applyRetention', 'dedupe keys'),
        one('applyRetention', '[batches]'),
      ]) {
        expect(entry.statement.sql).toContain('WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)');
        expect(
          lockViolations(
            broken(
              entry,
              'WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)',
              'WITH (READPAST, ROWLOCK)',
            ),
          ).join('\n'),
        ).toMatch(/READPAST without READCOMMITTEDLOCK/);
      }
    });

    it('a claim whose Queues lock may scan: no FORCESEEK, or not a loop from @Budgeted', () => {
      const claim = one('fetchNextBatch');
      const rule = 'claim: Queues rows are not update-locked by key from @Budgeted';
      expect(lockViolations(claim)).toEqual([]);
      expect(
        lockViolations(
          broken(
            claim,
            'WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name',
            'WITH (UPDLOCK, ROWLOCK) ON q.Name',
          ),
        ),
      ).toContain(rule);
      expect(
        lockViolations(
          broken(claim, 'FROM @Budgeted AS b\nINNER LOOP JOIN', 'FROM @Budgeted AS b\nINNER JOIN'),
        ),
      ).toContain(rule);
    });

    it('a claim that does not read the budget again under the lock', () => {
      const claim = one('fetchNextBatch');
      expect(
        lockViolations(broken(claim, 'SET r.Budget = q.MaxWorkers', 'SET r.Budget = r.Budget')),
      ).toContain('claim: MaxWorkers and the group limits are not re-read under the Queues lock');
      expect(
        lockViolations(broken(claim, 'r.RateMax = q.RateLimitMax', 'r.RateMax = r.RateMax')),
      ).toContain('claim: MaxWorkers and the group limits are not re-read under the Queues lock');
      expect(
        lockViolations(broken(claim, /, r\.Grouped = CASE WHEN [^\n]* END\n/, '\n')),
      ).toContain('claim: MaxWorkers and the group limits are not re-read under the Queues lock');
      expect(lockViolations(broken(claim, 'SET @now = SYSUTCDATETIME();\n', ''))).toContain(
        'claim: the rate allowance is not computed at a clock read after the Queues locks',
      );
      expect(
        lockViolations(
          broken(claim, /UPDATE r SET r\.Budget = 0, r\.RateMax = NULL\n[^;]*;\n/, ''),
        ),
      ).toContain(
        'claim: a queue budgeted or grouped after the unlocked read is claimed without its limits',
      );
      expect(
        lockViolations(
          broken(claim, ' OR q.GroupConcurrency IS NOT NULL OR q.GroupRateMax IS NOT NULL)', ')'),
        ),
      ).toContain(
        'claim: a queue budgeted or grouped after the unlocked read is claimed without its limits',
      );
    });

    it('a candidate read under UPDLOCK (claim, rescues, resurrect by filter)', () => {
      const cases: Array<[CatalogueEntry, string]> = [
        [one('fetchNextBatch'), 'AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)'],
        [one('archiveZombies'), 'AS z WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)'],
        [one('recoverAbandoned'), 'AS f WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)'],
        [one('resurrectByFilter', 'type'), 'AS d WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)'],
      ];
      for (const [entry, read] of cases) {
        expect([entry.name, lockViolations(entry)]).toEqual([entry.name, []]);
        const locked = read.replace('READCOMMITTEDLOCK', 'UPDLOCK');
        expect(lockViolations(broken(entry, read, locked)).join('\n')).toMatch(
          /UPDLOCK pick without FORCESEEK/,
        );
      }
      // The claim locks JobsHot rows once, by key from @Candidates; with its grouped part once
      // more, by key from @GroupCandidates.
      const rule = 'claim: JobsHot rows are update-locked other than by key from the candidates';
      expect(
        lockViolations(
          broken(
            one('fetchNextBatch'),
            'FROM @Candidates AS c\n  INNER LOOP JOIN',
            'FROM @Candidates AS c\n  INNER JOIN',
          ),
        ),
      ).toContain(rule);
      const grouped = one('fetchNextBatch', '[start groups first]');
      expect(lockViolations(grouped)).toEqual([]);
      expect(
        lockViolations(
          broken(
            grouped,
            'FROM @GroupCandidates AS c\n        INNER LOOP JOIN',
            'FROM @GroupCandidates AS c\n        INNER JOIN',
          ),
        ),
      ).toContain(rule);
      expect(
        lockViolations(
          broken(
            grouped,
            'AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)\n        WHERE h.Queue = @gQueue AND h.Status = 0',
            'AS h WITH (UPDLOCK, READPAST, ROWLOCK)\n        WHERE h.Queue = @gQueue AND h.Status = 0',
          ),
        ).join('\n'),
      ).toMatch(/UPDLOCK pick without FORCESEEK/);
    });

    it("a claim's grouped part that writes out of order or takes rows it may not", () => {
      for (const variant of ['[start]', '[start groups first]']) {
        const grouped = one('fetchNextBatch', variant);
        expect([grouped.name, lockViolations(grouped)]).toEqual([grouped.name, []]);
        // The groups' windows by key from @GroupSpent, the missing ones under a range lock.
        expect(
          lockViolations(
            broken(
              grouped,
              'FROM @GroupSpent AS s\n        INNER LOOP JOIN',
              'FROM @GroupSpent AS s\n        INNER JOIN',
            ),
          ),
        ).toContain(
          "claim: the groups' rate windows are not written by key (update, then a range-locked insert)",
        );
        expect(
          lockViolations(broken(grouped, 'AS x WITH (UPDLOCK, HOLDLOCK)', 'AS x WITH (UPDLOCK)')),
        ).toContain(
          "claim: the groups' rate windows are not written by key (update, then a range-locked insert)",
        );
        // A cursor written in the loop would X-lock a Queues row before later JobGroups writes.
        expect(
          lockViolations(
            broken(
              grouped,
              '      INSERT INTO @Cursors (Queue, GroupCursor) VALUES (@gQueue, @gLast);',
              `      UPDATE q SET q.GroupCursor = @gLast FROM [chokaq].[Queues] AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) WHERE q.Name = @gQueue;`,
            ),
          ),
        ).toContain('claim: a Queues row is written before the last JobGroups write');
        // Every grouped row starts.
        expect(
          lockViolations(
            broken(
              grouped,
              'UPDATE h SET h.Status = 2, h.AttemptCount',
              'UPDATE h SET h.Status = 1, h.AttemptCount',
            ),
          ),
        ).toContain('claim: the grouped rows are not started by one UPDATE into @Claimed');
        // The ordinary claim leaves the grouped queues out.
        expect(
          lockViolations(broken(grouped, /UPDATE r SET r\.GroupBudget = [^;]*;\n/, '')),
        ).toContain('claim: the ordinary claim does not leave the grouped queues out');
      }
      // A claim that starts nothing has no grouped part and reads no grouped queue.
      const plain = one('fetchNextBatch');
      expect(plain.statement.sql).not.toContain('@gQueue');
      expect(
        lockViolations(
          broken(plain, ' AND q.GroupConcurrency IS NULL AND q.GroupRateMax IS NULL', ''),
        ),
      ).toContain('claim: a claim that starts nothing reads the grouped queues');
    });

    it('a claim that finds a (queue, type) pair by reading the queue’s other types', () => {
      const claim = one('fetchNextBatch');
      expect(
        lockViolations(
          broken(
            claim,
            'h.Queue = y.Queue AND h.Type = y.Type',
            'h.Queue = y.Queue AND EXISTS (SELECT 1 FROM @Types AS x WHERE x.Queue = h.Queue AND x.Type = h.Type)',
          ),
        ),
      ).toContain('claim: exact (queue, type) pairs are not sought by type');
    });

    it('a zombie sweep whose heartbeat seek is not bounded', () => {
      const zombies = one('archiveZombies');
      expect(
        lockViolations(
          broken(zombies, 'z.Status = 2 AND z.HeartbeatUtc < @cutoff', 'z.Status = 2'),
        ),
      ).toContain('archiveZombies: the heartbeat seek is not bounded by the shortest timeout');
    });

    it('OUTPUT … INTO without the same named columns on both sides', () => {
      const move = one('archiveSucceeded');
      expect(
        lockViolations(
          broken(
            move,
            /OUTPUT deleted\.[^;]*? INTO @Moved \([^)]*\)/,
            'OUTPUT deleted.* INTO @Moved',
          ),
        ),
      ).toContain('OUTPUT … INTO @Moved does not name the same columns on both sides');
      const claim = one('fetchNextBatch');
      expect(
        lockViolations(broken(claim, /INTO @Claimed \(Id, Queue, /, 'INTO @Claimed (Queue, Id, ')),
      ).toContain('OUTPUT … INTO @Claimed does not name the same columns on both sides');
      // An alias names its column: the settle step's value before the UPDATE, beside the one after.
      expect(lockViolations(move)).toEqual([]);
      expect(
        lockViolations(broken(move, 'deleted.Fired AS FiredBefore', 'deleted.Fired AS Before')),
      ).toContain('OUTPUT … INTO @BatchSettled does not name the same columns on both sides');
    });

    it('counters, buckets and idempotency keys locked in plan order', () => {
      const move = one('archiveSucceeded');
      expect(
        lockViolations(
          broken(
            move,
            'FROM @StatsDelta AS d\nINNER LOOP JOIN',
            'FROM @StatsDelta AS d\nINNER JOIN',
          ),
        ),
      ).toContain('StatsSummary rows are not updated in queue order (from @StatsDelta, loop join)');
      expect(
        lockViolations(
          broken(
            move,
            'FROM @BucketDelta AS d\nINNER LOOP JOIN',
            'FROM @BucketDelta AS d\nINNER JOIN',
          ),
        ),
      ).toContain('MetricBuckets rows are not updated in key order (from @BucketDelta, loop join)');
      for (const [statement, delta] of [
        [move, '@BatchDelta'],
        [one('resurrect', '[all]'), '@BatchReopened'],
      ] as const) {
        expect(
          lockViolations(
            broken(
              statement,
              `FROM ${delta} AS d\nINNER LOOP JOIN`,
              `FROM ${delta} AS d\nINNER JOIN`,
            ),
          ),
        ).toContain('Batches rows are not updated in id order (from a keyed delta, loop join)');
      }
      const keyed = one('enqueueMany', '[keys]');
      expect(
        lockViolations(
          broken(keyed, 'FROM @Keys AS k INNER LOOP JOIN', 'FROM @Keys AS k INNER JOIN'),
        ),
      ).toContain('idempotency keys are range-locked in plan order, not from @Keys in key order');
    });

    it('a state transition with NOLOCK', () => {
      const release = one('release', 'delay');
      expect(
        lockViolations(
          broken(
            release,
            `FROM [chokaq].[JobsHot] AS h`,
            'FROM [chokaq].[JobsHot] AS h WITH (NOLOCK)',
          ),
        ),
      ).toContain('dirty read (NOLOCK / READ UNCOMMITTED) outside a telemetry read');
    });
  });
});
