SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @Runnable TABLE (Queue varchar(255) NOT NULL PRIMARY KEY, AllTypes bit NOT NULL, Budget int NULL);
DECLARE @Types TABLE (Queue varchar(255) NOT NULL, Type nvarchar(255) NOT NULL, PRIMARY KEY (Queue, Type));
DECLARE @Claimed TABLE (Id varchar(36) NULL, Queue varchar(255) NULL, Type nvarchar(255) NULL, Payload nvarchar(max) NULL, Tags nvarchar(max) NULL, IdempotencyKey nvarchar(255) NULL, Priority int NULL, Status tinyint NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, LeaseId varchar(36) NULL, HeartbeatUtc datetime2(3) NULL, ScheduledAtUtc datetime2(3) NULL, DueAtUtc datetime2(3) NULL, CreatedAtUtc datetime2(3) NULL, EnqueuedAtUtc datetime2(3) NULL, StartedAtUtc datetime2(3) NULL, LastUpdatedUtc datetime2(3) NULL, CreatedBy nvarchar(100) NULL, LastModifiedBy nvarchar(100) NULL, LastError nvarchar(max) NULL, CancelRequestedUtc datetime2(3) NULL, Progress float NULL);
INSERT INTO @Types (Queue, Type)
SELECT DISTINCT x.Queue, x.Type FROM OPENJSON(@4) WITH (Queue varchar(255) '$.queue', Type nvarchar(255) '$.type') AS x
WHERE x.Queue IS NOT NULL AND x.Type IS NOT NULL;
INSERT INTO @Runnable (Queue, AllTypes, Budget)
SELECT q.Name, CAST(MAX(r.AllTypes) AS bit), q.MaxWorkers
FROM (SELECT a.Queue, 1 AS AllTypes FROM OPENJSON(@3) WITH (Queue varchar(255) '$') AS a
      UNION ALL SELECT y.Queue, 0 FROM @Types AS y) AS r
INNER JOIN [chokaq].[Queues] AS q ON q.Name = r.Queue
WHERE q.IsPaused = 0 AND q.IsActive = 1
GROUP BY q.Name, q.MaxWorkers;
BEGIN TRAN;
-- Serialise claims on budgeted queues: U locks on their Queues rows until COMMIT.
UPDATE r SET r.Budget = q.MaxWorkers
FROM @Runnable AS r INNER JOIN [chokaq].[Queues] AS q WITH (UPDLOCK, ROWLOCK) ON q.Name = r.Queue
WHERE r.Budget IS NOT NULL;
WITH Active AS (
  SELECT h.Queue, COUNT_BIG(*) AS Busy
  FROM [chokaq].[JobsHot] AS h WITH (READCOMMITTEDLOCK)
  WHERE h.Status IN (1, 2) AND h.Queue IN (SELECT b.Queue FROM @Runnable AS b WHERE b.Budget IS NOT NULL)
  GROUP BY h.Queue
),
Room AS (
  SELECT r.Queue, r.AllTypes,
    CASE WHEN r.Budget IS NULL THEN @2
         WHEN r.Budget - ISNULL(a.Busy, 0) <= 0 THEN 0
         WHEN r.Budget - ISNULL(a.Busy, 0) < @2 THEN r.Budget - ISNULL(a.Busy, 0)
         ELSE @2 END AS Slots
  FROM @Runnable AS r LEFT JOIN Active AS a ON a.Queue = r.Queue
),
Candidates AS (
  SELECT c.Id, c.Priority, c.DueAtUtc
  FROM Room AS m
  CROSS APPLY (
    SELECT TOP (m.Slots) h.Id, h.Priority, h.DueAtUtc
    FROM [chokaq].[JobsHot] AS h WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE h.Queue = m.Queue AND h.Status = 0
      AND (h.ScheduledAtUtc IS NULL OR h.ScheduledAtUtc <= @now)
      AND (m.AllTypes = 1 OR EXISTS (SELECT 1 FROM @Types AS y WHERE y.Queue = h.Queue AND y.Type = h.Type))
    ORDER BY h.Priority DESC, h.DueAtUtc, h.Id
  ) AS c
  WHERE m.Slots > 0
),
Batch AS (
  SELECT TOP (@2) b.Id, ROW_NUMBER() OVER (ORDER BY b.Priority DESC, b.DueAtUtc, b.Id) AS Rn
  FROM Candidates AS b ORDER BY b.Priority DESC, b.DueAtUtc, b.Id
)
UPDATE h SET h.Status = CASE WHEN k.Rn <= @5 THEN 2 ELSE 1 END,
  h.AttemptCount = CASE WHEN k.Rn <= @5 THEN h.AttemptCount + 1 ELSE h.AttemptCount END,
  h.StartedAtUtc = CASE WHEN k.Rn <= @5 THEN @now ELSE h.StartedAtUtc END,
  h.HeartbeatUtc = CASE WHEN k.Rn <= @5 THEN @now ELSE h.HeartbeatUtc END,
  h.WorkerId = @0, h.LeaseId = CAST(@1 AS varchar(36)), h.LastUpdatedUtc = @now
OUTPUT inserted.* INTO @Claimed
FROM [chokaq].[JobsHot] AS h
INNER JOIN Batch AS k ON k.Id = h.Id
WHERE h.Status = 0;
COMMIT;
SELECT c.Id, c.Queue, c.Type, c.Payload, c.Tags, c.IdempotencyKey, c.Priority, c.Status, c.AttemptCount, c.WorkerId, c.LeaseId, CONVERT(varchar(33), c.HeartbeatUtc, 126) + 'Z' AS HeartbeatUtc, CONVERT(varchar(33), c.ScheduledAtUtc, 126) + 'Z' AS ScheduledAtUtc, CONVERT(varchar(33), c.CreatedAtUtc, 126) + 'Z' AS CreatedAtUtc, CONVERT(varchar(33), c.EnqueuedAtUtc, 126) + 'Z' AS EnqueuedAtUtc, CONVERT(varchar(33), c.StartedAtUtc, 126) + 'Z' AS StartedAtUtc, CONVERT(varchar(33), c.LastUpdatedUtc, 126) + 'Z' AS LastUpdatedUtc, c.CreatedBy, c.LastModifiedBy, c.LastError, CONVERT(varchar(33), c.CancelRequestedUtc, 126) + 'Z' AS CancelRequestedUtc, c.Progress
FROM @Claimed AS c
ORDER BY c.Priority DESC, c.DueAtUtc, c.Id;
