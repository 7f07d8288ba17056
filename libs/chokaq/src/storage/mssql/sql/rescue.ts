/** The rescue loop's batches: abandoned Fetched rows back to Pending, zombies out of Processing. */
import { MssqlStatement, ParamList } from '../mssql-params';
import { HOT_COLUMNS, MssqlColumn } from '../mssql.schema';
import { batchSettle } from './batches';
import { dependencySettle } from './dependencies';
import {
  DECLARE_BUCKET,
  DECLARE_NOW,
  PROLOGUE,
  attemptsInsert,
  bumpBuckets,
  bumpStats,
  declareTableVar,
  dlqInsert,
  outputInto,
  selectColumns,
  subtractMs,
  tables,
  type MssqlSchema,
} from './fragments';

/**
 * recoverAbandoned (seed "Recover Abandoned") — Fetched rows untouched for the timeout → Pending.
 * Safe: no user code ran. Read committed, in two steps:
 * - candidates WITHOUT update locks, `WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)` (each shared
 *   lock ends with its read; rows an owner is changing are skipped this round), a seek on
 *   `IX_JobsHot_FetchedRecovery` whose range is the whole predicate, bounded by `TOP (@limit)`;
 * - the UPDATE then takes them by key, `WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)` from
 *   `@Stale` into the clustered `Id`, re-checking the predicate under the lock.
 *
 * Lock order: the clustered key first, then the nonclustered keys the UPDATE changes, the order
 * of the owner's own `markAsProcessing` / `keepAlive` / `release` on the same row. Taking the
 * index key first (an `UPDLOCK` read of the index) and the row second is the reverse, and two
 * such statements on one row deadlock.
 */
export function recoverAbandoned(
  schema: MssqlSchema,
  fetchedTimeoutMs: number,
  limit: number,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const timeout = p.bigint(fetchedTimeoutMs);
  const max = p.int(limit);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      DECLARE_NOW,
      `DECLARE @cutoff datetime2(3) = ${subtractMs('@now', timeout)};`,
      'DECLARE @Stale TABLE (Id varchar(36) NOT NULL PRIMARY KEY);',
      'DECLARE @Recovered TABLE (Id varchar(36) NOT NULL);',
      `INSERT INTO @Stale (Id) SELECT TOP (${max}) f.Id FROM ${t.hot} AS f WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`,
      'WHERE f.Status = 1 AND f.LastUpdatedUtc < @cutoff',
      'ORDER BY f.LastUpdatedUtc;',
      'UPDATE h SET h.Status = 0, h.WorkerId = NULL, h.LeaseId = NULL, h.LastUpdatedUtc = @now',
      'OUTPUT inserted.Id INTO @Recovered (Id)',
      'FROM @Stale AS s',
      `INNER LOOP JOIN ${t.hot} AS h WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON h.Id = s.Id`,
      'WHERE h.Status = 1 AND h.LastUpdatedUtc < @cutoff;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Recovered;',
    ].join('\n'),
  );
}

/** The columns `archiveZombies` returns of each rescued row: all but the payload and `DueAtUtc`. */
const RESCUED_COLUMNS: readonly MssqlColumn[] = HOT_COLUMNS.filter(
  (col) => col.name !== 'Payload' && col.name !== 'DueAtUtc',
);

/** A handler's `retryZombies` choice for {@link archiveZombies}: type null = queue-wide. */
export interface MssqlZombieRetryRule {
  queue: string;
  type: string | null;
  retry: boolean;
}

/**
 * archiveZombies — Processing rows whose heartbeat is older than their queue's
 * `ZombieTimeoutSeconds` (or the default) → DLQ as Zombie (status 6, reason 2), or → Pending
 * with `LastError` (attempt kept) where the queue has `RetryZombies` or the rescuer's handler
 * rules say so. The rules arrive as one JSON parameter read into `@Rules` (one per slot, validated
 * before) and resolve as a claim resolves a handler: the exact `(Queue, Type)` rule, else the
 * queue-wide one (`Type` NULL). Result rows: `Kind` (0 = DLQ, 1 = retried) and the rescued row as
 * it was before the move, every column but the payload (the worker that lost it included): the
 * DELETE's `OUTPUT deleted.<columns> INTO @Moved` and the retry UPDATE's `OUTPUT deleted.<columns>
 * INTO @Retried` capture exactly the rows they changed, under their locks.
 *
 * Locks and isolation (read committed):
 * - Candidates are read WITHOUT update locks, `WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`,
 *   bounded by `TOP (@limit)` and by the index seek itself: `HeartbeatUtc < @cutoff`, the oldest
 *   heartbeat that the shortest timeout of any queue (or the default) can reach, is the range of
 *   the seek on `IX_JobsHot_ProcessingHeartbeat`, so live rows are never read. The per-queue
 *   timeout (a later operator, after the join to `Queues`) rejects the rest without having locked
 *   them: an `UPDLOCK` read there held a U lock until COMMIT on every row it rejected.
 * - Then, in one transaction (`SET XACT_ABORT ON; BEGIN TRAN; … COMMIT`), the candidates are
 *   locked by key, `WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)` from `@Zombies` into the
 *   clustered `Id`, with `Status = 2` and the heartbeat re-checked under the lock (a heartbeat
 *   that arrived in between saves its row); the retry UPDATE and the `DELETE … OUTPUT
 *   deleted.<columns> INTO @Moved` move only locked rows and re-check `Status = 2`.
 *
 * Every rescued run, dead or retried, gets its `JobAttempts` row (outcome `zombie`, the worker
 * that lost it) from the captured rows, in the same transaction; the dead ones are failures of the
 * jobs waiting on them ({@link dependencySettle}) and count as failed jobs of their batches
 * ({@link batchSettle}), the retried ones stay in the hot table and settle nothing.
 *
 * Lock order: `JobsHot` rows on the clustered key first (as every move), then `JobsDLQ` and
 * `JobAttempts`, then the dead rows' edges and their dependents' hot rows in id order, then the
 * batches' rows in id order (and their callbacks' new hot rows), then `StatsSummary` in queue
 * order (retries and moves summed in one {@link bumpStats}), then `MetricBuckets` in key order
 * (failed and retried rows in one {@link bumpBuckets}).
 */
export function archiveZombies(
  schema: MssqlSchema,
  defaultTimeoutMs: number,
  limit: number,
  rules: readonly MssqlZombieRetryRule[],
  error: string,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const timeout = p.bigint(defaultTimeoutMs);
  const max = p.int(limit);
  const doc = p.json(rules.map((r) => ({ queue: r.queue, type: r.type, retry: r.retry ? 1 : 0 })));
  // The stored text comes from the validating edge, the same on every dialect.
  const message = p.nvarchar(error, 'max');
  const timeoutOf = (q: string) =>
    `ISNULL(CAST(${q}.ZombieTimeoutSeconds AS bigint) * 1000, ${timeout})`;
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      declareTableVar('@Moved', HOT_COLUMNS, t),
      `DECLARE @Rules TABLE (Queue varchar(255)${t.key} NOT NULL, Type nvarchar(255)${t.key} NULL, Retry bit NOT NULL);`,
      'DECLARE @Zombies TABLE (Id varchar(36) NOT NULL PRIMARY KEY, Retry bit NOT NULL, TimeoutMs bigint NOT NULL, Locked bit NOT NULL);',
      declareTableVar('@Retried', RESCUED_COLUMNS, t),
      'INSERT INTO @Rules (Queue, Type, Retry)',
      `SELECT x.Queue, x.Type, x.Retry FROM OPENJSON(${doc}) WITH (Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', Retry bit '$.retry') AS x`,
      'WHERE x.Queue IS NOT NULL AND x.Retry IS NOT NULL;',
      '-- The shortest timeout of any queue bounds the index seek: newer heartbeats are not read.',
      `DECLARE @shortest bigint = (SELECT MIN(x.Ms) FROM (SELECT ${timeout} AS Ms UNION ALL SELECT CAST(q.ZombieTimeoutSeconds AS bigint) * 1000 FROM ${t.queues} AS q WHERE q.ZombieTimeoutSeconds IS NOT NULL) AS x);`,
      `DECLARE @cutoff datetime2(3) = ${subtractMs('@now', '@shortest')};`,
      '-- Candidates without update locks.',
      'INSERT INTO @Zombies (Id, Retry, TimeoutMs, Locked)',
      `SELECT TOP (${max}) z.Id, CASE WHEN q.RetryZombies = 1 OR ISNULL(e.Retry, w.Retry) = 1 THEN 1 ELSE 0 END, ${timeoutOf('q')}, 0`,
      `FROM ${t.hot} AS z WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`,
      `LEFT JOIN ${t.queues} AS q ON q.Name = z.Queue`,
      'LEFT JOIN @Rules AS e ON e.Queue = z.Queue AND e.Type = z.Type',
      'LEFT JOIN @Rules AS w ON w.Queue = z.Queue AND w.Type IS NULL',
      'WHERE z.Status = 2 AND z.HeartbeatUtc < @cutoff',
      `  AND DATEDIFF_BIG(MILLISECOND, z.HeartbeatUtc, @now) > ${timeoutOf('q')}`,
      'ORDER BY z.HeartbeatUtc;',
      'BEGIN TRAN;',
      '-- Lock them by key (clustered Id first), re-checking under the lock.',
      'UPDATE z SET z.Locked = 1',
      'FROM @Zombies AS z',
      `INNER LOOP JOIN ${t.hot} AS h WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON h.Id = z.Id`,
      'WHERE h.Status = 2 AND DATEDIFF_BIG(MILLISECOND, h.HeartbeatUtc, @now) > z.TimeoutMs;',
      'UPDATE h SET h.Status = 0, h.WorkerId = NULL, h.LeaseId = NULL, h.HeartbeatUtc = NULL,',
      `  h.ScheduledAtUtc = NULL, h.DueAtUtc = @now, h.HeldSinceUtc = NULL, h.LastError = ${message}, h.LastUpdatedUtc = @now`,
      outputInto('deleted', '@Retried', RESCUED_COLUMNS),
      `FROM ${t.hot} AS h INNER JOIN @Zombies AS z ON z.Id = h.Id AND z.Retry = 1 AND z.Locked = 1`,
      'WHERE h.Status = 2;',
      'DELETE h',
      outputInto('deleted', '@Moved', HOT_COLUMNS),
      `FROM ${t.hot} AS h INNER JOIN @Zombies AS z ON z.Id = h.Id AND z.Retry = 0 AND z.Locked = 1`,
      'WHERE h.Status = 2;',
      dlqInsert(t, '6', '2', message, 'NULL', 'NULL'),
      attemptsInsert(
        t,
        `SELECT r.Id, r.AttemptCount, r.WorkerId, r.LeaseId, r.StartedAtUtc, 'zombie' AS Outcome, ${message} AS Error FROM @Retried AS r UNION ALL SELECT mv.Id, mv.AttemptCount, mv.WorkerId, mv.LeaseId, mv.StartedAtUtc, 'zombie', ${message} FROM @Moved AS mv`,
      ),
      dependencySettle(t, 'dlq'),
      batchSettle(t, 'dlq'),
      bumpStats(
        t,
        '(SELECT r.Queue, 1 AS Retried, 0 AS Failed FROM @Retried AS r UNION ALL SELECT mv.Queue, 0, 1 FROM @Moved AS mv)',
        { RetriedTotal: 'g.Retried', FailedTotal: 'g.Failed' },
      ),
      bumpBuckets(
        t,
        '(SELECT mv.Queue, CAST(1 AS tinyint) AS Outcome, CAST(2 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs FROM @Moved AS mv UNION ALL SELECT r.Queue, CAST(3 AS tinyint), CAST(2 AS smallint), CAST(NULL AS bigint) FROM @Retried AS r)',
      ),
      'COMMIT;',
      `SELECT 0 AS Kind, ${selectColumns('mv', RESCUED_COLUMNS)} FROM @Moved AS mv`,
      'UNION ALL',
      `SELECT 1 AS Kind, ${selectColumns('r', RESCUED_COLUMNS)} FROM @Retried AS r;`,
    ].join('\n'),
  );
}
