/**
 * What every dialect stores of the dependency graph the same way (the codes of a policy and of an
 * edge's state), the plan of an enqueue's edges from where its dependencies are, and the reading
 * of a job's edges as {@link JobDependencies}. The rules: docs/storage.md, "Dependencies".
 */
import type {
  DependencyCheckResult,
  DependencyPolicy,
  DependencyState,
  DependencyView,
  EnqueueResult,
  JobDependencies,
} from '../../interfaces/job.interface';
import type { ValidatedJob } from '../../validation/validate-job';
import { MAX_DEPENDENTS_SHOWN } from '../../validation/limits';
import { fold } from './row-mapper';

/** The stored code of a dependency's policy (`job_dependencies.on_failure`). */
export enum PolicyCode {
  Block = 0,
  Ignore = 1,
  Cancel = 2,
}

export const POLICY_CODES: Readonly<Record<DependencyPolicy, PolicyCode>> = {
  block: PolicyCode.Block,
  ignore: PolicyCode.Ignore,
  cancel: PolicyCode.Cancel,
};

/** The stored state of an edge (`job_dependencies.state`). */
export enum EdgeState {
  /** Open: its dependency has not settled it (hot, or in the DLQ under `block`). */
  Waiting = 0,
  /** Its dependency reached the Archive. */
  Succeeded = 1,
  /** Its dependency failed under `ignore`. */
  Ignored = 2,
  /** Its dependency failed under `cancel`: the dependent goes to the DLQ. */
  Failed = 3,
  /** Its dependency was deleted (purge, retention) while the edge waited: the dependent goes to the DLQ. */
  Removed = 4,
}

const STATE_NAMES: Readonly<Record<EdgeState, DependencyState>> = {
  [EdgeState.Waiting]: 'waiting',
  [EdgeState.Succeeded]: 'succeeded',
  [EdgeState.Ignored]: 'ignored',
  [EdgeState.Failed]: 'failed',
  [EdgeState.Removed]: 'removed',
};

const POLICY_NAMES = new Map<number, DependencyPolicy>(
  Object.entries(POLICY_CODES).map(([name, code]) => [code, name as DependencyPolicy]),
);

/** Where a dependency was found by an enqueue. */
export type DependencyPillar = 'hot' | 'archive' | 'dlq';

/** One edge an enqueue writes. */
export interface PlannedEdge {
  jobId: string;
  dependsOn: string;
  policy: PolicyCode;
  state: EdgeState;
  /** For the rescue loop's check pass: a dependent to cancel, or a hot dependency to re-read. */
  needsCheck: boolean;
}

/** A job an enqueue made Waiting, with the count it starts from (0: Pending at once). */
export interface PlannedWait {
  jobId: string;
  waitingOn: number;
}

/** What an enqueue writes of its jobs' dependencies ({@link planDependencies}). */
export interface PlannedDependencies {
  edges: PlannedEdge[];
  waits: PlannedWait[];
  /** Dependencies in no table: the enqueue is refused. */
  missing: string[];
  /** True when some edge needs the check pass (run it once the enqueue commits). */
  needsCheck: boolean;
}

/** The jobs among `created` that wait on others. */
export function waitingJobs(jobs: readonly ValidatedJob[]): ValidatedJob[] {
  return jobs.filter((j) => j.dependsOn !== null);
}

/**
 * What an enqueue of `jobs` (with `results` in their order) made: the ids it inserted, and the
 * jobs among those that wait on others, the ones whose edges it writes. By position: of two items
 * with one id, only the one the call inserted counts.
 */
export function createdWaiting(
  jobs: readonly ValidatedJob[],
  results: readonly EnqueueResult[],
): { made: Set<string>; waiting: ValidatedJob[] } {
  const created = jobs.filter((_, i) => results[i].created);
  return { made: new Set(created.map((j) => j.id)), waiting: waitingJobs(created) };
}

/**
 * Where each dependency of `waiting` is, by `read` (one statement that marks hot and DLQ rows as
 * waited on and finds archived ones, answering `[id, pillar]` pairs). An id not found is read
 * once more, in a new statement: a move of it in flight can make the first read skip its hot row
 * while the row the move wrote is not visible to it yet (PostgreSQL's statement snapshot; on SQL
 * Server a resurrect in flight does the same between the DLQ and the hot table).
 */
export async function findDependencies(
  waiting: readonly ValidatedJob[],
  read: (ids: readonly string[]) => Promise<Iterable<readonly [string, DependencyPillar]>>,
): Promise<Map<string, DependencyPillar>> {
  const where = new Map<string, DependencyPillar>();
  let ids = dependencyIds(waiting);
  for (let round = 0; round < 2 && ids.length > 0; round++) {
    for (const [id, pillar] of await read(ids)) where.set(id, pillar);
    ids = ids.filter((id) => !where.has(id));
  }
  return where;
}
/** The distinct ids the jobs wait on, in first-seen order. */
export function dependencyIds(jobs: readonly ValidatedJob[]): string[] {
  const ids = new Set<string>();
  for (const job of jobs) for (const d of job.dependsOn ?? []) ids.add(d.id);
  return [...ids];
}

/**
 * The edges and counts of the waiting jobs an enqueue created, from where each dependency is:
 * hot (or made by the same enqueue) → open; in the Archive → succeeded; in the DLQ → open under
 * `block` (blocked), ignored under `ignore`, failed under `cancel` (the dependent is cancelled by
 * the check pass, and never released: a failed edge keeps its count). A job's count is its open
 * and failed edges; 0 makes it Pending at once.
 *
 * `recheckHot` (PostgreSQL): an edge to a dependency that was hot before this enqueue is marked
 * for the check pass, which re-reads it after commit: a move of that dependency whose statement
 * started before the enqueue committed cannot see the edge.
 */
export function planDependencies(
  waiting: readonly ValidatedJob[],
  where: ReadonlyMap<string, DependencyPillar>,
  made: ReadonlySet<string>,
  recheckHot: boolean,
): PlannedDependencies {
  const edges: PlannedEdge[] = [];
  const waits: PlannedWait[] = [];
  const missing = new Set<string>();
  for (const job of waiting) {
    let count = 0;
    for (const dep of job.dependsOn ?? []) {
      const pillar = where.get(dep.id);
      if (pillar === undefined) {
        missing.add(dep.id);
        continue;
      }
      const policy = POLICY_CODES[dep.policy];
      let state = EdgeState.Waiting;
      let needsCheck = false;
      if (pillar === 'hot') {
        needsCheck = recheckHot && !made.has(dep.id);
      } else if (pillar === 'archive') {
        state = EdgeState.Succeeded;
      } else if (policy === PolicyCode.Ignore) {
        state = EdgeState.Ignored;
      } else if (policy === PolicyCode.Cancel) {
        state = EdgeState.Failed;
        needsCheck = true;
      }
      if (state === EdgeState.Waiting || state === EdgeState.Failed) count++;
      edges.push({ jobId: job.id, dependsOn: dep.id, policy, state, needsCheck });
    }
    waits.push({ jobId: job.id, waitingOn: count });
  }
  return {
    edges,
    waits,
    missing: [...missing],
    needsCheck: edges.some((e) => e.needsCheck),
  };
}

/**
 * A job's edges from the rows of its read: `dir` ('on': it waits on `depends_on`; 'by': `job_id`
 * waits on it), `job_id`, `depends_on`, `on_failure`, `state`, `pillar` (where the dependency is);
 * any case, folded here. At most {@link MAX_DEPENDENTS_SHOWN} dependents, `truncated` when the
 * read found one more.
 */
export function mapDependencies(rows: readonly Record<string, unknown>[]): JobDependencies {
  const dependsOn: DependencyView[] = [];
  const dependents: DependencyView[] = [];
  for (const raw of rows) {
    const row = fold(raw);
    const state = Number(row.state) as EdgeState;
    const pillar = String(row.pillar) as DependencyView['dependencyPillar'];
    const view: DependencyView = {
      jobId: String(row.jobid),
      dependsOn: String(row.dependson),
      onFailure: POLICY_NAMES.get(Number(row.onfailure)) ?? 'block',
      state: STATE_NAMES[state],
      dependencyPillar: pillar,
      blocked: state === EdgeState.Waiting && pillar === 'dlq',
    };
    (String(row.dir) === 'on' ? dependsOn : dependents).push(view);
  }
  const truncated = dependents.length > MAX_DEPENDENTS_SHOWN;
  return { dependsOn, dependents: dependents.slice(0, MAX_DEPENDENTS_SHOWN), truncated };
}

/** Rounds of one `checkDependencies` call: how many levels of a cascade of cancels it follows. */
export const DEPENDENCY_CHECK_ROUNDS = 8;

/** An edge the check pass took (`checkTake`). */
export interface TakenEdge {
  jobId: string;
  dependsOn: string;
  state: EdgeState;
}

/** The edges of a `checkTake` read (`job_id`, `depends_on`, `state`; any case, folded here). */
export function takenEdges(rows: readonly Record<string, unknown>[]): TakenEdge[] {
  return rows.map((raw) => {
    const row = fold(raw);
    return {
      jobId: String(row.jobid),
      dependsOn: String(row.dependson),
      state: Number(row.state) as EdgeState,
    };
  });
}

/**
 * The waiting jobs a round of the check sends to the DLQ: the dependent of each failed or removed
 * edge taken, once, with the error naming the dependency of its first such edge.
 */
export function dependentsToCancel(
  edges: readonly TakenEdge[],
): { jobId: string; error: string }[] {
  return firstEdgePerJob(edges.filter((e) => e.state !== EdgeState.Waiting)).map((e) => ({
    jobId: e.jobId,
    error: dependencyFailedText(e.dependsOn, e.state),
  }));
}

/** What one round of the check did, in its one transaction. */
export interface CheckRound {
  /** Edges it took. */
  taken: number;
  /** Open edges it re-read (PostgreSQL). */
  settled: number;
  /** Waiting jobs it sent to the DLQ. */
  cancelled: string[];
}

/**
 * The rounds of one `checkDependencies` call: `round(index)` runs one in a transaction of its own.
 * A round that took fewer than `limit` edges and cancelled nothing is the last (a full round may
 * have left edges; a round that cancelled jobs marked the `cancel` edges of the jobs waiting on
 * them), and {@link DEPENDENCY_CHECK_ROUNDS} at most: the next call goes on.
 */
export async function checkRounds(
  limit: number,
  round: (index: number) => Promise<CheckRound>,
): Promise<DependencyCheckResult> {
  const result: DependencyCheckResult = { settled: 0, cancelled: [] };
  for (let index = 0; index < DEPENDENCY_CHECK_ROUNDS; index++) {
    const done = await round(index);
    result.settled += done.settled;
    result.cancelled.push(...done.cancelled);
    if (done.taken < limit && done.cancelled.length === 0) break;
  }
  return result;
}

/** The edges to act on, one per dependent (the first taken names the dependency in its error). */
export function firstEdgePerJob<E extends { jobId: string }>(edges: readonly E[]): E[] {
  const seen = new Set<string>();
  return edges.filter((e) => !seen.has(e.jobId) && seen.add(e.jobId));
}

/** The error text of a waiting job sent to the DLQ by its dependency (`DependencyFailed`). */
export function dependencyFailedText(dependsOn: string, state: EdgeState): string {
  return state === EdgeState.Removed
    ? `Dependency ${dependsOn} was removed from the DLQ (purge or retention) while this job ` +
        'waited on it (onFailure: block); the job never ran.'
    : `Dependency ${dependsOn} failed (onFailure: cancel); the job never ran.`;
}
