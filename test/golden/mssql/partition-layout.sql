SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
SELECT t.Pillar,
  CASE WHEN pf.function_id IS NULL THEN 0 ELSE 1 END AS Partitioned,
  CASE WHEN pf.function_id IS NULL THEN 0 ELSE (SELECT COUNT(*) FROM sys.indexes AS i WHERE i.object_id = c.object_id AND i.index_id > 1 AND i.is_hypothetical = 0
    AND (i.data_space_id <> c.data_space_id OR NOT EXISTS (SELECT 1 FROM sys.index_columns AS k WHERE k.object_id = i.object_id AND k.index_id = i.index_id AND k.partition_ordinal = 1 AND COL_NAME(k.object_id, k.column_id) = t.TimeColumn))) END AS Unaligned,
  CASE WHEN st.is_replicated = 1 OR st.is_merge_published = 1 OR st.is_tracked_by_cdc = 1
    OR EXISTS (SELECT 1 FROM sys.foreign_keys AS fk WHERE fk.referenced_object_id = st.object_id) THEN 1 ELSE 0 END AS Blocked,
  v.boundary_id AS BoundaryId, CONVERT(varchar(33), CAST(v.value AS datetime2(3)), 126) + 'Z' AS Boundary, CONVERT(varchar(33), @now, 126) + 'Z' AS NowUtc
FROM (SELECT 'archive' AS Pillar, N'[chokaq].[JobsArchive]' AS TableName, N'PS_chokaq_JobsArchive' AS SchemeName, N'PF_chokaq_JobsArchive' AS FunctionName, N'FinishedAtUtc' AS TimeColumn
  UNION ALL SELECT 'dlq' AS Pillar, N'[chokaq].[JobsDLQ]' AS TableName, N'PS_chokaq_JobsDLQ' AS SchemeName, N'PF_chokaq_JobsDLQ' AS FunctionName, N'FailedAtUtc' AS TimeColumn) AS t
LEFT JOIN sys.tables AS st ON st.object_id = OBJECT_ID(t.TableName, N'U')
LEFT JOIN sys.indexes AS c ON c.object_id = st.object_id AND c.index_id IN (0, 1)
LEFT JOIN sys.partition_schemes AS ps ON ps.data_space_id = c.data_space_id AND ps.name = t.SchemeName
LEFT JOIN sys.partition_functions AS pf ON pf.function_id = ps.function_id AND pf.name = t.FunctionName AND pf.boundary_value_on_right = 1 AND EXISTS (SELECT 1 FROM sys.index_columns AS k WHERE k.object_id = c.object_id AND k.index_id = c.index_id AND k.partition_ordinal = 1 AND COL_NAME(k.object_id, k.column_id) = t.TimeColumn)
LEFT JOIN sys.partition_range_values AS v ON v.function_id = pf.function_id
ORDER BY t.Pillar, v.boundary_id;
