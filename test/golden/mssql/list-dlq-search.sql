SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT r.* FROM (
  SELECT w.*, ROW_NUMBER() OVER (ORDER BY w.SortKey DESC, w.Id DESC) AS Rn,
    SUM(w.Hit) OVER (ORDER BY w.SortKey DESC, w.Id DESC ROWS UNBOUNDED PRECEDING) AS HitRank
  FROM (
    SELECT TOP (10001) j.Id, j.Queue, j.Type, j.Status, j.FailureReason, j.AttemptCount, j.Priority, j.Tags, CONVERT(varchar(33), j.CreatedAtUtc, 126) + 'Z' AS CreatedAtUtc, CONVERT(varchar(33), j.EnqueuedAtUtc, 126) + 'Z' AS EnqueuedAtUtc, CONVERT(varchar(33), j.ScheduledAtUtc, 126) + 'Z' AS ScheduledAtUtc, CONVERT(varchar(33), j.StartedAtUtc, 126) + 'Z' AS StartedAtUtc, CONVERT(varchar(33), j.FailedAtUtc, 126) + 'Z' AS FailedAtUtc, j.DurationMs, j.WorkerId, j.Progress, CAST(LEFT(ISNULL(j.ErrorDetails, j.LastError), 200) AS nvarchar(200)) AS ErrorPrefix, DATALENGTH(j.Payload) AS PayloadBytes, j.FailedAtUtc AS SortKey,
      CASE WHEN (j.Id COLLATE Latin1_General_100_CI_AS LIKE @4 ESCAPE '\' OR j.Type COLLATE Latin1_General_100_CI_AS LIKE @4 ESCAPE '\' OR j.Payload COLLATE Latin1_General_100_CI_AS LIKE @4 ESCAPE '\' OR j.ErrorDetails COLLATE Latin1_General_100_CI_AS LIKE @4 ESCAPE '\' OR j.LastError COLLATE Latin1_General_100_CI_AS LIKE @4 ESCAPE '\') THEN 1 ELSE 0 END AS Hit
    FROM [chokaq].[JobsDLQ] AS j WHERE j.Queue = CAST(@1 AS varchar(255)) AND j.FailedAtUtc <= CONVERT(datetime2(3), @2, 126) AND (j.FailedAtUtc < CONVERT(datetime2(3), @2, 126) OR (j.FailedAtUtc = CONVERT(datetime2(3), @2, 126) AND j.Id < CAST(@3 AS varchar(36))))
    ORDER BY j.FailedAtUtc DESC, j.Id DESC
  ) AS w
) AS r
WHERE (r.Hit = 1 AND r.HitRank <= @0 AND r.Rn <= 10000) OR r.Rn >= 10000
ORDER BY r.Rn;
