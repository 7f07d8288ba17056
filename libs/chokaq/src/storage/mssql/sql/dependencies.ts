/**
 * Dependencies (schema version 19): where an enqueue's dependencies are (marking them as waited
 * on), the edges and counts it writes, the settle step every move out of the hot table runs in its
 * own transaction, the remove step of a purge or retention, the check pass, and the read of a job's
 * edges. The rules: docs/storage.md, "Dependencies"; the PostgreSQL statements
 * (`storage/postgres/sql/dependencies.ts`) are the same steps.
 *
 * SQL Server writes no check mark for an edge to a hot dependency (`planDependencies` with
 * `recheckHot` false), where PostgreSQL must: a PostgreSQL move reads the edges in the snapshot of
 * its one statement, taken before it waited for the enqueue's lock on the dependency's row, so it
 * can miss an edge committed meanwhile. Here the settle step is a statement of its own, after the
 * move's DELETE, which waited for that lock (the enqueue marks the row `HasDependents` under an
 * exclusive lock held to its COMMIT): the step starts after the enqueue committed, and reads the
 * edges with update locks (an UPDATE reads the rows it changes with a blocking scan, with or
 * without READ_COMMITTED_SNAPSHOT, "Modify data without optimized locking",
 * https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide);
 * under READ_COMMITTED_SNAPSHOT each statement's snapshot is taken when that statement starts
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/set-transaction-isolation-level-transact-sql,
 * READ COMMITTED), so it sees the committed edge either way. The moves that come before the enqueue
 * commits wait for its lock; those that came before it took it made the enqueue find the
 * dependency elsewhere (the Archive or the DLQ).
 *
 * Lock order of a move that settles (the moves' own order): the moved `JobsHot` rows, the rows they
 * became in the Archive or the DLQ (and their attempt rows), then the edges of the moved rows (a
 * range of the primary key per moved row, in id order), then the dependents' `JobsHot` rows in id
 * order, then the batches' rows, the callbacks' new hot rows, then `StatsSummary` and
 * `MetricBuckets` (`sql/batches.ts`). The enqueue takes its new hot rows, then its dependencies'
 * hot rows and DLQ rows in id order, then its edges: an enqueue and a move can still wait for each
 * other (a move holding its row and waiting for a dependent the enqueue marked, while the enqueue
 * waits to mark the moved row); SQL Server then chooses a victim (1205), which the storage retries
 * as a transient error, from scratch.
 */
import { MAX_DEPENDENTS_SHOWN } from '../../../validation/limits';
import { EdgeState, PolicyCode, type PlannedDependencies } from '../../shared/dependencies';
import { MssqlBatchOptions, MssqlStatement, ParamList } from '../mssql-params';
import {
  DECLARE_NOW,
  ID_JSON,
  MssqlTables,
  PROLOGUE,
  READPAST_UNDER_RCSI,
  tables,
  type MssqlSchema,
} from './fragments';

/** `OPENJSON` shape of an edge list `[{ dependsOn, jobId }]`. */
const EDGE_JSON = "WITH (DependsOn varchar(36) '$.dependsOn', JobId varchar(36) '$.jobId')";

/**
 * locateDependencies (an enqueue with `dependsOn`) — where each of `ids` is: `hot` or `dlq`, each
 * row marked `HasDependents = 1`, or `archive`; an id in no table is not returned. It begins no
 * transaction: it runs in the enqueue's (ChokaQ's, with `XACT_ABORT`, or the caller's, with
 * neither the session prologue nor `XACT_ABORT`, as `enqueueMany` there).
 *
 * Lock/isolation: the UPDATEs take the hot rows, then the DLQ rows, in id order (a loop from
 * `@Ids`, keyed by the id) under exclusive locks held to the enqueue's COMMIT, so a move or a
 * resurrect of a dependency waits for the enqueue and then reads the row marked (and the edges it
 * wrote, see the file's header). A hot row a move is deleting makes the UPDATE wait and then find
 * it gone; the Archive is read by a later statement of the batch, which starts after that move
 * committed (its own snapshot under READ_COMMITTED_SNAPSHOT), so it finds the row the move wrote
 * there, or the DLQ UPDATE does. A dependency a resurrect is bringing back (DLQ → hot: its DELETE
 * before its INSERT) can be missed by all three; the storage reads the missing ids once more, in a
 * new batch, before it calls them missing. Archived rows never change: a plain read.
 */
export function locateDependencies(
  schema: MssqlSchema,
  ids: readonly string[],
  options?: MssqlBatchOptions,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const doc = p.json(ids);
  return p.statement(
    [
      options?.callerTransaction ? 'SET NOCOUNT ON;' : PROLOGUE,
      'DECLARE @Ids TABLE (Id varchar(36) NOT NULL PRIMARY KEY);',
      'DECLARE @Hot TABLE (Id varchar(36) NOT NULL);',
      'DECLARE @Dlq TABLE (Id varchar(36) NOT NULL);',
      `INSERT INTO @Ids (Id) SELECT DISTINCT j.Id FROM OPENJSON(${doc}) ${ID_JSON} AS j WHERE j.Id IS NOT NULL;`,
      'UPDATE h SET h.HasDependents = 1',
      'OUTPUT inserted.Id INTO @Hot (Id)',
      'FROM @Ids AS i',
      `INNER LOOP JOIN ${t.hot} AS h ON h.Id = i.Id;`,
      'UPDATE d SET d.HasDependents = 1',
      'OUTPUT inserted.Id INTO @Dlq (Id)',
      'FROM @Ids AS i',
      `INNER LOOP JOIN ${t.dlq} AS d ON d.Id = i.Id;`,
      "SELECT x.Id, 'hot' AS Pillar FROM @Hot AS x",
      'UNION ALL',
      "SELECT x.Id, 'dlq' FROM @Dlq AS x",
      'UNION ALL',
      `SELECT a.Id, 'archive' FROM @Ids AS i INNER JOIN ${t.archive} AS a ON a.Id = i.Id;`,
    ].join('\n'),
    options,
  );
}

/**
 * insertDependencies (an enqueue with `dependsOn`) — the planned edges (`shared/dependencies.ts`,
 * `planDependencies`) and each waiting job's count: a job that counts none is Pending at once, the
 * others stay Waiting. The jobs were inserted Waiting by the same transaction, which this batch
 * does not begin (as {@link locateDependencies}). An edge already stored is kept, as PostgreSQL's
 * `ON CONFLICT DO NOTHING` keeps it (the dependent's id was in no table, so only an edge a release
 * before this one left behind, deleting its dependent without its edges, can be there).
 *
 * Lock/isolation: X on the new edges' keys, then on the enqueue's own Waiting rows (in id order,
 * a loop from `@Waits`), which it holds already.
 */
export function insertDependencies(
  schema: MssqlSchema,
  plan: PlannedDependencies,
  options?: MssqlBatchOptions,
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const edges = p.json(
    plan.edges.map((e) => ({
      dependsOn: e.dependsOn,
      jobId: e.jobId,
      onFailure: e.policy,
      state: e.state,
      needsCheck: e.needsCheck ? 1 : 0,
    })),
  );
  const waits = p.json(plan.waits.map((w) => ({ id: w.jobId, n: w.waitingOn })));
  return p.statement(
    [
      options?.callerTransaction ? 'SET NOCOUNT ON;' : PROLOGUE,
      DECLARE_NOW,
      'DECLARE @Edges TABLE (DependsOn varchar(36) NOT NULL, JobId varchar(36) NOT NULL, OnFailure tinyint NOT NULL, State tinyint NOT NULL, NeedsCheck bit NOT NULL, PRIMARY KEY (DependsOn, JobId));',
      'DECLARE @Waits TABLE (Id varchar(36) NOT NULL PRIMARY KEY, N int NOT NULL);',
      'INSERT INTO @Edges (DependsOn, JobId, OnFailure, State, NeedsCheck)',
      `SELECT e.DependsOn, e.JobId, e.OnFailure, e.State, e.NeedsCheck FROM OPENJSON(${edges}) WITH (DependsOn varchar(36) '$.dependsOn', JobId varchar(36) '$.jobId', OnFailure tinyint '$.onFailure', State tinyint '$.state', NeedsCheck bit '$.needsCheck') AS e;`,
      'INSERT INTO @Waits (Id, N)',
      `SELECT w.Id, w.N FROM OPENJSON(${waits}) WITH (Id varchar(36) '$.id', N int '$.n') AS w;`,
      `INSERT INTO ${t.dependencies} (DependsOn, JobId, OnFailure, State, NeedsCheck, CreatedAtUtc, SettledAtUtc)`,
      `SELECT e.DependsOn, e.JobId, e.OnFailure, e.State, e.NeedsCheck, @now, CASE WHEN e.State <> ${EdgeState.Waiting} THEN @now END`,
      'FROM @Edges AS e',
      `WHERE NOT EXISTS (SELECT 1 FROM ${t.dependencies} AS x WHERE x.DependsOn = e.DependsOn AND x.JobId = e.JobId);`,
      'UPDATE h SET h.WaitingOn = w.N, h.Status = CASE WHEN w.N = 0 THEN 0 ELSE 7 END, h.LastUpdatedUtc = @now',
      'FROM @Waits AS w',
      `INNER LOOP JOIN ${t.hot} AS h ON h.Id = w.Id`,
      'WHERE h.Status = 7;',
    ].join('\n'),
    options,
  );
}

/**
 * The settle step of a move out of the hot table, in the move's transaction, after its rows went
 * into the Archive (`into` 'archive': they succeeded) or the DLQ ('dlq': failed, cancelled or
 * zombied), and before its batches and counters. For each moved row of `@Moved` marked
 * `HasDependents`, its waiting edges settle: to the Archive → succeeded; to the DLQ → `ignore`
 * edges ignored, `cancel` edges failed and marked for the check pass (which cancels their
 * dependent; a failed edge keeps its count, so that dependent is never released), `block` edges
 * left waiting. Each dependent whose edges became succeeded or ignored has its `WaitingOn` lowered
 * by that many; the one that reaches 0 and is still Waiting becomes Pending, its `EnqueuedAtUtc`
 * (the clock of `maxJobAge`) now and its `DueAtUtc` `COALESCE(ScheduledAtUtc, EnqueuedAtUtc)`
 * again. A move of rows without `HasDependents` finds nothing in `@DepMoved` and reads no edge. A
 * dependent the same move deleted (a cancel of a dependency and its dependent together) has no hot
 * row left, and is simply not matched.
 *
 * Lock/isolation: the edges are updated from `@DepMoved` (keyed by the moved id, a loop into the
 * primary key's range of each), the dependents' rows from `@DepReleased` (keyed by the dependent's
 * id, a loop into the clustered key), so two moves over the same rows take them in one order and
 * wait for each other instead of deadlocking, as the batch settle step takes its rows. Two moves
 * that settle the last two dependencies of one job at once serialise on its hot row: an UPDATE
 * reads the rows it changes under update locks (U, converted to X and held to COMMIT), with or
 * without READ_COMMITTED_SNAPSHOT, and computes its SET from the row as it reads it under that lock
 * ("Modify data without optimized locking",
 * https://learn.microsoft.com/en-us/sql/relational-databases/sql-server-transaction-locking-and-row-versioning-guide),
 * so the second counts from the row the first committed and exactly one of them sees 0. Under
 * optimized locking's lock after qualification (Azure SQL, SQL Server 2025) a row that another
 * transaction changed after it qualified is qualified again, or the statement is processed again
 * without it
 * (https://learn.microsoft.com/en-us/sql/relational-databases/performance/optimized-locking), so
 * the count is still taken from the committed row. Why these statements see every edge an
 * enqueue committed: the file's header.
 */
export function dependencySettle(t: MssqlTables, into: 'archive' | 'dlq'): string {
  const archive = into === 'archive';
  const state = archive
    ? `${EdgeState.Succeeded}`
    : `CASE WHEN e.OnFailure = ${PolicyCode.Ignore} THEN ${EdgeState.Ignored} ELSE ${EdgeState.Failed} END`;
  const needsCheck = archive
    ? '0'
    : `CASE WHEN e.OnFailure = ${PolicyCode.Cancel} THEN 1 ELSE 0 END`;
  const open = `e.State = ${EdgeState.Waiting}${archive ? '' : ` AND e.OnFailure <> ${PolicyCode.Block}`}`;
  const left = 'h.WaitingOn - d.N';
  return [
    'DECLARE @DepMoved TABLE (Id varchar(36) NOT NULL PRIMARY KEY);',
    'DECLARE @DepSettled TABLE (JobId varchar(36) NOT NULL, State tinyint NOT NULL);',
    'DECLARE @DepReleased TABLE (JobId varchar(36) NOT NULL PRIMARY KEY, N int NOT NULL);',
    'INSERT INTO @DepMoved (Id) SELECT mv.Id FROM @Moved AS mv WHERE mv.HasDependents = 1;',
    'IF EXISTS (SELECT 1 FROM @DepMoved)',
    'BEGIN',
    `UPDATE e SET e.State = ${state}, e.NeedsCheck = ${needsCheck}, e.SettledAtUtc = @now`,
    'OUTPUT inserted.JobId, inserted.State INTO @DepSettled (JobId, State)',
    'FROM @DepMoved AS m',
    `INNER LOOP JOIN ${t.dependencies} AS e ON e.DependsOn = m.Id`,
    `WHERE ${open};`,
    'INSERT INTO @DepReleased (JobId, N)',
    `SELECT s.JobId, COUNT(*) FROM @DepSettled AS s WHERE s.State IN (${EdgeState.Succeeded}, ${EdgeState.Ignored}) GROUP BY s.JobId;`,
    `UPDATE h SET h.WaitingOn = ${left}, h.Status = CASE WHEN ${left} = 0 THEN 0 ELSE 7 END,`,
    `  h.EnqueuedAtUtc = CASE WHEN ${left} = 0 THEN @now ELSE h.EnqueuedAtUtc END,`,
    `  h.DueAtUtc = CASE WHEN ${left} = 0 THEN ISNULL(h.ScheduledAtUtc, @now) ELSE h.DueAtUtc END,`,
    '  h.LastUpdatedUtc = @now',
    'FROM @DepReleased AS d',
    `INNER LOOP JOIN ${t.hot} AS h ON h.Id = d.JobId`,
    'WHERE h.Status = 7;',
    'END;',
  ].join('\n');
}

/**
 * The dependency steps of a purge or retention batch that deleted rows from the Archive or the
 * DLQ, in its transaction, after the DELETE captured them into `@Gone` (`Id`, `HasDependents`,
 * `WaitingOn`; needs `@now`). A deleted dependency's waiting edges (`block`: its dependent waited
 * while it sat in the DLQ) become removed and marked for the check pass, which sends the
 * dependent to the DLQ; a deleted dependent's own edges go with it (its dependencies keep theirs,
 * for their jobs' pages). An edge whose two ends are deleted together is only deleted. A batch of
 * rows that never had edges (neither flag set) reads no edge.
 *
 * Lock/isolation: the edges by key from `@Gone` (keyed by the id: a loop into the primary key's
 * range of each dependency, then into `IX_JobDependencies_Job` for each dependent), after the
 * deleted rows and their attempt rows. A move that settles an edge of a deleted dependent holds
 * its own hot and pillar rows, none of these.
 */
export function dependencyRemove(t: MssqlTables): string {
  return [
    'IF EXISTS (SELECT 1 FROM @Gone AS g WHERE g.HasDependents = 1 OR g.WaitingOn IS NOT NULL)',
    'BEGIN',
    `UPDATE e SET e.State = ${EdgeState.Removed}, e.NeedsCheck = 1, e.SettledAtUtc = @now`,
    'FROM @Gone AS g',
    `INNER LOOP JOIN ${t.dependencies} AS e ON e.DependsOn = g.Id`,
    `WHERE g.HasDependents = 1 AND e.State = ${EdgeState.Waiting}`,
    '  AND NOT EXISTS (SELECT 1 FROM @Gone AS x WHERE x.Id = e.JobId AND x.WaitingOn IS NOT NULL);',
    'DELETE e',
    'FROM @Gone AS g',
    `INNER LOOP JOIN ${t.dependencies} AS e ON e.JobId = g.Id`,
    'WHERE g.WaitingOn IS NOT NULL;',
    'END;',
  ].join('\n');
}

/**
 * checkTake (the check pass, first step of a round) — up to `limit` edges marked `NeedsCheck`,
 * oldest first, each with its state (failed under `cancel`, or removed), update-locked to the
 * round's COMMIT: two passes never take one edge. The round's own transaction (this batch begins
 * none) then sends their waiting dependents to the DLQ (`moveToDlq` of a Waiting row) and unmarks
 * them ({@link checkDone}). SQL Server marks no edge to a hot dependency (the file's header), so
 * every edge taken is failed or removed.
 *
 * Lock/isolation, as the claim picks its rows: candidates read WITHOUT update locks through
 * `IX_JobDependencies_Check` (filtered on exactly the marked edges, `NeedsCheck = 1` repeated so it
 * matches), `WITH (READCOMMITTEDLOCK, READPAST, ROWLOCK)` (see {@link READPAST_UNDER_RCSI}): an
 * edge a move is marking right now is left for the next round; then locked by key, `WITH (UPDLOCK,
 * READPAST, ROWLOCK, FORCESEEK)` from `@Candidates` into the primary key, in key order, with the
 * mark re-checked under the lock, so the edges another pass holds are skipped, not waited for.
 * Locking the index key first and the row second (an `UPDLOCK` read of the filtered index) would be
 * the reverse of the moves, which update the edge by its primary key.
 */
export function checkTake(schema: MssqlSchema, limit: number): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const max = p.int(limit);
  return p.statement(
    [
      PROLOGUE,
      'DECLARE @Candidates TABLE (DependsOn varchar(36) NOT NULL, JobId varchar(36) NOT NULL, CreatedAtUtc datetime2(3) NOT NULL, PRIMARY KEY (DependsOn, JobId));',
      'DECLARE @Taken TABLE (DependsOn varchar(36) NOT NULL, JobId varchar(36) NOT NULL, State tinyint NOT NULL, CreatedAtUtc datetime2(3) NOT NULL, PRIMARY KEY (DependsOn, JobId));',
      'INSERT INTO @Candidates (DependsOn, JobId, CreatedAtUtc)',
      `SELECT TOP (${max}) c.DependsOn, c.JobId, c.CreatedAtUtc FROM ${t.dependencies} AS c WITH (${READPAST_UNDER_RCSI})`,
      'WHERE c.NeedsCheck = 1',
      'ORDER BY c.CreatedAtUtc;',
      'INSERT INTO @Taken (DependsOn, JobId, State, CreatedAtUtc)',
      'SELECT e.DependsOn, e.JobId, e.State, c.CreatedAtUtc',
      'FROM @Candidates AS c',
      `INNER LOOP JOIN ${t.dependencies} AS e WITH (UPDLOCK, READPAST, ROWLOCK, FORCESEEK) ON e.DependsOn = c.DependsOn AND e.JobId = c.JobId`,
      'WHERE e.NeedsCheck = 1;',
      'SELECT k.JobId, k.DependsOn, k.State FROM @Taken AS k ORDER BY k.CreatedAtUtc, k.DependsOn, k.JobId;',
    ].join('\n'),
  );
}

/**
 * checkDone (the check pass, last step of a round) — the edges the round took are no longer
 * marked, once their dependents were sent to the DLQ (or found no longer Waiting). In the round's
 * transaction, which holds their update locks since {@link checkTake}: X on the same rows, by key
 * from `@Done`.
 */
export function checkDone(
  schema: MssqlSchema,
  edges: readonly { jobId: string; dependsOn: string }[],
): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const doc = p.json(edges.map((e) => ({ dependsOn: e.dependsOn, jobId: e.jobId })));
  return p.statement(
    [
      PROLOGUE,
      'DECLARE @Done TABLE (DependsOn varchar(36) NOT NULL, JobId varchar(36) NOT NULL, PRIMARY KEY (DependsOn, JobId));',
      'INSERT INTO @Done (DependsOn, JobId)',
      `SELECT DISTINCT j.DependsOn, j.JobId FROM OPENJSON(${doc}) ${EDGE_JSON} AS j`,
      'WHERE j.DependsOn IS NOT NULL AND j.JobId IS NOT NULL;',
      'UPDATE e SET e.NeedsCheck = 0',
      'FROM @Done AS d',
      `INNER LOOP JOIN ${t.dependencies} AS e ON e.DependsOn = d.DependsOn AND e.JobId = d.JobId;`,
    ].join('\n'),
  );
}

/**
 * getDependencies — a job's edges both ways: those it waits on (`Dir` 'on', a seek of
 * `IX_JobDependencies_Job`) and, at most {@link MAX_DEPENDENTS_SHOWN} + 1 (one more tells the
 * list was cut), those that wait on it (`Dir` 'by', one range of the primary key in its order),
 * each with where the job waited on is now (`Pillar`: a primary-key probe of each pillar, 'removed'
 * in none). A plain READ COMMITTED read, no hints; its columns are folded by `mapDependencies`.
 */
export function getDependencies(schema: MssqlSchema, id: string): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const key = p.varchar(id, 36);
  const columns = 'e.JobId, e.DependsOn, e.OnFailure, e.State';
  return p.statement(
    [
      'SELECT x.Dir, x.JobId, x.DependsOn, x.OnFailure, x.State,',
      `  CASE WHEN EXISTS (SELECT 1 FROM ${t.hot} AS h WHERE h.Id = x.DependsOn) THEN 'hot'`,
      `       WHEN EXISTS (SELECT 1 FROM ${t.archive} AS a WHERE a.Id = x.DependsOn) THEN 'archive'`,
      `       WHEN EXISTS (SELECT 1 FROM ${t.dlq} AS d WHERE d.Id = x.DependsOn) THEN 'dlq'`,
      "       ELSE 'removed' END AS Pillar",
      'FROM (',
      `  SELECT 'on' AS Dir, ${columns} FROM ${t.dependencies} AS e WHERE e.JobId = ${key}`,
      '  UNION ALL',
      '  SELECT b.Dir, b.JobId, b.DependsOn, b.OnFailure, b.State FROM (',
      `    SELECT TOP (${MAX_DEPENDENTS_SHOWN + 1}) 'by' AS Dir, ${columns} FROM ${t.dependencies} AS e`,
      `    WHERE e.DependsOn = ${key} ORDER BY e.JobId`,
      '  ) AS b',
      ') AS x',
      'ORDER BY x.Dir DESC, x.DependsOn, x.JobId;',
    ].join('\n'),
  );
}
