/**
 * The claim (`fetchNextBatch`): read the candidates without update locks, then lock them by key
 * with `UPDLOCK, READPAST, ROWLOCK` in one batch, and the rows an ambiguous earlier attempt took.
 * The locks and isolation each part relies on, with Microsoft's documentation, are named above
 * `fetchNextBatch`; the batch conventions: docs/storage.md, "SQL Server: batch conventions".
 */
import { groupVisits } from '../../shared/groups';
import { MssqlStatement, ParamList } from '../mssql-params';
import { GROUP_KEY_COLUMN, HOT_COLUMNS, columnType } from '../mssql.schema';
import {
  DECLARE_BUCKET,
  DECLARE_NOW,
  PROLOGUE,
  SET_BUCKET,
  bumpBuckets,
  declareTableVar,
  isGrouped,
  outputInto,
  selectColumns,
  startLagMs,
  tables,
  type MssqlSchema,
  type MssqlTables,
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
  /**
   * Whether the grouped queues are claimed before the others (with `start` > 0; see
   * {@link fetchNextBatch}). The store alternates it from claim to claim; default false.
   */
  groupsFirst?: boolean;
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
 * priority first, then due time. Each queue U-locks no more than its share of that cut (its
 * candidates among the best `limit` of all queues, read without update locks): a U lock is held
 * to COMMIT and makes every other claimer skip the row, so locking each queue's whole slots
 * would hold up to `limit` rows per queue to keep `limit` in all. A share whose rows another
 * claimer holds is filled from the queue's further candidates (twice its slots were read).
 *
 * Grouped queues (schema version 17: a queue with `GroupConcurrency` or `GroupRateMax`): the
 * ordinary claim above never takes their rows (their `Slots` are 0), since it may leave rows
 * Fetched and does not know the groups. A claim that starts rows (`start` > 0) locks them with the
 * budgeted queues (`@Budgeted`, the same U locks by key, in name order; re-read under the lock,
 * `Grouped`) and claims each of them group by group in the same transaction
 * ({@link groupedClaim}), every row it takes started. The grouped queues go after the others, or
 * before them when `groupsFirst` says so (the store alternates it from claim to claim, as the
 * PostgreSQL store does), the second part sharing what the first left of the limit and the start.
 * A claim that starts nothing leaves the grouped queues out of its unlocked read and takes no lock
 * on them. Their started rows count in their queue's rate window and start bucket with the others.
 */

/**
 * A rate limit in T-SQL: its settings, `max` starts per `per` ms (expressions), and the alias `st`
 * of the row that holds its window (`RateWindowStart`, `RateWindowLast`, `RateWindowCount`,
 * `RatePrevLast`, `RatePrevCount`): a queue's own (`Queues`), or a group's (`JobGroups`).
 */
interface RateSql {
  max: string;
  per: string;
  st: string;
}

/** A queue's own rate limit, of the `Queues` row `q`. */
const QUEUE_RATE: RateSql = { max: 'q.RateLimitMax', per: 'q.RateLimitPerMs', st: 'q' };

/**
 * A group's rate limit in the grouped claim: the grouped queue's settings (read into variables),
 * the window of the group's `JobGroups` row `g`.
 */
const GROUP_RATE: RateSql = { max: '@gRateMax', per: '@gRatePer', st: 'g' };

/** Whether the rate window has rolled over at `@now` (none yet, or a window old). */
function rateRolled(r: RateSql): string {
  return `(${r.st}.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, ${r.per}, ${r.st}.RateWindowStart))`;
}

/**
 * The starts the window holds at `@now`: the current window's, and the previous window's while its
 * last start is within one window of `@now` (the rule of `storage/shared/rate-window.ts`).
 */
function rateHeld(r: RateSql): string {
  return [
    `CASE WHEN ${rateRolled(r)}`,
    `  THEN CASE WHEN ${r.st}.RateWindowLast > DATEADD(MILLISECOND, -${r.per}, @now) THEN ISNULL(${r.st}.RateWindowCount, 0) ELSE 0 END`,
    `  ELSE ISNULL(${r.st}.RateWindowCount, 0)`,
    `       + CASE WHEN ${r.st}.RatePrevLast > DATEADD(MILLISECOND, -${r.per}, @now) THEN ISNULL(${r.st}.RatePrevCount, 0) ELSE 0 END`,
    'END',
  ].join('\n');
}

/**
 * How many jobs may start at `@now` under the limit: `max` less {@link rateHeld}, never below 0
 * (`GREATEST` needs SQL Server 2022, hence the CASE).
 */
function rateAllowance(r: RateSql): string {
  const held = rateHeld(r);
  return `CASE WHEN ${r.max} - (${held}) > 0 THEN ${r.max} - (${held}) ELSE 0 END`;
}

/**
 * The SET list that spends `n` starts at `@now` on the window of `st` (the updated row's alias): a
 * rolled-over window becomes the previous one and a new one starts. Every expression reads the
 * row as it was before the UPDATE.
 */
function rateSpend(r: RateSql, n: string): string {
  const rolled = rateRolled(r);
  const a = r.st;
  return [
    `${a}.RatePrevCount = CASE WHEN ${rolled} THEN ${a}.RateWindowCount ELSE ${a}.RatePrevCount END,`,
    `  ${a}.RatePrevLast = CASE WHEN ${rolled} THEN ${a}.RateWindowLast ELSE ${a}.RatePrevLast END,`,
    `  ${a}.RateWindowCount = CASE WHEN ${rolled} THEN ${n} ELSE ${a}.RateWindowCount + ${n} END,`,
    `  ${a}.RateWindowStart = CASE WHEN ${rolled} THEN @now ELSE ${a}.RateWindowStart END,`,
    `  ${a}.RateWindowLast = @now`,
  ].join('\n');
}

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
  // Grouped queues are claimed only by a claim that starts rows (every row they give starts).
  const grouped = req.start > 0;
  const groupsFirst = grouped && req.groupsFirst === true;
  const visits = grouped ? p.int(groupVisits(req.start)) : '';
  // The ordinary part's limit and start: less what the grouped queues took when they went first
  // (every row they take starts).
  const rest = (n: string) => (groupsFirst ? `${n} - @GroupTaken` : n);
  const started = `k.Rn <= ${rest(start)}`;
  const claim = grouped ? groupedClaim(t, { workerId, leaseId, limit, start, visits }) : [];
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
      `DECLARE @Runnable TABLE (Queue varchar(255)${t.key} NOT NULL PRIMARY KEY, AllTypes bit NOT NULL, Budget int NULL, RateMax int NULL, RateAllow int NULL, Slots int NULL, Grouped bit NOT NULL, GroupBudget int NULL);`,
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
      'INSERT INTO @Runnable (Queue, AllTypes, Budget, RateMax, Grouped)',
      `SELECT q.Name, CAST(MAX(r.AllTypes) AS bit), q.MaxWorkers, q.RateLimitMax, CAST(CASE WHEN ${isGrouped('q')} THEN 1 ELSE 0 END AS bit)`,
      `FROM (SELECT a.Queue${t.key} AS Queue, 1 AS AllTypes FROM OPENJSON(${queues}) WITH (Queue varchar(255) '$') AS a`,
      '      UNION ALL SELECT y.Queue, 0 FROM @Types AS y) AS r',
      // A seek per queue asked for (never a scan, whose shared locks would wait on every queue
      // whose rate window another claimer is updating).
      `INNER LOOP JOIN ${t.queues} AS q WITH (FORCESEEK) ON q.Name = r.Queue`,
      // A claim that starts nothing leaves the grouped queues out altogether (none of their rows
      // may wait Fetched), and so takes no lock on them.
      `WHERE q.IsPaused = 0 AND q.IsActive = 1${grouped ? '' : ' AND q.GroupConcurrency IS NULL AND q.GroupRateMax IS NULL'}`,
      'GROUP BY q.Name, q.MaxWorkers, q.RateLimitMax, q.GroupConcurrency, q.GroupRateMax;',
      'INSERT INTO @Budgeted (Queue) SELECT r.Queue FROM @Runnable AS r WHERE r.Budget IS NOT NULL OR r.RateMax IS NOT NULL OR r.Grouped = 1;',
      'BEGIN TRAN;',
      '-- Serialise claims on budgeted, rate-limited and grouped queues: U locks on their Queues rows',
      '-- only, by key, in name order, held to the end of the transaction; the limits are re-read under',
      '-- the lock, and which of them are grouped.',
      `UPDATE r SET r.Budget = q.MaxWorkers, r.RateMax = q.RateLimitMax, r.Grouped = CASE WHEN ${isGrouped('q')} THEN 1 ELSE 0 END`,
      'FROM @Budgeted AS b',
      `INNER LOOP JOIN ${t.queues} AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = b.Queue`,
      'INNER JOIN @Runnable AS r ON r.Queue = b.Queue;',
      '-- The clock read after the locks: the start time of the rows started here, and the instant',
      '-- the rate allowance is computed at (later than the previous claimer of the queue, which',
      '-- committed before our lock was granted).',
      'SET @now = SYSUTCDATETIME();',
      // The start bucket is @now's minute: a lock wait may have crossed into the next one.
      SET_BUCKET,
      '-- A queue budgeted, rate limited or grouped since the unlocked read holds no lock here: no slots',
      '-- this round.',
      'UPDATE r SET r.Budget = 0, r.RateMax = NULL',
      `FROM @Runnable AS r INNER LOOP JOIN ${t.queues} AS q WITH (READCOMMITTEDLOCK, FORCESEEK) ON q.Name = r.Queue`,
      'WHERE (q.MaxWorkers IS NOT NULL OR q.RateLimitMax IS NOT NULL OR q.GroupConcurrency IS NOT NULL OR q.GroupRateMax IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM @Budgeted AS b WHERE b.Queue = r.Queue);',
      '-- Rate allowance of each locked rate-limited queue at @now (the rule of storage/shared/rate-window.ts).',
      `UPDATE r SET r.RateAllow = ${rateAllowance(QUEUE_RATE)}`,
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
      '-- A grouped queue is claimed group by group (below): the ordinary claim takes none of its rows.',
      grouped
        ? [
            '-- Its budget: its slots (MaxWorkers less its active rows, at most the limit), within its own rate.',
            'UPDATE r SET r.GroupBudget = CASE WHEN r.RateMax IS NOT NULL AND ISNULL(r.RateAllow, 0) < r.Slots THEN ISNULL(r.RateAllow, 0) ELSE r.Slots END,',
            '  r.Slots = 0',
            'FROM @Runnable AS r WHERE r.Grouped = 1;',
          ].join('\n')
        : 'UPDATE r SET r.Slots = 0 FROM @Runnable AS r WHERE r.Grouped = 1;',
      '-- A rate-limited queue: at most its allowance, and only when every claimed row starts (never',
      '-- buffered Fetched, so a start is the claim that counted it); a queue limited since the',
      '-- unlocked read was given Budget 0 above.',
      'UPDATE r SET r.Slots =',
      '  CASE WHEN r.RateMax IS NULL THEN r.Slots',
      `       WHEN ${start} < ${limit} OR r.RateAllow IS NULL THEN 0`,
      '       WHEN r.RateAllow < r.Slots THEN r.RateAllow',
      '       ELSE r.Slots END',
      'FROM @Runnable AS r;',
      ...(groupsFirst
        ? [
            ...claim,
            '-- The ordinary queues share what the grouped ones left of the limit (every row they took started).',
            'DECLARE @GroupTaken int = (SELECT COUNT(*) FROM @Claimed);',
            `UPDATE r SET r.Slots = ${limit} - @GroupTaken FROM @Runnable AS r WHERE r.Slots > ${limit} - @GroupTaken;`,
          ]
        : []),
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
      '-- Each queue locks no more than its share of the claim: its candidates among the best of all',
      '-- queues, up to the limit (a U lock is held to COMMIT, and a claimer skips every row another holds).',
      'UPDATE m SET m.Slots = CASE WHEN ISNULL(b.Share, 0) < m.Slots THEN ISNULL(b.Share, 0) ELSE m.Slots END',
      'FROM @Runnable AS m',
      'LEFT JOIN (',
      '  SELECT x.Queue, COUNT(*) AS Share',
      `  FROM (SELECT TOP (${rest(limit)}) c.Queue FROM @Candidates AS c ORDER BY c.Priority DESC, c.DueAtUtc, c.Id) AS x`,
      '  GROUP BY x.Queue',
      ') AS b ON b.Queue = m.Queue',
      'WHERE m.Slots > 0;',
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
      `  SELECT TOP (${rest(limit)}) b.Id, ROW_NUMBER() OVER (ORDER BY b.Priority DESC, b.DueAtUtc, b.Id) AS Rn`,
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
      ...(grouped && !groupsFirst ? claim : []),
      "-- Spend the started rows on their queues' rate windows (rows this transaction U-locked above),",
      "-- the grouped queues' rows too.",
      'WITH Spent AS (',
      '  SELECT c.Queue, COUNT(*) AS N FROM @Claimed AS c',
      '  WHERE c.Status = 2 AND c.Queue IN (SELECT r.Queue FROM @Runnable AS r WHERE r.RateMax IS NOT NULL)',
      '  GROUP BY c.Queue',
      ')',
      `UPDATE q SET ${rateSpend(QUEUE_RATE, 'x.N')}`,
      'FROM Spent AS x',
      `INNER LOOP JOIN ${t.queues} AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = x.Queue`,
      'WHERE q.RateLimitMax IS NOT NULL;',
      ...(grouped
        ? [
            "-- The grouped queues' cursors, after every JobGroups write of this claim (see groupedClaim).",
            'UPDATE q SET q.GroupCursor = c.GroupCursor',
            'FROM @Cursors AS c',
            `INNER LOOP JOIN ${t.queues} AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = c.Queue;`,
          ]
        : []),
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

/** The placeholders of the claim's values that its grouped part uses. */
interface GroupedClaimValues {
  workerId: string;
  leaseId: string;
  limit: string;
  start: string;
  /** The most groups one queue's walk visits (`groupVisits`). */
  visits: string;
}

/**
 * The next group of `@gQueue` with a Pending row, in `GroupKey` order, after `bound` (a condition;
 * none: the first), into `@gNext` (unchanged when there is none: "if the SELECT statement returns
 * no rows, the variable retains its present value",
 * https://learn.microsoft.com/en-us/sql/t-sql/language-elements/select-local-variable-transact-sql),
 * and into `@gPast` whether it lies past the cursor. One seek of `IX_JobsHot_GroupPending` (its
 * filter repeated as literals, so it matches), without update locks and skipping locked rows: a
 * row another session holds only hides itself, and the next row of its group stands for it.
 * `GroupKey` is compared with the variables in the column's binary collation (a column's collation
 * wins over a variable's: https://learn.microsoft.com/en-us/sql/t-sql/statements/collation-precedence-transact-sql).
 */
function nextGroup(t: MssqlTables, bound: string, indent: string): string {
  return [
    `SELECT TOP (1) @gNext = h.GroupKey, @gPast = CASE WHEN h.GroupKey > @gCursor THEN 1 ELSE 0 END`,
    `FROM ${t.hot} AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`,
    `WHERE h.Queue = @gQueue AND h.Status = 0 AND h.GroupKey IS NOT NULL${bound}`,
    'ORDER BY h.GroupKey;',
  ]
    .map((line) => `${indent}${line}`)
    .join('\n');
}

/**
 * The grouped part of {@link fetchNextBatch} (a claim with `start` > 0), in its transaction, after
 * the `Queues` locks: each grouped queue (group limits: `GroupConcurrency`, `GroupRateMax`) that
 * step locked is claimed on its own, in name order, while the claim has rows left to start
 * (`@gLeft`: the start less what this claim already started, within the limit less what it
 * already took). Every row it takes starts (Processing, attempt + 1), exactly as the ordinary
 * claim's started rows; a grouped queue never leaves rows Fetched. For each queue:
 *
 * - Its budget: the least of `@gLeft`, its `MaxWorkers` less its active rows, its own rate
 *   allowance (`GroupBudget`, computed with the other queues' slots).
 * - The walk: the groups with Pending rows, in `GroupKey` order, from the first after the queue's
 *   `GroupCursor` (NULL: from the first), wrapping round once to the cursor, stopping once it has
 *   found as many groups with room and a due row this worker runs as the budget (each gets at
 *   least one row; a group whose jobs are all scheduled later is passed over), or after the
 *   visits cap, or when it comes back past the cursor. The cap is `groupVisits` of the claim's
 *   start (`storage/shared/groups.ts`), computed by the store and sent as one parameter: the cap
 *   PostgreSQL gives the claim's first grouped queue; a later grouped queue of the same claim, with
 *   fewer rows left to start, keeps it where PostgreSQL gives it `groupVisits` of what is left (at
 *   least as many visits, never more than the function's bound). PostgreSQL writes the walk as a recursive CTE; T-SQL refuses a TOP, a
 *   subquery or an aggregate in a recursive member ("Guidelines for defining and using recursive
 *   common table expressions",
 *   https://learn.microsoft.com/en-us/sql/t-sql/queries/with-common-table-expression-transact-sql),
 *   and each step here needs all three (the next key is a `TOP (1)`; a group's room counts its
 *   active rows), so it is a `WHILE` loop of the batch
 *   (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/while-transact-sql) over
 *   variables and table variables, one index seek per step ({@link nextGroup}): a group with no
 *   Pending row left has no entry in the filtered index, so it costs nothing.
 * - A group's room: the budget, less what the group concurrency leaves (its Fetched and Processing
 *   rows, `IX_JobsHot_GroupActive`, read `READCOMMITTEDLOCK` like the queue's active count), less
 *   what its rate window allows (its `JobGroups` row; none: the whole of `GroupRateMax`). From a
 *   group with room the walk reads up to its room of due Pending rows in claim order (priority,
 *   due time, id), without update locks, skipping locked rows, of the types this worker runs in
 *   the queue (`@Types`; a queue-wide handler runs them all).
 * - The rows are then locked by key (`UPDLOCK, READPAST, ROWLOCK, FORCESEEK` from
 *   `@GroupCandidates`, as the ordinary pick from `@Candidates`: only rows chosen before are
 *   U-locked, Status and due time re-checked under the lock), each group up to its room; numbered
 *   within their group (`Rn`) and taken round-robin, by `(Rn, visit)`, up to the budget: every
 *   group's first row, then every group's second. One UPDATE starts them, into `@Claimed`.
 * - With a group rate limit, the groups that started rows spend them on their `JobGroups` rows:
 *   the rows that exist are updated by key (`UPDLOCK, ROWLOCK, FORCESEEK`, a loop from
 *   `@GroupSpent` in key order), then the missing ones inserted under `UPDLOCK, HOLDLOCK`, which
 *   locks the key's range so no other insert of it can pass
 *   (https://learn.microsoft.com/en-us/sql/t-sql/queries/hints-transact-sql-table). The queue's row
 *   lock already serialises every grouped claim of the queue, the only writer of its rows besides
 *   retention, which skips what this holds (`READPAST`).
 * - The queue's new cursor (the last group visited) waits in `@Cursors`; `fetchNextBatch` writes it
 *   at its end with the queue's rate spend (the grouped rows count in the queue's own rate window
 *   and start bucket there, with the other rows). So no `Queues` row is written, X-locked, before
 *   the last `JobGroups` write: retention, which holds the `JobGroups` rows it deletes while it
 *   reads their queues' rows, never waits for a claim that waits for it.
 *
 * The variables hold keys compared only with columns, whose binary collation wins (see
 * {@link nextGroup}); the table variables that hold keys declare them binary (`GroupKey` is binary
 * on every install). Table variables are declared once for the whole batch (a `DECLARE` is not run
 * again by a loop: "the scope of a local variable is the batch in which it is declared",
 * https://learn.microsoft.com/en-us/sql/t-sql/language-elements/declare-local-variable-transact-sql),
 * so each queue empties them first.
 */
function groupedClaim(t: MssqlTables, v: GroupedClaimValues): string[] {
  const groupKey = columnType(GROUP_KEY_COLUMN, t.key);
  const room = (indent: string) => [
    `${indent}SELECT @gVisit = @gVisit + 1, @gAfter = @gNext, @gLast = @gNext, @gRoom = @gBudget;`,
    `${indent}IF @gConcurrency IS NOT NULL`,
    `${indent}BEGIN`,
    `${indent}  SELECT @gRunning = COUNT(*) FROM ${t.hot} AS a WITH (READCOMMITTEDLOCK)`,
    `${indent}  WHERE a.Queue = @gQueue AND a.GroupKey = @gNext AND a.Status IN (1, 2) AND a.GroupKey IS NOT NULL;`,
    `${indent}  IF @gConcurrency - @gRunning < @gRoom SET @gRoom = @gConcurrency - @gRunning;`,
    `${indent}END;`,
    `${indent}IF @gRateMax IS NOT NULL`,
    `${indent}BEGIN`,
    `${indent}  SET @gAllow = @gRateMax;`,
    `${indent}  SELECT @gAllow = ${rateAllowance(GROUP_RATE).replace(/\n/g, `\n${indent}    `)}`,
    `${indent}  FROM ${t.groups} AS g WITH (READCOMMITTEDLOCK, FORCESEEK) WHERE g.Queue = @gQueue AND g.GroupKey = @gNext;`,
    `${indent}  IF @gAllow < @gRoom SET @gRoom = @gAllow;`,
    `${indent}END;`,
    `${indent}IF @gRoom < 0 SET @gRoom = 0;`,
    `${indent}INSERT INTO @Walk (N, Room) VALUES (@gVisit, @gRoom);`,
    `${indent}IF @gRoom > 0`,
    `${indent}BEGIN`,
    `${indent}  INSERT INTO @GroupCandidates (N, Priority, DueAtUtc, Id)`,
    `${indent}  SELECT TOP (@gRoom) @gVisit, h.Priority, h.DueAtUtc, h.Id`,
    `${indent}  FROM ${t.hot} AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)`,
    `${indent}  WHERE h.Queue = @gQueue AND h.GroupKey = @gNext AND h.Status = 0 AND h.GroupKey IS NOT NULL AND h.DueAtUtc <= @now`,
    `${indent}    AND (@gAllTypes = 1 OR EXISTS (SELECT 1 FROM @Types AS y WHERE y.Queue = @gQueue AND y.Type = h.Type AND h.PayloadVersion BETWEEN y.MinVersion AND y.MaxVersion))`,
    `${indent}  ORDER BY h.Priority DESC, h.DueAtUtc, h.Id;`,
    // Found: a group with room and a due row this worker runs (one whose jobs are all scheduled
    // later, or of other types, is passed over). @@ROWCOUNT is the rows the INSERT just added
    // (https://learn.microsoft.com/en-us/sql/t-sql/functions/rowcount-transact-sql).
    `${indent}  IF @@ROWCOUNT > 0 SET @gFound = @gFound + 1;`,
    `${indent}END;`,
  ];
  return [
    '-- Grouped queues (group limits): each claimed on its own, in name order, by a walk over its',
    '-- groups from its cursor, every row it takes started (see groupedClaim in sql/claim.ts).',
    'DECLARE @gLeft int, @gQueue varchar(255), @gBudget int, @gAllTypes bit, @gOpen bit, @gConcurrency int, @gRateMax int, @gRatePer int;',
    'DECLARE @gCursor nvarchar(255), @gAfter nvarchar(255), @gNext nvarchar(255), @gLast nvarchar(255), @gPast bit, @gWrapped bit;',
    'DECLARE @gVisit int, @gFound int, @gRoom int, @gRunning int, @gAllow int;',
    'DECLARE @Walk TABLE (N int NOT NULL PRIMARY KEY, Room int NOT NULL);',
    'DECLARE @GroupCandidates TABLE (N int NOT NULL, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL, Id varchar(36) NOT NULL, PRIMARY KEY (N, Priority DESC, DueAtUtc, Id));',
    'DECLARE @GroupPicked TABLE (Id varchar(36) NOT NULL PRIMARY KEY, N int NOT NULL, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL);',
    `DECLARE @GroupSpent TABLE (GroupKey ${groupKey} NOT NULL PRIMARY KEY, N int NOT NULL);`,
    `DECLARE @Cursors TABLE (Queue varchar(255)${t.key} NOT NULL PRIMARY KEY, GroupCursor ${groupKey} NOT NULL);`,
    '-- Rows left to start: the start less what this claim started, within the limit less what it took.',
    `SELECT @gLeft = CASE WHEN ${v.start} - COUNT(CASE WHEN c.Status = 2 THEN 1 END) < ${v.limit} - COUNT(*)`,
    `  THEN ${v.start} - COUNT(CASE WHEN c.Status = 2 THEN 1 END) ELSE ${v.limit} - COUNT(*) END`,
    'FROM @Claimed AS c;',
    'SET @gQueue = NULL;',
    'WHILE @gLeft > 0',
    'BEGIN',
    '  SELECT TOP (1) @gQueue = r.Queue, @gBudget = r.GroupBudget, @gAllTypes = r.AllTypes',
    '  FROM @Runnable AS r WHERE r.Grouped = 1 AND (@gQueue IS NULL OR r.Queue > @gQueue) ORDER BY r.Queue;',
    '  IF @@ROWCOUNT = 0 BREAK;',
    '  IF @gBudget > @gLeft SET @gBudget = @gLeft;',
    '  SET @gOpen = 0;',
    `  SELECT @gOpen = CASE WHEN q.IsPaused = 0 AND q.IsActive = 1 AND ${isGrouped('q')} THEN 1 ELSE 0 END,`,
    '    @gConcurrency = q.GroupConcurrency, @gRateMax = q.GroupRateMax, @gRatePer = q.GroupRatePerMs, @gCursor = q.GroupCursor',
    `  FROM ${t.queues} AS q WITH (READCOMMITTEDLOCK, FORCESEEK) WHERE q.Name = @gQueue;`,
    '  IF @gOpen = 1 AND @gBudget > 0',
    '  BEGIN',
    '    DELETE FROM @Walk;',
    '    DELETE FROM @GroupCandidates;',
    '    DELETE FROM @GroupPicked;',
    '    SELECT @gVisit = 0, @gFound = 0, @gWrapped = 0, @gAfter = @gCursor, @gLast = NULL;',
    '    -- The walk: one group per step, after the last one visited; at the end of the keys, once,',
    '    -- from the first again up to the cursor.',
    `    WHILE @gVisit < ${v.visits} AND @gFound < @gBudget`,
    '    BEGIN',
    '      SELECT @gNext = NULL, @gPast = 0;',
    '      IF @gAfter IS NULL',
    '      BEGIN',
    nextGroup(t, '', '        '),
    '      END',
    '      ELSE',
    '      BEGIN',
    nextGroup(t, ' AND h.GroupKey > @gAfter', '        '),
    '      END;',
    '      IF @gNext IS NULL AND @gWrapped = 0 AND @gCursor IS NOT NULL',
    '      BEGIN',
    '        SET @gWrapped = 1;',
    nextGroup(t, '', '        '),
    '      END;',
    '      IF @gNext IS NULL OR (@gWrapped = 1 AND @gPast = 1) BREAK;',
    ...room('      '),
    '    END;',
    '    IF @gVisit > 0',
    '    BEGIN',
    "      -- Each visited group's rows locked by key (clustered Id), up to its room, skipping rows others hold.",
    '      INSERT INTO @GroupPicked (Id, N, Priority, DueAtUtc)',
    '      SELECT k.Id, w.N, k.Priority, k.DueAtUtc',
    '      FROM @Walk AS w',
    '      CROSS APPLY (',
    '        SELECT TOP (w.Room) c.Id, c.Priority, c.DueAtUtc',
    '        FROM @GroupCandidates AS c',
    `        INNER LOOP JOIN ${t.hot} AS h WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON h.Id = c.Id`,
    '        WHERE c.N = w.N AND h.Status = 0 AND h.DueAtUtc <= @now',
    '        ORDER BY c.Priority DESC, c.DueAtUtc, c.Id',
    '      ) AS k',
    '      WHERE w.Room > 0;',
    "      -- Round-robin: every group's first row, then every group's second, up to the budget; all start.",
    '      WITH GroupBatch AS (',
    '        SELECT TOP (@gBudget) b.Id',
    '        FROM (SELECT p.Id, p.N, ROW_NUMBER() OVER (PARTITION BY p.N ORDER BY p.Priority DESC, p.DueAtUtc, p.Id) AS Rn FROM @GroupPicked AS p) AS b',
    '        ORDER BY b.Rn, b.N',
    '      )',
    '      UPDATE h SET h.Status = 2, h.AttemptCount = h.AttemptCount + 1, h.StartedAtUtc = @now, h.HeartbeatUtc = @now,',
    `        h.WorkerId = ${v.workerId}, h.LeaseId = ${v.leaseId}, h.LastUpdatedUtc = @now`,
    `      ${outputInto('inserted', '@Claimed', HOT_COLUMNS)}`,
    `      FROM ${t.hot} AS h`,
    '      INNER JOIN GroupBatch AS k ON k.Id = h.Id',
    '      WHERE h.Status = 0;',
    '      IF @gRateMax IS NOT NULL',
    '      BEGIN',
    "        -- The groups' rate windows: the rows that exist by key, in key order, then the missing ones.",
    '        DELETE FROM @GroupSpent;',
    '        INSERT INTO @GroupSpent (GroupKey, N)',
    '        SELECT c.GroupKey, COUNT(*) FROM @Claimed AS c WHERE c.Queue = @gQueue AND c.GroupKey IS NOT NULL GROUP BY c.GroupKey;',
    `        UPDATE g SET ${rateSpend(GROUP_RATE, 's.N').replace(/\n/g, '\n        ')}`,
    '        FROM @GroupSpent AS s',
    `        INNER LOOP JOIN ${t.groups} AS g WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON g.Queue = @gQueue AND g.GroupKey = s.GroupKey;`,
    `        INSERT INTO ${t.groups} (Queue, GroupKey, RateWindowStart, RateWindowLast, RateWindowCount)`,
    '        SELECT @gQueue, s.GroupKey, @now, @now, s.N FROM @GroupSpent AS s',
    `        WHERE NOT EXISTS (SELECT 1 FROM ${t.groups} AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = @gQueue AND x.GroupKey = s.GroupKey);`,
    '      END;',
    '      INSERT INTO @Cursors (Queue, GroupCursor) VALUES (@gQueue, @gLast);',
    '      SELECT @gLeft = @gLeft - COUNT(*) FROM @Claimed AS c WHERE c.Queue = @gQueue;',
    '    END;',
    '  END;',
    'END;',
  ];
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
