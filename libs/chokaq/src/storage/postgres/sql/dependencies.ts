/**
 * Dependencies: where an enqueue's dependencies are (marking them as waited on), the edges and the
 * waiting jobs it writes, the settle step every move out of the hot table runs in its own
 * statement, the steps of a purge, the check pass, and the reads of a job's edges. The rules:
 * docs/storage.md, "Dependencies".
 */
import type { PlannedDependencies } from '../../shared/dependencies';
import { EdgeState, PolicyCode } from '../../shared/dependencies';
import { MAX_DEPENDENTS_SHOWN } from '../../../validation/limits';

/**
 * Where each of $1 (job ids) is: `hot` or `dlq`, each row marked `has_dependents` (and locked by
 * that update until the enqueue commits), or `archive`. An id in no table is not returned.
 *
 * Lock/isolation: READ COMMITTED. A hot row that a move is deleting right now makes the update
 * wait, then skip the row (gone); the statement's snapshot predates that move, so its Archive or
 * DLQ row is not visible either: the caller reads the missing ids once more, in a new statement
 * ({@link locateDependencies} again), before it calls them missing. A row marked here is seen
 * marked by every later move of it (its `RETURNING j.*` reads the row it locked).
 */
export const locateDependencies = (s: string): string => `
WITH hot AS (
  UPDATE ${s}.jobs_hot j SET has_dependents = true
  WHERE j.id = ANY ($1::text[])
  RETURNING j.id
),
dlq AS (
  UPDATE ${s}.jobs_dlq d SET has_dependents = true
  WHERE d.id = ANY ($1::text[])
  RETURNING d.id
)
SELECT id, 'hot' AS pillar FROM hot
UNION ALL
SELECT id, 'dlq' FROM dlq
UNION ALL
SELECT a.id, 'archive' FROM ${s}.jobs_archive a WHERE a.id = ANY ($1::text[])`;

/** Binds {@link locateDependencies}: $1 the dependencies' ids. */
export function locateDependenciesParams(ids: readonly string[]): unknown[] {
  return [ids];
}

/**
 * Writes the planned edges ($1 job, $2 dependency, $3 policy, $4 state, $5 needs_check: parallel
 * arrays) and sets each waiting job's count ($6 ids, $7 counts): a job that counts none is Pending
 * at once, the others stay Waiting. The jobs were inserted Waiting by the same transaction.
 */
export const insertDependencies = (s: string): string => `
WITH edges AS (
  INSERT INTO ${s}.job_dependencies (job_id, depends_on, on_failure, state, needs_check,
                                     created_at_utc, settled_at_utc)
  SELECT e.job_id, e.depends_on, e.on_failure, e.state, e.needs_check, now(),
         CASE WHEN e.state <> ${EdgeState.Waiting} THEN now() END
  FROM unnest($1::text[], $2::text[], $3::smallint[], $4::smallint[], $5::boolean[])
    AS e(job_id, depends_on, on_failure, state, needs_check)
  ON CONFLICT DO NOTHING
)
UPDATE ${s}.jobs_hot j
SET waiting_on = w.n,
    status = CASE WHEN w.n = 0 THEN 0 ELSE 7 END,
    last_updated_utc = now()
FROM unnest($6::text[], $7::int[]) AS w(id, n)
WHERE j.id = w.id AND j.status = 7`;

/** Binds {@link insertDependencies} from the plan (`shared/dependencies.ts`). */
export function insertDependenciesParams(plan: PlannedDependencies): unknown[] {
  const { edges, waits } = plan;
  return [
    edges.map((e) => e.jobId),
    edges.map((e) => e.dependsOn),
    edges.map((e) => e.policy),
    edges.map((e) => e.state),
    edges.map((e) => e.needsCheck),
    waits.map((w) => w.jobId),
    waits.map((w) => w.waitingOn),
  ];
}

/**
 * The settle step of a move out of the hot table, as CTEs of the move's own statement (a leading
 * comma included, to follow its last CTE). `moved` yields `(id, has_dependents, ok)` per moved
 * row, `ok` true for the Archive. For each moved row marked `has_dependents`, its open edges
 * settle: an archived dependency satisfies them; a failed one (DLQ) leaves `block` edges open,
 * satisfies `ignore` ones, and marks `cancel` ones failed, for the check pass to cancel their
 * dependent (a failed edge keeps its count, so that dependent is never released). Each waiting
 * dependent's count drops by its satisfied edges, and the one that reaches 0 is Pending in this
 * statement, its `enqueued_at_utc` (the clock of `maxJobAge`) restarted.
 *
 * Lock/isolation: the edge UPDATE locks the edges; the dependents' hot rows are locked in id order
 * (`dep_locked`: ORDER BY below FOR UPDATE, so rows are locked as the sort returns them), so two
 * moves that each settle edges of the same dependents (every child of two fan-ins) take those
 * locks in one order and cannot deadlock. Two moves that settle the last two dependencies of one
 * job at once serialise on its row, and the second re-reads it as the first committed it
 * (EvalPlanQual), so exactly one of them sees the count reach 0. A dependent the same statement moves (a cancel of both) is deleted by it; its update
 * here finds the row already changed by this command and is skipped. Rows without
 * `has_dependents` are filtered out before any edge is looked up: a plain job's move reads nothing
 * more.
 */
export const dependencySettle = (s: string, moved: string): string => `,
dep_edges AS (
  UPDATE ${s}.job_dependencies e
  SET state = CASE WHEN m.ok THEN ${EdgeState.Succeeded}
                   WHEN e.on_failure = ${PolicyCode.Ignore} THEN ${EdgeState.Ignored}
                   ELSE ${EdgeState.Failed} END,
      needs_check = NOT m.ok AND e.on_failure = ${PolicyCode.Cancel},
      settled_at_utc = now()
  FROM (${moved}) m
  WHERE m.has_dependents AND e.depends_on = m.id AND e.state = ${EdgeState.Waiting}
    AND (m.ok OR e.on_failure <> ${PolicyCode.Block})
  RETURNING e.job_id, e.state
),
dep_counts AS (
  SELECT job_id, count(*) AS n FROM dep_edges
  WHERE state IN (${EdgeState.Succeeded}, ${EdgeState.Ignored}) GROUP BY job_id
),
dep_locked AS (
  SELECT j.id FROM ${s}.jobs_hot j JOIN dep_counts d ON d.job_id = j.id
  WHERE j.status = 7
  ORDER BY j.id
  FOR UPDATE OF j
),
dep_released AS (
  UPDATE ${s}.jobs_hot j
  SET waiting_on = j.waiting_on - d.n,
      status = CASE WHEN j.waiting_on - d.n = 0 THEN 0 ELSE 7 END,
      enqueued_at_utc = CASE WHEN j.waiting_on - d.n = 0 THEN now() ELSE j.enqueued_at_utc END,
      last_updated_utc = now()
  FROM dep_counts d
  WHERE j.id = d.job_id AND j.status = 7 AND j.id IN (SELECT id FROM dep_locked)
)`;

/**
 * The dependency steps of a purge or retention run that deletes rows from a pillar, as CTEs of
 * its statement (a leading comma included). `gone` names its CTE of deleted rows, with `id`,
 * `has_dependents` and `waiting_on`. A deleted dependency's open edges (`block`: its dependent
 * waited while it sat in the DLQ) become `removed`, for the check pass to send the dependent to
 * the DLQ; a deleted dependent's own edges go with it (its dependencies keep theirs). An edge whose
 * two ends are deleted together is only deleted. Rows that never had edges are filtered out before
 * any edge is looked up.
 */
export const dependencyRemove = (s: string, gone: string): string => `,
dep_removed AS (
  UPDATE ${s}.job_dependencies e
  SET state = ${EdgeState.Removed}, needs_check = true, settled_at_utc = now()
  FROM ${gone} g
  WHERE g.has_dependents AND e.depends_on = g.id AND e.state = ${EdgeState.Waiting}
    AND NOT EXISTS (SELECT 1 FROM ${gone} x WHERE x.id = e.job_id AND x.waiting_on IS NOT NULL)
),
dep_dropped AS (
  DELETE FROM ${s}.job_dependencies e
  USING ${gone} g
  WHERE g.waiting_on IS NOT NULL AND e.job_id = g.id
)`;

/**
 * The check pass, step 1: up to $1 edges marked `needs_check`, oldest first, locked (SKIP LOCKED:
 * two passes never take one edge), each with its dependency's hot row locked FOR KEY SHARE when
 * it still has one. That lock waits for a move of the dependency in flight, whose statement may
 * predate the edge (its snapshot then misses it), so after this statement every move of the
 * dependency either committed (step 2 reads where it went) or has yet to start (and will see the
 * edge, committed before this pass began). `dependency_hot` is what makes the statement run
 * `held`: PostgreSQL runs a SELECT of a WITH clause only when the query reads it.
 */
export const checkTake = (s: string): string => `
WITH taken AS MATERIALIZED (
  SELECT e.job_id, e.depends_on, e.state
  FROM ${s}.job_dependencies e
  WHERE e.needs_check
  ORDER BY e.created_at_utc
  LIMIT $1
  FOR UPDATE SKIP LOCKED
),
held AS MATERIALIZED (
  SELECT h.id FROM ${s}.jobs_hot h
  WHERE h.id IN (SELECT depends_on FROM taken WHERE state = ${EdgeState.Waiting})
  FOR KEY SHARE
)
SELECT t.job_id, t.depends_on, t.state,
       EXISTS (SELECT 1 FROM held WHERE held.id = t.depends_on) AS dependency_hot
FROM taken t`;

/** Binds {@link checkTake}: $1 the most edges. */
export function checkTakeParams(limit: number): unknown[] {
  return [limit];
}

/**
 * The check pass, step 2 (a new statement: its snapshot sees every move step 1 waited for): the
 * open edges of the dependencies $1 (those of the open edges step 1 took) that left the hot table
 * are settled as their move would have settled them ({@link dependencySettle}). Returns nothing.
 */
export const checkSettle = (s: string): string => `
WITH settled AS (
  SELECT a.id, true AS has_dependents, true AS ok FROM ${s}.jobs_archive a
  WHERE a.id = ANY ($1::text[])
  UNION ALL
  SELECT d.id, true, false FROM ${s}.jobs_dlq d WHERE d.id = ANY ($1::text[])
)${dependencySettle(s, 'SELECT * FROM settled')}
SELECT 1 WHERE false`;

/** Binds {@link checkSettle}: $1 the dependencies of the open edges step 1 took. */
export function checkSettleParams(edges: readonly { dependsOn: string }[]): unknown[] {
  return [[...new Set(edges.map((e) => e.dependsOn))]];
}

/**
 * The check pass, last step (a statement of its own, after step 2 and the cancels): the edges
 * among $1 × $2 still in the state they were taken in ($3) are no longer marked. That unmarks the
 * failed and removed ones whose dependent was acted on, and the open ones that still wait (their
 * dependency hot, whose next move sees them, or in the DLQ under `block`); an open edge step 2
 * failed under `cancel` keeps its mark, for the next round.
 */
export const checkDone = (s: string): string => `
UPDATE ${s}.job_dependencies e SET needs_check = false
FROM unnest($1::text[], $2::text[], $3::smallint[]) AS p(job_id, depends_on, state)
WHERE e.job_id = p.job_id AND e.depends_on = p.depends_on AND e.state = p.state`;

/** Binds {@link checkDone}: the edges taken, with the state each was taken in. */
export function checkDoneParams(
  edges: readonly { jobId: string; dependsOn: string; state: number }[],
): unknown[] {
  return [edges.map((e) => e.jobId), edges.map((e) => e.dependsOn), edges.map((e) => e.state)];
}

/**
 * A job's edges both ways: those it waits on (`dir` 'on') and, at most
 * {@link MAX_DEPENDENTS_SHOWN} + 1, those that wait on it (`dir` 'by'), each with where the other
 * job is now. A plain READ COMMITTED read.
 */
export const getDependencies = (s: string): string => `
SELECT x.dir, x.job_id, x.depends_on, x.on_failure, x.state,
       CASE WHEN EXISTS (SELECT 1 FROM ${s}.jobs_hot h WHERE h.id = x.depends_on) THEN 'hot'
            WHEN EXISTS (SELECT 1 FROM ${s}.jobs_archive a WHERE a.id = x.depends_on) THEN 'archive'
            WHEN EXISTS (SELECT 1 FROM ${s}.jobs_dlq d WHERE d.id = x.depends_on) THEN 'dlq'
            ELSE 'removed' END AS pillar
FROM (
  (SELECT 'on' AS dir, e.job_id, e.depends_on, e.on_failure, e.state
   FROM ${s}.job_dependencies e WHERE e.job_id = $1
   ORDER BY e.depends_on)
  UNION ALL
  (SELECT 'by', e.job_id, e.depends_on, e.on_failure, e.state
   FROM ${s}.job_dependencies e WHERE e.depends_on = $1
   ORDER BY e.job_id LIMIT ${MAX_DEPENDENTS_SHOWN + 1})
) x`;

/** Binds {@link getDependencies}: $1 the job's id. */
export function getDependenciesParams(id: string): unknown[] {
  return [id];
}
