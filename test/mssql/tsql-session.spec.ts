import * as SQL from '../../libs/chokaq/src/storage/mssql/sql';
import { BATCH, DEPENDENCY_PLAN, ID, ID2, SCHEMA, catalogue } from './support/statements';

/**
 * Session state of every batch (SQL Server). `mssql` never resets a pooled connection, and a
 * TypeORM transaction begun with an isolation level leaves the session at that level, so a batch
 * of ChokaQ's may arrive on a connection at SERIALIZABLE or SNAPSHOT (where every READPAST fails
 * with error 650) or with a leaked `LOCK_TIMEOUT 0` (every wait becomes error 1222). Each
 * ChokaQ-owned batch therefore pins both first; a batch in a caller's transaction leaves the
 * caller's settings and transaction alone.
 */
const PROLOGUE = 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED;\nSET LOCK_TIMEOUT -1;\n';

const JOB: SQL.MssqlNewJob = {
  id: ID,
  queue: 'emails',
  type: 'welcome.v1',
  payload: '{}',
  tags: null,
  idempotencyKey: 'welcome:42',
  priority: 0,
  delayMs: null,
  runAt: null,
  createdBy: null,
  traceContext: null,
  payloadVersion: 1,
  group: null,
  batchId: null,
};

describe('SQL Server session state of every batch', () => {
  it('every ChokaQ-owned statement starts with READ COMMITTED and LOCK_TIMEOUT -1', () => {
    const missing = catalogue()
      .filter((e) => !e.operation.endsWith('.inCallerTransaction'))
      .filter((e) => !e.statement.sql.startsWith(PROLOGUE))
      .map((e) => e.name);
    expect(missing).toEqual([]);
  });

  it("statements in a caller's transaction leave its session and transaction alone", () => {
    const inCaller = { callerTransaction: true } as const;
    const catalogued = catalogue().filter((e) => e.operation.endsWith('.inCallerTransaction'));
    expect([...new Set(catalogued.map((e) => e.operation))].sort()).toEqual([
      'archiveSucceeded.inCallerTransaction',
      'dedupeHolder.inCallerTransaction',
      'dedupeMove.inCallerTransaction',
      'dedupeReplace.inCallerTransaction',
      'dedupeTake.inCallerTransaction',
      'enqueue.inCallerTransaction',
      'enqueueMany.inCallerTransaction',
      'insertBatch.inCallerTransaction',
      'insertDependencies.inCallerTransaction',
      'locateDependencies.inCallerTransaction',
    ]);
    const statements = [
      ...catalogued.map((e) => e.statement),
      SQL.enqueue(SCHEMA, JOB, inCaller),
      SQL.enqueue(SCHEMA, { ...JOB, idempotencyKey: null }, inCaller),
      SQL.enqueueMany(SCHEMA, [JOB, { ...JOB, id: ID2, idempotencyKey: null }], inCaller),
      SQL.enqueueMany(SCHEMA, [{ ...JOB, idempotencyKey: null }], inCaller),
    ];
    for (const { sql } of statements) {
      // The archive of a transactional handler waits for its row whatever the pool's session
      // left (a leaked LOCK_TIMEOUT 0 would fail it); the SET ends with the batch.
      const own = sql.includes('INTO [chokaq].[JobsArchive]')
        ? sql.replace('SET NOCOUNT ON;\nSET LOCK_TIMEOUT -1;', 'SET NOCOUNT ON;')
        : sql;
      expect(own).not.toMatch(
        /ISOLATION LEVEL|LOCK_TIMEOUT|XACT_ABORT|^\s*(BEGIN\s+TRAN|COMMIT|ROLLBACK)\b/im,
      );
      expect(own.startsWith('SET NOCOUNT ON;')).toBe(true);
    }
    const archives = catalogued.filter(
      (e) => e.operation === 'archiveSucceeded.inCallerTransaction',
    );
    // The move without results and the one that stores them.
    expect(archives).toHaveLength(2);
    for (const archive of archives) {
      expect(archive.statement.sql.startsWith('SET NOCOUNT ON;\nSET LOCK_TIMEOUT -1;\n')).toBe(
        true,
      );
    }
  });

  it("enqueueMany in a caller's transaction is the same batch without its own transaction", () => {
    const jobs = [JOB, { ...JOB, id: ID2, idempotencyKey: null }];
    const own = SQL.enqueueMany(SCHEMA, jobs).sql;
    const inCaller = SQL.enqueueMany(SCHEMA, jobs, { callerTransaction: true }).sql;
    const strip = (sql: string) =>
      sql
        .replace(PROLOGUE, '')
        .replace('SET XACT_ABORT ON;\n', '')
        .replace(/^(BEGIN TRAN|COMMIT);\n/gm, '');
    expect(strip(own)).toBe(inCaller);
  });

  it("archiveSucceeded in a handler's transaction is the same batch without its own transaction", () => {
    const item = { id: JOB.id, workerId: 'w-1', leaseId: ID2, durationMs: 120 };
    // Without a result, and with one (stored results): the same in both.
    for (const items of [[item], [{ ...item, result: '{"rows":3}' }]]) {
      const own = SQL.archiveSucceeded(SCHEMA, items).sql;
      const inCaller = SQL.archiveSucceeded(SCHEMA, items, { callerTransaction: true }).sql;
      const strip = (sql: string) =>
        sql
          .replace(PROLOGUE, '')
          .replace('SET XACT_ABORT ON;\n', '')
          .replace(/^(BEGIN TRAN|COMMIT);\n/gm, '');
      expect(strip(own)).toBe(inCaller.replace('SET LOCK_TIMEOUT -1;\n', ''));
    }
  });

  it("a keyed enqueue's key batches: XACT_ABORT in ChokaQ's transaction, the same batch without it (and without the session prologue) in a caller's; no transaction of their own in either", () => {
    const job: SQL.MssqlKeyedJob = {
      id: ID,
      payload: '{}',
      payloadVersion: 1,
      traceContext: null,
      dedupe: { key: 'k', mode: 'throttle', states: [], windowMs: 1_000 },
    };
    const builders = [
      (o?: { callerTransaction: boolean }) => SQL.dedupeTake(SCHEMA, job, o),
      (o?: { callerTransaction: boolean }) => SQL.dedupeHolder(SCHEMA, job, o),
      (o?: { callerTransaction: boolean }) => SQL.dedupeReplace(SCHEMA, ID2, job, o),
      (o?: { callerTransaction: boolean }) => SQL.dedupeMove(SCHEMA, job, o),
    ];
    for (const build of builders) {
      const own = build().sql;
      const inCaller = build({ callerTransaction: true }).sql;
      // Inside the enqueue's transaction (ChokaQ's): an error rolls the whole enqueue back.
      expect(own.startsWith(`${PROLOGUE}SET NOCOUNT ON;\nSET XACT_ABORT ON;\n`)).toBe(true);
      expect(own).not.toMatch(/^\s*(BEGIN\s+TRAN|COMMIT|ROLLBACK)\b/im);
      expect(own.replace(PROLOGUE, '').replace('SET XACT_ABORT ON;\n', '')).toBe(inCaller);
    }
  });

  it("a batch's row: XACT_ABORT in ChokaQ's transaction, the same batch without it (and without the session prologue) in a caller's; no transaction of its own in either", () => {
    const own = SQL.insertBatch(SCHEMA, BATCH).sql;
    const inCaller = SQL.insertBatch(SCHEMA, BATCH, { callerTransaction: true }).sql;
    // Inside the transaction of enqueueBatch (ChokaQ's): an error rolls the whole batch back.
    expect(own.startsWith(`${PROLOGUE}SET NOCOUNT ON;\nSET XACT_ABORT ON;\n`)).toBe(true);
    expect(own).not.toMatch(/^\s*(BEGIN\s+TRAN|COMMIT|ROLLBACK)\b/im);
    expect(own.replace(PROLOGUE, '').replace('SET XACT_ABORT ON;\n', '')).toBe(inCaller);
  });

  it("an enqueue's dependency batches: XACT_ABORT in ChokaQ's transaction, the same batch without it (and without the session prologue) in a caller's; no transaction of their own in either", () => {
    const builders = [
      (o?: { callerTransaction: boolean }) => SQL.locateDependencies(SCHEMA, [ID, ID2], o),
      (o?: { callerTransaction: boolean }) => SQL.insertDependencies(SCHEMA, DEPENDENCY_PLAN, o),
    ];
    for (const build of builders) {
      const own = build().sql;
      const inCaller = build({ callerTransaction: true }).sql;
      // Inside the enqueue's transaction (ChokaQ's): an error rolls the whole enqueue back.
      expect(own.startsWith(`${PROLOGUE}SET NOCOUNT ON;\nSET XACT_ABORT ON;\n`)).toBe(true);
      expect(own).not.toMatch(/^\s*(BEGIN\s+TRAN|COMMIT|ROLLBACK)\b/im);
      expect(own.replace(PROLOGUE, '').replace('SET XACT_ABORT ON;\n', '')).toBe(inCaller);
    }
    // The Waiting chunk is the ordinary one with the status literal 7, in both transactions.
    const jobs = [{ ...JOB, idempotencyKey: null }];
    for (const options of [undefined, { callerTransaction: true }]) {
      const plain = SQL.enqueueMany(SCHEMA, jobs, options).sql;
      const waiting = SQL.enqueueMany(SCHEMA, jobs, options, true).sql;
      expect(waiting).not.toBe(plain);
      expect(waiting.replace('i.Priority, 7, 0,', 'i.Priority, 0, 0,')).toBe(plain);
    }
  });

  it('enqueueMany settles an id already stored before any idempotency-key holder', () => {
    // A retry after an ambiguous commit: the job it created may have finished and freed its key for
    // another job; the item must report its own id, not the key's new holder.
    const sql = SQL.enqueueMany(SCHEMA, [JOB]).sql;
    const ownId = sql.indexOf('-- An id already stored (any pillar)');
    const keyHolders = sql.indexOf('-- Keys an active job already holds');
    expect(ownId).toBeGreaterThan(-1);
    expect(keyHolders).toBeGreaterThan(ownId);
  });
});
