/** The `Queues` rows: the controls every process reads, and the operator's upsert of them. */
import { QueuePatch } from '../../../interfaces/job.interface';
import { MssqlStatement, ParamList } from '../mssql-params';
import { QUEUE_COLUMNS } from '../mssql.schema';
import { PROLOGUE, isGrouped, selectColumns, tables, type MssqlSchema } from './fragments';

/** Queue rows. */
export function getQueues(schema: MssqlSchema): MssqlStatement {
  const t = tables(schema);
  return new ParamList().statement(
    `SELECT ${selectColumns('q', QUEUE_COLUMNS)} FROM ${t.queues} AS q ORDER BY q.Name;`,
  );
}

/**
 * updateQueue — upsert safe under concurrency: the row is created if missing under
 * `UPDLOCK, HOLDLOCK` (concurrent creators serialise on the key range instead of one failing
 * with a duplicate key), then each given field is set (a flag parameter per field keeps the text
 * fixed). One transaction, XACT_ABORT.
 *
 * Group limits (schema version 17): `GroupConcurrency`, and the group rate limit
 * (`GroupRateMax` per `GroupRatePerMs`). Clearing the group rate limit leaves the groups' windows
 * (`JobGroups`) to retention, which removes those of a queue without one. A patch that sets a group
 * limit and leaves the queue with one puts the queue's hot jobs that have no group into the shared
 * group `''`, in the same transaction, so that the grouped claim reaches them (it reads only rows
 * with a group). Its `Queues` row is locked first (the UPDATE), then the hot rows, the order of a
 * claim; the enqueue that read the queue before this commit and stores its job after it is caught
 * by retention (`applyRetentionGroupless`).
 */
export function updateQueue(schema: MssqlSchema, name: string, patch: QueuePatch): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const q = p.varchar(name, 255);
  const field = (col: string, defined: boolean, value: string) =>
    `${col} = CASE WHEN ${p.bit(defined)} = 1 THEN ${value} ELSE ${col} END`;
  const sets = [
    field('IsPaused', patch.isPaused !== undefined, p.bit(patch.isPaused ?? null)),
    field('IsActive', patch.isActive !== undefined, p.bit(patch.isActive ?? null)),
    field('MaxWorkers', patch.maxWorkers !== undefined, p.int(patch.maxWorkers ?? null)),
    field(
      'ZombieTimeoutSeconds',
      patch.zombieTimeoutSeconds !== undefined,
      p.int(patch.zombieTimeoutSeconds ?? null),
    ),
    field(
      'ExecutionTimeoutMs',
      patch.executionTimeoutMs !== undefined,
      p.int(patch.executionTimeoutMs ?? null),
    ),
    field('RetryZombies', patch.retryZombies !== undefined, p.bit(patch.retryZombies ?? null)),
    field('RateLimitMax', patch.rateLimit !== undefined, p.int(patch.rateLimit?.max ?? null)),
    field('RateLimitPerMs', patch.rateLimit !== undefined, p.int(patch.rateLimit?.perMs ?? null)),
    // Clearing the limit clears its window state; changing it keeps the starts already counted.
    ...[
      'RateWindowStart',
      'RateWindowLast',
      'RateWindowCount',
      'RatePrevLast',
      'RatePrevCount',
    ].map((col) => field(col, patch.rateLimit === null, 'NULL')),
  ];
  const groupConcurrency = p.bit(patch.groupConcurrency !== undefined);
  const groupRate = p.bit(patch.groupRateLimit !== undefined);
  const setWith = (col: string, flag: string, value: string) =>
    `${col} = CASE WHEN ${flag} = 1 THEN ${value} ELSE ${col} END`;
  sets.push(
    setWith('GroupConcurrency', groupConcurrency, p.int(patch.groupConcurrency ?? null)),
    setWith('GroupRateMax', groupRate, p.int(patch.groupRateLimit?.max ?? null)),
    setWith('GroupRatePerMs', groupRate, p.int(patch.groupRateLimit?.perMs ?? null)),
  );
  return p.statement(
    [
      PROLOGUE,
      'BEGIN TRAN;',
      `INSERT INTO ${t.queues} (Name) SELECT ${q}`,
      `WHERE NOT EXISTS (SELECT 1 FROM ${t.queues} AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Name = ${q});`,
      `INSERT INTO ${t.stats} (Queue) SELECT ${q}`,
      `WHERE NOT EXISTS (SELECT 1 FROM ${t.stats} AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = ${q});`,
      `UPDATE ${t.queues} SET ${sets.join(',\n  ')},`,
      '  LastUpdatedUtc = SYSUTCDATETIME()',
      `WHERE Name = ${q};`,
      `IF (${groupConcurrency} = 1 OR ${groupRate} = 1) AND EXISTS (SELECT 1 FROM ${t.queues} AS g WHERE g.Name = ${q} AND ${isGrouped('g')})`,
      `  UPDATE h SET h.GroupKey = N'' FROM ${t.hot} AS h WHERE h.Queue = ${q} AND h.GroupKey IS NULL;`,
      'COMMIT;',
      `SELECT ${selectColumns('q', QUEUE_COLUMNS)} FROM ${t.queues} AS q WHERE q.Name = ${q};`,
    ].join('\n'),
  );
}
