SET NOCOUNT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
DECLARE @Taken TABLE (JobId varchar(36) NOT NULL);
INSERT INTO [chokaq].[DedupeKeys] ([Key], JobId, Mode, States, WindowMs, WindowStartedUtc, WindowEndsUtc)
OUTPUT inserted.JobId INTO @Taken (JobId)
SELECT @0, CAST(@1 AS varchar(36)), @2, @3, @4, @now, CASE WHEN @2 = 3 THEN NULL ELSE DATEADD(MILLISECOND, CAST(@4 % 1000 AS int), DATEADD(SECOND, CAST(@4 / 1000 AS int), @now)) END
WHERE NOT EXISTS (SELECT 1 FROM [chokaq].[DedupeKeys] AS k WITH (UPDLOCK, HOLDLOCK) WHERE k.[Key] = @0);
SELECT t.JobId FROM @Taken AS t;
