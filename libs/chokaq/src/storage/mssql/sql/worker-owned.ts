/**
 * Batches of the lease holder on its own hot rows: start, heartbeat, hand back (Fetched rows, and
 * started rows that never ran), progress, retry. Each is fenced by (Id, WorkerId, LeaseId) and a
 * status.
 */
import { MssqlStatement, ParamList } from '../mssql-params';
import {
  DECLARE_BUCKET,
  DECLARE_NOW,
  LEASE_JSON,
  MssqlLease,
  PROLOGUE,
  addMs,
  attemptsInsert,
  bumpBuckets,
  bumpStats,
  leaseDoc,
  startLagMs,
  tables,
  type MssqlSchema,
} from './fragments';

/**
 * markAsProcessing — Fetched → Processing for owned rows. Fence: Id + WorkerId + LeaseId and
 * `Status = 1`, the last stale-prefetch guard; plain UPDATE (U → X locks on the rows it changes,
 * read committed), no skipping: a row we own is never held by anyone else for long. The started
 * rows count in the start bucket with their lag, in the same transaction (`SET XACT_ABORT ON;
 * BEGIN TRAN; … COMMIT`), `JobsHot` rows first, then `MetricBuckets` in key order.
 */
export function markAsProcessing(
  schema: MssqlSchema,
  leases: readonly MssqlLease[],
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const doc = leaseDoc(p, leases);
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      `DECLARE @Started TABLE (Id varchar(36) NOT NULL, Queue varchar(255)${t.key} NOT NULL, DueAtUtc datetime2(3) NOT NULL);`,
      'BEGIN TRAN;',
      'UPDATE h SET h.Status = 2, h.AttemptCount = h.AttemptCount + 1, h.StartedAtUtc = @now, h.HeartbeatUtc = @now, h.LastUpdatedUtc = @now',
      'OUTPUT inserted.Id, inserted.Queue, inserted.DueAtUtc INTO @Started (Id, Queue, DueAtUtc)',
      `FROM ${t.hot} AS h`,
      `INNER JOIN OPENJSON(${doc}) ${LEASE_JSON} AS l ON l.Id = h.Id AND l.WorkerId = h.WorkerId AND l.LeaseId = h.LeaseId`,
      'WHERE h.Status = 1;',
      'IF EXISTS (SELECT 1 FROM @Started)',
      'BEGIN',
      bumpBuckets(
        t,
        `(SELECT s.Queue, CAST(4 AS tinyint) AS Outcome, CAST(-1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs, ${startLagMs('s')} AS LagMs FROM @Started AS s)`,
        true,
      ),
      'END;',
      'COMMIT;',
      // Rows already Processing under the very same lease are a retry after an ambiguous commit:
      // only this caller can have started them, so they are reported as started too.
      'SELECT s.Id FROM @Started AS s',
      'UNION ALL',
      `SELECT h.Id FROM ${t.hot} AS h`,
      `INNER JOIN OPENJSON(${doc}) ${LEASE_JSON} AS l ON l.Id = h.Id AND l.WorkerId = h.WorkerId AND l.LeaseId = h.LeaseId`,
      'WHERE h.Status = 2 AND h.Id NOT IN (SELECT Id FROM @Started);',
    ].join('\n'),
  );
}

/**
 * keepAlive — one statement per process: `HeartbeatUtc` of its Processing rows and
 * `LastUpdatedUtc` of its Fetched rows, fenced by WorkerId + Id + LeaseId. Returns the touched
 * rows with their cancellation flag.
 */
export function keepAlive(
  schema: MssqlSchema,
  workerId: string,
  leases: readonly MssqlLease[],
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const worker = p.nvarchar(workerId, 255);
  const doc = leaseDoc(p, leases);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      DECLARE_NOW,
      'DECLARE @Touched TABLE (Id varchar(36) NOT NULL, CancelRequestedUtc datetime2(3) NULL);',
      'UPDATE h SET',
      '  h.HeartbeatUtc = CASE WHEN h.Status = 2 THEN @now ELSE h.HeartbeatUtc END,',
      '  h.LastUpdatedUtc = CASE WHEN h.Status = 1 THEN @now ELSE h.LastUpdatedUtc END',
      'OUTPUT inserted.Id, inserted.CancelRequestedUtc INTO @Touched (Id, CancelRequestedUtc)',
      `FROM ${t.hot} AS h`,
      `INNER JOIN OPENJSON(${doc}) ${LEASE_JSON} AS l ON l.Id = h.Id AND l.LeaseId = h.LeaseId`,
      `WHERE h.WorkerId = ${worker} AND h.Status IN (1, 2);`,
      'SELECT x.Id, CASE WHEN x.CancelRequestedUtc IS NULL THEN 0 ELSE 1 END AS CancelRequested FROM @Touched AS x;',
    ].join('\n'),
  );
}

/**
 * release — Fetched → Pending for owned rows (`Status = 1`, fence matches), clearing the lease.
 * With a delay (open circuit): `ScheduledAtUtc = now + delay`, `HeldSinceUtc` kept when the row was
 * held before, else set to its due time (every expression of a SET reads the row as it was before
 * the UPDATE, as in standard SQL), `DeferredTotal + n` and the deferred bucket (outcome 5) in the
 * same transaction (XACT_ABORT, read committed, U → X locks on the changed rows, then stats rows
 * and bucket rows in key order).
 */
export function release(
  schema: MssqlSchema,
  leases: readonly MssqlLease[],
  delayMs: number | null,
): MssqlStatement {
  return handBack(schema, leases, delayMs, false);
}

/**
 * unstart — Processing → Pending for owned rows whose handler never ran (started ahead, handed
 * back: `Status = 2`, fence matches): the attempt the claim counted is refunded, `StartedAtUtc`
 * and `HeartbeatUtc` cleared; the delay as {@link release}, in the same kind of transaction.
 */
export function unstart(
  schema: MssqlSchema,
  leases: readonly MssqlLease[],
  delayMs: number | null,
): MssqlStatement {
  return handBack(schema, leases, delayMs, true);
}

/** The batch of {@link release} (Fetched rows) and {@link unstart} (started rows that never ran). */
function handBack(
  schema: MssqlSchema,
  leases: readonly MssqlLease[],
  delayMs: number | null,
  started: boolean,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const doc = leaseDoc(p, leases);
  const delay = p.bigint(delayMs);
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      `DECLARE @due datetime2(3) = CASE WHEN ${delay} IS NULL THEN NULL ELSE ${addMs('@now', delay)} END;`,
      `DECLARE @Released TABLE (Id varchar(36) NOT NULL, Queue varchar(255)${t.key} NOT NULL);`,
      'BEGIN TRAN;',
      'UPDATE h SET h.Status = 0, h.WorkerId = NULL, h.LeaseId = NULL, h.LastUpdatedUtc = @now,',
      ...(started
        ? ['  h.AttemptCount = h.AttemptCount - 1, h.StartedAtUtc = NULL, h.HeartbeatUtc = NULL,']
        : []),
      '  h.ScheduledAtUtc = ISNULL(@due, h.ScheduledAtUtc), h.DueAtUtc = ISNULL(@due, h.DueAtUtc),',
      '  h.HeldSinceUtc = CASE WHEN @due IS NULL THEN h.HeldSinceUtc ELSE ISNULL(h.HeldSinceUtc, h.DueAtUtc) END',
      'OUTPUT inserted.Id, inserted.Queue INTO @Released (Id, Queue)',
      `FROM ${t.hot} AS h`,
      `INNER JOIN OPENJSON(${doc}) ${LEASE_JSON} AS l ON l.Id = h.Id AND l.WorkerId = h.WorkerId AND l.LeaseId = h.LeaseId`,
      started ? 'WHERE h.Status = 2;' : 'WHERE h.Status = 1;',
      `IF @due IS NOT NULL`,
      'BEGIN',
      bumpStats(t, '@Released', { DeferredTotal: '1' }),
      'END;',
      'COMMIT;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Released;',
    ].join('\n'),
  );
}

/**
 * reportProgress — `Progress` and `ProgressNote` of an owned Processing row (fence: Id +
 * WorkerId + LeaseId, `Status = 2`); a NULL note clears it (a note describes the progress it came
 * with). Plain UPDATE, read committed. `@@ROWCOUNT` is the result.
 */
export function reportProgress(
  schema: MssqlSchema,
  lease: MssqlLease,
  percent: number,
  note: string | null,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.varchar(lease.id, 36);
  const worker = p.nvarchar(lease.workerId, 255);
  const leaseId = p.varchar(lease.leaseId, 36);
  const value = p.int(percent);
  const text = p.nvarchar(note, 500);
  return p.statement(
    [
      'SET NOCOUNT ON;',
      `UPDATE h SET h.Progress = ${value}, h.ProgressNote = ${text}`,
      `FROM ${t.hot} AS h`,
      `WHERE h.Id = ${id} AND h.WorkerId = ${worker} AND h.LeaseId = ${leaseId} AND h.Status = 2;`,
      'SELECT @@ROWCOUNT AS Affected;',
    ].join('\n'),
  );
}

/**
 * rescheduleForRetry — Processing → Pending after a retryable failure (`Status = 2`, fence
 * matches): lease, heartbeat and hold cleared, `ScheduledAtUtc = now + delay`, `LastError`,
 * `RetriedTotal + 1`, the retried bucket (outcome 3) and the run's `JobAttempts` row (outcome
 * `retried`, from the row's values before the UPDATE: `OUTPUT deleted.…`), one transaction
 * (XACT_ABORT, read committed, U → X row locks).
 */
export function rescheduleForRetry(
  schema: MssqlSchema,
  lease: MssqlLease,
  delayMs: number,
  error: string,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const id = p.varchar(lease.id, 36);
  const worker = p.nvarchar(lease.workerId, 255);
  const leaseId = p.varchar(lease.leaseId, 36);
  const delay = p.bigint(delayMs);
  const err = p.nvarchar(error, 'max');
  return p.statement(
    [
      PROLOGUE,
      DECLARE_NOW,
      DECLARE_BUCKET,
      `DECLARE @due datetime2(3) = ${addMs('@now', delay)};`,
      `DECLARE @Retried TABLE (Id varchar(36) NOT NULL, Queue varchar(255)${t.key} NOT NULL, AttemptCount int NULL, WorkerId nvarchar(255) NULL, LeaseId varchar(36) NULL, StartedAtUtc datetime2(3) NULL);`,
      'BEGIN TRAN;',
      'UPDATE h SET h.Status = 0, h.WorkerId = NULL, h.LeaseId = NULL, h.HeartbeatUtc = NULL,',
      `  h.ScheduledAtUtc = @due, h.DueAtUtc = @due, h.HeldSinceUtc = NULL, h.LastError = ${err}, h.LastUpdatedUtc = @now`,
      'OUTPUT inserted.Id, inserted.Queue, deleted.AttemptCount, deleted.WorkerId, deleted.LeaseId, deleted.StartedAtUtc INTO @Retried (Id, Queue, AttemptCount, WorkerId, LeaseId, StartedAtUtc)',
      `FROM ${t.hot} AS h`,
      `WHERE h.Id = ${id} AND h.WorkerId = ${worker} AND h.LeaseId = ${leaseId} AND h.Status = 2;`,
      attemptsInsert(
        t,
        `SELECT r.Id, r.AttemptCount, r.WorkerId, r.LeaseId, r.StartedAtUtc, 'retried' AS Outcome, ${err} AS Error FROM @Retried AS r`,
      ),
      bumpStats(t, '@Retried', { RetriedTotal: '1' }),
      bumpBuckets(
        t,
        '(SELECT r.Queue, CAST(3 AS tinyint) AS Outcome, CAST(-1 AS smallint) AS FailureReason, CAST(NULL AS bigint) AS DurationMs FROM @Retried AS r)',
      ),
      'COMMIT;',
      'SELECT COUNT_BIG(*) AS Affected FROM @Retried;',
    ].join('\n'),
  );
}
