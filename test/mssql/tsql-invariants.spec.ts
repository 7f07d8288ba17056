import { catalogue } from './support/statements';

/**
 * Run fencing in T-SQL: a table variable keyed by `(Id, LeaseId)` holds runs, and a stale run and
 * its successor may share one batch (the same id under two leases). Every join to such a variable
 * must match the lease as well as the id, or one moved row meets both entries: an archive insert
 * joined on the id alone inserts the current run twice, the Archive's primary key refuses the
 * second (2627), and under XACT_ABORT the whole batch rolls back, to be retried forever. Checked
 * over every statement the dialect can emit.
 */
describe('SQL Server run fencing over lease-keyed table variables', () => {
  const entries = catalogue();

  /** The table variables of `sql` whose primary key is (Id, LeaseId). */
  function leaseKeyed(sql: string): string[] {
    return [
      ...sql.matchAll(/DECLARE (@\w+) TABLE \((?:(?!;).)*PRIMARY KEY \(Id, LeaseId\)\)/g),
    ].map((m) => m[1]);
  }

  /** Every `JOIN @var AS a ON …` of `sql` (to the end of its line), with the alias. */
  function joinsTo(sql: string, variable: string): { alias: string; on: string }[] {
    const pattern = new RegExp(`JOIN ${variable} AS (\\w+) ON ([^\\n]*)`, 'g');
    return [...sql.matchAll(pattern)].map((m) => ({ alias: m[1], on: m[2] }));
  }

  it('finds the lease-keyed variables (the archive move has one)', () => {
    const archive = entries.find((e) => e.operation === 'archiveSucceeded')!;
    expect(leaseKeyed(archive.statement.sql)).toEqual(['@In']);
    expect(joinsTo(archive.statement.sql, '@In').length).toBeGreaterThanOrEqual(3);
  });

  it('every join to a variable keyed by (Id, LeaseId) matches the lease too', () => {
    const unfenced: string[] = [];
    for (const e of entries) {
      for (const variable of leaseKeyed(e.statement.sql)) {
        for (const { alias, on } of joinsTo(e.statement.sql, variable)) {
          if (!new RegExp(`\\b${alias}\\.LeaseId\\b`).test(on))
            unfenced.push(`${e.name}: JOIN ${variable} AS ${alias} ON ${on}`);
        }
      }
    }
    expect(unfenced).toEqual([]);
  });
});

/**
 * The lock order every move keeps (docs/storage.md, "Lock order"): the hot rows first, then the
 * other pillars (then the edges and dependents' hot rows of the dependency settle step, and the
 * batches), then the counters and buckets. A move that touched `StatsSummary` and then
 * `JobsHot` again would wait on a hot row while holding a counter row that a move in the usual
 * order holds the other way round: a deadlock (1205) cycle.
 */
describe('SQL Server move lock order', () => {
  const entries = catalogue();

  it('no move writes JobsHot after it has touched StatsSummary or MetricBuckets', () => {
    const late: string[] = [];
    for (const e of entries.filter((x) => x.kind === 'move')) {
      const sql = e.statement.sql;
      const counters = Math.min(
        ...['[StatsSummary]', '[MetricBuckets]']
          .map((table) => sql.indexOf(table))
          .filter((at) => at >= 0),
      );
      if (!Number.isFinite(counters)) continue;
      const hotWrites = [
        // FROM the hot table, or a loop into it from a keyed table variable (the dependents' rows).
        ...sql.matchAll(/(?:UPDATE|DELETE) h\b[^;]*?(?:FROM|JOIN) \[chokaq\]\.\[JobsHot\]/g),
        ...sql.matchAll(/INSERT INTO \[chokaq\]\.\[JobsHot\]/g),
      ];
      for (const write of hotWrites)
        if (write.index! > counters) late.push(`${e.name}: ${write[0].split('\n')[0]}`);
    }
    expect(late).toEqual([]);
  });
});

/**
 * The claim reads `Queues` four times. Each read is a seek by name: a scan would take a shared
 * lock on every queue's row and wait on each row another claimer holds while it updates that
 * queue's rate window, so one rate-limited queue would slow the claims of all of them.
 */
describe("SQL Server claim's reads of Queues", () => {
  it('pin a seek (FORCESEEK) on every Queues reference of the claim', () => {
    const claim = catalogue().find((e) => e.operation === 'fetchNextBatch')!.statement.sql;
    const refs = [...claim.matchAll(/\[chokaq\]\.\[Queues\] AS (\w+)( WITH \(([^)]*)\))?/g)];
    expect(refs.length).toBeGreaterThanOrEqual(4);
    const unpinned = refs
      .filter((m) => !(m[3] ?? '').split(/,\s*/).includes('FORCESEEK'))
      .map((m) => m[0]);
    expect(unpinned).toEqual([]);
  });
});

/**
 * The claim reads the clock again after its lock waits (the start time of the rows it starts):
 * the start bucket must be that instant's minute too, or a wait across a minute boundary files
 * the starts (and their lag) under the minute before.
 */
describe("SQL Server claim's start bucket", () => {
  it('is recomputed from the clock read after the lock waits, before any bucket is written', () => {
    for (const e of catalogue().filter((x) => x.operation === 'fetchNextBatch')) {
      const sql = e.statement.sql;
      const reread = sql.lastIndexOf('SET @now = SYSUTCDATETIME();');
      expect([e.name, reread]).toEqual([e.name, expect.any(Number)]);
      expect(reread).toBeGreaterThan(0);
      const rebucket = sql.indexOf('SET @bucket = ', reread);
      expect(rebucket).toBeGreaterThan(reread);
      const writes = sql.indexOf('[MetricBuckets]', reread);
      if (writes >= 0) expect(rebucket).toBeLessThan(writes);
    }
  });
});

/**
 * `=` on SQL Server ignores trailing blanks, so an exact match on a text that may end with one
 * (an audit target) also compares the lengths in bytes.
 */
describe('SQL Server exact text matches', () => {
  it("getAuditLog's target also compares DATALENGTH (id + ' ' must not match id)", () => {
    const reads = catalogue().filter(
      (e) => e.operation === 'getAuditLog' && e.statement.sql.includes('a.Target = '),
    );
    expect(reads.length).toBeGreaterThan(0);
    for (const e of reads) {
      const target = /a\.Target = (@\w+)/.exec(e.statement.sql)![1];
      expect(e.statement.sql).toContain(`DATALENGTH(a.Target) = DATALENGTH(${target})`);
    }
  });
});

/**
 * `OUTPUT` without `INTO` fails (Msg 334) when the target table has an enabled trigger, such as a
 * DBA's audit trigger ("OUTPUT Clause (Transact-SQL)", Remarks:
 * https://learn.microsoft.com/en-us/sql/t-sql/queries/output-clause-transact-sql). Every statement
 * of the dialect sends its `OUTPUT` rows into a table variable and selects them afterwards.
 */
describe('SQL Server OUTPUT clauses', () => {
  /** The `OUTPUT` clauses of `sql` that do not write into a table variable before their statement ends. */
  function bareOutputs(sql: string): string[] {
    return [...sql.matchAll(/\bOUTPUT\b[^;]*/g)]
      .map((m) => m[0])
      .filter((clause) => !/\bINTO\s+@\w+/.test(clause));
  }

  it('finds a bare OUTPUT (the check can fail)', () => {
    expect(bareOutputs('UPDATE h SET h.A = 1 OUTPUT inserted.Id FROM t AS h;')).toHaveLength(1);
    expect(bareOutputs('UPDATE h SET h.A = 1 OUTPUT inserted.Id INTO @X (Id) FROM t;')).toEqual([]);
  });

  it('sends every OUTPUT of every statement into a table variable', () => {
    const bare = catalogue().flatMap((e) =>
      bareOutputs(e.statement.sql).map((clause) => `${e.name}: ${clause.slice(0, 80)}`),
    );
    expect(bare).toEqual([]);
  });
});
