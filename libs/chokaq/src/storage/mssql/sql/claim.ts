/**
 * The claim (`fetchNextBatch`): read the candidates without update locks, then lock them by key
 * with `UPDLOCK, READPAST, ROWLOCK` in one batch, and the rows an ambiguous earlier attempt took.
 * The locks and isolation each part relies on, with Microsoft's documentation, are named above
 * `fetchNextBatch`; the batch conventions: docs/storage.md, "SQL Server: batch conventions".
 */
import { MssqlStatement, ParamList } from '../mssql-params';
import { HOT_COLUMNS } from '../mssql.schema';
import {
  DECLARE_BUCKET,
  DECLARE_NOW,
  PROLOGUE,
  SET_BUCKET,
  bumpBuckets,
  declareTableVar,
  outputInto,
  selectColumns,
  startLagMs,
  tables,
  type MssqlSchema,
} from './fragments';

/** Inputs of the claim. */
export interface MssqlClaimRequest {
  workerId: string;
  leaseId: string;
  limit: number;
  /** Queues with a queue-wide handler. */
  queues: readonly string[];
  /** Exact (queue, type) pairs, each with the payload versions its handler runs (1 to 1 if absent). */
  types: ReadonlyArray<{ queue: string; type: string; minVersion?: number; maxVersion?: number }>;
  /** How many of the claimed rows, first in claim order, go straight to Processing (0 to limit). */
  start: number;
}

/**
 * fetchNextBatch — the claim (seed "Fetch Next Batch"), one transaction: lock the budgeted
 * queues, count, pick candidates without update locks, lock the chosen rows by key, then ONE
 * `UPDATE … OUTPUT inserted.<columns> INTO @Claimed`.
 *
 * Locks and isolation (table hints: https://learn.microsoft.com/en-us/sql/t-sql/queries/hints-transact-sql-table):
 * - Runnable queues (the worker's queue-wide handlers and exact (queue, type) pairs, one JSON
 *   parameter each) are joined to `Queues` without locks, dropping paused and inactive ones.
 * - Budgeted queues (`MaxWorkers` set) are serialised: in the claim's transaction their `Queues`
 *   rows, and only theirs, are read `WITH (UPDLOCK, ROWLOCK, FORCESEEK)` by key: a nested loop
 *   (`INNER LOOP JOIN`) from `@Budgeted` into a seek on `PK_Queues` per name. A join left to the
 *   optimiser could scan `Queues` (merge or hash join) and U-lock every row until COMMIT, which
 *   would serialise every claimer, budgeted or not. `MaxWorkers` is re-read under the lock.
 *   A queue that became budgeted after the unlocked read has no lock: its `MaxWorkers` is read
 *   again (`READCOMMITTEDLOCK`) and it gets no slots this round, so it is never claimed without
 *   its cap (the PostgreSQL claim likewise reads `max_workers` after its locks); the next poll
 *   claims from it under its lock.
 * - Active rows per budgeted queue are counted `WITH (READCOMMITTEDLOCK)`: a locking read of
 *   committed rows even where READ_COMMITTED_SNAPSHOT is on (the Azure SQL default), so the count
 *   cannot come from a stale snapshot taken before another claim committed.
 * - Candidates are read WITHOUT update locks, `WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`: each
 *   row's shared lock ends with its read, rows others hold exclusively are skipped. An `UPDLOCK`
 *   read holds its U lock until COMMIT on every row it reads, including rows a later predicate
 *   rejects (delayed rows ahead in index order; rows of types no worker here runs, e.g. during a
 *   rolling deploy): with such a backlog each claim would hold O(backlog) locks, and near 5,000
 *   locks SQL Server tries to escalate to a table lock, which `READPAST` cannot skip
 *   (https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide#lock-escalation).
 *   Exact (queue, type) pairs seek `IX_JobsHot_ClaimType (Queue, Type, …)`, so rows of other
 *   types are not read at all; queue-wide handlers seek `IX_JobsHot_Claim (Queue, …)`. Each takes
 *   twice its slots, so a claimer that loses some rows to a concurrent one still fills its batch.
 * - The chosen rows are then locked `WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK)`, by key: a
 *   nested loop from `@Candidates` (keyed in claim order) into a seek on the clustered `Id`,
 *   `TOP (slots)` per queue. Rows another claimer holds are skipped rather than waited for, and
 *   `Status = 0` and the due time are re-checked under the lock; the only rows it can U-lock and
 *   reject are rows that changed since the candidate read, at most the candidates (O(batch)).
 * - The final UPDATE re-checks `Status = 0`.
 *
 * Lock order: `Queues` rows in name order (the loop join reads `@Budgeted`'s key in order), then
 * `JobsHot` rows on the clustered key first, like every other statement that changes hot rows by
 * id (a pick through the nonclustered index first, then the clustered row, is the order that
 * deadlocks with a cancel or a move of the same row).
 *
 * `start`: the UPDATE sets the batch's first `@start` rows (`ROW_NUMBER()` in claim order) to
 * Processing exactly as {@link markAsProcessing} does, the rest to Fetched; 0 starts none. The
 * started rows are then counted in the queue's start bucket (outcome 4) with their start lag, in
 * the same transaction ({@link bumpBuckets}: `MetricBuckets` rows in key order, after the
 * `JobsHot` rows, as every move takes them); a claim that starts nothing writes no bucket.
 *
 * Departure from the seed's shape, same semantics: the seed ranks every due pending row with
 * `ROW_NUMBER() OVER (PARTITION BY Queue …)`, which reads the whole backlog on every poll. Here
 * each runnable queue (or pair) takes its own top rows with `CROSS APPLY (SELECT TOP (…) … ORDER
 * BY Priority DESC, DueAtUtc, Id)`, a seek into a filtered index; the cost is O(batch) per queue,
 * not O(backlog). The per-queue budget (`slots = min(limit, MaxWorkers − active)`, never
 * negative) caps each queue, and an outer `TOP (@limit)` keeps the best rows across queues,
 * priority first, then due time; picked rows that lose that cut stay U-locked until COMMIT (at
 * most the slots of each queue).
 */

/** Whether the rate window of `q` has rolled over at `@now` (none yet, or a window old). */
const RATE_ROLLED =
  '(q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart))';

/**
 * How many of `q`'s jobs may start at `@now`: `RateLimitMax` less the current window's starts, less
 * the previous window's while its last start is within one window of `@now`, never below 0
 * (`GREATEST` needs SQL Server 2022, hence the CASE).
 */
const RATE_HELD = [
  `CASE WHEN ${RATE_ROLLED}`,
  '  THEN CASE WHEN q.RateWindowLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RateWindowCount, 0) ELSE 0 END',
  '  ELSE ISNULL(q.RateWindowCount, 0)',
  '       + CASE WHEN q.RatePrevLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RatePrevCount, 0) ELSE 0 END',
  'END',
].join('\n');

const RATE_ALLOWANCE = `CASE WHEN q.RateLimitMax - (${RATE_HELD}) > 0 THEN q.RateLimitMax - (${RATE_HELD}) ELSE 0 END`;

export function fetchNextBatch(schema: MssqlSchema, req: MssqlClaimRequest): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const workerId = p.nvarchar(req.workerId, 255);
  const leaseId = p.varchar(req.leaseId, 36);
  const limit = p.int(req.limit);
  const queues = p.json(req.queues);
  const types = p.json(
    req.types.map((x) => ({
      queue: x.queue,
      type: x.type,
      minVersion: x.minVersion ?? 1,
      maxVersion: x.maxVersion ?? 1,
    })),
  );
  const start = p.int(req.start);
  const started = `k.Rn <= ${start}`;
  // The candidate read of one queue (queue-wide handler) or one (queue, type) pair.
  const candidates = (match: string, residual = '') => [
    '  CROSS APPLY (',
    '    SELECT TOP (2 * m.Slots) h.Priority, h.DueAtUtc, h.Id',
    `    FROM ${t.hot} AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`,
    `    WHERE ${match} AND h.Status = 0 AND h.DueAtUtc <= @now${residual}`,
    '    ORDER BY h.Priority DESC, h.DueAtUtc, h.Id',
    '  ) AS c',
  ];
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      `DECLARE @Runnable TABLE (Queue varchar(255)${t.key} NOT NULL PRIMARY KEY, AllTypes bit NOT NULL, Budget int NULL, RateMax int NULL, RateAllow int NULL, Slots int NULL);`,
      `DECLARE @Types TABLE (Queue varchar(255)${t.key} NOT NULL, Type nvarchar(255)${t.key} NOT NULL, MinVersion int NOT NULL, MaxVersion int NOT NULL, PRIMARY KEY (Queue, Type));`,
      `DECLARE @Budgeted TABLE (Queue varchar(255)${t.key} NOT NULL PRIMARY KEY);`,
      `DECLARE @Candidates TABLE (Queue varchar(255)${t.key} NOT NULL, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL, Id varchar(36) NOT NULL, PRIMARY KEY (Queue, Priority DESC, DueAtUtc, Id));`,
      'DECLARE @Picked TABLE (Id varchar(36) NOT NULL PRIMARY KEY, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL);',
      declareTableVar('@Claimed', HOT_COLUMNS, t),
      'INSERT INTO @Types (Queue, Type, MinVersion, MaxVersion)',
      // A key read from OPENJSON has the database's collation: grouped and combined in the
      // install's (t.key), so two types that differ only by case stay two on a binary-key install.
      `SELECT x.Queue${t.key}, x.Type${t.key}, MIN(x.MinVersion), MAX(x.MaxVersion) FROM OPENJSON(${types}) WITH (Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', MinVersion int '$.minVersion', MaxVersion int '$.maxVersion') AS x`,
      'WHERE x.Queue IS NOT NULL AND x.Type IS NOT NULL AND x.MinVersion IS NOT NULL AND x.MaxVersion IS NOT NULL',
      `GROUP BY x.Queue${t.key}, x.Type${t.key};`,
      'INSERT INTO @Runnable (Queue, AllTypes, Budget, RateMax)',
      'SELECT q.Name, CAST(MAX(r.AllTypes) AS bit), q.MaxWorkers, q.RateLimitMax',
      `FROM (SELECT a.Queue${t.key} AS Queue, 1 AS AllTypes FROM OPENJSON(${queues}) WITH (Queue varchar(255) '$') AS a`,
      '      UNION ALL SELECT y.Queue, 0 FROM @Types AS y) AS r',
      // A seek per queue asked for (never a scan, whose shared locks would wait on every queue
      // whose rate window another claimer is updating).
      `INNER LOOP JOIN ${t.queues} AS q WITH (FORCESEEK) ON q.Name = r.Queue`,
      'WHERE q.IsPaused = 0 AND q.IsActive = 1',
      'GROUP BY q.Name, q.MaxWorkers, q.RateLimitMax;',
      'INSERT INTO @Budgeted (Queue) SELECT r.Queue FROM @Runnable AS r WHERE r.Budget IS NOT NULL OR r.RateMax IS NOT NULL;',
      'BEGIN TRAN;',
      '-- Serialise claims on budgeted and rate-limited queues: U locks on their Queues rows only, by',
      '-- key, in name order, held to the end of the transaction; both limits are re-read under the lock.',
      'UPDATE r SET r.Budget = q.MaxWorkers, r.RateMax = q.RateLimitMax',
      'FROM @Budgeted AS b',
      `INNER LOOP JOIN ${t.queues} AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = b.Queue`,
      'INNER JOIN @Runnable AS r ON r.Queue = b.Queue;',
      '-- The clock read after the locks: the start time of the rows started here, and the instant',
      '-- the rate allowance is computed at (later than the previous claimer of the queue, which',
      '-- committed before our lock was granted).',
      'SET @now = SYSUTCDATETIME();',
      // The start bucket is @now's minute: a lock wait may have crossed into the next one.
      SET_BUCKET,
      '-- A queue budgeted or rate limited since the unlocked read holds no lock here: no slots this round.',
      'UPDATE r SET r.Budget = 0, r.RateMax = NULL',
      `FROM @Runnable AS r INNER LOOP JOIN ${t.queues} AS q WITH (READCOMMITTEDLOCK, FORCESEEK) ON q.Name = r.Queue`,
      'WHERE (q.MaxWorkers IS NOT NULL OR q.RateLimitMax IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM @Budgeted AS b WHERE b.Queue = r.Queue);',
      '-- Rate allowance of each locked rate-limited queue at @now (the rule of storage/shared/rate-window.ts).',
      `UPDATE r SET r.RateAllow = ${RATE_ALLOWANCE}`,
      'FROM @Runnable AS r',
      `INNER LOOP JOIN ${t.queues} AS q WITH (READCOMMITTEDLOCK, FORCESEEK) ON q.Name = r.Queue`,
      'WHERE r.RateMax IS NOT NULL AND q.RateLimitMax IS NOT NULL;',
      'WITH Active AS (',
      '  SELECT h.Queue, COUNT_BIG(*) AS Busy',
      `  FROM ${t.hot} AS h WITH (READCOMMITTEDLOCK)`,
      '  WHERE h.Status IN (1, 2) AND h.Queue IN (SELECT b.Queue FROM @Budgeted AS b)',
      '  GROUP BY h.Queue',
      ')',
      'UPDATE r SET r.Slots =',
      `  CASE WHEN r.Budget IS NULL THEN ${limit}`,
      '       WHEN r.Budget - ISNULL(a.Busy, 0) <= 0 THEN 0',
      `       WHEN r.Budget - ISNULL(a.Busy, 0) < ${limit} THEN r.Budget - ISNULL(a.Busy, 0)`,
      `       ELSE ${limit} END`,
      'FROM @Runnable AS r LEFT JOIN Active AS a ON a.Queue = r.Queue;',
      '-- A rate-limited queue: at most its allowance, and only when every claimed row starts (never',
      '-- buffered Fetched, so a start is the claim that counted it); a queue limited since the',
      '-- unlocked read was given Budget 0 above.',
      'UPDATE r SET r.Slots =',
      '  CASE WHEN r.RateMax IS NULL THEN r.Slots',
      `       WHEN ${start} < ${limit} OR r.RateAllow IS NULL THEN 0`,
      '       WHEN r.RateAllow < r.Slots THEN r.RateAllow',
      '       ELSE r.Slots END',
      'FROM @Runnable AS r;',
      '-- Candidates without update locks: a seek per queue-wide queue, and per exact (queue, type).',
      'INSERT INTO @Candidates (Queue, Priority, DueAtUtc, Id)',
      'SELECT m.Queue, c.Priority, c.DueAtUtc, c.Id',
      'FROM @Runnable AS m',
      ...candidates('h.Queue = m.Queue'),
      'WHERE m.AllTypes = 1 AND m.Slots > 0',
      'UNION ALL',
      'SELECT m.Queue, c.Priority, c.DueAtUtc, c.Id',
      'FROM @Runnable AS m',
      '  INNER JOIN @Types AS y ON y.Queue = m.Queue',
      // The payload version is a residual predicate of the (Queue, Type) seek: a row of a version
      // this process cannot run is read (a shared lock that ends with the read) and stepped over.
      ...candidates(
        'h.Queue = y.Queue AND h.Type = y.Type',
        ' AND h.PayloadVersion BETWEEN y.MinVersion AND y.MaxVersion',
      ),
      'WHERE m.AllTypes = 0 AND m.Slots > 0;',
      '-- Each queue locks its best candidates by key (clustered Id), skipping rows others hold.',
      'INSERT INTO @Picked (Id, Priority, DueAtUtc)',
      'SELECT k.Id, k.Priority, k.DueAtUtc',
      'FROM @Runnable AS m',
      'CROSS APPLY (',
      '  SELECT TOP (m.Slots) c.Id, c.Priority, c.DueAtUtc',
      '  FROM @Candidates AS c',
      `  INNER LOOP JOIN ${t.hot} AS h WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON h.Id = c.Id`,
      '  WHERE c.Queue = m.Queue AND h.Status = 0 AND h.DueAtUtc <= @now',
      '  ORDER BY c.Priority DESC, c.DueAtUtc, c.Id',
      ') AS k',
      'WHERE m.Slots > 0;',
      'WITH Batch AS (',
      // Rn ranks only the picked rows (at most `limit` per runnable queue), never the backlog.
      `  SELECT TOP (${limit}) b.Id, ROW_NUMBER() OVER (ORDER BY b.Priority DESC, b.DueAtUtc, b.Id) AS Rn`,
      '  FROM @Picked AS b ORDER BY b.Priority DESC, b.DueAtUtc, b.Id',
      ')',
      `UPDATE h SET h.Status = CASE WHEN ${started} THEN 2 ELSE 1 END,`,
      `  h.AttemptCount = CASE WHEN ${started} THEN h.AttemptCount + 1 ELSE h.AttemptCount END,`,
      `  h.StartedAtUtc = CASE WHEN ${started} THEN @now ELSE h.StartedAtUtc END,`,
      `  h.HeartbeatUtc = CASE WHEN ${started} THEN @now ELSE h.HeartbeatUtc END,`,
      `  h.WorkerId = ${workerId}, h.LeaseId = ${leaseId}, h.LastUpdatedUtc = @now`,
      outputInto('inserted', '@Claimed', HOT_COLUMNS),
      `FROM ${t.hot} AS h`,
      'INNER JOIN Batch AS k ON k.Id = h.Id',
      'WHERE h.Status = 0;',
      "-- Spend the started rows on their queues' rate windows (rows this transaction U-locked above).",
      'WITH Spent AS (',
      '  SELECT c.Queue, COUNT(*) AS N FROM @Claimed AS c',
      '  WHERE c.Status = 2 AND c.Queue IN (SELECT r.Queue FROM @Runnable AS r WHERE r.RateMax IS NOT NULL)',
      '  GROUP BY c.Queue',
      ')',
      `UPDATE q SET q.RatePrevCount = CASE WHEN ${RATE_ROLLED} THEN q.RateWindowCount ELSE q.RatePrevCount END,`,
      `  q.RatePrevLast = CASE WHEN ${RATE_ROLLED} THEN q.RateWindowLast ELSE q.RatePrevLast END,`,
      `  q.RateWindowCount = CASE WHEN ${RATE_ROLLED} THEN x.N ELSE q.RateWindowCount + x.N END,`,
      `  q.RateWindowStart = CASE WHEN ${RATE_ROLLED} THEN @now ELSE q.RateWindowStart END,`,
      '  q.RateWindowLast = @now',
      'FROM Spent AS x',
      `INNER LOOP JOIN ${t.queues} AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = x.Queue`,
      'WHERE q.RateLimitMax IS NOT NULL;',
      // A table variable declared inside the IF exists for the whole batch ("the scope of a local
      // variable is the batch in which it is declared":
      // https://learn.microsoft.com/en-us/sql/t-sql/language-elements/declare-local-variable-transact-sql);
      // the IF only skips the statements when nothing was started.
      '-- The rows started here count in the start bucket, with their lag, in this transaction.',
      `IF ${start} > 0 AND EXISTS (SELECT 1 FROM @Claimed AS c WHERE c.Status = 2)`,
      'BEGIN',
      bumpBuckets(
        t,
        `(SELECT c.Queue, CAST(4 AS tinyint) AS Outcome, CAST(-1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs, ${startLagMs('c')} AS LagMs FROM @Claimed AS c WHERE c.Status = 2)`,
        true,
      ),
      'END;',
      'COMMIT;',
      `SELECT ${selectColumns('c', HOT_COLUMNS)}`,
      'FROM @Claimed AS c',
      'ORDER BY c.Priority DESC, c.DueAtUtc, c.Id;',
    ].join('\n'),
  );
}

/**
 * fetchNextBatch, retry only — the rows a claim with this lease already took, in the claim's
 * columns and order. A retry after an ambiguous commit (reply lost after COMMIT) returns them
 * instead of claiming again, which would strand them until `recoverAbandoned` (Fetched) or the
 * zombie sweep (started by the claim, attempt already counted). Only that claim can have set this
 * lease, and its caller never received the rows, so nothing else has moved them on.
 *
 * Locks and isolation: a plain read committed SELECT, no hints. The earlier attempt committed
 * before its reply was lost, so its rows are visible to a statement that starts afterwards; under
 * READ_COMMITTED_SNAPSHOT it reads the last committed versions without blocking, otherwise it takes
 * short S locks. Nothing needs locking for later: the rows are fenced by the lease. No index has
 * `WorkerId` or `LeaseId`; at best the active rows are scanned through the filtered
 * `IX_JobsHot_Active`, which is why it runs on retries only.
 */
export function fetchNextBatchClaimed(
  schema: MssqlSchema,
  workerId: string,
  leaseId: string,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const worker = p.nvarchar(workerId, 255);
  const lease = p.varchar(leaseId, 36);
  return p.statement(
    [
      `SELECT ${selectColumns('h', HOT_COLUMNS)}`,
      `FROM ${t.hot} AS h`,
      `WHERE h.Status IN (1, 2) AND h.WorkerId = ${worker} AND h.LeaseId = ${lease}`,
      'ORDER BY h.Priority DESC, h.DueAtUtc, h.Id;',
    ].join('\n'),
  );
}
