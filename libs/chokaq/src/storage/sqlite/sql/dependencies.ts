/**
 * Dependencies: where an enqueue's dependencies are (marking them as waited on), the edges and the
 * waiting jobs' counts it writes, the settle step every move out of the hot table runs in its own
 * transaction, the remove step of a purge or retention, the check pass, and the read of a job's
 * edges. The rules: docs/storage.md, "Dependencies". PostgreSQL settles in SQL, in the move's
 * statement; a SQLite move is several statements driven from TypeScript, so it settles between
 * them, as it settles batches (`batches.ts`): the edges here, the count of each dependent's edges
 * satisfied now in code, then the release here.
 *
 * Lock/isolation of every write below: it runs inside the BEGIN IMMEDIATE transaction of the
 * enqueue, the move, the purge or retention batch, or the check round it belongs to (or inside the
 * caller's transaction, for an enqueue), which holds the file's single write lock from BEGIN to
 * COMMIT. No other writer of any process can move a dependency between the enqueue's look-up and
 * its edges, or change a dependent's count between the update of its edges and its release, so
 * two moves that settle the last two dependencies of one job run one after the other and exactly
 * one of them sees the count reach 0. No row lock, re-read or `needs_check` mark for a hot
 * dependency is needed (PostgreSQL's check of such edges does not exist here).
 */
import { MAX_DEPENDENTS_SHOWN } from '../../../validation/limits';
import { EdgeState, PolicyCode } from '../../shared/dependencies';
import { IDS, SQLITE_NOW_MS, SqliteTables } from './fragments';

/**
 * The waiting jobs `@ids` (a JSON array) of an update that gives each the same `@n`: a search of
 * the primary key per id. The statements that write waiting jobs' counts bind one `@n` at a time
 * (their callers group the jobs by it) rather than join the hot table to a JSON list of
 * `{id, n}` (`UPDATE … FROM json_each(…)`): the planner may put either side of that join outside,
 * and with statistics gathered while the hot table was small, or while few jobs waited, it read
 * the whole table, or `jobs_hot_waiting_ix`, once per entry of the list.
 */
const WAITING_IDS = `id IN ${IDS} AND status = 7`;

/** The dependency statements of the write half, for one prefix. */
export function dependencyStatements(t: SqliteTables) {
  const { hot, archive, dlq, dependencies } = t;
  return {
    /**
     * enqueue, locate step 1: the hot rows among `@ids` (the dependencies' ids, a JSON array) are
     * marked `has_dependents`, so every later move of them settles their edges; returns their ids.
     * Lock: the enqueue's BEGIN IMMEDIATE (or the caller's transaction), with the edges it writes:
     * no move can take a marked row out of the hot table before they are written.
     */
    locateDependenciesHot: `UPDATE ${hot} SET has_dependents = 1 WHERE id IN ${IDS} RETURNING id`,

    /**
     * enqueue, locate step 2: the DLQ rows among `@ids`, marked as step 1 marks the hot ones (a
     * purge of a marked row marks its blocked edges removed); returns their ids. Lock: as step 1.
     */
    locateDependenciesDlq: `UPDATE ${dlq} SET has_dependents = 1 WHERE id IN ${IDS} RETURNING id`,

    /**
     * enqueue, locate step 3: the archived rows among `@ids` (their edges are written settled, so
     * nothing marks them). Primary-key probes. Lock: as step 1.
     */
    locateDependenciesArchive: `SELECT id FROM ${archive} WHERE id IN ${IDS}`,

    /**
     * enqueue, edges step 1: the planned edges of `@edges` (a JSON array of `{job_id, depends_on,
     * on_failure, state, needs_check}`, from `planDependencies`), an edge already settled at
     * enqueue (a dependency archived, or in the DLQ under `ignore` or `cancel`) with its settle
     * time. Lock: as the locate steps, in the same transaction.
     */
    insertDependencies: `INSERT INTO ${dependencies} (depends_on, job_id, on_failure, state,
        needs_check, created_at_utc, settled_at_utc)
      SELECT e.value ->> 'depends_on', e.value ->> 'job_id', e.value ->> 'on_failure',
        e.value ->> 'state', e.value ->> 'needs_check', ${SQLITE_NOW_MS},
        CASE WHEN e.value ->> 'state' <> ${EdgeState.Waiting} THEN ${SQLITE_NOW_MS} END
      FROM json_each(@edges) AS e WHERE true
      ON CONFLICT DO NOTHING`,

    /**
     * enqueue, edges step 2: the waiting jobs `@ids` (inserted Waiting by the same transaction)
     * count `@n` open and failed edges each; with `@n` 0 they are Pending at once, else they stay
     * Waiting ({@link WAITING_IDS}: one statement per count). Lock: as step 1.
     */
    insertDependenciesWaits: `UPDATE ${hot}
      SET waiting_on = @n, status = CASE WHEN @n = 0 THEN 0 ELSE 7 END,
          last_updated_utc = ${SQLITE_NOW_MS}
      WHERE ${WAITING_IDS}`,

    /**
     * Settle, step 1, after a move deleted rows from the hot table: the open edges of the moved
     * rows `@ids` marked `has_dependents` (the others are never looked up) settle: into the
     * Archive (`@ok` 1) they succeed; into the DLQ (`@ok` 0) `ignore` edges are ignored, `cancel`
     * edges failed and marked `needs_check` (the check pass moves their dependent to the DLQ; a
     * failed edge keeps its count, so that dependent is never released), `block` edges stay open.
     * A range of the primary key (led by the dependency) per moved row. Returns each settled
     * edge's dependent and new state, for the release. Lock: the move's BEGIN IMMEDIATE, held
     * until step 2 has released the dependents.
     */
    dependencySettle: `UPDATE ${dependencies}
      SET state = CASE WHEN @ok = 1 THEN ${EdgeState.Succeeded}
                       WHEN on_failure = ${PolicyCode.Ignore} THEN ${EdgeState.Ignored}
                       ELSE ${EdgeState.Failed} END,
          needs_check = CASE WHEN @ok = 0 AND on_failure = ${PolicyCode.Cancel} THEN 1 ELSE 0 END,
          settled_at_utc = ${SQLITE_NOW_MS}
      WHERE depends_on IN ${IDS} AND state = ${EdgeState.Waiting}
        AND (@ok = 1 OR on_failure <> ${PolicyCode.Block})
      RETURNING job_id, state`,

    /**
     * Settle, step 2, when step 1 satisfied some edge: the dependents `@ids` still Waiting, each of
     * which step 1 gave `@n` edges succeeded or ignored ({@link WAITING_IDS}: one statement per
     * number), count that many fewer, and those that reach 0 are Pending, their `enqueued_at_utc`
     * (the clock of `maxJobAge`) restarted. A dependent the same move took out of the hot table (a
     * cancel of both) has no hot row any more: its update finds nothing. Lock: the move's BEGIN
     * IMMEDIATE, as step 1.
     */
    dependencyRelease: `UPDATE ${hot}
      SET waiting_on = waiting_on - @n,
          status = CASE WHEN waiting_on - @n = 0 THEN 0 ELSE 7 END,
          enqueued_at_utc = CASE WHEN waiting_on - @n = 0 THEN ${SQLITE_NOW_MS}
                                 ELSE enqueued_at_utc END,
          last_updated_utc = ${SQLITE_NOW_MS}
      WHERE ${WAITING_IDS}`,

    /**
     * Remove, step 1, after a purge or retention deleted rows from the DLQ or the Archive: the
     * edges of the deleted jobs `@ids` that waited (`waiting_on` set) go with them (their
     * dependencies keep theirs), by the index on `job_id`. Runs before step 2, so an edge whose two
     * ends were deleted together is only deleted. Lock: the batch's BEGIN IMMEDIATE.
     */
    dependencyRemoveOwn: `DELETE FROM ${dependencies} WHERE job_id IN ${IDS}`,

    /**
     * Remove, step 2: the open edges of the deleted jobs `@ids` that were waited on
     * (`has_dependents`), `block` edges of jobs blocked on them in the DLQ, are marked removed and
     * `needs_check`, for the check pass to send their dependents to the DLQ; settled edges stay for
     * their dependents' pages. A range of the primary key per deleted job. Lock: the batch's
     * BEGIN IMMEDIATE.
     */
    dependencyRemove: `UPDATE ${dependencies}
      SET state = ${EdgeState.Removed}, needs_check = 1, settled_at_utc = ${SQLITE_NOW_MS}
      WHERE depends_on IN ${IDS} AND state = ${EdgeState.Waiting}`,

    /**
     * The check pass, step 1: up to `@limit` edges marked `needs_check`, oldest first, through the
     * partial index that holds only those. Lock: the round's BEGIN IMMEDIATE: no move marks or
     * settles an edge until the round commits.
     */
    checkTake: `SELECT job_id, depends_on, state FROM ${dependencies}
      WHERE needs_check = 1
      ORDER BY created_at_utc
      LIMIT @limit`,

    /**
     * The check pass, last step: the edges of `@edges` (a JSON array of `{job_id, depends_on}`,
     * those step 1 took) are no longer marked, once their dependents were sent to the DLQ (or
     * found no longer waiting). A primary-key update per edge. Lock: the round's BEGIN IMMEDIATE.
     */
    checkDone: `UPDATE ${dependencies} SET needs_check = 0
      WHERE (depends_on, job_id) IN (
        SELECT e.value ->> 'depends_on', e.value ->> 'job_id' FROM json_each(@edges) AS e)`,
  };
}

/** The dependency reads, for one prefix. */
export function dependencyReadStatements({ hot, archive, dlq, dependencies }: SqliteTables) {
  return {
    /**
     * getDependencies: job `@id`'s edges both ways, those it waits on (`dir` 'on', by the index on
     * `job_id`) and at most {@link MAX_DEPENDENTS_SHOWN} + 1 of those that wait on it (`dir` 'by',
     * a range of the primary key), each with where the job waited on is now (primary-key probes
     * of the three pillars; 'removed' when none has it). Each side in the other job's id order
     * (TEXT compares byte for byte). Lock: the read's deferred transaction (one WAL snapshot).
     */
    getDependencies: `SELECT x.dir, x.job_id, x.depends_on, x.on_failure, x.state,
        CASE WHEN EXISTS (SELECT 1 FROM ${hot} h WHERE h.id = x.depends_on) THEN 'hot'
             WHEN EXISTS (SELECT 1 FROM ${archive} a WHERE a.id = x.depends_on) THEN 'archive'
             WHEN EXISTS (SELECT 1 FROM ${dlq} d WHERE d.id = x.depends_on) THEN 'dlq'
             ELSE 'removed' END AS pillar
      FROM (
        SELECT * FROM (
          SELECT 'on' AS dir, e.job_id, e.depends_on, e.on_failure, e.state
          FROM ${dependencies} e WHERE e.job_id = @id)
        UNION ALL
        SELECT * FROM (
          SELECT 'by' AS dir, e.job_id, e.depends_on, e.on_failure, e.state
          FROM ${dependencies} e WHERE e.depends_on = @id
          ORDER BY e.job_id LIMIT ${MAX_DEPENDENTS_SHOWN + 1})
      ) AS x
      ORDER BY x.dir, x.depends_on, x.job_id`,
  };
}
