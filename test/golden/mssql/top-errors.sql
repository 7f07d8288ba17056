SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @since datetime2(3) = DATEADD(MILLISECOND, -CAST(@1 % 1000 AS int), DATEADD(SECOND, -CAST(@1 / 1000 AS int), @now));
SELECT TOP (@0) CAST(LEFT(CASE WHEN CHARINDEX(NCHAR(10), ISNULL(d.ErrorDetails, N'')) > 0 THEN LEFT(ISNULL(d.ErrorDetails, N''), CHARINDEX(NCHAR(10), ISNULL(d.ErrorDetails, N'')) - 1) ELSE ISNULL(d.ErrorDetails, N'') END, 500) AS nvarchar(500)) AS Line, CONVERT(varchar(33), d.FailedAtUtc, 126) + 'Z' AS FailedAtUtc
FROM [chokaq].[JobsDLQ] AS d WITH (NOLOCK) WHERE d.Queue = CAST(@2 AS varchar(255)) AND d.FailedAtUtc >= @since
ORDER BY d.FailedAtUtc DESC;
