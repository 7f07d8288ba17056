import { FailureReason, JobStatus } from '../../../libs/chokaq/src/interfaces/job-status.enum';
import { MssqlStatement } from '../../../libs/chokaq/src/storage/mssql/mssql-params';
import * as SQL from '../../../libs/chokaq/src/storage/mssql/sql';
import {
  EdgeState,
  PlannedDependencies,
  PolicyCode,
  dependencyFailedText,
} from '../../../libs/chokaq/src/storage/shared/dependencies';
import { ERROR_LINE_PREFIX } from '../../../libs/chokaq/src/storage/shared/error-family';
import { boundariesAhead } from '../../../libs/chokaq/src/storage/mssql/mssql-partitions';
import { STORED_TEXT } from '../../../libs/chokaq/src/storage/validated-job-storage';
import {
  TOP_ERRORS_WINDOW_MS,
  TOP_ERRORS_WINDOW_ROWS,
} from '../../../libs/chokaq/src/validation/limits';
import type { ValidatedPendingUpdate } from '../../../libs/chokaq/src/validation/validate-job';

/** How a statement is classified by the lock-hint checks. */
export type StatementKind = 'claim' | 'move' | 'transition' | 'telemetry' | 'read' | 'ddl';

/** One statement the dialect can emit, with a stable name. */
export interface CatalogueEntry {
  name: string;
  /** The operation it belongs to. */
  operation: string;
  kind: StatementKind;
  statement: MssqlStatement;
}

export const SCHEMA = 'chokaq';
export const ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
export const ID2 = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c';
export const LEASE = {
  id: ID,
  workerId: 'host:42:abcd',
  leaseId: '6f1c2d3e-4b5a-4c6d-9e8f-0a1b2c3d4e5f',
};
export const FIXED_DATE = new Date('2026-01-02T03:04:05.678Z');
/** An expired day partition's range, ten days before {@link FIXED_DATE}. */
export const PARTITION_FROM = new Date('2025-12-23T00:00:00.000Z');
export const PARTITION_TO = new Date('2025-12-24T00:00:00.000Z');

/** The window `getTopDlqErrors` reads, as the read half passes it. */
export const TOP_ERRORS_WINDOW = {
  rows: TOP_ERRORS_WINDOW_ROWS,
  windowMs: TOP_ERRORS_WINDOW_MS,
  prefix: ERROR_LINE_PREFIX,
};

/**
 * None, each single key, and all keys: for builders that reuse the page filter fragment, whose
 * every subset is already enumerated through the page builders (keeps the parse run short).
 */
export function singlesAndAll<T>(keys: readonly T[]): T[][] {
  return [[], ...keys.map((k) => [k]), [...keys]];
}

/** Every subset of `keys`. */
export function subsets<T>(keys: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let mask = 0; mask < 1 << keys.length; mask++) {
    out.push(keys.filter((_, i) => mask & (1 << i)));
  }
  return out;
}

const FILTER_VALUES = {
  queue: 'emails',
  type: 'welcome.v1',
  status: JobStatus.Fetched,
  tag: 'vip_[a]%',
  search: '50%_off[1]',
  from: new Date('2026-01-01T00:00:00.000Z'),
  to: new Date('2026-01-31T00:00:00.000Z'),
  reason: FailureReason.Timeout,
  ids: [ID, ID2],
} as const;

type FilterKey = keyof typeof FILTER_VALUES;

const PILLAR_FILTER_KEYS: Record<'hot' | 'archive' | 'dlq', FilterKey[]> = {
  hot: ['queue', 'type', 'status', 'tag', 'search', 'from', 'to'],
  archive: ['queue', 'type', 'tag', 'search', 'from', 'to'],
  dlq: ['queue', 'type', 'tag', 'search', 'from', 'to', 'reason', 'ids'],
};

function filterOf(keys: readonly FilterKey[]): SQL.MssqlListRequest['filter'] {
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = FILTER_VALUES[k];
  return out as SQL.MssqlListRequest['filter'];
}

/** A list request as the validating edge hands it over (a search or a tag bounds the scan). */
function listOf(
  pillar: 'hot' | 'archive' | 'dlq',
  keys: readonly FilterKey[],
  order: 'newest' | 'oldest',
  cursor: boolean,
): SQL.MssqlListRequest {
  const unindexed = keys.includes('search') || keys.includes('tag');
  return {
    pillar,
    filter: filterOf(keys),
    limit: 50,
    order,
    after: cursor ? { at: FIXED_DATE.toISOString(), atMs: FIXED_DATE.getTime(), id: ID } : null,
    scanBound: unindexed ? 10_000 : null,
  };
}

const JOB: SQL.MssqlNewJob = {
  id: ID,
  queue: 'emails',
  type: 'welcome.v1',
  payload: '{"to":"a@b.c"}',
  tags: ',vip,eu,',
  idempotencyKey: 'welcome:42',
  priority: 20,
  delayMs: 5_000,
  runAt: null,
  createdBy: 'tests',
  traceContext: '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}',
  payloadVersion: 2,
  group: 'tenant:42',
  batchId: null,
};

/** The id of a batch (`enqueueBatch`). */
export const BATCH_ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d';

/**
 * A batch as the batch builders take it (a validated batch has these fields): two jobs, and a
 * callback on completion and one on failure, the second with a group.
 */
export const BATCH: SQL.MssqlNewBatch = {
  id: BATCH_ID,
  createdBy: 'tests',
  jobs: [
    { ...JOB, idempotencyKey: null, batchId: BATCH_ID },
    { ...JOB, id: ID2, idempotencyKey: null, group: null, batchId: BATCH_ID },
  ],
  callbacks: [
    {
      kind: 'complete',
      job: {
        ...JOB,
        id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5e',
        type: 'batch.done',
        idempotencyKey: null,
        delayMs: null,
        group: null,
      },
    },
    {
      kind: 'failure',
      job: {
        ...JOB,
        id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5f',
        queue: 'alerts',
        type: 'batch.failed',
        idempotencyKey: null,
        delayMs: null,
      },
    },
  ],
};

/** A third job id: a dependency of {@link DEPENDENCY_PLAN}'s waiting job. */
export const ID3 = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a60';

/**
 * The edges and count an enqueue writes (`planDependencies`' result): `ID2` waits on the hot `ID`
 * (block) and on `ID3`, found in the DLQ under `cancel` (failed, marked for the check pass).
 */
export const DEPENDENCY_PLAN: PlannedDependencies = {
  edges: [
    {
      jobId: ID2,
      dependsOn: ID,
      policy: PolicyCode.Block,
      state: EdgeState.Waiting,
      needsCheck: false,
    },
    {
      jobId: ID2,
      dependsOn: ID3,
      policy: PolicyCode.Cancel,
      state: EdgeState.Failed,
      needsCheck: true,
    },
  ],
  waits: [{ jobId: ID2, waitingOn: 2 }],
  missing: [],
  needsCheck: true,
};

/** A job with a dedupe key as the dedupe builders take it (a validated job has these fields). */
export const KEYED_JOB: SQL.MssqlKeyedJob = {
  id: ID,
  payload: '{"to":"a@b.c"}',
  payloadVersion: 2,
  traceContext: JOB.traceContext,
  dedupe: { key: 'digest:42', mode: 'debounce', states: [], windowMs: 30_000 },
};

/** `updatePending` edits that change nothing, to spread one field over. */
const NO_PENDING_EDIT: ValidatedPendingUpdate = {
  payload: null,
  payloadVersion: null,
  tags: undefined,
  priority: null,
  runAt: undefined,
  expect: null,
};

/**
 * Every statement the SQL Server dialect can emit: each operation, each optional filter (all
 * subsets per pillar for pages and counts; none / each / all for the other builders that reuse
 * the same filter fragment), each sort key in both directions, each edit combination, each
 * optional argument, and the DDL.
 */
export function catalogue(schema: SQL.MssqlSchema = SCHEMA): CatalogueEntry[] {
  const name = typeof schema === 'string' ? schema : schema.name;
  const out: CatalogueEntry[] = [];
  const add = (
    operation: string,
    variant: string,
    kind: StatementKind,
    statement: MssqlStatement,
  ) =>
    out.push({
      name: variant ? `${operation} [${variant}]` : operation,
      operation,
      kind,
      statement,
    });

  add('ensureSchema', '', 'ddl', SQL.ensureSchema(name));
  add('convertKeysToBinary', '', 'ddl', SQL.convertKeysToBinary(name));
  add('schemaStatus', '', 'read', SQL.schemaStatus(name));
  add('now', '', 'read', SQL.now());
  add('prepare', '', 'read', SQL.prepare(name));

  for (const key of [null, 'k:1']) {
    for (const timing of ['none', 'delay', 'runAt'] as const) {
      add(
        'enqueue',
        `key=${key !== null} ${timing}`,
        'transition',
        SQL.enqueue(schema, {
          ...JOB,
          idempotencyKey: key,
          delayMs: timing === 'delay' ? 5_000 : null,
          runAt: timing === 'runAt' ? FIXED_DATE : null,
        }),
      );
    }
  }
  add(
    'enqueueMany',
    'no keys',
    'transition',
    SQL.enqueueMany(schema, [{ ...JOB, idempotencyKey: null }]),
  );
  add(
    'enqueueMany',
    'keys',
    'transition',
    SQL.enqueueMany(schema, [
      JOB,
      { ...JOB, id: ID2, idempotencyKey: null, delayMs: null, runAt: FIXED_DATE, group: null },
    ]),
  );

  // A chunk of a batch (`enqueueBatch`, schema version 18): each job carries the batch's id.
  add('enqueueMany', 'batch', 'transition', SQL.enqueueMany(schema, BATCH.jobs));
  // The batch's row, its callbacks and their queues, in the transaction that then inserts its jobs:
  // ChokaQ's (XACT_ABORT, no transaction of its own) or a caller's (neither).
  add('insertBatch', '', 'transition', SQL.insertBatch(schema, BATCH));
  add(
    'insertBatch',
    'no callbacks',
    'transition',
    SQL.insertBatch(schema, { ...BATCH, callbacks: [] }),
  );

  // In a caller's transaction (the enqueue `transaction` option): no session prologue and no
  // transaction of its own.
  add(
    'enqueue.inCallerTransaction',
    '',
    'transition',
    SQL.enqueue(schema, JOB, { callerTransaction: true }),
  );
  add(
    'enqueueMany.inCallerTransaction',
    '',
    'transition',
    SQL.enqueueMany(schema, [JOB, { ...JOB, id: ID2, idempotencyKey: null }], {
      callerTransaction: true,
    }),
  );
  add(
    'insertBatch.inCallerTransaction',
    '',
    'transition',
    SQL.insertBatch(schema, BATCH, { callerTransaction: true }),
  );

  // Dependencies (schema version 19): a chunk of jobs that wait, inserted Waiting; where their
  // dependencies are (marked as waited on); their edges and counts. In ChokaQ's transaction
  // (XACT_ABORT, no transaction of their own) or in a caller's (neither).
  const waitingJobs = [
    { ...JOB, idempotencyKey: null },
    { ...JOB, id: ID2, idempotencyKey: null, group: null },
  ];
  add(
    'enqueueMany',
    'waiting',
    'transition',
    SQL.enqueueMany(schema, waitingJobs, undefined, true),
  );
  add(
    'enqueueMany.inCallerTransaction',
    'waiting',
    'transition',
    SQL.enqueueMany(schema, waitingJobs, { callerTransaction: true }, true),
  );
  add('locateDependencies', '', 'transition', SQL.locateDependencies(schema, [ID, ID3]));
  add(
    'locateDependencies.inCallerTransaction',
    '',
    'transition',
    SQL.locateDependencies(schema, [ID, ID3], { callerTransaction: true }),
  );
  add('insertDependencies', '', 'transition', SQL.insertDependencies(schema, DEPENDENCY_PLAN));
  add(
    'insertDependencies.inCallerTransaction',
    '',
    'transition',
    SQL.insertDependencies(schema, DEPENDENCY_PLAN, { callerTransaction: true }),
  );
  // The check pass: a round takes the marked edges, cancels their waiting dependents (a move by
  // id of a Waiting row, below with the moves) and unmarks the edges, in one transaction.
  add('checkTake', '', 'transition', SQL.checkTake(schema, 500));
  add(
    'checkDone',
    '',
    'transition',
    SQL.checkDone(schema, [
      { jobId: ID2, dependsOn: ID3 },
      { jobId: ID, dependsOn: ID3 },
    ]),
  );
  add('getDependencies', '', 'read', SQL.getDependencies(schema, ID));

  // Dedupe keys (schema version 16): the steps of a keyed enqueue, run in ChokaQ's own
  // transaction (XACT_ABORT, no transaction of their own) or in a caller's (neither).
  const unique: SQL.MssqlKeyedJob = {
    ...KEYED_JOB,
    dedupe: { key: 'report:7', mode: 'unique', states: ['pending', 'finished'], windowMs: 60_000 },
  };
  for (const [variant, job] of [
    ['', KEYED_JOB],
    ['unique', unique],
  ] as const) {
    add('dedupeTake', variant, 'transition', SQL.dedupeTake(schema, job));
    add('dedupeHolder', variant, 'transition', SQL.dedupeHolder(schema, job));
    add('dedupeMove', variant, 'transition', SQL.dedupeMove(schema, job));
  }
  add('dedupeReplace', '', 'transition', SQL.dedupeReplace(schema, ID2, KEYED_JOB));
  const inCaller = { callerTransaction: true } as const;
  add(
    'dedupeTake.inCallerTransaction',
    '',
    'transition',
    SQL.dedupeTake(schema, KEYED_JOB, inCaller),
  );
  add(
    'dedupeHolder.inCallerTransaction',
    '',
    'transition',
    SQL.dedupeHolder(schema, KEYED_JOB, inCaller),
  );
  add(
    'dedupeReplace.inCallerTransaction',
    '',
    'transition',
    SQL.dedupeReplace(schema, ID2, KEYED_JOB, inCaller),
  );
  add(
    'dedupeMove.inCallerTransaction',
    '',
    'transition',
    SQL.dedupeMove(schema, KEYED_JOB, inCaller),
  );

  const claim: SQL.MssqlClaimRequest = {
    workerId: LEASE.workerId,
    leaseId: LEASE.leaseId,
    limit: 20,
    queues: ['emails', 'default'],
    types: [{ queue: 'billing', type: 'invoice.v2' }],
    start: 0,
  };
  add('fetchNextBatch', '', 'claim', SQL.fetchNextBatch(schema, claim));
  add('fetchNextBatch', 'start', 'claim', SQL.fetchNextBatch(schema, { ...claim, start: 5 }));
  // A claim that starts rows claims the grouped queues too (schema version 17), after the others
  // or, every other claim, before them.
  add(
    'fetchNextBatch',
    'start groups first',
    'claim',
    SQL.fetchNextBatch(schema, { ...claim, start: 5, groupsFirst: true }),
  );
  add(
    'fetchNextBatchClaimed',
    '',
    'read',
    SQL.fetchNextBatchClaimed(schema, LEASE.workerId, LEASE.leaseId),
  );

  add('markAsProcessing', '', 'transition', SQL.markAsProcessing(schema, [LEASE]));
  add('keepAlive', '', 'transition', SQL.keepAlive(schema, LEASE.workerId, [LEASE]));
  add('release', 'no delay', 'transition', SQL.release(schema, [LEASE], null));
  add('release', 'delay', 'transition', SQL.release(schema, [LEASE], 30_000));
  add('unstart', 'no delay', 'transition', SQL.unstart(schema, [LEASE], null));
  add('unstart', 'delay', 'transition', SQL.unstart(schema, [LEASE], 30_000));
  add('reportProgress', '', 'transition', SQL.reportProgress(schema, LEASE, 42, 'step 2 of 5'));
  add('reportProgress', 'no note', 'transition', SQL.reportProgress(schema, LEASE, 42, null));
  add(
    'rescheduleForRetry',
    '',
    'transition',
    SQL.rescheduleForRetry(schema, LEASE, 3_000, 'Error: boom'),
  );

  add(
    'archiveSucceeded',
    '',
    'move',
    SQL.archiveSucceeded(schema, [{ ...LEASE, durationMs: 120 }]),
  );
  // In a transactional handler's transaction: the move without a transaction of its own (the run
  // commits it), so not checked as a self-contained move; tsql-session.spec.ts pins it to be the
  // move's batch less its prologue, XACT_ABORT and BEGIN TRAN … COMMIT.
  add(
    'archiveSucceeded.inCallerTransaction',
    '',
    'transition',
    SQL.archiveSucceeded(schema, [{ ...LEASE, durationMs: 120 }], { callerTransaction: true }),
  );
  // Stored results (schema version 15): a batch where one run records its result and one does
  // not (the document carries both, the archive insert names Result), and the same run in a
  // transactional handler's transaction.
  add(
    'archiveSucceeded',
    'results',
    'move',
    SQL.archiveSucceeded(schema, [
      { ...LEASE, durationMs: 120, result: '{"rows":3}' },
      { ...LEASE, id: ID2, durationMs: 121 },
    ]),
  );
  add(
    'archiveSucceeded.inCallerTransaction',
    'results',
    'transition',
    SQL.archiveSucceeded(schema, [{ ...LEASE, durationMs: 120, result: '{"rows":3}' }], {
      callerTransaction: true,
    }),
  );
  add(
    'moveToDlq',
    'lease',
    'move',
    SQL.moveToDlq(schema, LEASE, FailureReason.MaxRetriesExceeded, 'Error: boom', null, 15),
  );
  add(
    'moveToDlq',
    'admin',
    'move',
    SQL.moveToDlq(schema, { id: ID }, FailureReason.Cancelled, 'cancelled', 'ops', null),
  );
  // The dependency check's cancel of a job whose dependency failed: only while it still waits.
  add(
    'moveToDlq',
    'waiting',
    'move',
    SQL.moveToDlq(
      schema,
      { id: ID2 },
      FailureReason.DependencyFailed,
      dependencyFailedText(ID3, EdgeState.Failed),
      null,
      null,
      true,
    ),
  );
  add('cancel', '', 'move', SQL.cancel(schema, [ID, ID2], 'ops', STORED_TEXT.cancelled('ops')));

  const editVariants: Array<[string, SQL.MssqlResurrectEdits | null]> = [
    ['no edits', null],
    ['payload', { payload: '{"a":1}', tags: undefined, priority: null }],
    ['tags', { payload: null, tags: ',x,', priority: null }],
    ['clear tags', { payload: null, tags: null, priority: null }],
    ['priority', { payload: null, tags: undefined, priority: 99 }],
    ['all', { payload: '{"a":1}', tags: ',x,', priority: 99 }],
  ];
  for (const [variant, edits] of editVariants) {
    add('resurrect', variant, 'move', SQL.resurrect(schema, { ids: [ID] }, edits, 'ops'));
  }
  const pendingEdits: Array<[string, ValidatedPendingUpdate]> = [
    ['payload', { ...NO_PENDING_EDIT, payload: '{"a":1}', payloadVersion: 2 }],
    ['tags', { ...NO_PENDING_EDIT, tags: ',x,' }],
    ['clear tags', { ...NO_PENDING_EDIT, tags: null }],
    ['priority', { ...NO_PENDING_EDIT, priority: 99 }],
    ['run now', { ...NO_PENDING_EDIT, runAt: null }],
    ['run at', { ...NO_PENDING_EDIT, runAt: new Date('2030-01-02T03:04:05.678Z') }],
    [
      'all',
      {
        payload: '{"a":1}',
        payloadVersion: 2,
        tags: ',x,',
        priority: 99,
        runAt: new Date('2030-01-02T03:04:05.678Z'),
        expect: { queue: 'emails', type: 'welcome.v1' },
      },
    ],
  ];
  for (const [variant, edits] of pendingEdits) {
    add('updatePending', variant, 'transition', SQL.updatePending(schema, ID, edits, 'ops'));
  }
  for (const keys of singlesAndAll(PILLAR_FILTER_KEYS.dlq)) {
    add(
      'resurrectByFilter',
      keys.join(',') || 'no filter',
      'move',
      SQL.resurrect(schema, { filter: filterOf(keys), max: 100 }, null, null),
    );
  }

  add('recoverAbandoned', '', 'transition', SQL.recoverAbandoned(schema, 600_000, 1_000));
  add(
    'archiveZombies',
    '',
    'move',
    SQL.archiveZombies(
      schema,
      600_000,
      1_000,
      [
        { queue: 'emails', type: null, retry: true },
        { queue: 'emails', type: 'charge.v1', retry: false },
      ],
      STORED_TEXT.zombie,
    ),
  );

  add('getQueues', '', 'read', SQL.getQueues(schema));
  add(
    'updateQueue',
    'one field',
    'transition',
    SQL.updateQueue(schema, 'emails', { isPaused: true }),
  );
  add(
    'updateQueue',
    'all fields',
    'transition',
    SQL.updateQueue(schema, 'emails', {
      isPaused: false,
      isActive: true,
      maxWorkers: 3,
      zombieTimeoutSeconds: 60,
      executionTimeoutMs: 1_000,
      retryZombies: true,
      rateLimit: { max: 10, perMs: 1_000 },
    }),
  );
  add(
    'updateQueue',
    'rate limit removed',
    'transition',
    SQL.updateQueue(schema, 'emails', { rateLimit: null }),
  );
  add(
    'updateQueue',
    'group limits',
    'transition',
    SQL.updateQueue(schema, 'emails', {
      groupConcurrency: 2,
      groupRateLimit: { max: 10, perMs: 60_000 },
    }),
  );
  add(
    'updateQueue',
    'group limits removed',
    'transition',
    SQL.updateQueue(schema, 'emails', { groupConcurrency: null, groupRateLimit: null }),
  );
  add('getQueueGroups', '', 'read', SQL.getQueueGroups(schema, 'emails', 10));

  add('purgeDlq', '', 'transition', SQL.purgeDlq(schema, [ID]));
  for (const keys of singlesAndAll(PILLAR_FILTER_KEYS.dlq)) {
    add(
      'purgeDlqByFilter',
      keys.join(',') || 'no filter',
      'transition',
      SQL.purgeDlqByFilter(schema, filterOf(keys), 500),
    );
  }
  const retentionSteps = [
    ['archive', SQL.applyRetentionArchive],
    ['dlq', SQL.applyRetentionDlq],
    ['buckets', SQL.applyRetentionBuckets],
  ] as const;
  for (const [target, step] of retentionSteps) {
    add('applyRetention', target, 'transition', step(schema, 86_400_000, 1_000));
  }
  add(
    'applyRetention',
    'workers',
    'transition',
    SQL.applyRetentionWorkers(schema, 86_400_000, 1_000),
  );
  add('applyRetention', 'audit', 'transition', SQL.applyRetentionAudit(schema, 86_400_000, 1_000));
  add(
    'applyRetention',
    'dedupe keys',
    'transition',
    SQL.applyRetentionDedupeKeys(schema, 0, 1_000),
  );
  add('applyRetention', 'groups', 'transition', SQL.applyRetentionGroups(schema, 0, 1_000));
  add(
    'applyRetention',
    'batches',
    'transition',
    SQL.applyRetentionBatches(schema, 86_400_000, 1_000),
  );
  add('applyRetention', 'groupless', 'transition', SQL.applyRetentionGroupless(schema, 0, 1_000));

  // A partitioned Archive and DLQ (`storage.partitioning`): the layout read, each table's
  // conversion and boundaries ahead (a week of days from FIXED_DATE), the removal of an expired
  // partition, and the row-by-row retention outside the periods' partitions.
  add('partitionLayout', '', 'read', SQL.partitionLayout(schema));
  for (const table of ['archive', 'dlq'] as const) {
    const ahead = boundariesAhead(FIXED_DATE, 'day');
    add('convertToPartitioned', table, 'ddl', SQL.convertToPartitioned(schema, table, ahead));
    add(
      'makePartitionsAhead',
      table,
      'ddl',
      SQL.makePartitionsAhead(schema, table, ahead.slice(-2)),
    );
    add(
      'dropPartition',
      table,
      'transition',
      SQL.dropPartition(
        schema,
        table,
        { number: 2, from: PARTITION_FROM, to: PARTITION_TO },
        86_400_000,
      ),
    );
  }
  const outside = { below: PARTITION_FROM, from: boundariesAhead(FIXED_DATE, 'day').pop()! };
  add(
    'applyRetention',
    'archive partitioned',
    'transition',
    SQL.applyRetentionArchive(schema, 86_400_000, 1_000, outside),
  );
  add(
    'applyRetention',
    'dlq partitioned',
    'transition',
    SQL.applyRetentionDlq(schema, 86_400_000, 1_000, outside),
  );

  // The audit log: a row of an action (first batch, and a later batch with details of its own),
  // its pages, and the confirmation secret.
  const audit = {
    id: '0190a8e1-7c2b-7d4e-8f10-123456789abc',
    actor: 'ops@example.com',
    action: 'dlq.purge-by-filter' as const,
    target: '{"queue":"emails"}',
    details: '{"max":500}',
    once: false,
  };
  add('recordAudit', 'details', 'transition', SQL.recordAudit(schema, audit, 3, audit.details));
  add(
    'recordAudit',
    'first batch of a confirmed action',
    'transition',
    SQL.recordAudit(schema, { ...audit, once: true }, 3, audit.details),
  );
  add(
    'recordAudit',
    'no target',
    'transition',
    SQL.recordAudit(schema, { ...audit, target: null }, 0, null),
  );
  const page = {
    actor: null,
    action: null,
    target: null,
    from: null,
    to: null,
    limit: 50,
    after: null,
  };
  add('getAuditLog', 'first page', 'read', SQL.getAuditLog(schema, page));
  add(
    'getAuditLog',
    'every filter',
    'read',
    SQL.getAuditLog(schema, {
      actor: 'ops@example.com',
      action: 'queue.pause',
      target: 'emails',
      from: new Date('2026-11-01T00:00:00Z'),
      to: new Date('2026-12-01T00:00:00Z'),
      limit: 50,
      after: {
        at: '2026-11-30T10:00:00.123Z',
        atMs: Date.parse('2026-11-30T10:00:00.123Z'),
        id: audit.id,
      },
    }),
  );
  // A job's entries, as a dashboard's job view reads them: the target alone, then its next page.
  add('getAuditLog', 'target', 'read', SQL.getAuditLog(schema, { ...page, target: ID }));
  add(
    'getAuditLog',
    'target from a cursor',
    'read',
    SQL.getAuditLog(schema, {
      ...page,
      target: ID,
      after: {
        at: '2026-11-30T10:00:00.123Z',
        atMs: Date.parse('2026-11-30T10:00:00.123Z'),
        id: audit.id,
      },
    }),
  );
  add('confirmationSecret', '', 'transition', SQL.confirmationSecret(schema, 'ab'.repeat(32)));

  for (const starting of [true, false]) {
    add(
      'upsertWorker',
      starting ? 'starting' : 'beat',
      'transition',
      SQL.upsertWorker(schema, {
        workerId: LEASE.workerId,
        host: 'host',
        pid: 42,
        libraryVersion: '0.1.0',
        concurrency: 10,
        running: 3,
        handled: JSON.stringify({ queues: ['emails'], types: [{ queue: 'billing', type: 'x' }] }),
        circuits: JSON.stringify({ 'billing/x': 'open' }),
        draining: !starting,
        starting,
      }),
    );
  }
  add('markWorkerStopped', '', 'transition', SQL.markWorkerStopped(schema, LEASE.workerId));
  add('listWorkers', '', 'read', SQL.listWorkers(schema, 600_000, 1_000));

  add('getJob', '', 'read', SQL.getJob(schema, ID));
  add('getBatch', '', 'read', SQL.getBatch(schema, BATCH_ID));
  add('batchHotJobIds', '', 'read', SQL.batchHotJobIds(schema, BATCH_ID));
  add('getBatchResults', 'first page', 'read', SQL.getBatchResults(schema, BATCH_ID, '', 100));
  add('getBatchResults', 'from a cursor', 'read', SQL.getBatchResults(schema, BATCH_ID, ID, 2));
  add('getJobAttempts', '', 'read', SQL.getJobAttempts(schema, ID));
  add('dedupeOfJob', '', 'read', SQL.dedupeOfJob(schema, ID));
  for (const pillar of ['hot', 'archive', 'dlq'] as const) {
    const keys = PILLAR_FILTER_KEYS[pillar];
    // Every filter subset (plain and bounded-scan shapes), from a cursor, newest first.
    for (const subset of subsets(keys)) {
      add(
        `listJobs.${pillar}`,
        `filter ${subset.join(',') || 'none'}`,
        'read',
        SQL.listJobs(schema, listOf(pillar, subset, 'newest', true)),
      );
    }
    // The first page, and oldest first, with no filter, one indexed filter and every filter.
    for (const subset of [[], ['queue'], keys] as FilterKey[][]) {
      for (const order of ['newest', 'oldest'] as const) {
        for (const cursor of [false, true]) {
          if (order === 'newest' && cursor) continue;
          add(
            `listJobs.${pillar}`,
            `${order}${cursor ? ' from a cursor' : ''} filter ${subset.join(',') || 'none'}`,
            'read',
            SQL.listJobs(schema, listOf(pillar, subset, order, cursor)),
          );
        }
      }
    }
  }

  // The Waiting rows of a queue (schema version 19): the status a literal, so
  // `IX_JobsHot_Waiting` (filtered on `Status = 7`) serves them.
  const waitingFilter = { queue: 'emails', status: JobStatus.Waiting } as const;
  add(
    'listJobs.hot',
    'waiting',
    'read',
    SQL.listJobs(schema, { ...listOf('hot', [], 'newest', false), filter: waitingFilter }),
  );
  add('countExactly.hot', 'waiting', 'read', SQL.countExactly(schema, 'hot', waitingFilter));

  add('getSummary', '', 'telemetry', SQL.getSummary(schema));
  add('getQueueStats', '', 'telemetry', SQL.getQueueStats(schema));
  add('getQueueHealth', '', 'telemetry', SQL.getQueueHealth(schema));
  add('getQueueOutcomes', '5 minutes', 'telemetry', SQL.getQueueOutcomes(schema, 5));
  add('getQueueOutcomes', 'a day', 'telemetry', SQL.getQueueOutcomes(schema, 1_440));
  add('getThroughput', 'all queues', 'telemetry', SQL.getThroughput(schema));
  add('getThroughput', 'one queue', 'telemetry', SQL.getThroughput(schema, 'emails'));
  const series: SQL.MssqlSeries = {
    queue: null,
    from: FIXED_DATE,
    to: new Date(FIXED_DATE.getTime() + 86_400_000),
    stepMs: 60_000,
  };
  add('getThroughputSeries', 'all queues', 'telemetry', SQL.getThroughputSeries(schema, series));
  add(
    'getThroughputSeries',
    'one queue',
    'telemetry',
    SQL.getThroughputSeries(schema, { ...series, queue: 'emails' }),
  );
  for (const pillar of ['hot', 'archive', 'dlq'] as const) {
    for (const keys of singlesAndAll(PILLAR_FILTER_KEYS[pillar])) {
      add(
        `countExactly.${pillar}`,
        `filter ${keys.join(',') || 'none'}`,
        'read',
        SQL.countExactly(schema, pillar, filterOf(keys)),
      );
    }
  }
  for (const keys of singlesAndAll(PILLAR_FILTER_KEYS.dlq)) {
    add(
      'getTopDlqErrors',
      keys.join(',') || 'no filter',
      'telemetry',
      SQL.getTopDlqErrors(schema, filterOf(keys), TOP_ERRORS_WINDOW),
    );
    add(
      'previewDlqFilterSample',
      keys.join(',') || 'no filter',
      'read',
      SQL.previewDlqFilterSample(schema, filterOf(keys), 10),
    );
  }
  add(
    'previewDlqFilterCount',
    '',
    'read',
    SQL.previewDlqFilterCount(schema, filterOf(PILLAR_FILTER_KEYS.dlq)),
  );

  add(
    'upsertRecurringJob',
    '',
    'transition',
    SQL.upsertRecurringJob(schema, {
      name: 'nightly',
      cron: '0 3 * * *',
      timeZone: 'Europe/Berlin',
      queue: 'reports',
      type: 'nightly.v1',
      payload: '{}',
      misfirePolicy: 'skip',
      nextSlotUtc: FIXED_DATE,
      source: 'runtime',
    }),
  );
  add('getRecurringJobs', '', 'read', SQL.getRecurringJobs(schema));
  add(
    'setRecurringJobPaused',
    '',
    'transition',
    SQL.setRecurringJobPaused(schema, 'nightly', true),
  );
  add('removeRecurringJob', '', 'transition', SQL.removeRecurringJob(schema, 'nightly'));
  add('triggerRecurringJob', '', 'transition', SQL.triggerRecurringJob(schema, 'nightly', ID));
  add(
    'claimRecurringSlot',
    '',
    'transition',
    SQL.claimRecurringSlot(
      schema,
      'nightly',
      FIXED_DATE,
      new Date(FIXED_DATE.getTime() + 86_400_000),
      ID,
    ),
  );
  add(
    'claimRecurringSlot',
    'no job',
    'transition',
    SQL.claimRecurringSlot(
      schema,
      'nightly',
      FIXED_DATE,
      new Date(FIXED_DATE.getTime() + 86_400_000),
      null,
    ),
  );
  return out;
}
