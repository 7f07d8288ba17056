import { validateNewJobs } from '../../validation/validate-job';
import {
  EdgeState,
  PolicyCode,
  dependencyFailedText,
  dependencyIds,
  firstEdgePerJob,
  mapDependencies,
  planDependencies,
  waitingJobs,
} from './dependencies';
import { uuidv7 } from '../../common/uuid';

const [hot, archived, dead, member, missing] = Array.from({ length: 5 }, () => uuidv7());
const where = new Map([
  [hot, 'hot' as const],
  [archived, 'archive' as const],
  [dead, 'dlq' as const],
  [member, 'hot' as const],
]);

describe('planDependencies', () => {
  const [j1, j2, j3] = validateNewJobs([
    { queue: 'q', dependsOn: [hot, archived, member] },
    { queue: 'q', dependsOn: [dead] },
    {
      queue: 'q',
      dependsOn: [
        { jobId: dead, onFailure: 'ignore' },
        { jobId: archived, onFailure: 'cancel' },
      ],
    },
  ]);

  it('makes each edge from where its dependency is, and counts the open and failed ones', () => {
    const plan = planDependencies([j1, j2, j3], where, new Set([member]), true);
    expect(plan.edges).toEqual([
      {
        jobId: j1.id,
        dependsOn: hot,
        policy: PolicyCode.Block,
        state: EdgeState.Waiting,
        needsCheck: true,
      },
      {
        jobId: j1.id,
        dependsOn: archived,
        policy: PolicyCode.Block,
        state: EdgeState.Succeeded,
        needsCheck: false,
      },
      // Made by the same enqueue: its move cannot have started before the commit.
      {
        jobId: j1.id,
        dependsOn: member,
        policy: PolicyCode.Block,
        state: EdgeState.Waiting,
        needsCheck: false,
      },
      {
        jobId: j2.id,
        dependsOn: dead,
        policy: PolicyCode.Block,
        state: EdgeState.Waiting,
        needsCheck: false,
      },
      {
        jobId: j3.id,
        dependsOn: dead,
        policy: PolicyCode.Ignore,
        state: EdgeState.Ignored,
        needsCheck: false,
      },
      {
        jobId: j3.id,
        dependsOn: archived,
        policy: PolicyCode.Cancel,
        state: EdgeState.Succeeded,
        needsCheck: false,
      },
    ]);
    expect(plan.waits).toEqual([
      { jobId: j1.id, waitingOn: 2 },
      { jobId: j2.id, waitingOn: 1 },
      { jobId: j3.id, waitingOn: 0 },
    ]);
    expect(plan).toMatchObject({ missing: [], needsCheck: true });
  });

  it('a cancel edge to a failed dependency is failed, counted, and needs the check', () => {
    const [job] = validateNewJobs([
      { queue: 'q', dependsOn: [{ jobId: dead, onFailure: 'cancel' }] },
    ]);
    const plan = planDependencies([job], where, new Set(), false);
    expect(plan.edges[0]).toMatchObject({ state: EdgeState.Failed, needsCheck: true });
    expect(plan.waits).toEqual([{ jobId: job.id, waitingOn: 1 }]);
    expect(plan.needsCheck).toBe(true);
  });

  it('without recheckHot no edge to a hot dependency is marked; missing ids are listed once', () => {
    const [a, b] = validateNewJobs([
      { queue: 'q', dependsOn: [hot, missing] },
      { queue: 'q', dependsOn: [missing] },
    ]);
    const plan = planDependencies([a, b], where, new Set(), false);
    expect(plan.missing).toEqual([missing]);
    expect(plan.needsCheck).toBe(false);
    expect(plan.edges.map((e) => e.dependsOn)).toEqual([hot]);
  });

  it('lists the waiting jobs and their distinct dependencies', () => {
    const jobs = validateNewJobs([
      { queue: 'q' },
      { queue: 'q', dependsOn: [hot, dead] },
      { queue: 'q', dependsOn: [dead] },
    ]);
    expect(waitingJobs(jobs)).toEqual([jobs[1], jobs[2]]);
    expect(dependencyIds(jobs)).toEqual([hot, dead]);
  });
});

describe('mapDependencies', () => {
  it('reads both directions, blocked only for a waiting edge on a DLQ dependency, any case', () => {
    const row = (dir: string, state: number, pillar: string, onFailure = 0) => ({
      Dir: dir,
      JobId: 'j',
      DependsOn: 'd',
      OnFailure: onFailure,
      State: state,
      Pillar: pillar,
    });
    const graph = mapDependencies([
      row('on', EdgeState.Waiting, 'dlq'),
      row('on', EdgeState.Failed, 'dlq', 2),
      row('by', EdgeState.Waiting, 'hot', 1),
      row('by', EdgeState.Removed, 'removed'),
    ]);
    expect(graph.dependsOn.map((e) => [e.state, e.onFailure, e.blocked])).toEqual([
      ['waiting', 'block', true],
      ['failed', 'cancel', false],
    ]);
    expect(
      graph.dependents.map((e) => [e.state, e.onFailure, e.blocked, e.dependencyPillar]),
    ).toEqual([
      ['waiting', 'ignore', false, 'hot'],
      ['removed', 'block', false, 'removed'],
    ]);
    expect(graph.truncated).toBe(false);
  });

  it('keeps at most 1,000 dependents and says when there were more', () => {
    const rows = Array.from({ length: 1_001 }, () => ({
      dir: 'by',
      job_id: 'j',
      depends_on: 'd',
      on_failure: 0,
      state: 0,
      pillar: 'hot',
    }));
    const graph = mapDependencies(rows);
    expect(graph.dependents).toHaveLength(1_000);
    expect(graph.truncated).toBe(true);
    expect(mapDependencies(rows.slice(0, 1_000)).truncated).toBe(false);
  });
});

describe('the check pass helpers', () => {
  it('acts on the first edge of each dependent, and names the dependency and why', () => {
    const edges = [
      { jobId: 'a', n: 1 },
      { jobId: 'b', n: 2 },
      { jobId: 'a', n: 3 },
    ];
    expect(firstEdgePerJob(edges)).toEqual([edges[0], edges[1]]);
    expect(dependencyFailedText('d1', EdgeState.Failed)).toBe(
      'Dependency d1 failed (onFailure: cancel); the job never ran.',
    );
    expect(dependencyFailedText('d2', EdgeState.Removed)).toBe(
      'Dependency d2 was removed from the DLQ (purge or retention) while this job waited on it ' +
        '(onFailure: block); the job never ran.',
    );
  });
});
