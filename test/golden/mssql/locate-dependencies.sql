SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @Ids TABLE (Id varchar(36) NOT NULL PRIMARY KEY);
DECLARE @Hot TABLE (Id varchar(36) NOT NULL);
DECLARE @Dlq TABLE (Id varchar(36) NOT NULL);
INSERT INTO @Ids (Id) SELECT DISTINCT j.Id FROM OPENJSON(@0) WITH (Id varchar(36) '$') AS j WHERE j.Id IS NOT NULL;
UPDATE h SET h.HasDependents = 1
OUTPUT inserted.Id INTO @Hot (Id)
FROM @Ids AS i
INNER LOOP JOIN [chokaq].[JobsHot] AS h ON h.Id = i.Id;
UPDATE d SET d.HasDependents = 1
OUTPUT inserted.Id INTO @Dlq (Id)
FROM @Ids AS i
INNER LOOP JOIN [chokaq].[JobsDLQ] AS d ON d.Id = i.Id;
SELECT x.Id, 'hot' AS Pillar FROM @Hot AS x
UNION ALL
SELECT x.Id, 'dlq' FROM @Dlq AS x
UNION ALL
SELECT a.Id, 'archive' FROM @Ids AS i INNER JOIN [chokaq].[JobsArchive] AS a ON a.Id = i.Id;
