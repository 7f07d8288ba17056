SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
BEGIN TRAN;
INSERT INTO [chokaq].[Queues] (Name) SELECT CAST(@0 AS varchar(255))
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[Queues] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Name = CAST(@0 AS varchar(255)));
INSERT INTO [chokaq].[StatsSummary] (Queue) SELECT CAST(@0 AS varchar(255))
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[StatsSummary] AS x WITH (UPDLOCK, HOLDLOCK) WHERE x.Queue = CAST(@0 AS varchar(255)));
UPDATE [chokaq].[Queues] SET IsPaused = CASE WHEN @2 = 1 THEN @1 ELSE IsPaused END,
  IsActive = CASE WHEN @4 = 1 THEN @3 ELSE IsActive END,
  MaxWorkers = CASE WHEN @6 = 1 THEN @5 ELSE MaxWorkers END,
  ZombieTimeoutSeconds = CASE WHEN @8 = 1 THEN @7 ELSE ZombieTimeoutSeconds END,
  ExecutionTimeoutMs = CASE WHEN @10 = 1 THEN @9 ELSE ExecutionTimeoutMs END,
  RetryZombies = CASE WHEN @12 = 1 THEN @11 ELSE RetryZombies END,
  RateLimitMax = CASE WHEN @14 = 1 THEN @13 ELSE RateLimitMax END,
  RateLimitPerMs = CASE WHEN @16 = 1 THEN @15 ELSE RateLimitPerMs END,
  RateWindowStart = CASE WHEN @17 = 1 THEN NULL ELSE RateWindowStart END,
  RateWindowLast = CASE WHEN @18 = 1 THEN NULL ELSE RateWindowLast END,
  RateWindowCount = CASE WHEN @19 = 1 THEN NULL ELSE RateWindowCount END,
  RatePrevLast = CASE WHEN @20 = 1 THEN NULL ELSE RatePrevLast END,
  RatePrevCount = CASE WHEN @21 = 1 THEN NULL ELSE RatePrevCount END,
  GroupConcurrency = CASE WHEN @22 = 1 THEN @24 ELSE GroupConcurrency END,
  GroupRateMax = CASE WHEN @23 = 1 THEN @25 ELSE GroupRateMax END,
  GroupRatePerMs = CASE WHEN @23 = 1 THEN @26 ELSE GroupRatePerMs END,
  LastUpdatedUtc = SYSUTCDATETIME()
WHERE Name = CAST(@0 AS varchar(255));
IF (@22 = 1 OR @23 = 1) AND EXISTS (SELECT 1 FROM [chokaq].[Queues] AS g WHERE g.Name = CAST(@0 AS varchar(255)) AND (g.GroupConcurrency IS NOT NULL OR g.GroupRateMax IS NOT NULL))
  UPDATE h SET h.GroupKey = N'' FROM [chokaq].[JobsHot] AS h WHERE h.Queue = CAST(@0 AS varchar(255)) AND h.GroupKey IS NULL;
COMMIT;
SELECT q.Name, q.IsPaused, q.IsActive, q.MaxWorkers, q.ZombieTimeoutSeconds, q.ExecutionTimeoutMs, q.RetryZombies, CONVERT(varchar(33), q.LastUpdatedUtc, 126) + 'Z' AS LastUpdatedUtc, q.RateLimitMax, q.RateLimitPerMs, CONVERT(varchar(33), q.RateWindowStart, 126) + 'Z' AS RateWindowStart, CONVERT(varchar(33), q.RateWindowLast, 126) + 'Z' AS RateWindowLast, q.RateWindowCount, CONVERT(varchar(33), q.RatePrevLast, 126) + 'Z' AS RatePrevLast, q.RatePrevCount, q.GroupConcurrency, q.GroupRateMax, q.GroupRatePerMs, q.GroupCursor FROM [chokaq].[Queues] AS q WHERE q.Name = CAST(@0 AS varchar(255));
