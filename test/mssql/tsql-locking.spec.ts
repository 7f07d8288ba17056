import { CatalogueEntry, catalogue } from './support/statements';
import { lockViolations } from './support/lock-rules';

/**
 * The lock hints and isolation of every statement (SPEC §3): the claim reads candidates
 * `WITH (UPDLOCK, READPAST, ROWLOCK)`, counts active rows `WITH (READCOMMITTEDLOCK)`, locks budgeted
 * `Queues` rows and never reads dirty; every move is `SET XACT_ABORT ON; BEGIN TRAN; … OUTPUT
 * deleted.* INTO @Moved …; COMMIT`; `NOLOCK` only in telemetry reads; never UPDLOCK with NOLOCK on
 * one table reference. Hints are read from the T-SQL parse tree, not by pattern over the text.
 */
describe('SQL Server lock hints and isolation', () => {
  const entries = catalogue();
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
      ['getQueueHealth', 'getQueueStats', 'getSummary', 'getThroughput', 'getTopDlqErrors'].sort(),
    );
    // Telemetry really does use NOLOCK (approximate by design), and nothing else does.
    for (const e of entries) {
      expect([e.name, /NOLOCK/.test(e.statement.sql)]).toEqual([e.name, e.kind === 'telemetry']);
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
          broken(claim, 'WITH (UPDLOCK, READPAST, ROWLOCK)', 'WITH (UPDLOCK, ROWLOCK)'),
        ),
      ).toContain('claim: candidates are not read WITH (UPDLOCK, READPAST, ROWLOCK)');
    });

    it('a claim that ranks the backlog with ROW_NUMBER()', () => {
      const claim = one('fetchNextBatch', 'start');
      const ranked = broken(
        claim,
        'SELECT TOP (m.Slots) h.Id,',
        'SELECT TOP (m.Slots) ROW_NUMBER() OVER (PARTITION BY h.Queue ORDER BY h.Priority DESC) AS R, h.Id,',
      );
      expect(lockViolations(claim)).toEqual([]);
      expect(lockViolations(ranked)).toContain('claim: ROW_NUMBER() over the backlog (O(backlog))');
    });

    it('a claim whose active count may come from a snapshot', () => {
      const claim = one('fetchNextBatch');
      expect(lockViolations(broken(claim, 'WITH (READCOMMITTEDLOCK)', ''))).toContain(
        'claim: the active count is not read WITH (READCOMMITTEDLOCK)',
      );
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
        broken(claim, 'WITH (UPDLOCK, READPAST, ROWLOCK)', 'WITH (UPDLOCK, NOLOCK)'),
      );
      expect(violations.some((v) => v.includes('UPDLOCK/XLOCK together with NOLOCK'))).toBe(true);
    });

    it('a move without XACT_ABORT, or capturing nothing', () => {
      const move = one('archiveSucceeded');
      expect(lockViolations(broken(move, 'SET XACT_ABORT ON;', '')).join('\n')).toMatch(
        /XACT_ABORT/,
      );
      expect(lockViolations(broken(move, 'OUTPUT deleted.* INTO @Moved', '')).join('\n')).toMatch(
        /missing .*OUTPUT deleted/,
      );
      expect(lockViolations(broken(move, /COMMIT;/, '')).join('\n')).toMatch(/COMMIT/);
    });

    it('a purge or retention batch whose READPAST has no READCOMMITTEDLOCK', () => {
      for (const entry of [one('purgeDlqByFilter', 'no filter'), one('applyRetention', 'dlq')]) {
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
