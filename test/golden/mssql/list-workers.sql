SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @cutoff datetime2(3) = DATEADD(MILLISECOND, -CAST(@0 % 1000 AS int), DATEADD(SECOND, -CAST(@0 / 1000 AS int), @now));
SELECT TOP (@1) w.WorkerId, w.Host, w.Pid, w.LibraryVersion, CONVERT(varchar(33), w.StartedAtUtc, 126) + 'Z' AS StartedAtUtc, CONVERT(varchar(33), w.LastSeenUtc, 126) + 'Z' AS LastSeenUtc, w.Concurrency, w.Running, w.Handled, w.Circuits, w.IsDraining, CONVERT(varchar(33), w.StoppedAtUtc, 126) + 'Z' AS StoppedAtUtc,
  CASE WHEN w.StoppedAtUtc IS NULL AND w.LastSeenUtc < @cutoff THEN 1 ELSE 0 END AS IsLost
FROM [chokaq].[Workers] AS w
ORDER BY w.LastSeenUtc DESC, w.WorkerId;
