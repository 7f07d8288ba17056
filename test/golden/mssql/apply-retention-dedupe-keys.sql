SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @Gone TABLE ([Key] nvarchar(255) NOT NULL);
WITH Expired AS (
  SELECT TOP (@0) k.[Key] FROM [chokaq].[DedupeKeys] AS k WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)
  WHERE (k.Mode = 3
      AND NOT EXISTS (SELECT 1 FROM [chokaq].[JobsHot] AS h WHERE h.Id = k.JobId)
      AND NOT EXISTS (SELECT 1 FROM [chokaq].[JobsArchive] AS a WHERE a.Id = k.JobId AND a.FinishedAtUtc > DATEADD(MILLISECOND, -CAST(k.WindowMs % 1000 AS int), DATEADD(SECOND, -CAST(k.WindowMs / 1000 AS int), @now))))
    OR (k.Mode <> 3 AND k.WindowEndsUtc <= @now)
)
DELETE FROM Expired OUTPUT deleted.[Key] INTO @Gone ([Key]);
SELECT COUNT_BIG(*) AS Affected FROM @Gone;
