SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT TOP (@0) a.Id, CONVERT(varchar(33), a.AtUtc, 126) + 'Z' AS AtUtc, a.Actor, a.Action, a.Target, a.RowsAffected, a.Details
FROM [chokaq].[AuditLog] AS a WHERE a.AtUtc <= CONVERT(datetime2(3), @1, 126) AND (a.AtUtc < CONVERT(datetime2(3), @1, 126) OR (a.AtUtc = CONVERT(datetime2(3), @1, 126) AND a.Id < CAST(@2 AS varchar(36)))) AND a.TargetKey = CAST(LEFT(@3, 255) AS nvarchar(255)) AND a.Target = @3 AND DATALENGTH(a.Target) = DATALENGTH(@3)
ORDER BY a.AtUtc DESC, a.Id DESC;
