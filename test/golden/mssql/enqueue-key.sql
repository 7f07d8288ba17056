SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @scheduled datetime2(3) = CASE WHEN @7 IS NOT NULL THEN DATEADD(MILLISECOND, CAST(@7 % 1000 AS int), DATEADD(SECOND, CAST(@7 / 1000 AS int), @now)) ELSE CONVERT(datetime2(3), @8, 126) END;
DECLARE @created int = 0;
DECLARE @holder varchar(36) = NULL;
DECLARE @NewQueues TABLE (Queue varchar(255) NOT NULL PRIMARY KEY);
INSERT INTO @NewQueues (Queue) SELECT DISTINCT n.Queue FROM (SELECT CAST(@1 AS varchar(255)) AS Queue) AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[Queues] AS q WHERE q.Name = n.Queue)
   OR NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS s WHERE s.Queue = n.Queue);
INSERT INTO [chokaq].[Queues] (Name) SELECT n.Queue FROM @NewQueues AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[Queues] AS q WITH (UPDLOCK, HOLDLOCK) WHERE q.Name = n.Queue);
INSERT INTO [chokaq].[StatsSummary] (Queue) SELECT n.Queue FROM @NewQueues AS n
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS s WITH (UPDLOCK, HOLDLOCK) WHERE s.Queue = n.Queue);
INSERT INTO [chokaq].[JobsHot] (Id, Queue, Type, Payload, Tags, IdempotencyKey, Priority, Status, AttemptCount, ScheduledAtUtc, DueAtUtc, CreatedAtUtc, EnqueuedAtUtc, LastUpdatedUtc, CreatedBy, TraceContext, PayloadVersion, BatchId, GroupKey)
SELECT CAST(@0 AS varchar(36)), CAST(@1 AS varchar(255)), @2, @3, @4, @5, @6, 0, 0, @scheduled, ISNULL(@scheduled, @now), @now, @now, @now, @9, CAST(@10 AS varchar(2048)), @11, CAST(@12 AS varchar(36)),
  ISNULL(@13, CASE WHEN EXISTS (SELECT 1 FROM [chokaq].[Queues] AS gq WHERE gq.Name = CAST(@1 AS varchar(255)) AND (gq.GroupConcurrency IS NOT NULL OR gq.GroupRateMax IS NOT NULL)) THEN N'' END)
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[JobsHot] WHERE Id = CAST(@0 AS varchar(36)))
  AND NOT EXISTS (SELECT 1 FROM [chokaq].[JobsArchive] WHERE Id = CAST(@0 AS varchar(36)))
  AND NOT EXISTS (SELECT 1 FROM [chokaq].[JobsDLQ] WHERE Id = CAST(@0 AS varchar(36)))
  AND NOT EXISTS (SELECT 1 FROM [chokaq].[JobsHot] AS k WITH (UPDLOCK, HOLDLOCK) WHERE k.IdempotencyKey = @5 AND k.IdempotencyKey IS NOT NULL);
SET @created = @@ROWCOUNT;
IF @created = 0
  SELECT @holder = k.Id FROM [chokaq].[JobsHot] AS k WITH (READCOMMITTEDLOCK) WHERE k.IdempotencyKey = @5 AND k.IdempotencyKey IS NOT NULL;
SELECT @created AS Created, @holder AS HolderId,
  CASE WHEN EXISTS (SELECT 1 FROM [chokaq].[JobsHot] WHERE Id = CAST(@0 AS varchar(36))) OR EXISTS (SELECT 1 FROM [chokaq].[JobsArchive] WHERE Id = CAST(@0 AS varchar(36))) OR EXISTS (SELECT 1 FROM [chokaq].[JobsDLQ] WHERE Id = CAST(@0 AS varchar(36))) THEN 1 ELSE 0 END AS IdExists;
