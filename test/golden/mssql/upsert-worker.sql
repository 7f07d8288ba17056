SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SET NOCOUNT ON;
SET XACT_ABORT ON;
DECLARE @now datetime2(3) = SYSUTCDATETIME();
BEGIN TRAN;
UPDATE w SET
  w.Host = @1, w.Pid = @2, w.LibraryVersion = @3,
  w.StartedAtUtc = CASE WHEN @9 = 1 THEN @now ELSE w.StartedAtUtc END,
  w.LastSeenUtc = @now, w.Concurrency = @4, w.Running = @5,
  w.Handled = @6, w.Circuits = @7, w.IsDraining = @8,
  w.StoppedAtUtc = CASE WHEN @9 = 1 THEN NULL ELSE w.StoppedAtUtc END
FROM [chokaq].[Workers] AS w WITH (UPDLOCK, HOLDLOCK)
WHERE w.WorkerId = @0;
IF @@ROWCOUNT = 0
  INSERT INTO [chokaq].[Workers] (WorkerId, Host, Pid, LibraryVersion, StartedAtUtc, LastSeenUtc, Concurrency, Running, Handled, Circuits, IsDraining, StoppedAtUtc)
  VALUES (@0, @1, @2, @3, @now, @now, @4, @5, @6, @7, @8, NULL);
COMMIT;
