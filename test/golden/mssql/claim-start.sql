SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @bucket datetime2(0) = CAST(DATEADD(SECOND, -DATEPART(SECOND, @now), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now)) AS datetime2(0));
DECLARE @Runnable TABLE (Queue varchar(255) NOT NULL PRIMARY KEY, AllTypes bit NOT NULL, Budget int NULL, RateMax int NULL, RateAllow int NULL, Slots int NULL, Grouped bit NOT NULL, GroupBudget int NULL);
DECLARE @Types TABLE (Queue varchar(255) NOT NULL, Type nvarchar(255) NOT NULL, MinVersion int NOT NULL, MaxVersion int NOT NULL, PRIMARY KEY (Queue, Type));
DECLARE @Budgeted TABLE (Queue varchar(255) NOT NULL PRIMARY KEY);
DECLARE @Candidates TABLE (Queue varchar(255) NOT NULL, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL, Id varchar(36) NOT NULL, PRIMARY KEY (Queue, Priority DESC, DueAtUtc, Id));
DECLARE @Picked TABLE (Id varchar(36) NOT NULL PRIMARY KEY, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL);
DECLARE @Claimed TABLE (Id varchar(36) NULL, Queue varchar(255) NULL, Type nvarchar(255) NULL, Payload nvarchar(max) NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255) NULL, Priority int NULL, Status tinyint NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, LeaseId varchar(36) NULL, HeartbeatUtc datetime2(3) NULL, ScheduledAtUtc datetime2(3) NULL, DueAtUtc datetime2(3) NULL, CreatedAtUtc datetime2(3) NULL, EnqueuedAtUtc datetime2(3) NULL, StartedAtUtc datetime2(3) NULL, LastUpdatedUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, LastModifiedBy nvarchar(100) NULL, LastError nvarchar(max) NULL, CancelRequestedUtc datetime2(3) NULL, Progress float NULL, ProgressNote nvarchar(500) NULL, TraceContext varchar(2048) NULL, PayloadVersion int NULL, GroupKey nvarchar(255) COLLATE Latin1_General_100_BIN2 NULL, BatchId varchar(36) NULL, WaitingOn int NULL, HasDependents bit NULL);
INSERT INTO @Types (Queue, Type, MinVersion, MaxVersion)
SELECT x.Queue, x.Type, MIN(x.MinVersion), MAX(x.MaxVersion) FROM OPENJSON(@4) WITH (Queue varchar(255) '$.queue', Type nvarchar(255) '$.type', MinVersion int '$.minVersion', MaxVersion int '$.maxVersion') AS x
WHERE x.Queue IS NOT NULL AND x.Type IS NOT NULL AND x.MinVersion IS NOT NULL AND x.MaxVersion IS NOT NULL
GROUP BY x.Queue, x.Type;
INSERT INTO @Runnable (Queue, AllTypes, Budget, RateMax, Grouped)
SELECT q.Name, CAST(MAX(r.AllTypes) AS bit), q.MaxWorkers, q.RateLimitMax, CAST(CASE WHEN (q.GroupConcurrency IS NOT NULL OR q.GroupRateMax IS NOT NULL) THEN 1 ELSE 0 END AS bit)
FROM (SELECT a.Queue AS Queue, 1 AS AllTypes FROM OPENJSON(@3) WITH (Queue varchar(255) '$') AS a
      UNION ALL SELECT y.Queue, 0 FROM @Types AS y) AS r
INNER LOOP JOIN [chokaq].[Queues] AS q WITH (FORCESEEK) ON q.Name = r.Queue
WHERE q.IsPaused = 0 AND q.IsActive = 1
GROUP BY q.Name, q.MaxWorkers, q.RateLimitMax, q.GroupConcurrency, q.GroupRateMax;
INSERT INTO @Budgeted (Queue) SELECT r.Queue FROM @Runnable AS r WHERE r.Budget IS NOT NULL OR r.RateMax IS NOT NULL OR r.Grouped = 1;
BEGIN TRAN;
-- Serialise claims on budgeted, rate-limited and grouped queues: U locks on their Queues rows
-- only, by key, in name order, held to the end of the transaction; the limits are re-read under
-- the lock, and which of them are grouped.
UPDATE r SET r.Budget = q.MaxWorkers, r.RateMax = q.RateLimitMax, r.Grouped = CASE WHEN (q.GroupConcurrency IS NOT NULL OR q.GroupRateMax IS NOT NULL) THEN 1 ELSE 0 END
FROM @Budgeted AS b
INNER LOOP JOIN [chokaq].[Queues] AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = b.Queue
INNER JOIN @Runnable AS r ON r.Queue = b.Queue;
-- The clock read after the locks: the start time of the rows started here, and the instant
-- the rate allowance is computed at (later than the previous claimer of the queue, which
-- committed before our lock was granted).
SET @now = SYSUTCDATETIME();
SET @bucket = CAST(DATEADD(SECOND, -DATEPART(SECOND, @now), DATEADD(MILLISECOND, -DATEPART(MILLISECOND, @now), @now)) AS datetime2(0));
-- A queue budgeted, rate limited or grouped since the unlocked read holds no lock here: no slots
-- this round.
UPDATE r SET r.Budget = 0, r.RateMax = NULL
FROM @Runnable AS r INNER LOOP JOIN [chokaq].[Queues] AS q WITH (READCOMMITTEDLOCK, FORCESEEK) ON q.Name = r.Queue
WHERE (q.MaxWorkers IS NOT NULL OR q.RateLimitMax IS NOT NULL OR q.GroupConcurrency IS NOT NULL OR q.GroupRateMax IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM @Budgeted AS b WHERE b.Queue = r.Queue);
-- Rate allowance of each locked rate-limited queue at @now (the rule of storage/shared/rate-window.ts).
UPDATE r SET r.RateAllow = CASE WHEN q.RateLimitMax - (CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart))
  THEN CASE WHEN q.RateWindowLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RateWindowCount, 0) ELSE 0 END
  ELSE ISNULL(q.RateWindowCount, 0)
       + CASE WHEN q.RatePrevLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RatePrevCount, 0) ELSE 0 END
END) > 0 THEN q.RateLimitMax - (CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart))
  THEN CASE WHEN q.RateWindowLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RateWindowCount, 0) ELSE 0 END
  ELSE ISNULL(q.RateWindowCount, 0)
       + CASE WHEN q.RatePrevLast > DATEADD(MILLISECOND, -q.RateLimitPerMs, @now) THEN ISNULL(q.RatePrevCount, 0) ELSE 0 END
END) ELSE 0 END
FROM @Runnable AS r
INNER LOOP JOIN [chokaq].[Queues] AS q WITH (READCOMMITTEDLOCK, FORCESEEK) ON q.Name = r.Queue
WHERE r.RateMax IS NOT NULL AND q.RateLimitMax IS NOT NULL;
WITH Active AS (
  SELECT h.Queue, COUNT_BIG(*) AS Busy
  FROM [chokaq].[JobsHot] AS h WITH (READCOMMITTEDLOCK)
  WHERE h.Status IN (1, 2) AND h.Queue IN (SELECT b.Queue FROM @Budgeted AS b)
  GROUP BY h.Queue
)
UPDATE r SET r.Slots =
  CASE WHEN r.Budget IS NULL THEN @2
       WHEN r.Budget - ISNULL(a.Busy, 0) <= 0 THEN 0
       WHEN r.Budget - ISNULL(a.Busy, 0) < @2 THEN r.Budget - ISNULL(a.Busy, 0)
       ELSE @2 END
FROM @Runnable AS r LEFT JOIN Active AS a ON a.Queue = r.Queue;
-- A grouped queue is claimed group by group (below): the ordinary claim takes none of its rows.
-- Its budget: its slots (MaxWorkers less its active rows, at most the limit), within its own rate.
UPDATE r SET r.GroupBudget = CASE WHEN r.RateMax IS NOT NULL AND ISNULL(r.RateAllow, 0) < r.Slots THEN ISNULL(r.RateAllow, 0) ELSE r.Slots END,
  r.Slots = 0
FROM @Runnable AS r WHERE r.Grouped = 1;
-- A rate-limited queue: at most its allowance, and only when every claimed row starts (never
-- buffered Fetched, so a start is the claim that counted it); a queue limited since the
-- unlocked read was given Budget 0 above.
UPDATE r SET r.Slots =
  CASE WHEN r.RateMax IS NULL THEN r.Slots
       WHEN @5 < @2 OR r.RateAllow IS NULL THEN 0
       WHEN r.RateAllow < r.Slots THEN r.RateAllow
       ELSE r.Slots END
FROM @Runnable AS r;
-- Candidates without update locks: a seek per queue-wide queue, and per exact (queue, type).
INSERT INTO @Candidates (Queue, Priority, DueAtUtc, Id)
SELECT m.Queue, c.Priority, c.DueAtUtc, c.Id
FROM @Runnable AS m
  CROSS APPLY (
    SELECT TOP (2 * m.Slots) h.Priority, h.DueAtUtc, h.Id
    FROM [chokaq].[JobsHot] AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
    WHERE h.Queue = m.Queue AND h.Status = 0 AND h.DueAtUtc <= @now
    ORDER BY h.Priority DESC, h.DueAtUtc, h.Id
  ) AS c
WHERE m.AllTypes = 1 AND m.Slots > 0
UNION ALL
SELECT m.Queue, c.Priority, c.DueAtUtc, c.Id
FROM @Runnable AS m
  INNER JOIN @Types AS y ON y.Queue = m.Queue
  CROSS APPLY (
    SELECT TOP (2 * m.Slots) h.Priority, h.DueAtUtc, h.Id
    FROM [chokaq].[JobsHot] AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
    WHERE h.Queue = y.Queue AND h.Type = y.Type AND h.Status = 0 AND h.DueAtUtc <= @now AND h.PayloadVersion BETWEEN y.MinVersion AND y.MaxVersion
    ORDER BY h.Priority DESC, h.DueAtUtc, h.Id
  ) AS c
WHERE m.AllTypes = 0 AND m.Slots > 0;
-- Each queue locks no more than its share of the claim: its candidates among the best of all
-- queues, up to the limit (a U lock is held to COMMIT, and a claimer skips every row another holds).
UPDATE m SET m.Slots = CASE WHEN ISNULL(b.Share, 0) < m.Slots THEN ISNULL(b.Share, 0) ELSE m.Slots END
FROM @Runnable AS m
LEFT JOIN (
  SELECT x.Queue, COUNT(*) AS Share
  FROM (SELECT TOP (@2) c.Queue FROM @Candidates AS c ORDER BY c.Priority DESC, c.DueAtUtc, c.Id) AS x
  GROUP BY x.Queue
) AS b ON b.Queue = m.Queue
WHERE m.Slots > 0;
-- Each queue locks its best candidates by key (clustered Id), skipping rows others hold.
INSERT INTO @Picked (Id, Priority, DueAtUtc)
SELECT k.Id, k.Priority, k.DueAtUtc
FROM @Runnable AS m
CROSS APPLY (
  SELECT TOP (m.Slots) c.Id, c.Priority, c.DueAtUtc
  FROM @Candidates AS c
  INNER LOOP JOIN [chokaq].[JobsHot] AS h WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON h.Id = c.Id
  WHERE c.Queue = m.Queue AND h.Status = 0 AND h.DueAtUtc <= @now
  ORDER BY c.Priority DESC, c.DueAtUtc, c.Id
) AS k
WHERE m.Slots > 0;
WITH Batch AS (
  SELECT TOP (@2) b.Id, ROW_NUMBER() OVER (ORDER BY b.Priority DESC, b.DueAtUtc, b.Id) AS Rn
  FROM @Picked AS b ORDER BY b.Priority DESC, b.DueAtUtc, b.Id
)
UPDATE h SET h.Status = CASE WHEN k.Rn <= @5 THEN 2 ELSE 1 END,
  h.AttemptCount = CASE WHEN k.Rn <= @5 THEN h.AttemptCount + 1 ELSE h.AttemptCount END,
  h.StartedAtUtc = CASE WHEN k.Rn <= @5 THEN @now ELSE h.StartedAtUtc END,
  h.HeartbeatUtc = CASE WHEN k.Rn <= @5 THEN @now ELSE h.HeartbeatUtc END,
  h.WorkerId = @0, h.LeaseId = CAST(@1 AS varchar(36)), h.LastUpdatedUtc = @now
OUTPUT inserted.Id, inserted.Queue, inserted.Type, inserted.Payload, inserted.Tags, inserted.IdempotencyKey, inserted.Priority, inserted.Status, inserted.AttemptCount, inserted.WorkerId, inserted.LeaseId, inserted.HeartbeatUtc, inserted.ScheduledAtUtc, inserted.DueAtUtc, inserted.CreatedAtUtc, inserted.EnqueuedAtUtc, inserted.StartedAtUtc, inserted.LastUpdatedUtc, inserted.CreatedBy, inserted.LastModifiedBy, inserted.LastError, inserted.CancelRequestedUtc, inserted.Progress, inserted.ProgressNote, inserted.TraceContext, inserted.PayloadVersion, inserted.GroupKey, inserted.BatchId, inserted.WaitingOn, inserted.HasDependents INTO @Claimed (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, LeaseId, HeartbeatUtc, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, CancelRequestedUtc, Progress, ProgressNote, TraceContext, PayloadVersion, GroupKey, BatchId, WaitingOn, HasDependents)
FROM [chokaq].[JobsHot] AS h
INNER JOIN Batch AS k ON k.Id = h.Id
WHERE h.Status = 0;
-- Grouped queues (group limits): each claimed on its own, in name order, by a walk over its
-- groups from its cursor, every row it takes started (see groupedClaim in sql/claim.ts).
DECLARE @gLeft int, @gQueue varchar(255), @gBudget int, @gAllTypes bit, @gOpen bit, @gConcurrency int, @gRateMax int, @gRatePer int;
DECLARE @gCursor nvarchar(255), @gAfter nvarchar(255), @gNext nvarchar(255), @gLast nvarchar(255), @gPast bit, @gWrapped bit;
DECLARE @gVisit int, @gFound int, @gRoom int, @gRunning int, @gAllow int;
DECLARE @Walk TABLE (N int NOT NULL PRIMARY KEY, Room int NOT NULL);
DECLARE @GroupCandidates TABLE (N int NOT NULL, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL, Id varchar(36) NOT NULL, PRIMARY KEY (N, Priority DESC, DueAtUtc, Id));
DECLARE @GroupPicked TABLE (Id varchar(36) NOT NULL PRIMARY KEY, N int NOT NULL, Priority int NOT NULL, DueAtUtc datetime2(3) NOT NULL);
DECLARE @GroupSpent TABLE (GroupKey nvarchar(255) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY, N int NOT NULL);
DECLARE @Cursors TABLE (Queue varchar(255) NOT NULL PRIMARY KEY, GroupCursor nvarchar(255) COLLATE Latin1_General_100_BIN2 NOT NULL);
-- Rows left to start: the start less what this claim started, within the limit less what it took.
SELECT @gLeft = CASE WHEN @5 - COUNT(CASE WHEN c.Status = 2 THEN 1 END) < @2 - COUNT(*)
  THEN @5 - COUNT(CASE WHEN c.Status = 2 THEN 1 END) ELSE @2 - COUNT(*) END
FROM @Claimed AS c;
SET @gQueue = NULL;
WHILE @gLeft > 0
BEGIN
  SELECT TOP (1) @gQueue = r.Queue, @gBudget = r.GroupBudget, @gAllTypes = r.AllTypes
  FROM @Runnable AS r WHERE r.Grouped = 1 AND (@gQueue IS NULL OR r.Queue > @gQueue) ORDER BY r.Queue;
  IF @@ROWCOUNT = 0 BREAK;
  IF @gBudget > @gLeft SET @gBudget = @gLeft;
  SET @gOpen = 0;
  SELECT @gOpen = CASE WHEN q.IsPaused = 0 AND q.IsActive = 1 AND (q.GroupConcurrency IS NOT NULL OR q.GroupRateMax IS NOT NULL) THEN 1 ELSE 0 END,
    @gConcurrency = q.GroupConcurrency, @gRateMax = q.GroupRateMax, @gRatePer = q.GroupRatePerMs, @gCursor = q.GroupCursor
  FROM [chokaq].[Queues] AS q WITH (READCOMMITTEDLOCK, FORCESEEK) WHERE q.Name = @gQueue;
  IF @gOpen = 1 AND @gBudget > 0
  BEGIN
    DELETE FROM @Walk;
    DELETE FROM @GroupCandidates;
    DELETE FROM @GroupPicked;
    SELECT @gVisit = 0, @gFound = 0, @gWrapped = 0, @gAfter = @gCursor, @gLast = NULL;
    -- The walk: one group per step, after the last one visited; at the end of the keys, once,
    -- from the first again up to the cursor.
    WHILE @gVisit < @6 AND @gFound < @gBudget
    BEGIN
      SELECT @gNext = NULL, @gPast = 0;
      IF @gAfter IS NULL
      BEGIN
        SELECT TOP (1) @gNext = h.GroupKey, @gPast = CASE WHEN h.GroupKey > @gCursor THEN 1 ELSE 0 END
        FROM [chokaq].[JobsHot] AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
        WHERE h.Queue = @gQueue AND h.Status = 0 AND h.GroupKey IS NOT NULL
        ORDER BY h.GroupKey;
      END
      ELSE
      BEGIN
        SELECT TOP (1) @gNext = h.GroupKey, @gPast = CASE WHEN h.GroupKey > @gCursor THEN 1 ELSE 0 END
        FROM [chokaq].[JobsHot] AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
        WHERE h.Queue = @gQueue AND h.Status = 0 AND h.GroupKey IS NOT NULL AND h.GroupKey > @gAfter
        ORDER BY h.GroupKey;
      END;
      IF @gNext IS NULL AND @gWrapped = 0 AND @gCursor IS NOT NULL
      BEGIN
        SET @gWrapped = 1;
        SELECT TOP (1) @gNext = h.GroupKey, @gPast = CASE WHEN h.GroupKey > @gCursor THEN 1 ELSE 0 END
        FROM [chokaq].[JobsHot] AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
        WHERE h.Queue = @gQueue AND h.Status = 0 AND h.GroupKey IS NOT NULL
        ORDER BY h.GroupKey;
      END;
      IF @gNext IS NULL OR (@gWrapped = 1 AND @gPast = 1) BREAK;
      SELECT @gVisit = @gVisit + 1, @gAfter = @gNext, @gLast = @gNext, @gRoom = @gBudget;
      IF @gConcurrency IS NOT NULL
      BEGIN
        SELECT @gRunning = COUNT(*) FROM [chokaq].[JobsHot] AS a WITH (READCOMMITTEDLOCK)
        WHERE a.Queue = @gQueue AND a.GroupKey = @gNext AND a.Status IN (1, 2) AND a.GroupKey IS NOT NULL;
        IF @gConcurrency - @gRunning < @gRoom SET @gRoom = @gConcurrency - @gRunning;
      END;
      IF @gRateMax IS NOT NULL
      BEGIN
        SET @gAllow = @gRateMax;
        SELECT @gAllow = CASE WHEN @gRateMax - (CASE WHEN (g.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, @gRatePer, g.RateWindowStart))
            THEN CASE WHEN g.RateWindowLast > DATEADD(MILLISECOND, -@gRatePer, @now) THEN ISNULL(g.RateWindowCount, 0) ELSE 0 END
            ELSE ISNULL(g.RateWindowCount, 0)
                 + CASE WHEN g.RatePrevLast > DATEADD(MILLISECOND, -@gRatePer, @now) THEN ISNULL(g.RatePrevCount, 0) ELSE 0 END
          END) > 0 THEN @gRateMax - (CASE WHEN (g.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, @gRatePer, g.RateWindowStart))
            THEN CASE WHEN g.RateWindowLast > DATEADD(MILLISECOND, -@gRatePer, @now) THEN ISNULL(g.RateWindowCount, 0) ELSE 0 END
            ELSE ISNULL(g.RateWindowCount, 0)
                 + CASE WHEN g.RatePrevLast > DATEADD(MILLISECOND, -@gRatePer, @now) THEN ISNULL(g.RatePrevCount, 0) ELSE 0 END
          END) ELSE 0 END
        FROM [chokaq].[JobGroups] AS g WITH (READCOMMITTEDLOCK, FORCESEEK) WHERE g.Queue = @gQueue AND g.GroupKey = @gNext;
        IF @gAllow < @gRoom SET @gRoom = @gAllow;
      END;
      IF @gRoom < 0 SET @gRoom = 0;
      INSERT INTO @Walk (N, Room) VALUES (@gVisit, @gRoom);
      IF @gRoom > 0
      BEGIN
        INSERT INTO @GroupCandidates (N, Priority, DueAtUtc, Id)
        SELECT TOP (@gRoom) @gVisit, h.Priority, h.DueAtUtc, h.Id
        FROM [chokaq].[JobsHot] AS h WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
        WHERE h.Queue = @gQueue AND h.GroupKey = @gNext AND h.Status = 0 AND h.GroupKey IS NOT NULL AND h.DueAtUtc <= @now
          AND (@gAllTypes = 1 OR EXISTS (SELECT 1 FROM @Types AS y WHERE y.Queue = @gQueue AND y.Type = h.Type AND h.PayloadVersion BETWEEN y.MinVersion AND y.MaxVersion))
        ORDER BY h.Priority DESC, h.DueAtUtc, h.Id;
        IF @@ROWCOUNT > 0 SET @gFound = @gFound + 1;
      END;
    END;
    IF @gVisit > 0
    BEGIN
      -- Each visited group's rows locked by key (clustered Id), up to its room, skipping rows others hold.
      INSERT INTO @GroupPicked (Id, N, Priority, DueAtUtc)
      SELECT k.Id, w.N, k.Priority, k.DueAtUtc
      FROM @Walk AS w
      CROSS APPLY (
        SELECT TOP (w.Room) c.Id, c.Priority, c.DueAtUtc
        FROM @GroupCandidates AS c
        INNER LOOP JOIN [chokaq].[JobsHot] AS h WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON h.Id = c.Id
        WHERE c.N = w.N AND h.Status = 0 AND h.DueAtUtc <= @now
        ORDER BY c.Priority DESC, c.DueAtUtc, c.Id
      ) AS k
      WHERE w.Room > 0;
      -- Round-robin: every group's first row, then every group's second, up to the budget; all start.
      WITH GroupBatch AS (
        SELECT TOP (@gBudget) b.Id
        FROM (SELECT p.Id, p.N, ROW_NUMBER() OVER (PARTITION BY p.N ORDER BY p.Priority DESC, p.DueAtUtc, p.Id) AS Rn FROM @GroupPicked AS p) AS b
        ORDER BY b.Rn, b.N
      )
      UPDATE h SET h.Status = 2, h.AttemptCount = h.AttemptCount + 1, h.StartedAtUtc = @now, h.HeartbeatUtc = @now,
        h.WorkerId = @0, h.LeaseId = CAST(@1 AS varchar(36)), h.LastUpdatedUtc = @now
      OUTPUT inserted.Id, inserted.Queue, inserted.Type, inserted.Payload, inserted.Tags, inserted.IdempotencyKey, inserted.Priority, inserted.Status, inserted.AttemptCount, inserted.WorkerId, inserted.LeaseId, inserted.HeartbeatUtc, inserted.ScheduledAtUtc, inserted.DueAtUtc, inserted.CreatedAtUtc, inserted.EnqueuedAtUtc, inserted.StartedAtUtc, inserted.LastUpdatedUtc, inserted.CreatedBy, inserted.LastModifiedBy, inserted.LastError, inserted.CancelRequestedUtc, inserted.Progress, inserted.ProgressNote, inserted.TraceContext, inserted.PayloadVersion, inserted.GroupKey, inserted.BatchId, inserted.WaitingOn, inserted.HasDependents INTO @Claimed (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, WorkerId, LeaseId, HeartbeatUtc, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, StartedAtUtc, LastUpdatedUtc, CreatedBy, LastModifiedBy, LastError, CancelRequestedUtc, Progress, ProgressNote, TraceContext, PayloadVersion, GroupKey, BatchId, WaitingOn, HasDependents)
      FROM [chokaq].[JobsHot] AS h
      INNER JOIN GroupBatch AS k ON k.Id = h.Id
      WHERE h.Status = 0;
      IF @gRateMax IS NOT NULL
      BEGIN
        -- The groups' rate windows: the rows that exist by key, in key order, then the missing ones.
        DELETE FROM @GroupSpent;
        INSERT INTO @GroupSpent (GroupKey, N)
        SELECT c.GroupKey, COUNT(*) FROM @Claimed AS c WHERE c.Queue = @gQueue AND c.GroupKey IS NOT NULL GROUP BY c.GroupKey;
        UPDATE g SET g.RatePrevCount = CASE WHEN (g.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, @gRatePer, g.RateWindowStart)) THEN g.RateWindowCount ELSE g.RatePrevCount END,
          g.RatePrevLast = CASE WHEN (g.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, @gRatePer, g.RateWindowStart)) THEN g.RateWindowLast ELSE g.RatePrevLast END,
          g.RateWindowCount = CASE WHEN (g.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, @gRatePer, g.RateWindowStart)) THEN s.N ELSE g.RateWindowCount + s.N END,
          g.RateWindowStart = CASE WHEN (g.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, @gRatePer, g.RateWindowStart)) THEN @now ELSE g.RateWindowStart END,
          g.RateWindowLast = @now
        FROM @GroupSpent AS s
        INNER LOOP JOIN [chokaq].[JobGroups] AS g WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON g.Queue = @gQueue AND g.GroupKey = s.GroupKey;
        INSERT INTO [chokaq].[JobGroups] (Queue, GroupKey, RateWindowStart, RateWindowLast, RateWindowCount)
        SELECT @gQueue, s.GroupKey, @now, @now, s.N FROM @GroupSpent AS s
        WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[JobGroups] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = @gQueue AND x.GroupKey = s.GroupKey);
      END;
      INSERT INTO @Cursors (Queue, GroupCursor) VALUES (@gQueue, @gLast);
      SELECT @gLeft = @gLeft - COUNT(*) FROM @Claimed AS c WHERE c.Queue = @gQueue;
    END;
  END;
END;
-- Spend the started rows on their queues' rate windows (rows this transaction U-locked above),
-- the grouped queues' rows too.
WITH Spent AS (
  SELECT c.Queue, COUNT(*) AS N FROM @Claimed AS c
  WHERE c.Status = 2 AND c.Queue IN (SELECT r.Queue FROM @Runnable AS r WHERE r.RateMax IS NOT NULL)
  GROUP BY c.Queue
)
UPDATE q SET q.RatePrevCount = CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart)) THEN q.RateWindowCount ELSE q.RatePrevCount END,
  q.RatePrevLast = CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart)) THEN q.RateWindowLast ELSE q.RatePrevLast END,
  q.RateWindowCount = CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart)) THEN x.N ELSE q.RateWindowCount + x.N END,
  q.RateWindowStart = CASE WHEN (q.RateWindowStart IS NULL OR @now >= DATEADD(MILLISECOND, q.RateLimitPerMs, q.RateWindowStart)) THEN @now ELSE q.RateWindowStart END,
  q.RateWindowLast = @now
FROM Spent AS x
INNER LOOP JOIN [chokaq].[Queues] AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = x.Queue
WHERE q.RateLimitMax IS NOT NULL;
-- The grouped queues' cursors, after every JobGroups write of this claim (see groupedClaim).
UPDATE q SET q.GroupCursor = c.GroupCursor
FROM @Cursors AS c
INNER LOOP JOIN [chokaq].[Queues] AS q WITH (UPDLOCK, ROWLOCK, FORCESEEK) ON q.Name = c.Queue;
-- The rows started here count in the start bucket, with their lag, in this transaction.
IF @5 > 0 AND EXISTS (SELECT 1 FROM @Claimed AS c WHERE c.Status = 2)
BEGIN
DECLARE @BucketDelta TABLE (Queue varchar(255) NOT NULL, Outcome tinyint NOT NULL, FailureReason smallint NOT NULL, N bigint NOT NULL, DurationCount bigint NOT NULL, TotalDurationMs bigint NOT NULL, MaxDurationMs bigint NOT NULL, LagCount bigint NOT NULL, LagSumMs bigint NOT NULL, LagMaxMs bigint NOT NULL, PRIMARY KEY (Queue, Outcome, FailureReason));
INSERT INTO @BucketDelta (Queue, Outcome, FailureReason, N, DurationCount, TotalDurationMs, MaxDurationMs, LagCount, LagSumMs, LagMaxMs)
SELECT g.Queue, g.Outcome, g.FailureReason, COUNT_BIG(*), COUNT_BIG(g.DurationMs), ISNULL(SUM(g.DurationMs), 0), ISNULL(MAX(g.DurationMs), 0), COUNT_BIG(g.LagMs), ISNULL(SUM(g.LagMs), 0), ISNULL(MAX(g.LagMs), 0)
FROM (SELECT c.Queue, CAST(4 AS tinyint) AS Outcome, CAST(-1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs, CASE WHEN c.DueAtUtc < @now THEN DATEDIFF_BIG(MILLISECOND, c.DueAtUtc, @now) ELSE 0 END AS LagMs FROM @Claimed AS c WHERE c.Status = 2) AS g GROUP BY g.Queue, g.Outcome, g.FailureReason;
INSERT INTO [chokaq].[MetricBuckets] (BucketUtc, Queue, Outcome, FailureReason)
SELECT @bucket, d.Queue, d.Outcome, d.FailureReason FROM @BucketDelta AS d
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[MetricBuckets] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason);
UPDATE x SET x.CompletedCount = x.CompletedCount + d.N, x.DurationCount = x.DurationCount + d.DurationCount,
  x.TotalDurationMs = x.TotalDurationMs + d.TotalDurationMs,
  x.MaxDurationMs = CASE WHEN d.MaxDurationMs > x.MaxDurationMs THEN d.MaxDurationMs ELSE x.MaxDurationMs END,
  x.LagCount = x.LagCount + d.LagCount, x.LagSumMs = x.LagSumMs + d.LagSumMs,
  x.LagMaxMs = CASE WHEN d.LagMaxMs > x.LagMaxMs THEN d.LagMaxMs ELSE x.LagMaxMs END
FROM @BucketDelta AS d
INNER LOOP JOIN [chokaq].[MetricBuckets] AS x ON x.BucketUtc = @bucket AND x.Queue = d.Queue AND x.Outcome = d.Outcome AND x.FailureReason = d.FailureReason;
END;
COMMIT;
SELECT c.Id, c.Queue, c.Type, c.Payload, c.Tags, c.IdempotencyKey, c.Priority, c.Status, c.AttemptCount, c.WorkerId, c.LeaseId, CONVERT(varchar(33), c.HeartbeatUtc, 126) + 'Z' AS HeartbeatUtc, CONVERT(varchar(33), c.ScheduledAtUtc, 126) + 'Z' AS ScheduledAtUtc, CONVERT(varchar(33), c.CreatedAtUtc, 126) + 'Z' AS CreatedAtUtc, CONVERT(varchar(33), c.EnqueuedAtUtc, 126) + 'Z' AS EnqueuedAtUtc, CONVERT(varchar(33), c.StartedAtUtc, 126) + 'Z' AS StartedAtUtc, CONVERT(varchar(33), c.LastUpdatedUtc, 126) + 'Z' AS LastUpdatedUtc, c.CreatedBy, c.LastModifiedBy, c.LastError, CONVERT(varchar(33), c.CancelRequestedUtc, 126) + 'Z' AS CancelRequestedUtc, c.Progress, c.ProgressNote, c.TraceContext, c.PayloadVersion, c.GroupKey, c.BatchId, c.WaitingOn, c.HasDependents
FROM @Claimed AS c
ORDER BY c.Priority DESC, c.DueAtUtc, c.Id;
