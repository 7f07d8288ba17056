import { TYPES } from 'tedious';
import { MssqlParameter } from 'typeorm';
import { SqlServerDriver } from 'typeorm/driver/sqlserver/SqlServerDriver';
import { ChokaQValidationError } from '../../libs/chokaq/src/errors';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { MssqlStatement, ParamList } from '../../libs/chokaq/src/storage/mssql/mssql-params';
import * as SQL from '../../libs/chokaq/src/storage/mssql/sql';
import {
  EdgeState,
  PlannedDependencies,
  PolicyCode,
} from '../../libs/chokaq/src/storage/shared/dependencies';
import { STORED_TEXT } from '../../libs/chokaq/src/storage/validated-job-storage';
import { TOP_ERRORS_WINDOW } from './support/statements';
import { stubMssqlDataSource } from './support/stub-data-source';

/**
 * SQL Server caches one plan per batch text *and* parameter declaration list. tedious declares an
 * `nvarchar` parameter given without a length by the length of its value (`nvarchar(17)`,
 * `nvarchar(4213)`), so every distinct length would be a new cache entry and a full compile. Here
 * every statement builder is run twice, once with the shortest and once with the longest values
 * the validation lets through, and the parameter declarations (and the text) must be identical.
 *
 * The declarations are computed by the real driver stack, as it would send them: TypeORM's
 * `SqlServerQueryRunner` turns each `MssqlParameter` into an `mssql` type, `mssql`'s `Request.input`
 * records it, and tedious's data type writes the declaration that goes into `sp_executesql`'s
 * `@params` (`TYPES.NVarChar.declaration`, the code that builds that list).
 */

/** Every value a builder takes from outside, at one length. */
interface Values {
  id: string;
  id2: string;
  queue: string;
  type: string;
  payload: string;
  tags: string;
  key: string;
  workerId: string;
  leaseId: string;
  actor: string;
  error: string;
  createdBy: string;
  tag: string;
  search: string;
  name: string;
  cron: string;
  zone: string;
  date: Date;
  note: string;
  host: string;
  version: string;
  json: string;
  target: string;
  trace: string;
  group: string;
}

const SHORT: Values = {
  id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
  id2: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c',
  queue: 'q',
  type: 't',
  payload: '{}',
  tags: ',a,',
  key: 'k',
  workerId: 'w',
  leaseId: 'l',
  actor: 'o',
  error: 'e',
  createdBy: 'c',
  tag: 'g',
  search: 's',
  name: 'n',
  cron: '* * * * *',
  zone: 'UTC',
  date: new Date('2026-01-02T03:04:05.678Z'),
  note: '',
  host: 'h',
  version: '0',
  json: '{}',
  target: 'x',
  trace: '{}',
  group: 'g',
};

/** The longest values validation accepts (search and tag made of characters LIKE escapes). */
const LONG: Values = {
  id: 'ffffffff-ffff-7fff-bfff-ffffffffffff',
  id2: 'ffffffff-ffff-7fff-bfff-fffffffffffe',
  queue: 'Q'.repeat(255),
  type: 'T'.repeat(255),
  payload: `{"x":"${'p'.repeat(100_000)}"}`,
  tags: `,${'a'.repeat(100)},`.repeat(20),
  key: 'K'.repeat(255),
  workerId: 'W'.repeat(255),
  leaseId: 'L'.repeat(36),
  actor: 'A'.repeat(100),
  error: 'E'.repeat(50_000),
  createdBy: 'C'.repeat(100),
  tag: '%_'.repeat(127),
  search: '[%'.repeat(100),
  name: 'N'.repeat(255),
  cron: '0 0 * * *'.padEnd(255, ' '),
  zone: 'Z'.repeat(100),
  date: new Date('2099-12-31T23:59:59.999Z'),
  note: 'N'.repeat(500),
  host: 'H'.repeat(255),
  version: 'V'.repeat(100),
  json: `{"queues":["${'q'.repeat(50_000)}"],"types":[]}`,
  target: 'X'.repeat(4_000),
  trace: `{"traceparent":"${'t'.repeat(2_048 - 18)}"}`,
  group: 'G'.repeat(255),
};

type Case = [builder: keyof typeof SQL, variant: string, build: (v: Values) => MssqlStatement];

/** Every statement builder, in each shape whose parameter list differs. */
function cases(): Case[] {
  const job = (v: Values, key: boolean): SQL.MssqlNewJob => ({
    id: v.id,
    queue: v.queue,
    type: v.type,
    payload: v.payload,
    tags: v.tags,
    idempotencyKey: key ? v.key : null,
    priority: 1,
    delayMs: 5_000,
    runAt: v.date,
    createdBy: v.createdBy,
    traceContext: v.trace,
    payloadVersion: 1,
    group: v.group,
    batchId: null,
  });
  /** A batch of two jobs with a callback of each kind (its own ids made already). */
  const batch = (v: Values): SQL.MssqlNewBatch => ({
    id: v.id2,
    createdBy: v.createdBy,
    jobs: [job(v, false), job(v, false)].map((j) => ({ ...j, batchId: v.id2 })),
    callbacks: (['complete', 'success', 'failure'] as const).map((kind) => ({
      kind,
      job: { ...job(v, false), delayMs: null, runAt: null },
    })),
  });
  const lease = (v: Values): SQL.MssqlLease => ({
    id: v.id,
    workerId: v.workerId,
    leaseId: v.leaseId,
  });
  const dlqFilter = (v: Values) => ({
    queue: v.queue,
    type: v.type,
    tag: v.tag,
    search: v.search,
    from: v.date,
    to: v.date,
    reason: FailureReason.Timeout,
    ids: [v.id, v.id2],
  });
  const hotFilter = (v: Values) => ({
    queue: v.queue,
    type: v.type,
    status: JobStatus.Pending,
    tag: v.tag,
    search: v.search,
  });
  const series = (v: Values, queue: string | null): SQL.MssqlSeries => ({
    queue,
    from: v.date,
    to: v.date,
    stepMs: 60_000,
  });
  const list = (
    v: Values,
    pillar: 'hot' | 'dlq',
    scanBound: number | null,
  ): SQL.MssqlListRequest => ({
    pillar,
    filter: (pillar === 'hot' ? hotFilter(v) : dlqFilter(v)) as SQL.MssqlListRequest['filter'],
    limit: 50,
    order: 'newest',
    after: { at: v.date.toISOString(), atMs: v.date.getTime(), id: v.id },
    scanBound,
  });
  const keyed = (v: Values, unique: boolean): SQL.MssqlKeyedJob => ({
    id: v.id,
    payload: v.payload,
    payloadVersion: 1,
    traceContext: v.trace,
    dedupe: unique
      ? { key: v.key, mode: 'unique', states: ['pending', 'finished'], windowMs: 60_000 }
      : { key: v.key, mode: 'debounce', states: [], windowMs: 30_000 },
  });
  /** An enqueue's plan: `id2` waits on `id`, found failed under `cancel`: one edge, one count. */
  const plan = (v: Values): PlannedDependencies => ({
    edges: [
      {
        jobId: v.id2,
        dependsOn: v.id,
        policy: PolicyCode.Cancel,
        state: EdgeState.Failed,
        needsCheck: true,
      },
    ],
    waits: [{ jobId: v.id2, waitingOn: 1 }],
    missing: [],
    needsCheck: true,
  });
  const inCaller = { callerTransaction: true } as const;
  const s = 'chokaq';
  return [
    ['ensureSchema', '', () => SQL.ensureSchema(s)],
    ['convertKeysToBinary', '', () => SQL.convertKeysToBinary(s)],
    ['schemaStatus', '', () => SQL.schemaStatus(s)],
    ['now', '', () => SQL.now()],
    ['prepare', '', () => SQL.prepare(s)],
    ['enqueue', 'key', (v) => SQL.enqueue(s, job(v, true))],
    ['enqueue', 'no key', (v) => SQL.enqueue(s, job(v, false))],
    ['enqueueMany', 'keys', (v) => SQL.enqueueMany(s, [job(v, true), job(v, false)])],
    ['enqueueMany', 'no keys', (v) => SQL.enqueueMany(s, [job(v, false)])],
    ['enqueueMany', 'batch', (v) => SQL.enqueueMany(s, batch(v).jobs)],
    ['insertBatch', '', (v) => SQL.insertBatch(s, batch(v))],
    ['enqueueMany', 'waiting', (v) => SQL.enqueueMany(s, [job(v, true)], undefined, true)],
    ['locateDependencies', '', (v) => SQL.locateDependencies(s, [v.id, v.id2])],
    ['locateDependencies', 'in a caller', (v) => SQL.locateDependencies(s, [v.id], inCaller)],
    ['insertDependencies', '', (v) => SQL.insertDependencies(s, plan(v))],
    ['insertDependencies', 'in a caller', (v) => SQL.insertDependencies(s, plan(v), inCaller)],
    ['checkTake', '', () => SQL.checkTake(s, 500)],
    ['checkDone', '', (v) => SQL.checkDone(s, [{ jobId: v.id2, dependsOn: v.id }])],
    ['getDependencies', '', (v) => SQL.getDependencies(s, v.id)],
    ['insertBatch', 'in a caller', (v) => SQL.insertBatch(s, batch(v), inCaller)],
    ['getBatch', '', (v) => SQL.getBatch(s, v.id)],
    ['batchHotJobIds', '', (v) => SQL.batchHotJobIds(s, v.id)],
    ['getBatchResults', 'first page', (v) => SQL.getBatchResults(s, v.id, '', 100)],
    ['getBatchResults', 'from a cursor', (v) => SQL.getBatchResults(s, v.id, v.id2, 1_000)],
    ['dedupeTake', 'debounce', (v) => SQL.dedupeTake(s, keyed(v, false))],
    ['dedupeTake', 'unique, in a caller', (v) => SQL.dedupeTake(s, keyed(v, true), inCaller)],
    ['dedupeHolder', '', (v) => SQL.dedupeHolder(s, keyed(v, true))],
    ['dedupeReplace', '', (v) => SQL.dedupeReplace(s, v.id2, keyed(v, false))],
    ['dedupeMove', '', (v) => SQL.dedupeMove(s, keyed(v, true))],
    ['dedupeOfJob', '', (v) => SQL.dedupeOfJob(s, v.id)],
    [
      'fetchNextBatch',
      '',
      (v) =>
        SQL.fetchNextBatch(s, {
          workerId: v.workerId,
          leaseId: v.leaseId,
          limit: 10,
          queues: [v.queue],
          types: [{ queue: v.queue, type: v.type }],
          start: 1,
        }),
    ],
    [
      'fetchNextBatch',
      'nothing started (no grouped part)',
      (v) =>
        SQL.fetchNextBatch(s, {
          workerId: v.workerId,
          leaseId: v.leaseId,
          limit: 10,
          queues: [v.queue],
          types: [{ queue: v.queue, type: v.type }],
          start: 0,
        }),
    ],
    [
      'fetchNextBatch',
      'grouped queues first',
      (v) =>
        SQL.fetchNextBatch(s, {
          workerId: v.workerId,
          leaseId: v.leaseId,
          limit: 10,
          queues: [v.queue],
          types: [{ queue: v.queue, type: v.type }],
          start: 10,
          groupsFirst: true,
        }),
    ],
    ['fetchNextBatchClaimed', '', (v) => SQL.fetchNextBatchClaimed(s, v.workerId, v.leaseId)],
    ['markAsProcessing', '', (v) => SQL.markAsProcessing(s, [lease(v)])],
    ['keepAlive', '', (v) => SQL.keepAlive(s, v.workerId, [lease(v)])],
    ['release', '', (v) => SQL.release(s, [lease(v)], 1_000)],
    ['unstart', '', (v) => SQL.unstart(s, [lease(v)], 1_000)],
    ['reportProgress', '', (v) => SQL.reportProgress(s, lease(v), 50, v.note)],
    ['rescheduleForRetry', '', (v) => SQL.rescheduleForRetry(s, lease(v), 1_000, v.error)],
    ['archiveSucceeded', '', (v) => SQL.archiveSucceeded(s, [{ ...lease(v), durationMs: 5 }])],
    [
      'archiveSucceeded',
      'results',
      (v) =>
        SQL.archiveSucceeded(s, [
          { ...lease(v), durationMs: 5, result: v.payload },
          { ...lease(v), id: v.id2, durationMs: 6 },
        ]),
    ],
    [
      'moveToDlq',
      'lease',
      (v) => SQL.moveToDlq(s, lease(v), FailureReason.Timeout, v.error, v.actor, 5),
    ],
    [
      'moveToDlq',
      'admin',
      (v) => SQL.moveToDlq(s, { id: v.id }, FailureReason.Cancelled, v.error, v.actor, null),
    ],
    [
      'moveToDlq',
      'a waiting job whose dependency failed',
      (v) =>
        SQL.moveToDlq(s, { id: v.id }, FailureReason.DependencyFailed, v.error, null, null, true),
    ],
    ['cancel', '', (v) => SQL.cancel(s, [v.id, v.id2], v.actor, STORED_TEXT.cancelled(v.actor))],
    [
      'resurrect',
      'ids, edits',
      (v) =>
        SQL.resurrect(
          s,
          { ids: [v.id] },
          { payload: v.payload, tags: v.tags, priority: 3 },
          v.actor,
        ),
    ],
    [
      'resurrect',
      'filter',
      (v) => SQL.resurrect(s, { filter: dlqFilter(v), max: 10 }, null, v.actor),
    ],
    [
      'updatePending',
      'all edits',
      (v) =>
        SQL.updatePending(
          s,
          v.id,
          {
            payload: v.payload,
            payloadVersion: 2,
            tags: v.tags,
            priority: 3,
            runAt: v.date,
            expect: { queue: v.queue, type: v.type },
          },
          v.actor,
        ),
    ],
    ['recoverAbandoned', '', () => SQL.recoverAbandoned(s, 60_000, 100)],
    [
      'archiveZombies',
      '',
      (v) =>
        SQL.archiveZombies(
          s,
          60_000,
          100,
          [
            { queue: v.queue, type: v.type, retry: true },
            { queue: v.queue, type: null, retry: false },
          ],
          STORED_TEXT.zombie,
        ),
    ],
    ['getQueues', '', () => SQL.getQueues(s)],
    ['updateQueue', '', (v) => SQL.updateQueue(s, v.queue, { maxWorkers: 3 })],
    [
      'updateQueue',
      'group limits',
      (v) =>
        SQL.updateQueue(s, v.queue, {
          groupConcurrency: 2,
          groupRateLimit: { max: 5, perMs: 1_000 },
        }),
    ],
    ['purgeDlq', '', (v) => SQL.purgeDlq(s, [v.id])],
    ['purgeDlqByFilter', '', (v) => SQL.purgeDlqByFilter(s, dlqFilter(v), 100)],
    ['applyRetentionArchive', '', () => SQL.applyRetentionArchive(s, 1_000, 100)],
    ['applyRetentionDlq', '', () => SQL.applyRetentionDlq(s, 1_000, 100)],
    // A partitioned table: only outside the periods' partitions (two instants more).
    [
      'applyRetentionArchive',
      'partitioned',
      (v) => SQL.applyRetentionArchive(s, 1_000, 100, { below: v.date, from: v.date }),
    ],
    [
      'applyRetentionDlq',
      'partitioned',
      (v) => SQL.applyRetentionDlq(s, 1_000, 100, { below: v.date, from: v.date }),
    ],
    ['partitionLayout', '', () => SQL.partitionLayout(s)],
    // The boundaries: one JSON document, however many (a week of days, or a month's two).
    [
      'convertToPartitioned',
      '',
      (v) =>
        SQL.convertToPartitioned(s, 'archive', v === SHORT ? [v.date] : new Array(9).fill(v.date)),
    ],
    [
      'makePartitionsAhead',
      '',
      (v) => SQL.makePartitionsAhead(s, 'dlq', v === SHORT ? [v.date] : new Array(9).fill(v.date)),
    ],
    [
      'dropPartition',
      '',
      (v) =>
        SQL.dropPartition(
          s,
          'archive',
          { number: v === SHORT ? 2 : 15_000, from: v.date, to: v.date },
          1_000,
        ),
    ],
    ['applyRetentionBuckets', '', () => SQL.applyRetentionBuckets(s, 1_000, 100)],
    ['applyRetentionWorkers', '', () => SQL.applyRetentionWorkers(s, 1_000, 100)],
    ['applyRetentionAudit', '', () => SQL.applyRetentionAudit(s, 1_000, 100)],
    ['applyRetentionDedupeKeys', '', () => SQL.applyRetentionDedupeKeys(s, 0, 100)],
    ['applyRetentionGroups', '', () => SQL.applyRetentionGroups(s, 0, 100)],
    ['applyRetentionBatches', '', () => SQL.applyRetentionBatches(s, 1_000, 100)],
    ['applyRetentionGroupless', '', () => SQL.applyRetentionGroupless(s, 0, 100)],
    ['getQueueGroups', '', (v) => SQL.getQueueGroups(s, v.queue, 10)],
    [
      'recordAudit',
      '',
      (v) =>
        SQL.recordAudit(
          s,
          {
            id: v.id,
            actor: v.actor,
            action: 'dlq.purge',
            target: v.queue,
            details: v.payload,
            once: false,
          },
          1,
          v.payload,
        ),
    ],
    [
      'recordAudit',
      'first batch of a confirmed action',
      (v) =>
        SQL.recordAudit(
          s,
          {
            id: v.id,
            actor: v.actor,
            action: 'dlq.purge-by-filter',
            target: v.queue,
            details: v.payload,
            once: true,
          },
          1,
          v.payload,
        ),
    ],
    [
      'getAuditLog',
      'every filter',
      (v) =>
        SQL.getAuditLog(s, {
          actor: v.actor,
          action: 'queue.pause',
          target: v.target,
          from: new Date(0),
          to: new Date(1),
          limit: 50,
          after: { at: '2026-11-30T10:00:00.123Z', atMs: 1, id: v.id },
        }),
    ],
    ['confirmationSecret', '', (v) => SQL.confirmationSecret(s, v.payload)],
    [
      'upsertWorker',
      '',
      (v) =>
        SQL.upsertWorker(s, {
          workerId: v.workerId,
          host: v.host,
          pid: 42,
          libraryVersion: v.version,
          concurrency: 10,
          running: 3,
          handled: v.json,
          circuits: v.json,
          draining: false,
          starting: true,
        }),
    ],
    ['markWorkerStopped', '', (v) => SQL.markWorkerStopped(s, v.workerId)],
    ['listWorkers', '', () => SQL.listWorkers(s, 600_000, 1_000)],
    ['listJobs', 'hot, bounded scan', (v) => SQL.listJobs(s, list(v, 'hot', 10_000))],
    ['listJobs', 'dlq, bounded scan', (v) => SQL.listJobs(s, list(v, 'dlq', 10_000))],
    [
      'listJobs',
      'dlq, plain',
      (v) => SQL.listJobs(s, { ...list(v, 'dlq', null), filter: { queue: v.queue } }),
    ],
    ['previewDlqFilterCount', '', (v) => SQL.previewDlqFilterCount(s, dlqFilter(v))],
    ['getJob', '', (v) => SQL.getJob(s, v.id)],
    ['getJobAttempts', '', (v) => SQL.getJobAttempts(s, v.id)],
    ['getSummary', '', () => SQL.getSummary(s)],
    ['getQueueStats', '', () => SQL.getQueueStats(s)],
    ['getQueueHealth', '', () => SQL.getQueueHealth(s)],
    ['getQueueOutcomes', '', () => SQL.getQueueOutcomes(s, 5)],
    ['getThroughput', '', (v) => SQL.getThroughput(s, v.queue)],
    ['getThroughputSeries', 'all queues', (v) => SQL.getThroughputSeries(s, series(v, null))],
    ['getThroughputSeries', 'one queue', (v) => SQL.getThroughputSeries(s, series(v, v.queue))],
    ['getTopDlqErrors', '', (v) => SQL.getTopDlqErrors(s, dlqFilter(v), TOP_ERRORS_WINDOW)],
    ['countExactly', 'hot', (v) => SQL.countExactly(s, 'hot', list(v, 'hot', null).filter)],
    ['countExactly', 'dlq', (v) => SQL.countExactly(s, 'dlq', dlqFilter(v))],
    ['previewDlqFilterSample', '', (v) => SQL.previewDlqFilterSample(s, dlqFilter(v), 10)],
    [
      'upsertRecurringJob',
      '',
      (v) =>
        SQL.upsertRecurringJob(s, {
          name: v.name,
          cron: v.cron,
          timeZone: v.zone,
          queue: v.queue,
          type: v.type,
          payload: v.payload,
          misfirePolicy: 'skip',
          nextSlotUtc: v.date,
          source: 'runtime',
        }),
    ],
    ['getRecurringJobs', '', () => SQL.getRecurringJobs(s)],
    ['setRecurringJobPaused', '', (v) => SQL.setRecurringJobPaused(s, v.name, true)],
    ['removeRecurringJob', '', (v) => SQL.removeRecurringJob(s, v.name)],
    ['triggerRecurringJob', '', (v) => SQL.triggerRecurringJob(s, v.name, v.id)],
    ['claimRecurringSlot', '', (v) => SQL.claimRecurringSlot(s, v.name, v.date, v.date, v.id)],
  ];
}

/** The driver stack, without a server: nothing here connects. */
function declarations(disableAsciiToUnicodeParamConversion: boolean) {
  const dataSource = stubMssqlDataSource({ disableAsciiToUnicodeParamConversion });
  const driver = dataSource.driver as SqlServerDriver;
  const runner = driver.createQueryRunner('master') as unknown as {
    mssqlParameterToNativeParameter(p: MssqlParameter): unknown;
  };
  const tedious = TYPES as unknown as Record<string, { declaration(p: object): string }>;
  return (statement: MssqlStatement): string[] =>
    statement.params.map((param, i) => {
      const request = new driver.mssql.Request();
      request.input(`p${i}`, runner.mssqlParameterToNativeParameter(param), param.value);
      const input = request.parameters[`p${i}`];
      const length =
        typeof input.length === 'string' && input.length.toLowerCase() === 'max'
          ? 65_535
          : input.length;
      return tedious[input.type.name].declaration({
        value: input.value,
        length,
        scale: input.scale,
        precision: input.precision,
        output: false,
      });
    });
}

describe('SQL Server parameter declarations do not depend on values', () => {
  it('covers every exported statement builder', () => {
    // Every function the sql/ index exports is a statement builder, named after the method it serves.
    const builders = Object.entries(SQL)
      .filter(([, value]) => typeof value === 'function')
      .map(([name]) => name)
      .sort();
    expect([...new Set(cases().map(([builder]) => builder))].sort()).toEqual(builders);
  });

  it.each([false, true])(
    'the text and every declared type are the same for short and long values (disableAsciiToUnicodeParamConversion: %s)',
    (disableAscii) => {
      const declare = declarations(disableAscii);
      const differences: string[] = [];
      for (const [builder, variant, build] of cases()) {
        const short = build(SHORT);
        const long = build(LONG);
        const label = variant ? `${builder} [${variant}]` : builder;
        if (short.sql !== long.sql) differences.push(`${label}: the text differs`);
        const a = declare(short);
        const b = declare(long);
        a.forEach((type, i) => {
          if (type !== b[i]) differences.push(`${label} @${i}: ${type} vs ${b[i]}`);
        });
      }
      expect(differences).toEqual([]);
    },
  );

  it('refuses a value longer than its declared width instead of sending it', () => {
    const p = new ParamList();
    expect(() => p.nvarchar('x'.repeat(256), 255)).toThrow(ChokaQValidationError);
    expect(() => p.nvarchar('x'.repeat(101), 100)).toThrow(ChokaQValidationError);
    expect(p.nvarchar('x'.repeat(255), 255)).toBe('@0');
    expect(p.nvarchar('x'.repeat(100_000), 'max')).toBe('@1');
    expect(p.params).toHaveLength(2);
  });

  it('declares the widths of the columns the values go into', () => {
    const declare = declarations(false);
    const enqueue = SQL.enqueue('chokaq', {
      id: SHORT.id,
      queue: SHORT.queue,
      type: SHORT.type,
      payload: SHORT.payload,
      tags: SHORT.tags,
      idempotencyKey: SHORT.key,
      priority: 0,
      delayMs: null,
      runAt: null,
      createdBy: SHORT.createdBy,
      traceContext: SHORT.trace,
      payloadVersion: 1,
      group: SHORT.group,
      batchId: SHORT.id2,
    });
    // id, queue, type, payload, tags, key, priority, delay, runAt, createdBy, traceContext,
    // payloadVersion, batch, group
    expect(declare(enqueue)).toEqual([
      'nvarchar(36)',
      'nvarchar(255)',
      'nvarchar(255)',
      'nvarchar(max)',
      'nvarchar(max)',
      'nvarchar(255)',
      'int',
      'bigint',
      'nvarchar(23)',
      'nvarchar(100)',
      'nvarchar(2048)',
      'int',
      'nvarchar(36)',
      'nvarchar(255)',
    ]);
    // A batch: its id, who made it, its jobs' count, its callbacks' one document.
    expect(
      declare(
        SQL.insertBatch('chokaq', {
          id: SHORT.id,
          createdBy: SHORT.createdBy,
          jobs: [],
          callbacks: [],
        }),
      ),
    ).toEqual(['nvarchar(36)', 'nvarchar(100)', 'int', 'nvarchar(max)']);
    expect(declare(SQL.getBatch('chokaq', SHORT.id))).toEqual(['nvarchar(36)']);
    expect(declare(SQL.batchHotJobIds('chokaq', SHORT.id))).toEqual(['nvarchar(36)']);
    // A page of results: its TOP, the batch, the cursor (empty for the first page).
    for (const after of ['', SHORT.id2]) {
      expect(declare(SQL.getBatchResults('chokaq', SHORT.id, after, 100))).toEqual([
        'int',
        'nvarchar(36)',
        'nvarchar(36)',
      ]);
    }
    const dlq = SQL.moveToDlq(
      'chokaq',
      { id: SHORT.id, workerId: SHORT.workerId, leaseId: SHORT.leaseId },
      FailureReason.Timeout,
      SHORT.error,
      SHORT.actor,
      null,
    );
    // The archive move's one document, with stored results or without: the same declaration.
    for (const result of [undefined, SHORT.payload]) {
      const archive = SQL.archiveSucceeded('chokaq', [
        { id: SHORT.id, workerId: SHORT.workerId, leaseId: SHORT.leaseId, durationMs: 1, result },
      ]);
      expect(declare(archive)).toEqual(['nvarchar(max)']);
    }
    // Dedupe keys: key, job id, mode, state bits, window (ms); the replace's holder, payload,
    // payload version, trace context, window and key.
    const keyedJob: SQL.MssqlKeyedJob = {
      id: SHORT.id,
      payload: SHORT.payload,
      payloadVersion: 1,
      traceContext: SHORT.trace,
      dedupe: { key: SHORT.key, mode: 'throttle', states: [], windowMs: 1_000 },
    };
    for (const statement of [
      SQL.dedupeTake('chokaq', keyedJob),
      SQL.dedupeMove('chokaq', keyedJob),
    ])
      expect(declare(statement)).toEqual(['nvarchar(255)', 'nvarchar(36)', 'int', 'int', 'bigint']);
    expect(declare(SQL.dedupeHolder('chokaq', keyedJob))).toEqual(['nvarchar(255)', 'bigint']);
    expect(declare(SQL.dedupeReplace('chokaq', SHORT.id2, keyedJob))).toEqual([
      'nvarchar(36)',
      'nvarchar(max)',
      'int',
      'nvarchar(2048)',
      'bigint',
      'nvarchar(255)',
    ]);
    // Dependencies: the ids' one document; the edges' and the counts' documents; the most edges;
    // the taken edges' document; the job's id.
    expect(declare(SQL.locateDependencies('chokaq', [SHORT.id]))).toEqual(['nvarchar(max)']);
    expect(
      declare(
        SQL.insertDependencies('chokaq', {
          edges: [],
          waits: [],
          missing: [],
          needsCheck: false,
        }),
      ),
    ).toEqual(['nvarchar(max)', 'nvarchar(max)']);
    expect(declare(SQL.checkTake('chokaq', 500))).toEqual(['int']);
    expect(declare(SQL.checkDone('chokaq', []))).toEqual(['nvarchar(max)']);
    expect(declare(SQL.getDependencies('chokaq', SHORT.id))).toEqual(['nvarchar(36)']);
    // id, worker, lease, reason, error, actor, duration
    expect(declare(dlq)).toEqual([
      'nvarchar(36)',
      'nvarchar(255)',
      'nvarchar(36)',
      'int',
      'nvarchar(max)',
      'nvarchar(100)',
      'bigint',
    ]);
  });
});
