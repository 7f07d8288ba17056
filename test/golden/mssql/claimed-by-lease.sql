SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET LOCK_TIMEOUT -1;
SELECT h.Id, h.Queue, h.Type, h.Payload, h.Tags, h.IdempotencyKey, h.Priority, h.Status, h.AttemptCount, h.WorkerId, h.LeaseId, CONVERT(varchar(33), h.HeartbeatUtc, 126) + 'Z' AS HeartbeatUtc, CONVERT(varchar(33), h.ScheduledAtUtc, 126) + 'Z' AS ScheduledAtUtc, CONVERT(varchar(33), h.CreatedAtUtc, 126) + 'Z' AS CreatedAtUtc, CONVERT(varchar(33), h.EnqueuedAtUtc, 126) + 'Z' AS EnqueuedAtUtc, CONVERT(varchar(33), h.StartedAtUtc, 126) + 'Z' AS StartedAtUtc, CONVERT(varchar(33), h.LastUpdatedUtc, 126) + 'Z' AS LastUpdatedUtc, h.CreatedBy, h.LastModifiedBy, h.LastError, CONVERT(varchar(33), h.CancelRequestedUtc, 126) + 'Z' AS CancelRequestedUtc, h.Progress, h.ProgressNote, h.TraceContext, h.PayloadVersion, h.GroupKey, h.BatchId, h.WaitingOn, h.HasDependents
FROM [chokaq].[JobsHot] AS h
WHERE h.Status IN (1, 2) AND h.WorkerId = @0 AND h.LeaseId = CAST(@1 AS varchar(36))
ORDER BY h.Priority DESC, h.DueAtUtc, h.Id;
