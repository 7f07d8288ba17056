import { ConsoleLogger, Logger } from '@nestjs/common';
import { SqlServerDriver } from 'typeorm/driver/sqlserver/SqlServerDriver';
import {
  ChokaQCompatibilityLevelError,
  ChokaQDependencyNotFoundError,
  ChokaQStorageUnavailableError,
  ChokaQTransactionError,
  ChokaQValidationError,
} from '../../libs/chokaq/src/errors';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { MssqlConnection } from '../../libs/chokaq/src/storage/mssql/mssql.connection';
import { MssqlJobQueries } from '../../libs/chokaq/src/storage/mssql/mssql-job-queries';
import { MssqlJobStore } from '../../libs/chokaq/src/storage/mssql/mssql-job-store';
import {
  MSSQL_MIGRATIONS,
  MSSQL_SCHEMA_VERSION,
  mssqlSchemaDdl,
} from '../../libs/chokaq/src/storage/mssql/mssql.schema';
import * as SQL from '../../libs/chokaq/src/storage/mssql/sql';
import { EdgeState, dependencyFailedText } from '../../libs/chokaq/src/storage/shared/dependencies';
import { boundariesAhead } from '../../libs/chokaq/src/storage/mssql/mssql-partitions';
import { SqlStorageConfig } from '../../libs/chokaq/src/storage/storage-config';
import { ValidatedJobStorage } from '../../libs/chokaq/src/storage/validated-job-storage';
import { validateNewJob } from '../../libs/chokaq/src/validation/validate-job';
import { EDGES, refusedPaths } from '../contract/edge-cases';
import { RecordingLogger } from '../runtime/support/silent-logger';
import { ID, ID2, LEASE } from './support/statements';
import { stubMssqlDataSource } from './support/stub-data-source';

/**
 * Drives TypeORM's real `SqlServerQueryRunner` (parameter binding, structured results) over a
 * stubbed `mssql` Request: the ONE place a stub stands in for SQL Server, because no server can
 * run here. The stub replays the result shape the `mssql` package documents for
 * `request.query()`: `{ recordsets, recordset (= recordsets[0]), output, rowsAffected }`. With
 * `SET NOCOUNT ON` SQL Server sends no row counts, so `rowsAffected` is `[]`; tedious returns
 * `bigint` columns as strings. These tests pin the placeholders the storage sends and that it reads
 * changed rows from the result set, never from `rowsAffected`.
 */
/** What the statements are built for before `prepare()` has read the install (a new one: binary keys). */
const BINARY: SQL.MssqlSchema = { name: 'chokaq', binaryKeys: true };

interface Call {
  sql: string;
  inputs: Array<{ name: string; type: string; value: unknown }>;
  /** The per-request overrides mssql's `Request` was constructed with (`requestTimeout`). */
  overrides?: { requestTimeout?: number };
  /** What the `Request` was made on: the pool, or a transaction (TypeORM's `databaseConnection`). */
  parent?: unknown;
}

type Reply = Row[] | Row[][] | Error;
type Row = Record<string, unknown>;

function mssqlResult(reply: Row[] | Row[][]) {
  const recordsets = Array.isArray(reply[0]) ? (reply as Row[][]) : [reply as Row[]];
  return { recordsets, recordset: recordsets[0], output: {}, rowsAffected: [] as number[] };
}

function stubbedStorage(replies: Reply[], settings: Partial<SqlStorageConfig> = {}) {
  const calls: Call[] = [];
  const dataSource = stubMssqlDataSource();
  const driver = dataSource.driver as SqlServerDriver;
  const real = driver.mssql;
  class StubRequest {
    private readonly inputs: Call['inputs'] = [];
    constructor(
      private readonly parent?: unknown,
      private readonly overrides?: Call['overrides'],
    ) {}
    input(name: string, typeOrValue: unknown, value?: unknown): this {
      const typed = arguments.length === 3;
      // mssql takes a type either as the type function (`sql.Int`) or called (`sql.NVarChar(n)`).
      const type = !typed
        ? 'inferred'
        : typeof typeOrValue === 'function'
          ? typeOrValue.name
          : ((typeOrValue as { type?: { name?: string } })?.type?.name ?? 'unknown');
      this.inputs.push({ name, type, value: typed ? value : typeOrValue });
      return this;
    }
    async query(sql: string) {
      calls.push({ sql, inputs: this.inputs, overrides: this.overrides, parent: this.parent });
      const reply = replies.shift();
      if (reply === undefined) throw new Error(`unexpected query: ${sql.slice(0, 80)}`);
      if (reply instanceof Error) throw reply;
      return mssqlResult(reply);
    }
  }
  driver.mssql = { ...real, Request: StubRequest };
  /** Transactions begun through mssql's `pool.transaction()`, with the level `begin` was given. */
  const transactions: Array<{ isolationLevel: unknown; end?: 'commit' | 'rollback' }> = [];
  driver.obtainMasterConnection = async () =>
    ({
      // What TypeORM's startTransaction / commit / rollback call on mssql's Transaction.
      transaction: () => {
        const tx: (typeof transactions)[number] = { isolationLevel: undefined };
        transactions.push(tx);
        return {
          begin: (...args: unknown[]) => {
            if (args.length > 1) tx.isolationLevel = args[0];
            (args[args.length - 1] as (err?: Error) => void)();
          },
          commit: (done: (err?: Error) => void) => ((tx.end = 'commit'), done()),
          rollback: (done: (err?: Error) => void) => ((tx.end = 'rollback'), done()),
        };
      },
    }) as never;
  // Never initialised (no server to connect to), but the storage refuses a closed DataSource.
  (dataSource as { isInitialized: boolean }).isInitialized = true;
  const config: SqlStorageConfig = {
    dataSource,
    ownsDataSource: false,
    schema: 'chokaq',
    payloadMaxBytes: 1_000_000,
    transientRetry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
    notify: false,
    notifyReconnectMs: 1_000,
    preparedStatements: false,
    schemaTimeoutMs: 0,
    busyTimeoutMs: 50,
    dataVersionPollMs: 50,
    partitioning: null,
    ...settings,
    // As the module does: the storage logs through Nest's Logger (a test records it there).
    logger: (context) => new Logger(context),
  };
  // Its store and queries over one connection, behind the validating edge, as createJobStorage
  // builds it.
  const connection = new MssqlConnection(config);
  const store = new MssqlJobStore(connection);
  const storage = new ValidatedJobStorage(store, new MssqlJobQueries(connection), config);
  return { storage, calls, transactions, dataSource };
}

/** An mssql RequestError as TypeORM wraps it (QueryFailedError.driverError). */
function sqlError(number: number, message = `error ${number}`): Error {
  const driverError = Object.assign(new Error(message), {
    name: 'RequestError',
    code: 'EREQUEST',
    number,
  });
  return Object.assign(new Error(message), { name: 'QueryFailedError', driverError });
}

/** `partitionLayout`'s reply for two plain tables (a table not partitioned has one row, no boundary). */
const PLAIN_LAYOUT: Row[] = ['archive', 'dlq'].map((Pillar) => ({
  Pillar,
  Partitioned: 0,
  Unaligned: 0,
  Blocked: 0,
  BoundaryId: null,
  Boundary: null,
  NowUtc: '2026-01-02T03:04:05.678Z',
}));

/** The session state a ChokaQ-owned batch pins first. */
const PROLOGUE = 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED;\nSET LOCK_TIMEOUT -1;\n';
/** What a batch in a caller's transaction must not touch: its session or its transaction. */
const SESSION_OR_OWN_TRANSACTION =
  /ISOLATION LEVEL|LOCK_TIMEOUT|XACT_ABORT|^\s*(BEGIN\s+TRAN|COMMIT)\b/im;

const HOT_ROW = {
  Id: ID,
  Queue: 'emails',
  Type: 'welcome.v1',
  Payload: '{"to":"a@b.c"}',
  Tags: ',vip,',
  IdempotencyKey: null,
  Priority: 20,
  Status: 1,
  AttemptCount: 0,
  WorkerId: LEASE.workerId,
  LeaseId: LEASE.leaseId,
  HeartbeatUtc: null,
  ScheduledAtUtc: null,
  CreatedAtUtc: '2026-01-02T03:04:05.678Z',
  EnqueuedAtUtc: '2026-01-02T03:04:05.678Z',
  StartedAtUtc: null,
  LastUpdatedUtc: '2026-01-02T03:04:06.001Z',
  CreatedBy: null,
  LastModifiedBy: null,
  LastError: null,
  CancelRequestedUtc: null,
  Progress: null,
};

describe('SQL Server dialect over TypeORM SqlServerQueryRunner (stubbed mssql Request)', () => {
  it('claims with positional, typed parameters and maps the OUTPUT rows', async () => {
    const { storage, calls } = stubbedStorage([[HOT_ROW]]);
    const jobs = await storage.fetchNextBatch({
      workerId: LEASE.workerId,
      leaseId: LEASE.leaseId,
      limit: 20,
      handled: { queues: ['emails'], types: [{ queue: 'billing', type: 'invoice.v2' }] },
    });
    expect(calls).toHaveLength(1);
    const expected = SQL.fetchNextBatch(BINARY, {
      workerId: LEASE.workerId,
      leaseId: LEASE.leaseId,
      limit: 20,
      queues: ['emails'],
      types: [{ queue: 'billing', type: 'invoice.v2' }],
      start: 0,
    });
    expect(calls[0].sql).toBe(expected.sql);
    // TypeORM names parameters by position; `varchar` goes out as NVarChar unless the driver
    // option disableAsciiToUnicodeParamConversion is set, which is why the SQL casts it.
    expect(calls[0].inputs.map((i) => [i.name, i.type])).toEqual([
      ['0', 'NVarChar'],
      ['1', 'NVarChar'],
      ['2', 'Int'],
      ['3', 'NVarChar'],
      ['4', 'NVarChar'],
      ['5', 'Int'],
    ]);
    expect(calls[0].inputs.map((i) => i.value)).toEqual([
      LEASE.workerId,
      LEASE.leaseId,
      20,
      '["emails"]',
      '[{"queue":"billing","type":"invoice.v2","minVersion":1,"maxVersion":1}]',
      0,
    ]);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({
      id: ID,
      queue: 'emails',
      payload: { to: 'a@b.c' },
      tags: ['vip'],
      status: 1,
      leaseId: LEASE.leaseId,
      scheduledAtUtc: null,
    });
    expect(jobs[0].createdAtUtc.toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(jobs[0].lastUpdatedUtc.toISOString()).toBe('2026-01-02T03:04:06.001Z');
  });

  it('claims with start: sends it as the int @5 and maps the started rows', async () => {
    const started = {
      ...HOT_ROW,
      Status: 2,
      AttemptCount: 1,
      StartedAtUtc: '2026-01-02T03:04:06.001Z',
      HeartbeatUtc: '2026-01-02T03:04:06.001Z',
    };
    const { storage, calls } = stubbedStorage([[started, { ...HOT_ROW, Id: ID2 }]]);
    const jobs = await storage.fetchNextBatch({
      workerId: LEASE.workerId,
      leaseId: LEASE.leaseId,
      limit: 2,
      handled: { queues: ['emails'], types: [] },
      start: 1,
      budgetedQueues: [],
    });
    expect(calls[0].inputs[5]).toEqual({ name: '5', type: 'Int', value: 1 });
    expect(calls[0].sql).toContain('h.Status = CASE WHEN k.Rn <= @5 THEN 2 ELSE 1 END');
    expect(jobs.map((j) => [j.id, j.status, j.attemptCount])).toEqual([
      [ID, 2, 1],
      [ID2, 1, 0],
    ]);
    expect(jobs[0].startedAtUtc?.toISOString()).toBe('2026-01-02T03:04:06.001Z');
  });

  describe('claim retried after an ambiguous commit', () => {
    const request = {
      workerId: LEASE.workerId,
      leaseId: LEASE.leaseId,
      limit: 2,
      handled: { queues: ['emails'], types: [] },
      start: 1,
    };
    const claimText = SQL.fetchNextBatch(BINARY, {
      workerId: LEASE.workerId,
      leaseId: LEASE.leaseId,
      limit: 2,
      queues: ['emails'],
      types: [],
      start: 1,
    }).sql;
    const readBackText = SQL.fetchNextBatchClaimed(BINARY, LEASE.workerId, LEASE.leaseId).sql;
    /** The server committed the claim, then the connection dropped before the reply arrived. */
    const lostReply = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const started = {
      ...HOT_ROW,
      Status: 2,
      AttemptCount: 1,
      StartedAtUtc: HOT_ROW.LastUpdatedUtc,
    };

    it('the first attempt claims without the read-back', async () => {
      const { storage, calls } = stubbedStorage([[started]]);
      await storage.fetchNextBatch(request);
      expect(calls.map((c) => c.sql)).toEqual([claimText]);
    });

    it('the retry returns the rows the lost attempt committed and does not claim again', async () => {
      const { storage, calls } = stubbedStorage([lostReply(), [started, { ...HOT_ROW, Id: ID2 }]]);
      const jobs = await storage.fetchNextBatch(request);
      expect(calls.map((c) => c.sql)).toEqual([claimText, readBackText]);
      expect(calls[1].inputs).toEqual([
        { name: '0', type: 'NVarChar', value: LEASE.workerId },
        { name: '1', type: 'NVarChar', value: LEASE.leaseId },
      ]);
      expect(jobs.map((j) => [j.id, j.status, j.attemptCount, j.leaseId])).toEqual([
        [ID, 2, 1, LEASE.leaseId],
        [ID2, 1, 0, LEASE.leaseId],
      ]);
    });

    it('the retry claims when the lost attempt committed nothing', async () => {
      const { storage, calls } = stubbedStorage([lostReply(), [], [started]]);
      const jobs = await storage.fetchNextBatch(request);
      expect(calls.map((c) => c.sql)).toEqual([claimText, readBackText, claimText]);
      expect(jobs.map((j) => j.id)).toEqual([ID]);
    });
  });

  it('rejects a start above the limit before any query', async () => {
    const { storage, calls } = stubbedStorage([]);
    await expect(
      storage.fetchNextBatch({
        workerId: 'w',
        leaseId: LEASE.leaseId,
        limit: 2,
        handled: { queues: ['a'], types: [] },
        start: 3,
      }),
    ).rejects.toBeInstanceOf(ChokaQValidationError);
    expect(calls).toHaveLength(0);
  });

  it('claims nothing without a query when the limit is 0 or nothing is handled', async () => {
    const { storage, calls } = stubbedStorage([]);
    const base = { workerId: 'w', leaseId: LEASE.leaseId };
    expect(
      await storage.fetchNextBatch({ ...base, limit: 0, handled: { queues: ['a'], types: [] } }),
    ).toEqual([]);
    expect(
      await storage.fetchNextBatch({ ...base, limit: 5, handled: { queues: [], types: [] } }),
    ).toEqual([]);
    expect(calls).toHaveLength(0);
  });

  it('archive: moved ids come from the OUTPUT rows; rowsAffected (empty under NOCOUNT) is ignored', async () => {
    const { storage, calls } = stubbedStorage([[{ Id: ID, LeaseId: LEASE.leaseId }]]);
    const moved = await storage.archiveSucceeded([
      { ...LEASE, durationMs: 12.4 },
      { id: ID2, workerId: LEASE.workerId, leaseId: LEASE.leaseId, durationMs: 3 },
    ]);
    expect(moved).toEqual([{ id: ID, leaseId: LEASE.leaseId }]);
    expect(calls[0].inputs).toHaveLength(1);
    expect(JSON.parse(String(calls[0].inputs[0].value))).toEqual([
      { ...LEASE, durationMs: 12 },
      { id: ID2, workerId: LEASE.workerId, leaseId: LEASE.leaseId, durationMs: 3 },
    ]);
    expect(calls[0].sql).toMatch(/OUTPUT deleted\.Id, [^;]* INTO @Moved \(Id, /);
  });

  it('archive with stored results: each run’s result in the one document (null where none), the batch writes Result; a batch without keeps the document without it', async () => {
    const { storage, calls } = stubbedStorage([
      [
        { Id: ID, LeaseId: LEASE.leaseId },
        { Id: ID2, LeaseId: LEASE.leaseId },
      ],
      [{ Id: ID, LeaseId: LEASE.leaseId }],
    ]);
    const other = { id: ID2, workerId: LEASE.workerId, leaseId: LEASE.leaseId };
    const result = JSON.stringify({ rows: 3, names: ['é', '\u0000x'] });
    expect(
      await storage.archiveSucceeded([
        { ...LEASE, durationMs: 7, result },
        { ...other, durationMs: 3 },
      ]),
    ).toHaveLength(2);
    expect(calls[0].inputs).toHaveLength(1);
    expect(JSON.parse(String(calls[0].inputs[0].value))).toEqual([
      { ...LEASE, durationMs: 7, result },
      { ...other, durationMs: 3, result: null },
    ]);
    expect(calls[0].sql).toContain("Result nvarchar(max) '$.result'");
    expect(calls[0].sql).toMatch(/INSERT INTO \[chokaq\]\.\[JobsArchive\] \([^)]*, Result\)/);

    expect(await storage.archiveSucceeded([{ ...LEASE, durationMs: 7 }])).toHaveLength(1);
    expect(JSON.parse(String(calls[1].inputs[0].value))).toEqual([{ ...LEASE, durationMs: 7 }]);
    expect(calls[1].sql).not.toMatch(/\bResult\b/);
    expect(calls[1].sql).toBe(SQL.archiveSucceeded(BINARY, [{ ...LEASE, durationMs: 7 }]).sql);
  });

  it('archive with stored results: a batch whose results exceed the character bound is split, one transaction each', async () => {
    const big = JSON.stringify('r'.repeat(5_000_000));
    const { storage, calls } = stubbedStorage([
      [{ Id: ID, LeaseId: LEASE.leaseId }],
      [{ Id: ID2, LeaseId: LEASE.leaseId }],
    ]);
    const other = { id: ID2, workerId: LEASE.workerId, leaseId: LEASE.leaseId };
    expect(
      await storage.archiveSucceeded([
        { ...LEASE, durationMs: 1, result: big },
        { ...other, durationMs: 2, result: big },
      ]),
    ).toEqual([
      { id: ID, leaseId: LEASE.leaseId },
      { id: ID2, leaseId: LEASE.leaseId },
    ]);
    expect(calls).toHaveLength(2);
    expect(
      calls.map((c) => JSON.parse(String(c.inputs[0].value)).map((i: { id: string }) => i.id)),
    ).toEqual([[ID], [ID2]]);
  });

  it('getJob returns the stored result of an archive row, parsed', async () => {
    const archived = {
      ...HOT_ROW,
      PillarRank: 3,
      Pillar: 'archive',
      Status: null,
      LeaseId: null,
      FinishedAtUtc: '2026-01-02T03:04:07.000Z',
      DurationMs: '7',
      Result: '{"rows":3}',
    };
    // Each job read is followed by the read of the dedupe key it holds (none here).
    const { storage, calls } = stubbedStorage([
      [archived],
      [],
      [{ ...archived, Result: null }],
      [],
    ]);
    expect(await storage.getJob(ID)).toMatchObject({
      pillar: 'archive',
      durationMs: 7,
      result: { rows: 3 },
      dedupe: null,
    });
    expect(calls[0].sql).toContain(', a.Result, ');
    expect((await storage.getJob(ID))?.result).toBeNull();
  });

  it('getJob shows the dedupe key the job holds, read after the job, times as the database clock', async () => {
    const key = {
      Key: 'digest:42',
      Mode: 3,
      States: 5,
      WindowMs: '60000',
      WindowStartedUtc: '2026-01-02T03:04:05.678Z',
      WindowEndsUtc: null,
    };
    const { storage, calls } = stubbedStorage([[{ ...HOT_ROW, Pillar: 'hot' }], [key]]);
    expect((await storage.getJob(ID))?.dedupe).toEqual({
      key: 'digest:42',
      mode: 'unique',
      states: ['pending', 'finished'],
      windowMs: 60_000,
      windowStartedUtc: new Date('2026-01-02T03:04:05.678Z'),
      windowEndsUtc: null,
    });
    expect(calls.map((c) => c.sql)).toEqual([
      SQL.getJob(BINARY, ID).sql,
      SQL.dedupeOfJob(BINARY, ID).sql,
    ]);
    expect(calls[1].sql).toContain('FROM [chokaq].[DedupeKeys] AS k WHERE k.JobId = ');
  });

  it('counts come from a selected COUNT_BIG / @@ROWCOUNT (a bigint string), zero means not applied', async () => {
    const { storage } = stubbedStorage([
      [{ Affected: '2' }],
      [{ Affected: '0' }],
      [{ Affected: 0 }],
    ]);
    expect(await storage.release([LEASE, { ...LEASE, id: ID2 }], 1_000)).toBe(2);
    expect(await storage.rescheduleForRetry(LEASE, 500, 'Error: x\u0000y')).toBe(0);
    expect(await storage.moveToDlq({ id: ID }, { reason: 6, error: 'fatal' })).toBe(0);
  });

  it('sends error text sanitised (no NUL) and delays as bigint milliseconds', async () => {
    const { storage, calls } = stubbedStorage([[{ Affected: '1' }]]);
    await storage.rescheduleForRetry(LEASE, 90 * 24 * 3_600_000, 'Error: a\u0000b');
    const values = calls[0].inputs.map((i) => [i.type, i.value]);
    expect(values).toContainEqual(['BigInt', 90 * 24 * 3_600_000]);
    expect(values).toContainEqual(['NVarChar', 'Error: a\uFFFDb']);
  });

  it('enqueue: the idempotency-key loser returns the holder id', async () => {
    const { storage } = stubbedStorage([[{ Created: 0, HolderId: ID2, IdExists: 0 }]]);
    expect(await storage.enqueue({ id: ID, queue: 'emails', idempotencyKey: 'k' })).toEqual({
      id: ID2,
      created: false,
    });
  });

  it('enqueue: a duplicate-key error (2601) runs the statement again and returns the holder', async () => {
    const { storage, calls } = stubbedStorage([
      sqlError(2601, 'Cannot insert duplicate key row'),
      [{ Created: 0, HolderId: ID2, IdExists: 0 }],
    ]);
    expect(await storage.enqueue({ id: ID, queue: 'emails', idempotencyKey: 'k' })).toEqual({
      id: ID2,
      created: false,
    });
    expect(calls).toHaveLength(2);
    expect(calls[1].sql).toBe(calls[0].sql);
  });

  it('enqueueMany: results in input order from the Ord column', async () => {
    const { storage, calls } = stubbedStorage([
      [
        { Ord: 1, Id: ID, Created: 0 },
        { Ord: 0, Id: ID, Created: 1 },
      ],
    ]);
    expect(
      await storage.enqueueMany([
        { id: ID, queue: 'q', idempotencyKey: 'k' },
        { id: ID2, queue: 'q', idempotencyKey: 'k' },
      ]),
    ).toEqual([
      { id: ID, created: true },
      { id: ID, created: false },
    ]);
    expect(calls[0].inputs).toHaveLength(1);
  });

  describe('enqueue with a dedupe key', () => {
    const THROTTLE = { key: 'digest:42', mode: 'throttle', windowMs: 60_000 } as const;
    const DEBOUNCE = { key: 'digest:42', mode: 'debounce', windowMs: 30_000 } as const;
    const COMMITTED = [{ isolationLevel: expect.anything(), end: 'commit' }];
    /** The batches ran on one Request parent, and it is a transaction (not the pool). */
    const oneTransaction = (calls: Call[]) => {
      expect(new Set(calls.map((c) => c.parent)).size).toBe(1);
      expect(typeof (calls[0].parent as { begin?: unknown }).begin).toBe('function');
    };

    it("a free key: taken and the job inserted by the keyless enqueue batch, on ONE of ChokaQ's READ COMMITTED transactions", async () => {
      const { storage, calls, transactions, dataSource } = stubbedStorage([
        [{ JobId: ID }],
        [{ Created: 1, HolderId: null, IdExists: 1 }],
      ]);
      const job = { id: ID, queue: 'q', dedupe: THROTTLE };
      expect(await storage.enqueue(job)).toEqual({ id: ID, created: true });
      const driver = dataSource.driver as SqlServerDriver;
      expect(transactions).toEqual([
        { isolationLevel: driver.convertIsolationLevel('READ COMMITTED'), end: 'commit' },
      ]);
      oneTransaction(calls);
      const validated = validateNewJob(job);
      expect(calls.map((c) => c.sql)).toEqual([
        SQL.dedupeTake(BINARY, validated).sql,
        // Exactly the batch of an enqueue without a key (no XACT_ABORT, no transaction of its own).
        SQL.enqueue(BINARY, validated).sql,
      ]);
      expect(calls[0].sql).toContain('WITH (UPDLOCK, HOLDLOCK) WHERE k.[Key] = @0');
    });

    it("a key held within its window: the holder's id, nothing inserted, the transaction committed", async () => {
      const { storage, calls, transactions } = stubbedStorage([
        [],
        [{ JobId: ID2, InWindow: 1, HotStatus: 2, FinishedWithinWindow: 0 }],
      ]);
      expect(await storage.enqueue({ id: ID, queue: 'q', dedupe: THROTTLE })).toEqual({
        id: ID2,
        created: false,
      });
      expect(transactions).toEqual(COMMITTED);
      oneTransaction(calls);
      expect(calls[1].sql).toContain('FROM [chokaq].[DedupeKeys] AS k WITH (UPDLOCK, HOLDLOCK)');
    });

    it('debounce: a Pending holder is replaced; one a claim took meanwhile is not, and a new job takes the key', async () => {
      const holder = [{ JobId: ID2, InWindow: 1, HotStatus: 0, FinishedWithinWindow: 0 }];
      const replaced = stubbedStorage([[], holder, [{ Id: ID2 }]]);
      expect(
        await replaced.storage.enqueue({ id: ID, queue: 'q', payload: { n: 2 }, dedupe: DEBOUNCE }),
      ).toEqual({ id: ID2, created: false, replaced: true });
      oneTransaction(replaced.calls);
      expect(replaced.calls[2].sql).toContain(
        'WHERE h.Id = CAST(@0 AS varchar(36)) AND h.Status = 0;',
      );
      expect(replaced.calls[2].inputs.map((i) => i.value)).toEqual([
        ID2,
        '{"n":2}',
        1,
        null,
        30_000,
        'digest:42',
      ]);

      const claimed = stubbedStorage([
        [],
        holder,
        [],
        [{ Created: 1, HolderId: null, IdExists: 1 }],
        [],
      ]);
      expect(await claimed.storage.enqueue({ id: ID, queue: 'q', dedupe: DEBOUNCE })).toEqual({
        id: ID,
        created: true,
      });
      oneTransaction(claimed.calls);
      expect(claimed.calls[4].sql).toContain('UPDATE k SET k.JobId = CAST(@1 AS varchar(36))');
      expect(claimed.transactions).toEqual(COMMITTED);
    });

    it('a deadlock mid-way rolls the whole enqueue back and runs it again from the take', async () => {
      const { storage, calls, transactions } = stubbedStorage([
        [{ JobId: ID }],
        sqlError(1205, 'deadlock victim'),
        [{ JobId: ID }],
        [{ Created: 1, HolderId: null, IdExists: 1 }],
      ]);
      expect(await storage.enqueue({ id: ID, queue: 'q', dedupe: THROTTLE })).toEqual({
        id: ID,
        created: true,
      });
      expect(transactions.map((t) => t.end)).toEqual(['rollback', 'commit']);
      expect(calls[2].sql).toBe(calls[0].sql);
      expect(calls[2].parent).not.toBe(calls[0].parent);
    });

    it("in a caller's transaction: every step on the caller's runner, no prologue, no XACT_ABORT, nothing begun", async () => {
      const { storage, calls, dataSource, transactions } = stubbedStorage([
        [],
        [{ JobId: ID2, InWindow: 0, HotStatus: null, FinishedWithinWindow: 0 }],
        [{ Created: 1, HolderId: null, IdExists: 1 }],
        [],
      ]);
      const runner = dataSource.createQueryRunner();
      await runner.startTransaction('SERIALIZABLE');
      expect(
        await storage.enqueue({ id: ID, queue: 'q', dedupe: THROTTLE }, { transaction: runner }),
      ).toEqual({ id: ID, created: true });
      await runner.commitTransaction();
      expect(calls).toHaveLength(4);
      oneTransaction(calls);
      for (const call of calls) {
        expect(call.sql).not.toMatch(
          /ISOLATION LEVEL|LOCK_TIMEOUT|XACT_ABORT|^\s*(BEGIN\s+TRAN|COMMIT)\b/im,
        );
      }
      // The caller's transaction only: ChokaQ begins nothing of its own.
      expect(transactions).toHaveLength(1);
    });

    it("the primary key as the take's backstop (2627): in a caller's transaction the key is read as held; in ChokaQ's the enqueue runs again", async () => {
      const held = [{ JobId: ID2, InWindow: 1, HotStatus: 0, FinishedWithinWindow: 0 }];
      const caller = stubbedStorage([sqlError(2627, 'Violation of PRIMARY KEY'), held]);
      const runner = caller.dataSource.createQueryRunner();
      await runner.startTransaction();
      expect(
        await caller.storage.enqueue(
          { id: ID, queue: 'q', dedupe: THROTTLE },
          { transaction: runner },
        ),
      ).toEqual({ id: ID2, created: false });
      await runner.commitTransaction();
      expect(caller.calls).toHaveLength(2);

      const own = stubbedStorage([sqlError(2627, 'Violation of PRIMARY KEY'), [], held]);
      expect(await own.storage.enqueue({ id: ID, queue: 'q', dedupe: THROTTLE })).toEqual({
        id: ID2,
        created: false,
      });
      expect(own.transactions.map((t) => t.end)).toEqual(['rollback', 'commit']);
      expect(own.calls[1].sql).toBe(own.calls[0].sql);
    });

    it('enqueueMany: the jobs without a key in one chunk, then each keyed job in key order on its own transaction; results in input order', async () => {
      const { storage, calls, transactions } = stubbedStorage([
        // The chunk of the job without a key.
        [{ Ord: 0, Id: ID2, Created: 1 }],
        // Key 'a' (the third item) first: taken and inserted.
        [{ JobId: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d' }],
        [{ Created: 1, HolderId: null, IdExists: 1 }],
        // Key 'b' (the first item): held by another job.
        [],
        [{ JobId: ID2, InWindow: 1, HotStatus: 0, FinishedWithinWindow: 0 }],
      ]);
      const third = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d';
      expect(
        await storage.enqueueMany([
          { id: ID, queue: 'q', dedupe: { ...THROTTLE, key: 'b' } },
          { id: ID2, queue: 'q' },
          { id: third, queue: 'q', dedupe: { ...THROTTLE, key: 'a' } },
        ]),
      ).toEqual([
        { id: ID2, created: false },
        { id: ID2, created: true },
        { id: third, created: true },
      ]);
      expect(calls[0].sql).toContain('OPENJSON');
      expect(calls[1].inputs[0].value).toBe('a');
      expect(calls[3].inputs[0].value).toBe('b');
      expect(transactions.map((t) => t.end)).toEqual(['commit', 'commit']);
      expect(calls[1].parent).toBe(calls[2].parent);
      expect(calls[3].parent).toBe(calls[4].parent);
      expect(calls[1].parent).not.toBe(calls[3].parent);
    });
  });

  it("applyRetention drains the dedupe keys, then the group windows, whatever the policy, then the batches settled before the longer of the Archive's and the DLQ's retention, and reports them; then puts stray jobs into their shared group, uncounted", async () => {
    const { storage, calls } = stubbedStorage([
      PLAIN_LAYOUT,
      [{ Affected: '0' }],
      [{ Affected: '0' }],
      [{ Affected: '0' }],
      [{ Affected: '0' }],
      [{ Affected: '0' }],
      [{ Affected: '2' }],
      [{ Affected: '3' }],
      [{ Affected: '4' }],
      [{ Affected: '1' }],
    ]);
    const day = 86_400_000;
    const result = await storage.applyRetention({
      archiveMs: day,
      dlqMs: 2 * day,
      metricsMs: day,
    });
    expect(result).toMatchObject({ archive: 0, dlq: 0, dedupeKeys: 2, groups: 3, batches: 4 });
    expect(calls).toHaveLength(10);
    // First the partition layout (plain tables: the Archive and the DLQ then as always).
    expect(calls[0].sql).toBe(SQL.partitionLayout(BINARY).sql);
    expect(calls[1].sql).toBe(SQL.applyRetentionArchive(BINARY, day, 1_000).sql);
    expect(calls[2].sql).toBe(SQL.applyRetentionDlq(BINARY, 2 * day, 1_000).sql);
    expect(calls[6].sql).toContain('DELETE FROM Expired OUTPUT deleted.[Key] INTO @Gone ([Key]);');
    expect(calls[7].sql).toContain(
      'DELETE FROM Expired OUTPUT deleted.GroupKey INTO @Gone (GroupKey);',
    );
    expect(calls[8].sql).toContain('DELETE FROM Expired OUTPUT deleted.Id INTO @Gone (Id);');
    expect(calls[8].sql).toContain('[BatchCallbacks] AS c INNER JOIN @Gone AS g');
    expect(calls[8].inputs.map((input) => input.value)).toContain(2 * day);
    // Not a removal: the one job it put into its queue's shared group is counted nowhere.
    expect(calls[9].sql).toContain(
      "UPDATE Stray SET GroupKey = N'' OUTPUT inserted.Id INTO @Joined (Id);",
    );
    expect(Object.values(result).reduce((a, b) => a + b, 0)).toBe(9);
  });

  describe('groups (schema version 17)', () => {
    const request = {
      workerId: LEASE.workerId,
      leaseId: LEASE.leaseId,
      limit: 4,
      handled: { queues: ['emails'], types: [] },
      start: 4,
    };
    const claimText = (groupsFirst: boolean, start = 4) =>
      SQL.fetchNextBatch(BINARY, {
        workerId: LEASE.workerId,
        leaseId: LEASE.leaseId,
        limit: 4,
        queues: ['emails'],
        types: [],
        start,
        groupsFirst,
      }).sql;

    it('a claim that starts rows claims the grouped queues, after the others and then, turn about, before them; one that starts none leaves them out and keeps the turn', async () => {
      const { storage, calls } = stubbedStorage([[], [], [], []]);
      await storage.fetchNextBatch(request);
      await storage.fetchNextBatch(request);
      await storage.fetchNextBatch({ ...request, start: 0 });
      await storage.fetchNextBatch(request);
      expect(calls.map((c) => c.sql)).toEqual([
        claimText(false),
        claimText(true),
        claimText(false, 0),
        claimText(false),
      ]);
      expect(claimText(false)).not.toBe(claimText(true));
      // The visits cap of the walk (groupVisits(4) = 64) follows the start, as the int @6.
      expect(calls[0].inputs[6]).toEqual({ name: '6', type: 'Int', value: 64 });
      expect(calls[2].inputs).toHaveLength(6);
      expect(calls[2].sql).not.toContain('@gQueue');
    });

    it('a claim that failed keeps the turn', async () => {
      const { storage, calls } = stubbedStorage([sqlError(547), [], []]);
      await expect(storage.fetchNextBatch(request)).rejects.toThrow();
      await storage.fetchNextBatch(request);
      await storage.fetchNextBatch(request);
      expect(calls.map((c) => c.sql)).toEqual([
        claimText(false),
        claimText(false),
        claimText(true),
      ]);
    });

    it('maps the group of a claimed row; the shared group reads as none', async () => {
      const started = { ...HOT_ROW, Status: 2, AttemptCount: 1, GroupKey: 'tenant-a' };
      const shared = { ...HOT_ROW, Id: ID2, Status: 2, AttemptCount: 1, GroupKey: '' };
      const { storage } = stubbedStorage([[started, shared]]);
      const jobs = await storage.fetchNextBatch(request);
      expect(jobs.map((j) => [j.id, j.group])).toEqual([
        [ID, 'tenant-a'],
        [ID2, null],
      ]);
    });

    it('enqueue sends the group as its last parameter, an nvarchar; none as NULL', async () => {
      const { storage, calls } = stubbedStorage([
        [{ Created: 1, HolderId: null, IdExists: 1 }],
        [{ Created: 1, HolderId: null, IdExists: 1 }],
      ]);
      await storage.enqueue({ queue: 'emails', group: 'tenant:42' });
      await storage.enqueue({ queue: 'emails' });
      for (const [call, value] of [
        [calls[0], 'tenant:42'],
        [calls[1], null],
      ] as const) {
        const last = call.inputs.length - 1;
        expect(call.inputs[last]).toEqual({ name: String(last), type: 'NVarChar', value });
        expect(call.sql).toContain(', PayloadVersion, BatchId, GroupKey)');
      }
      expect(calls[0].sql).toBe(calls[1].sql);
    });

    it('getQueueGroups maps group_key, pending and running (bigint strings)', async () => {
      const { storage, calls } = stubbedStorage([
        [
          { group_key: 'b', pending: '4', running: '2' },
          { group_key: '', pending: '1', running: '0' },
        ],
      ]);
      expect(await storage.getQueueGroups('emails', 5)).toEqual([
        { group: 'b', pending: 4, running: 2 },
        { group: '', pending: 1, running: 0 },
      ]);
      expect(calls[0].sql).toBe(SQL.getQueueGroups(BINARY, 'emails', 5).sql);
      expect(calls[0].inputs.map((i) => i.value)).toEqual(['emails', 5]);
    });

    it("updateQueue sets the group limits and reads them back as the queue's", async () => {
      const row = {
        Name: 'emails',
        IsPaused: false,
        IsActive: true,
        MaxWorkers: null,
        ZombieTimeoutSeconds: null,
        ExecutionTimeoutMs: null,
        RetryZombies: false,
        LastUpdatedUtc: '2026-01-02T03:04:05.678Z',
        RateLimitMax: null,
        RateLimitPerMs: null,
        GroupConcurrency: 2,
        GroupRateMax: 10,
        GroupRatePerMs: 60_000,
        GroupCursor: 'b',
      };
      const { storage, calls } = stubbedStorage([[row]]);
      const info = await storage.updateQueue('emails', {
        groupConcurrency: 2,
        groupRateLimit: { max: 10, perMs: 60_000 },
      });
      expect(info).toMatchObject({
        groupConcurrency: 2,
        groupRateLimit: { max: 10, perMs: 60_000 },
      });
      expect(calls[0].sql).toContain("UPDATE h SET h.GroupKey = N'' FROM [chokaq].[JobsHot] AS h");
    });
  });

  describe('batches (schema version 18)', () => {
    const NEW_BATCH = {
      jobs: [
        { queue: 'emails', payload: { n: 1 } },
        { queue: 'emails', payload: { n: 2 } },
      ],
      callbacks: {
        onComplete: { queue: 'reports', type: 'batch.done' },
        onFailure: { queue: 'alerts', type: 'batch.failed', group: 'tenant:42' },
      },
      createdBy: 'ops',
    };
    /** The value of parameter `i` of `call`, parsed as the JSON document it is. */
    const documentOf = (call: Call, i: number) =>
      JSON.parse(String(call.inputs[i].value)) as Array<Record<string, unknown>>;

    it("enqueueBatch: the batch's row, its callbacks and their queues, then its jobs carrying its id, on ONE of ChokaQ's READ COMMITTED transactions", async () => {
      const { storage, calls, transactions, dataSource } = stubbedStorage([[], []]);
      const result = await storage.enqueueBatch(NEW_BATCH);
      expect(result.jobIds).toHaveLength(2);
      expect(Object.keys(result.callbacks).sort()).toEqual(['complete', 'failure']);
      const driver = dataSource.driver as SqlServerDriver;
      expect(transactions).toEqual([
        { isolationLevel: driver.convertIsolationLevel('READ COMMITTED'), end: 'commit' },
      ]);
      expect(calls).toHaveLength(2);
      expect(new Set(calls.map((c) => c.parent)).size).toBe(1);
      expect(typeof (calls[0].parent as { begin?: unknown }).begin).toBe('function');
      // The batch's row: its id, who made it, its jobs' count; the callbacks' one document.
      expect(calls[0].sql).toContain(
        'INSERT INTO [chokaq].[Batches] (Id, CreatedAtUtc, CreatedBy, Total)',
      );
      expect(calls[0].sql.startsWith(`${PROLOGUE}SET NOCOUNT ON;\nSET XACT_ABORT ON;\n`)).toBe(
        true,
      );
      expect(calls[0].sql).not.toMatch(/^\s*(BEGIN\s+TRAN|COMMIT)\b/im);
      expect(calls[0].inputs.slice(0, 3).map((i) => i.value)).toEqual([result.batchId, 'ops', 2]);
      expect(
        documentOf(calls[0], 3).map(({ kind, id, queue, group, createdBy }) => ({
          kind,
          id,
          queue,
          group,
          createdBy,
        })),
      ).toEqual([
        { kind: 1, id: result.callbacks.complete, queue: 'reports', group: null, createdBy: 'ops' },
        {
          kind: 4,
          id: result.callbacks.failure,
          queue: 'alerts',
          group: 'tenant:42',
          createdBy: 'ops',
        },
      ]);
      // The jobs: the batch of enqueueMany, nested in the open transaction.
      expect(calls[1].sql).toMatch(/SET XACT_ABORT ON;[\s\S]*BEGIN TRAN;[\s\S]*COMMIT;/);
      const jobs = documentOf(calls[1], 0);
      expect(jobs.map((j) => j.id)).toEqual(result.jobIds);
      expect(jobs.map((j) => j.batchId)).toEqual([result.batchId, result.batchId]);
      expect(jobs.map((j) => j.createdBy)).toEqual(['ops', 'ops']);
    });

    it('a deadlock mid-way rolls the whole batch back and runs it again from its row', async () => {
      const { storage, calls, transactions } = stubbedStorage([
        [],
        sqlError(1205, 'deadlock victim'),
        [],
        [],
      ]);
      const result = await storage.enqueueBatch(NEW_BATCH);
      expect(transactions.map((t) => t.end)).toEqual(['rollback', 'commit']);
      expect(calls).toHaveLength(4);
      // The same ids the second time: the validated batch is written again as it was.
      expect(calls[2].sql).toBe(calls[0].sql);
      expect(calls[2].inputs.map((i) => i.value)).toEqual(calls[0].inputs.map((i) => i.value));
      expect(calls[2].parent).not.toBe(calls[0].parent);
      expect(calls[2].inputs[0].value).toBe(result.batchId);
    });

    it("in a caller's transaction: every batch on the caller's runner, no prologue, no XACT_ABORT, nothing begun", async () => {
      const { storage, calls, dataSource, transactions } = stubbedStorage([[], []]);
      const runner = dataSource.createQueryRunner();
      await runner.startTransaction('SERIALIZABLE');
      await storage.enqueueBatch(NEW_BATCH, { transaction: runner });
      await runner.commitTransaction();
      expect(calls).toHaveLength(2);
      expect(new Set(calls.map((c) => c.parent)).size).toBe(1);
      for (const call of calls) expect(call.sql).not.toMatch(SESSION_OR_OWN_TRANSACTION);
      expect(transactions).toHaveLength(1);
    });

    it('getBatch maps the row and its callbacks (fired by the bits of Fired); no row is no batch', async () => {
      const row = {
        Id: ID,
        CreatedAtUtc: '2026-01-02T03:04:05.678Z',
        CreatedBy: 'ops',
        Total: 3,
        Succeeded: 2,
        Failed: 1,
        Fired: 5,
        SettledAtUtc: '2026-01-02T03:05:00.000Z',
      };
      const { storage, calls } = stubbedStorage([
        [
          { ...row, Kind: 1, JobId: ID2, Queue: 'reports', Type: 'batch.done' },
          { ...row, Kind: 2, JobId: LEASE.leaseId, Queue: 'reports', Type: 'batch.ok' },
        ],
        [
          {
            ...row,
            Fired: 0,
            SettledAtUtc: null,
            Kind: null,
            JobId: null,
            Queue: null,
            Type: null,
          },
        ],
        [],
      ]);
      expect(await storage.getBatch(ID)).toEqual({
        id: ID,
        createdAtUtc: new Date('2026-01-02T03:04:05.678Z'),
        createdBy: 'ops',
        total: 3,
        succeeded: 2,
        failed: 1,
        pending: 0,
        settledAtUtc: new Date('2026-01-02T03:05:00.000Z'),
        callbacks: [
          { kind: 'complete', jobId: ID2, queue: 'reports', type: 'batch.done', fired: true },
          {
            kind: 'success',
            jobId: LEASE.leaseId,
            queue: 'reports',
            type: 'batch.ok',
            fired: false,
          },
        ],
      });
      expect(await storage.getBatch(ID)).toMatchObject({ settledAtUtc: null, callbacks: [] });
      expect(await storage.getBatch(ID)).toBeNull();
      expect(calls[0].sql).toBe(SQL.getBatch(BINARY, ID).sql);
    });

    it("batchHotJobIds: the ids of the batch's hot jobs, callbacks left out, one read", async () => {
      const { storage, calls } = stubbedStorage([[{ Id: ID }, { Id: ID2 }]]);
      expect(await storage.batchHotJobIds(LEASE.leaseId)).toEqual([ID, ID2]);
      expect(calls.map((c) => c.sql)).toEqual([SQL.batchHotJobIds(BINARY, LEASE.leaseId).sql]);
      expect(calls[0].sql).toContain(
        'AND NOT EXISTS (SELECT 1 FROM [chokaq].[BatchCallbacks] AS x WHERE x.JobId = h.Id);',
      );
    });

    it("getBatchResults: the batch's archived jobs from the cursor, a row more than the page, results parsed", async () => {
      const { storage, calls } = stubbedStorage([
        [
          { Id: ID, Result: '{"n":1}' },
          { Id: ID2, Result: null },
          { Id: LEASE.leaseId, Result: '2' },
        ],
        [{ Id: LEASE.leaseId, Result: '2' }],
      ]);
      expect(await storage.getBatchResults(ID, { limit: 2 })).toEqual({
        items: [
          { id: ID, result: { n: 1 } },
          { id: ID2, result: null },
        ],
        nextCursor: ID2,
      });
      expect(await storage.getBatchResults(ID, { after: ID2.toUpperCase(), limit: 2 })).toEqual({
        items: [{ id: LEASE.leaseId, result: 2 }],
        nextCursor: null,
      });
      expect(calls.map((c) => c.sql)).toEqual([
        SQL.getBatchResults(BINARY, ID, '', 2).sql,
        SQL.getBatchResults(BINARY, ID, ID2, 2).sql,
      ]);
      // TOP (limit + 1), the batch, the cursor: '' before every id, else the id in lower case.
      expect(calls.map((c) => c.inputs.map((i) => i.value))).toEqual([
        [3, ID, ''],
        [3, ID, ID2],
      ]);
      expect(calls[1].sql).toContain('ORDER BY a.Id;');
    });

    it('the claim and getJob map the batch of a row', async () => {
      const { storage } = stubbedStorage([
        [{ ...HOT_ROW, BatchId: ID2 }],
        [{ ...HOT_ROW, Pillar: 'hot', BatchId: ID2 }],
        [],
      ]);
      const [claimed] = await storage.fetchNextBatch({
        workerId: LEASE.workerId,
        leaseId: LEASE.leaseId,
        limit: 1,
        handled: { queues: ['emails'], types: [] },
      });
      expect(claimed.batchId).toBe(ID2);
      expect((await storage.getJob(ID))?.batchId).toBe(ID2);
    });
  });

  describe('dependencies (schema version 19)', () => {
    const ID3 = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a60';
    /** The value of parameter `i` of `call`, parsed as the JSON document it is. */
    const documentOf = (call: Call, i: number) => JSON.parse(String(call.inputs[i].value));
    /** The batches ran on one Request parent, and it is a transaction (not the pool). */
    const oneTransaction = (calls: Call[]) => {
      expect(new Set(calls.map((c) => c.parent)).size).toBe(1);
      expect(typeof (calls[0].parent as { begin?: unknown }).begin).toBe('function');
    };

    it("enqueue with dependsOn: the job inserted Waiting, its dependency marked and its edge and count written, on ONE of ChokaQ's READ COMMITTED transactions; no check for a hot dependency", async () => {
      const { storage, calls, transactions, dataSource } = stubbedStorage([
        [{ Ord: 0, Id: ID2, Created: 1 }],
        [{ Id: ID, Pillar: 'hot' }],
        [],
      ]);
      expect(await storage.enqueue({ id: ID2, queue: 'q', dependsOn: [ID] })).toEqual({
        id: ID2,
        created: true,
      });
      const driver = dataSource.driver as SqlServerDriver;
      expect(transactions).toEqual([
        { isolationLevel: driver.convertIsolationLevel('READ COMMITTED'), end: 'commit' },
      ]);
      expect(calls).toHaveLength(3);
      oneTransaction(calls);
      // The chunk of enqueueMany with the status literal 7, nested in the open transaction.
      expect(calls[0].sql).toContain('i.Priority, 7, 0,');
      expect(calls[0].sql).toMatch(/SET XACT_ABORT ON;[\s\S]*BEGIN TRAN;[\s\S]*COMMIT;/);
      expect(documentOf(calls[0], 0).map((j: { id: string }) => j.id)).toEqual([ID2]);
      expect(calls[1].sql).toBe(SQL.locateDependencies(BINARY, [ID]).sql);
      expect(documentOf(calls[1], 0)).toEqual([ID]);
      expect(calls[2].sql).toContain('INSERT INTO [chokaq].[JobDependencies]');
      expect(documentOf(calls[2], 0)).toEqual([
        { dependsOn: ID, jobId: ID2, onFailure: 0, state: 0, needsCheck: 0 },
      ]);
      expect(documentOf(calls[2], 1)).toEqual([{ id: ID2, n: 1 }]);
    });

    it('enqueueMany of a flow: the jobs that wait on none first, then the Waiting ones; a job of the same call is a hot dependency; results in input order', async () => {
      const { storage, calls } = stubbedStorage([
        [{ Ord: 0, Id: ID, Created: 1 }],
        [{ Ord: 0, Id: ID2, Created: 1 }],
        [{ Id: ID, Pillar: 'hot' }],
        [],
      ]);
      const results = await storage.enqueueMany([
        { id: ID2, queue: 'q', dependsOn: [{ jobId: ID, onFailure: 'ignore' }] },
        { id: ID, queue: 'q' },
      ]);
      expect(results).toEqual([
        { id: ID2, created: true },
        { id: ID, created: true },
      ]);
      oneTransaction(calls);
      expect(calls[0].sql).toContain('i.Priority, 0, 0,');
      expect(calls[1].sql).toContain('i.Priority, 7, 0,');
      expect(documentOf(calls[3], 0)).toEqual([
        { dependsOn: ID, jobId: ID2, onFailure: 1, state: 0, needsCheck: 0 },
      ]);
    });

    it('a dependency in no table: read twice (a resurrect in flight), then ChokaQDependencyNotFoundError and the transaction rolled back, nothing retried', async () => {
      const { storage, calls, transactions } = stubbedStorage([
        [{ Ord: 0, Id: ID2, Created: 1 }],
        [],
        [],
      ]);
      const error = await storage
        .enqueue({ id: ID2, queue: 'q', dependsOn: [ID3] })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ChokaQDependencyNotFoundError);
      expect((error as ChokaQDependencyNotFoundError).missingIds).toEqual([ID3]);
      expect(transactions.map((t) => t.end)).toEqual(['rollback']);
      expect(calls).toHaveLength(3);
      expect(documentOf(calls[2], 0)).toEqual([ID3]);
    });

    it('a dependency found failed under cancel: the edge failed and marked, the job never released, and the check run once the enqueue committed cancels it', async () => {
      const { storage, calls, transactions } = stubbedStorage([
        [{ Ord: 0, Id: ID2, Created: 1 }],
        [{ Id: ID3, Pillar: 'dlq' }],
        [],
        // The check, round 1: the edge taken, the job cancelled, the edge unmarked.
        [{ JobId: ID2, DependsOn: ID3, State: 3 }],
        [{ Affected: '1' }],
        [],
        // Round 2 (round 1 cancelled a job, whose own dependents may now be marked): nothing.
        [],
      ]);
      expect(
        await storage.enqueue({
          id: ID2,
          queue: 'q',
          dependsOn: [{ jobId: ID3, onFailure: 'cancel' }],
        }),
      ).toEqual({ id: ID2, created: true });
      expect(documentOf(calls[2], 0)).toEqual([
        { dependsOn: ID3, jobId: ID2, onFailure: 2, state: 3, needsCheck: 1 },
      ]);
      expect(documentOf(calls[2], 1)).toEqual([{ id: ID2, n: 1 }]);
      // The enqueue's transaction, then one per round of the check.
      expect(transactions.map((t) => t.end)).toEqual(['commit', 'commit', 'commit']);
      expect(calls[3].sql).toBe(SQL.checkTake(BINARY, 500).sql);
      expect(calls[4].sql).toContain('WHERE h.Id = CAST(@0 AS varchar(36)) AND h.Status = 7;');
      expect(calls[4].inputs.map((i) => i.value).slice(0, 3)).toEqual([
        ID2,
        FailureReason.DependencyFailed,
        dependencyFailedText(ID3, EdgeState.Failed),
      ]);
      expect(documentOf(calls[5], 0)).toEqual([{ dependsOn: ID3, jobId: ID2 }]);
      expect(calls).toHaveLength(7);
    });

    it("in a caller's transaction: every batch on the caller's runner, no prologue, no XACT_ABORT, nothing begun, no check after", async () => {
      const { storage, calls, dataSource, transactions } = stubbedStorage([
        [{ Ord: 0, Id: ID2, Created: 1 }],
        [{ Id: ID3, Pillar: 'dlq' }],
        [],
      ]);
      const runner = dataSource.createQueryRunner();
      await runner.startTransaction('SERIALIZABLE');
      await storage.enqueue(
        { id: ID2, queue: 'q', dependsOn: [{ jobId: ID3, onFailure: 'cancel' }] },
        { transaction: runner },
      );
      await runner.commitTransaction();
      expect(calls).toHaveLength(3);
      expect(new Set(calls.map((c) => c.parent)).size).toBe(1);
      for (const call of calls) expect(call.sql).not.toMatch(SESSION_OR_OWN_TRANSACTION);
      expect(transactions).toHaveLength(1);
    });

    it('checkDependencies: the first edge per dependent names the dependency; every edge taken is unmarked; a short round that cancelled nothing is the last', async () => {
      const { storage, calls, transactions } = stubbedStorage([
        [
          { JobId: ID2, DependsOn: ID3, State: 4 },
          { JobId: ID2, DependsOn: ID, State: 3 },
          { JobId: ID, DependsOn: ID3, State: 4 },
        ],
        [{ Affected: '1' }],
        [{ Affected: '0' }],
        [],
        [],
      ]);
      expect(await storage.checkDependencies(10)).toEqual({ settled: 0, cancelled: [ID2] });
      expect(calls[1].inputs[2].value).toBe(dependencyFailedText(ID3, EdgeState.Removed));
      expect(calls[2].inputs[0].value).toBe(ID);
      expect(documentOf(calls[3], 0)).toHaveLength(3);
      expect(transactions.map((t) => t.end)).toEqual(['commit', 'commit']);
      expect(calls).toHaveLength(5);
      // A limit of 0 takes nothing.
      expect(await storage.checkDependencies(0)).toEqual({ settled: 0, cancelled: [] });
      expect(calls).toHaveLength(5);
    });

    it('getDependencies maps both directions and where each dependency is; the counts read the Waiting rows', async () => {
      const { storage } = stubbedStorage([
        [
          { Dir: 'by', JobId: ID2, DependsOn: ID, OnFailure: 2, State: 0, Pillar: 'dlq' },
          { Dir: 'on', JobId: ID, DependsOn: ID3, OnFailure: 0, State: 1, Pillar: 'archive' },
        ],
        [{ Pending: '1', Waiting: '4', Archived: '0', Dlq: '0' }],
        [{ Queue: 'q', Waiting: '3', IsPaused: false, IsActive: true }],
      ]);
      expect(await storage.getDependencies(ID)).toEqual({
        dependsOn: [
          {
            jobId: ID,
            dependsOn: ID3,
            onFailure: 'block',
            state: 'succeeded',
            dependencyPillar: 'archive',
            blocked: false,
          },
        ],
        dependents: [
          {
            jobId: ID2,
            dependsOn: ID,
            onFailure: 'cancel',
            state: 'waiting',
            dependencyPillar: 'dlq',
            blocked: true,
          },
        ],
        truncated: false,
      });
      expect(await storage.getSummary()).toMatchObject({ pending: 1, waiting: 4 });
      expect(await storage.getQueueStats()).toEqual([
        expect.objectContaining({ queue: 'q', waiting: 3 }),
      ]);
    });
  });

  it('retries deadlocks (1205) and Azure throttling, then gives up with ChokaQStorageUnavailableError', async () => {
    const { storage, calls } = stubbedStorage([sqlError(1205), [{ Affected: '1' }]]);
    expect(await storage.recoverAbandoned(60_000)).toBe(1);
    expect(calls).toHaveLength(2);

    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const down = stubbedStorage([sqlError(40613), reset, sqlError(49918)]);
    await expect(down.storage.recoverAbandoned(60_000)).rejects.toBeInstanceOf(
      ChokaQStorageUnavailableError,
    );
    expect(down.calls).toHaveLength(3);
  });

  it('dashboard reads: a NOLOCK scan that lost its place (601) is retried', async () => {
    const lost = sqlError(601, 'Could not continue scan with NOLOCK due to data movement.');
    const { storage, calls } = stubbedStorage([
      lost,
      [{ SucceededTotal: '5', Archived: '1200', Dlq: '7' }],
      lost,
      [],
    ]);
    expect(await storage.getSummary()).toMatchObject({ succeededTotal: 5, archived: 1200, dlq: 7 });
    expect(await storage.getQueueStats()).toEqual([]);
    expect(calls).toHaveLength(4);
  });

  it('does not retry a non-transient error', async () => {
    const { storage, calls } = stubbedStorage([sqlError(547, 'constraint')]);
    await expect(storage.recoverAbandoned(60_000)).rejects.toThrow('constraint');
    expect(calls).toHaveLength(1);
  });

  it('reads the first result set of a multi-set reply (what TypeORM exposes as records)', async () => {
    const { storage } = stubbedStorage([
      [
        [
          { Id: ID, Kind: 0 },
          { Id: ID2, Kind: 1 },
        ],
        [{ ignored: 1 }],
      ],
    ]);
    expect(await storage.cancel([ID, ID2], 'ops')).toEqual({
      cancelled: [ID],
      cancelRequested: [ID2],
    });
  });

  it('keepAlive reports touched rows and cancellation requests', async () => {
    const { storage } = stubbedStorage([
      [
        { Id: ID, CancelRequested: 0 },
        { Id: ID2, CancelRequested: 1 },
      ],
    ]);
    expect(await storage.keepAlive(LEASE.workerId, [LEASE, { ...LEASE, id: ID2 }])).toEqual({
      touched: 2,
      cancelRequested: [ID2],
    });
  });

  it('now() reads the ISO text the SQL renders, whatever the driver useUTC setting', async () => {
    const { storage } = stubbedStorage([[{ NowUtc: '2026-01-02T03:04:05.678Z' }]]);
    expect((await storage.now()).toISOString()).toBe('2026-01-02T03:04:05.678Z');
  });

  it('enqueue in a caller transaction: only a QueryRunner of the same DataSource with an open transaction', async () => {
    const { storage, calls } = stubbedStorage([]);
    const other = stubMssqlDataSource();
    await expect(
      storage.enqueue({ queue: 'q' }, { transaction: other.createQueryRunner() }),
    ).rejects.toBeInstanceOf(ChokaQTransactionError);
    await expect(storage.enqueue({ queue: 'q' }, { transaction: {} })).rejects.toBeInstanceOf(
      ChokaQTransactionError,
    );
    expect(calls).toHaveLength(0);
  });

  it('enqueue in an mssql transaction: one Request of it, every parameter typed and sized, nothing on ChokaQ’s pool', async () => {
    const { storage, calls } = stubbedStorage([]);
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- mssql ships no typings
    const mssql = require('mssql') as {
      VarChar: (n: number) => { type: unknown; length: number };
      NVarChar: { (n: number): { type: unknown; length: number } };
      MAX: number;
      Int: unknown;
      Bit: unknown;
    };
    const requests: Array<{ inputs: [string, unknown, unknown][]; sql?: string }> = [];
    let begun = true;
    const transaction = {
      begin: async () => undefined,
      request() {
        const request = {
          inputs: [] as [string, unknown, unknown][],
          sql: undefined as string | undefined,
        };
        requests.push(request);
        return {
          input: (name: string, type: unknown, value: unknown) =>
            request.inputs.push([name, type, value]),
          query: async (sql: string) => {
            if (!begun)
              throw Object.assign(new Error('Transaction has not begun.'), { code: 'ENOTBEGUN' });
            request.sql = sql;
            return { recordset: [{ Id: ID, Created: 1 }] };
          },
        };
      },
    };
    const result = await storage.enqueue(
      { queue: 'mail', type: 'welcome', payload: { to: 'a' }, id: ID },
      { transaction },
    );
    expect(result).toEqual({ id: ID, created: true });
    expect(calls).toHaveLength(0);
    expect(requests).toHaveLength(1);
    const [request] = requests;
    // A caller's transaction: no session prologue of ChokaQ's and no BEGIN TRAN of its own.
    expect(request.sql).not.toMatch(/SET TRANSACTION ISOLATION|BEGIN TRAN/);
    const typeOf = (name: string) => request.inputs.find(([n]) => n === name)?.[1];
    const sqlText = request.sql!;
    // The id goes as varchar(36): the key compares varchar with varchar (a seek).
    const idParam = request.inputs.find(([, , value]) => value === ID)![0];
    expect(sqlText).toContain(`CAST(@${idParam} AS varchar(36))`);
    expect(typeOf(idParam)).toEqual(mssql.VarChar(36));
    const payloadParam = request.inputs.find(([, , value]) => value === '{"to":"a"}')![0];
    expect(typeOf(payloadParam)).toEqual(mssql.NVarChar(mssql.MAX));
    expect(request.inputs.map(([name]) => name)).toEqual(request.inputs.map((_, i) => String(i)));

    begun = false;
    await expect(storage.enqueue({ queue: 'mail' }, { transaction })).rejects.toThrow(
      /has not begun/,
    );
    await expect(storage.enqueue({ queue: 'mail' }, { transaction })).rejects.toBeInstanceOf(
      ChokaQTransactionError,
    );
    // A pg client is no SQL Server transaction.
    const pgClient = { query: async () => ({ rows: [] }), getTransactionStatus: () => 'T' };
    await expect(storage.enqueue({ queue: 'mail' }, { transaction: pgClient })).rejects.toThrow(
      /cannot carry a SQL Server enqueue/,
    );
  });

  // The contract suite runs this table against every reachable database; here the refusals run on
  // SQL Server's dialect without a server: a refused argument never reaches SQL.
  it.each(EDGES)(
    '$name: refuses one past the limit at the same path, before any SQL',
    async (edge) => {
      const { storage, calls } = stubbedStorage([]);
      const refused = edge.refused ?? edge.accepted + 1;
      expect(await refusedPaths(edge.call(storage, refused))).toEqual([edge.path]);
      expect(calls).toHaveLength(0);
    },
  );

  describe('ensureSchema logs the migration once, from the versions the script reports', () => {
    let logger: RecordingLogger;
    beforeEach(() => {
      logger = new RecordingLogger();
      Logger.overrideLogger(logger);
    });
    afterEach(() => Logger.overrideLogger(new ConsoleLogger()));

    it('a new database: one SchemaMigrated line naming every version', async () => {
      const all = Array.from({ length: MSSQL_SCHEMA_VERSION }, (_, i) => i + 1);
      const { storage, calls } = stubbedStorage([all.map((Version) => ({ Version }))]);
      await storage.ensureSchema();
      expect(calls.map((c) => c.sql)).toEqual([SQL.ensureSchema('chokaq').sql]);
      expect(logger.lines).toHaveLength(1);
      expect(logger.events('SchemaMigrated')).toEqual([
        expect.objectContaining({
          eventId: 5000,
          dialect: 'mssql',
          schema: 'chokaq',
          fromVersion: 0,
          toVersion: MSSQL_SCHEMA_VERSION,
          applied: all,
        }),
      ]);
    });

    it('an older database: the versions it lacked', async () => {
      const { storage } = stubbedStorage([[{ Version: MSSQL_SCHEMA_VERSION }]]);
      await storage.ensureSchema();
      expect(logger.events('SchemaMigrated')).toEqual([
        expect.objectContaining({
          fromVersion: MSSQL_SCHEMA_VERSION - 1,
          applied: [MSSQL_SCHEMA_VERSION],
        }),
      ]);
    });

    it('a current database: nothing is logged', async () => {
      const { storage } = stubbedStorage([[]]);
      await storage.ensureSchema();
      expect(logger.lines).toEqual([]);
    });

    it('the schema batch runs under its own request timeout (none by default), ordinary batches under the pool’s', async () => {
      const unbounded = stubbedStorage([[], [{ Now: '2026-01-01T00:00:00.000' }]]);
      await unbounded.storage.ensureSchema();
      await unbounded.storage.now();
      // 0 is tedious's "no timeout"; a request without overrides keeps the connection's requestTimeout.
      expect(unbounded.calls.map((c) => c.overrides)).toEqual([{ requestTimeout: 0 }, undefined]);
      const bounded = stubbedStorage([[]], { schemaTimeoutMs: 600_000 });
      await bounded.storage.ensureSchema();
      expect(bounded.calls[0].overrides).toEqual({ requestTimeout: 600_000 });
    });
  });

  describe('schemaStatus reads the ledger and names the versions ensureSchema would apply', () => {
    it('a new database: every version pending, the whole script', async () => {
      const { storage, calls } = stubbedStorage([[]]);
      const status = await storage.schemaStatus();
      expect(calls.map((c) => c.sql)).toEqual([SQL.schemaStatus('chokaq').sql]);
      expect(status).toEqual({
        dialect: 'mssql',
        schema: 'chokaq',
        currentVersion: 0,
        latestVersion: MSSQL_SCHEMA_VERSION,
        pending: MSSQL_MIGRATIONS,
        script: mssqlSchemaDdl('chokaq'),
      });
    });

    it('an older database: the versions it lacks', async () => {
      const older = Array.from({ length: MSSQL_SCHEMA_VERSION - 2 }, (_, i) => ({
        Version: i + 1,
      }));
      const { storage } = stubbedStorage([older]);
      const status = await storage.schemaStatus();
      expect(status.currentVersion).toBe(MSSQL_SCHEMA_VERSION - 2);
      expect(status.pending.map((m) => m.version)).toEqual([
        MSSQL_SCHEMA_VERSION - 1,
        MSSQL_SCHEMA_VERSION,
      ]);
      expect(status.script).toBe(mssqlSchemaDdl('chokaq'));
    });

    it('a current database: nothing pending, no script', async () => {
      const all = MSSQL_MIGRATIONS.map(({ version }) => ({ Version: version }));
      const { storage } = stubbedStorage([all]);
      expect(await storage.schemaStatus()).toMatchObject({
        currentVersion: MSSQL_SCHEMA_VERSION,
        pending: [],
        script: '',
      });
    });

    it('the ledger rows the script writes are exactly MSSQL_MIGRATIONS, up to MSSQL_SCHEMA_VERSION', () => {
      const recorded = [
        ...mssqlSchemaDdl('chokaq').matchAll(
          /INSERT INTO \[chokaq\]\.\[SchemaMigrations\] \(Version, Description\)[^;]*VALUES \((\d+), N'((?:[^']|'')*)'\);/g,
        ),
      ].map(([, version, description]) => ({ version: Number(version), description }));
      expect(recorded).toEqual(MSSQL_MIGRATIONS);
      expect(MSSQL_MIGRATIONS[MSSQL_MIGRATIONS.length - 1].version).toBe(MSSQL_SCHEMA_VERSION);
    });
  });

  it('subscribe() returns null: SQL Server has no LISTEN/NOTIFY', async () => {
    const { storage } = stubbedStorage([]);
    expect(await storage.subscribe(() => undefined)).toBeNull();
  });
});

/**
 * Session state and startup checks: what a pooled connection may carry over from the application
 * (an isolation level, a lock timeout) must not change how ChokaQ's own batches run, and a caller's
 * transaction must stay the caller's.
 */
describe('SQL Server token-confirmed bulk actions (stubbed mssql Request)', () => {
  it("a token's first batch inserts its audit row before it takes a row, and adds the count after", async () => {
    // Replies: the audit row, the purge (its count selected as Affected), the count added.
    const { storage, calls } = stubbedStorage([[], [{ Affected: '2' }], []]);
    const token = '0190b4d6-0000-7000-8000-000000000001';
    const purged = await storage.purgeDlqByFilter({ queue: 'emails' }, 10, {
      action: 'dlq.purge-by-filter',
      confirmation: token,
    });
    expect(purged).toBe(2);
    expect(calls).toHaveLength(3);
    // The token first: a second action with it waits on this row and is refused, rather than
    // reading past the rows this one has locked and taking the token with nothing done.
    expect(calls[0].sql).toMatch(/INSERT INTO \[chokaq\]\.\[AuditLog\]/);
    expect(calls[0].sql).not.toMatch(/MERGE/);
    expect(calls[1].sql).toMatch(/DELETE/);
    expect(calls[2].sql).toMatch(/AuditLog/);
    expect(calls[2].inputs.map((i) => i.value)).toContain(2);
  });
});

describe('SQL Server dialect session state (stubbed mssql Request)', () => {
  const SLOT = new Date('2026-01-02T03:00:00.000Z');
  const NEXT = new Date('2026-01-03T03:00:00.000Z');

  it('prepare() refuses a database below compatibility level 130 with a typed error', async () => {
    const { storage } = stubbedStorage([[{ CompatibilityLevel: 120, DatabaseName: 'jobs' }]]);
    const error = await storage.prepare().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChokaQCompatibilityLevelError);
    expect(error).toMatchObject({ database: 'jobs', found: 120, required: 130 });
    expect((error as Error).message).toContain(
      'ALTER DATABASE [jobs] SET COMPATIBILITY_LEVEL = 130',
    );
  });

  it.each([
    [
      'an install of an earlier release (the database collation)',
      'SQL_Latin1_General_CP1_CI_AS',
      false,
    ],
    ['a new or converted install', 'Latin1_General_100_BIN2', true],
    ['no tables yet (the bootstrap creates binary keys)', null, true],
  ])(
    'prepare() reads the key columns’ collation and builds the statements for it: %s',
    async (_case, collation, binaryKeys) => {
      const { storage, calls } = stubbedStorage([
        [{ CompatibilityLevel: 160, DatabaseName: 'jobs', KeyCollation: collation }],
        [],
        [],
      ]);
      await storage.prepare();
      await storage.markAsProcessing([LEASE]);
      const expected = SQL.markAsProcessing({ name: 'chokaq', binaryKeys }, [LEASE]).sql;
      expect(calls[1].sql).toBe(expected);
      expect(calls[1].sql.includes('COLLATE Latin1_General_100_BIN2')).toBe(binaryKeys);
      // A conversion makes the same storage build binary-key statements from then on.
      if (!binaryKeys) {
        const converted = stubbedStorage([
          [{ CompatibilityLevel: 160, DatabaseName: 'jobs', KeyCollation: collation }],
          [{ Converted: 1 }],
          [],
        ]);
        await converted.storage.prepare();
        await expect(converted.storage.convertKeysToBinary!()).resolves.toBe(true);
        expect(converted.calls[1].sql).toBe(SQL.convertKeysToBinary('chokaq').sql);
        await converted.storage.markAsProcessing([LEASE]);
        expect(converted.calls[2].sql).toContain('COLLATE Latin1_General_100_BIN2');
      }
    },
  );

  it('prepare() accepts compatibility level 130 and above', async () => {
    const { storage, calls } = stubbedStorage([
      [{ CompatibilityLevel: 130, DatabaseName: 'jobs' }],
      [{ CompatibilityLevel: '160', DatabaseName: 'jobs' }],
    ]);
    await storage.prepare();
    await storage.prepare();
    expect(calls[0].sql.startsWith(PROLOGUE)).toBe(true);
  });

  it('claimRecurringSlot begins READ COMMITTED even when the DataSource default is SERIALIZABLE', async () => {
    const { storage, calls, transactions, dataSource } = stubbedStorage([
      [{ Affected: '1' }],
      [{ Created: 1, HolderId: null, IdExists: 1 }],
    ]);
    // TypeORM's startTransaction() without a level falls back to this option.
    Object.assign(dataSource.options, { isolationLevel: 'SERIALIZABLE' });
    const driver = dataSource.driver as SqlServerDriver;
    const result = await storage.claimRecurringSlot('nightly', SLOT, NEXT, {
      id: ID,
      queue: 'reports',
      type: 'nightly.v1',
    });
    expect(result).toEqual({ id: ID, created: true });
    expect(transactions).toEqual([
      { isolationLevel: driver.convertIsolationLevel('READ COMMITTED'), end: 'commit' },
    ]);
    expect(calls.map((c) => c.sql.startsWith(PROLOGUE))).toEqual([true, true]);
  });

  it('enqueue and enqueueMany on their own connection start with the session prologue', async () => {
    const { storage, calls } = stubbedStorage([
      [{ Created: 1, HolderId: null, IdExists: 1 }],
      [{ Ord: 0, Id: ID2, Created: 1 }],
    ]);
    await storage.enqueue({ id: ID, queue: 'q' });
    await storage.enqueueMany([{ id: ID2, queue: 'q' }]);
    expect(calls.map((c) => c.sql.startsWith(PROLOGUE))).toEqual([true, true]);
    expect(calls[1].sql).toMatch(/SET XACT_ABORT ON;[\s\S]*BEGIN TRAN;[\s\S]*COMMIT;/);
  });

  it("enqueueMany in a caller's transaction: no session prologue, no XACT_ABORT, no BEGIN TRAN", async () => {
    const { storage, calls, dataSource, transactions } = stubbedStorage([
      [{ Ord: 0, Id: ID, Created: 1 }],
      [{ Created: 1, HolderId: null, IdExists: 1 }],
    ]);
    const runner = dataSource.createQueryRunner();
    await runner.startTransaction('SERIALIZABLE');
    expect(
      await storage.enqueueMany([{ id: ID, queue: 'q', idempotencyKey: 'k' }], {
        transaction: runner,
      }),
    ).toEqual([{ id: ID, created: true }]);
    expect(await storage.enqueue({ id: ID2, queue: 'q' }, { transaction: runner })).toEqual({
      id: ID2,
      created: true,
    });
    await runner.commitTransaction();
    expect(calls).toHaveLength(2);
    for (const call of calls) expect(call.sql).not.toMatch(SESSION_OR_OWN_TRANSACTION);
    // The caller's level stays the caller's: ChokaQ begins nothing of its own.
    expect(transactions).toHaveLength(1);
  });

  it("a deadlock inside a caller's transaction reaches the caller unretried", async () => {
    const { storage, calls, dataSource } = stubbedStorage([sqlError(1205, 'deadlock victim')]);
    const runner = dataSource.createQueryRunner();
    await runner.startTransaction();
    await expect(
      storage.enqueueMany([{ id: ID, queue: 'q' }], { transaction: runner }),
    ).rejects.toThrow('deadlock victim');
    expect(calls).toHaveLength(1);
    await runner.rollbackTransaction();
  });

  it('enqueue retried after an ambiguous commit returns its own id, not the new key holder', async () => {
    // The first attempt committed, its job finished, and another job now holds the key: the
    // read-back sees both the id (archived) and a holder of the key.
    const { storage } = stubbedStorage([[{ Created: 0, HolderId: ID2, IdExists: 1 }]]);
    expect(await storage.enqueue({ id: ID, queue: 'emails', idempotencyKey: 'k' })).toEqual({
      id: ID,
      created: false,
    });
  });
});

/**
 * A partitioned Archive and DLQ (`storage.partitioning`) over the stubbed driver: what the storage
 * sends at `ensureSchema` and at each retention pass for the layouts the catalog read reports, and
 * how a change that gave up on a lock (error 51001, raised by the batch) is left to the next pass.
 */
describe('SQL Server partitioned Archive and DLQ (stubbed mssql Request)', () => {
  const NOW = '2026-01-02T03:04:05.678Z';
  const DAY = 86_400_000;
  /** Midnight UTC of `2026-01-<day>` (day 0 and below reach into December). */
  const jan = (day: number) => new Date(Date.UTC(2026, 0, day));
  /** Every midnight from `from` to `to`, both included. */
  const days = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, i) => jan(from + i));
  /** `partitionLayout`'s rows: a partitioned table's boundaries one row each, a plain one's one row. */
  function layout(
    archive: Date[] | null,
    dlq: Date[] | null = null,
    extra: Partial<Row> = {},
  ): Row[] {
    const rows = (Pillar: string, boundaries: Date[] | null): Row[] =>
      boundaries === null
        ? [{ ...PLAIN_LAYOUT[0], Pillar }]
        : boundaries.map((at, i) => ({
            Pillar,
            Partitioned: 1,
            Unaligned: 0,
            Blocked: 0,
            BoundaryId: i + 1,
            Boundary: at.toISOString(),
            NowUtc: NOW,
            ...extra,
          }));
    return [...rows('archive', archive), ...rows('dlq', dlq)];
  }
  /** The replies of the retention steps after the Archive's and the DLQ's: nothing removed. */
  const QUIET_REST: Reply[] = Array.from({ length: 7 }, () => [{ Affected: '0' }]);
  const POLICY = { archiveMs: 5 * DAY, dlqMs: 5 * DAY, metricsMs: DAY };

  let logger: RecordingLogger;
  beforeEach(() => {
    logger = new RecordingLogger();
    Logger.overrideLogger(logger);
  });
  afterEach(() => Logger.overrideLogger(new ConsoleLogger()));

  it('ensureSchema converts each plain table (a schema batch, its boundaries one typed JSON parameter), logs it, and reads the layout again', async () => {
    const ahead = boundariesAhead(new Date(NOW), 'day');
    const { storage, calls } = stubbedStorage(
      [
        [],
        PLAIN_LAYOUT,
        [{ Converted: true, KeptRows: false }],
        [{ Converted: true, KeptRows: true }],
        layout(ahead, ahead),
      ],
      { partitioning: { period: 'day' } },
    );
    await storage.ensureSchema();
    expect(calls.map((c) => c.sql)).toEqual([
      SQL.ensureSchema('chokaq').sql,
      SQL.partitionLayout(BINARY).sql,
      SQL.convertToPartitioned(BINARY, 'archive', ahead).sql,
      SQL.convertToPartitioned(BINARY, 'dlq', ahead).sql,
      SQL.partitionLayout(BINARY).sql,
    ]);
    // The conversions are schema batches: their own request timeout, the boundaries declared.
    expect(calls[2].overrides).toEqual({ requestTimeout: 0 });
    expect(calls[2].inputs.map((i) => [i.name, i.type])).toEqual([['0', 'NVarChar']]);
    expect(JSON.parse(String(calls[2].inputs[0].value))).toEqual(
      ahead.map((at) => at.toISOString().slice(0, 23)),
    );
    expect(ahead[0].toISOString()).toBe('2026-01-02T00:00:00.000Z');
    expect(ahead).toHaveLength(9);
    expect(logger.events('ArchivePartitioned')).toEqual([
      expect.objectContaining({ dialect: 'mssql', table: 'JobsArchive', keptRows: false }),
      expect.objectContaining({ dialect: 'mssql', table: 'JobsDLQ', keptRows: true }),
    ]);
  });

  it('ensureSchema without storage.partitioning runs the script alone; with it and both tables partitioned, only the layout read', async () => {
    const plain = stubbedStorage([[]]);
    await plain.storage.ensureSchema();
    expect(plain.calls).toHaveLength(1);
    const ahead = boundariesAhead(new Date(NOW), 'day');
    const done = stubbedStorage([[], layout(ahead, ahead)], { partitioning: { period: 'day' } });
    await done.storage.ensureSchema();
    expect(done.calls.map((c) => c.sql)).toEqual([
      SQL.ensureSchema('chokaq').sql,
      SQL.partitionLayout(BINARY).sql,
    ]);
    expect(logger.events('ArchivePartitioned')).toEqual([]);
  });

  it('retention removes the expired partitions whole, oldest first, each numbered as the removals before it leave it, then deletes row by row only outside the periods', async () => {
    // The Archive has day partitions from Dec 26 to Jan 10; with a five-day retention the two
    // of Dec 26 and Dec 27 are wholly expired (Dec 28 03:04 is the cutoff). The DLQ is plain.
    const boundaries = days(-5, 10);
    const { storage, calls } = stubbedStorage([
      layout(boundaries),
      [{ Removed: 1, Affected: '3' }],
      [{ Removed: 1, Affected: '0' }],
      [{ Affected: '1' }],
      [{ Affected: '0' }],
      ...QUIET_REST,
    ]);
    const result = await storage.applyRetention(POLICY);
    expect(result).toMatchObject({ archive: 4, dlq: 0 });
    expect(calls.map((c) => c.sql).slice(0, 5)).toEqual([
      SQL.partitionLayout(BINARY).sql,
      SQL.dropPartition(BINARY, 'archive', { number: 2, from: jan(-5), to: jan(-4) }, 5 * DAY).sql,
      SQL.dropPartition(BINARY, 'archive', { number: 2, from: jan(-4), to: jan(-3) }, 5 * DAY).sql,
      SQL.applyRetentionArchive(BINARY, 5 * DAY, 1_000, { below: jan(-5), from: jan(10) }).sql,
      SQL.applyRetentionDlq(BINARY, 5 * DAY, 1_000).sql,
    ]);
    // Partition 2 both times: the first removal merged its lower boundary away.
    expect(calls[1].inputs.map((i) => i.value)).toEqual([
      2,
      '2025-12-26T00:00:00.000',
      '2025-12-27T00:00:00.000',
      5 * DAY,
    ]);
    expect(calls[2].inputs.map((i) => i.value)).toEqual([
      2,
      '2025-12-27T00:00:00.000',
      '2025-12-28T00:00:00.000',
      5 * DAY,
    ]);
    expect(logger.events('PartitionsChanged')).toEqual([
      expect.objectContaining({ created: [], dropped: ['JobsArchive_20251226_20251227'] }),
      expect.objectContaining({ created: [], dropped: ['JobsArchive_20251227_20251228'] }),
    ]);
  });

  it('a removal that gave up on a lock (51001) is logged and left to the next pass: not retried, no later partition tried, the row-by-row retention goes on', async () => {
    const { storage, calls } = stubbedStorage([
      layout(days(-5, 10)),
      sqlError(51001, 'ChokaQ: a partition change waited 1000 ms for a table lock'),
      [{ Affected: '0' }],
      [{ Affected: '0' }],
      ...QUIET_REST,
    ]);
    const result = await storage.applyRetention(POLICY);
    expect(result.archive).toBe(0);
    expect(calls).toHaveLength(11);
    expect(calls[2].sql).toBe(
      SQL.applyRetentionArchive(BINARY, 5 * DAY, 1_000, { below: jan(-5), from: jan(10) }).sql,
    );
    expect(logger.events('PartitionMaintenanceDeferred')).toEqual([
      expect.objectContaining({
        table: 'JobsArchive',
        partition: 'JobsArchive_20251226_20251227',
        error: expect.stringContaining('1000 ms'),
      }),
    ]);
    expect(logger.events('PartitionsChanged')).toEqual([]);
  });

  it('a partition another process changed since the layout read (Removed 0) ends the removals of that table for this pass', async () => {
    const { storage, calls } = stubbedStorage([
      layout(days(-5, 10)),
      [{ Removed: 0, Affected: '0' }],
      [{ Affected: '0' }],
      [{ Affected: '0' }],
      ...QUIET_REST,
    ]);
    await storage.applyRetention(POLICY);
    expect(calls).toHaveLength(11);
    expect(calls[2].sql).toContain('WITH Expired AS (');
    expect(logger.events('PartitionsChanged')).toEqual([]);
  });

  it('a table whose partitions cannot be truncated (an unaligned index) is retained row by row, whole, and says why', async () => {
    const { storage, calls } = stubbedStorage([
      layout(days(-5, 10), null, { Unaligned: 1 }),
      [{ Affected: '0' }],
      [{ Affected: '0' }],
      ...QUIET_REST,
    ]);
    await storage.applyRetention(POLICY);
    expect(calls[1].sql).toBe(SQL.applyRetentionArchive(BINARY, 5 * DAY, 1_000).sql);
    expect(logger.events('PartitionMaintenanceDeferred')).toEqual([
      expect.objectContaining({
        table: 'JobsArchive',
        error: expect.stringContaining('not aligned'),
      }),
    ]);
  });

  it('maintenance makes the boundaries a table lacks up to a week ahead, by the configured period or, without one, the period of its newest partition', async () => {
    // Both tables end on Jan 5; the week of days ahead of Jan 2 ends on Jan 10.
    for (const partitioning of [{ period: 'day' as const }, null]) {
      const { storage, calls } = stubbedStorage(
        [
          layout(days(-1, 5), days(-1, 5)),
          [
            { Boundary: '2026-01-08T00:00:00.000Z' },
            { Boundary: '2026-01-09T00:00:00.000Z' },
            { Boundary: '2026-01-10T00:00:00.000Z' },
          ],
          sqlError(51001, 'ChokaQ: another process is changing the partitions'),
          [{ Affected: '0' }],
          [{ Affected: '0' }],
          ...QUIET_REST,
        ],
        { partitioning },
      );
      await storage.applyRetention(POLICY);
      expect(calls.map((c) => c.sql).slice(1, 3)).toEqual([
        SQL.makePartitionsAhead(BINARY, 'archive', days(6, 10)).sql,
        SQL.makePartitionsAhead(BINARY, 'dlq', days(6, 10)).sql,
      ]);
      expect(JSON.parse(String(calls[1].inputs[0].value))).toEqual(
        days(6, 10).map((at) => at.toISOString().slice(0, 23)),
      );
      // Three made: a row of Jan 7 kept Jan 6 and 7 back (a split there would move it), so the
      // partition it is in now reaches from Jan 5 to Jan 8. The DLQ's change waits for the next pass.
      expect(logger.events('PartitionsChanged')).toEqual([
        expect.objectContaining({
          table: 'JobsArchive',
          created: [
            'JobsArchive_20260105_20260108',
            'JobsArchive_20260108_20260109',
            'JobsArchive_20260109_20260110',
          ],
          dropped: [],
        }),
      ]);
      expect(logger.events('PartitionMaintenanceDeferred')).toEqual([
        expect.objectContaining({ table: 'JobsDLQ', partition: 'JobsDLQ_20260105_20260106' }),
      ]);
      logger.lines.length = 0;
    }
  });
});
