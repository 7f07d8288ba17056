import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import {
  ChokaQAdmin,
  ChokaQValidationError,
  FailureReason,
  JobClient,
  JobContext,
  JobHandler,
  JobStatus,
  defineJob,
  flowStep,
} from '../../libs/chokaq/src';
import { meterHarness, pointLines } from '../support/metric-reader';
import { describeEachDialect, TestSchema } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';

const Region = defineJob<{ region: string; sales: number }, { sales: number }>(
  'flows',
  'region.v1',
);
const Total = defineJob<{ month: string }, { sales: number }>('flows', 'total.v1');
const Publish = defineJob<{ month: string }>('flows', 'publish.v1');
const Broken = defineJob<{ why: string }>('flows', 'broken.v1');
const Never = defineJob<{ label: string }>('flows', 'never.v1');

/** The order handlers ran in, and what the total read. */
const ran: string[] = [];
const totals: number[] = [];

@Injectable()
class FlowHandlers {
  constructor(private readonly jobs: JobClient) {}

  @JobHandler(Region, { recordResult: true })
  async region({ region, sales }: { region: string; sales: number }): Promise<{ sales: number }> {
    ran.push(`region:${region}`);
    return { sales };
  }

  @JobHandler(Total, { recordResult: true })
  async total(_: { month: string }, ctx: JobContext): Promise<{ sales: number }> {
    const parts = await this.jobs.getDependencyResults<{ sales: number }>(ctx.id);
    const sales = Object.values(parts).reduce((sum, r) => sum + (r?.sales ?? 0), 0);
    ran.push('total');
    totals.push(sales);
    return { sales };
  }

  @JobHandler(Publish)
  async publish(): Promise<void> {
    ran.push('publish');
  }

  @JobHandler(Broken, { maxAttempts: 1 })
  async broken({ why }: { why: string }): Promise<void> {
    throw new Error(why);
  }

  @JobHandler(Never)
  async never({ label }: { label: string }): Promise<void> {
    ran.push(`never:${label}`);
  }
}

/**
 * Workflows end to end (issue 29, part 3): `JobClient.enqueueFlow` with definitions, a worker that
 * runs a fan-out, its fan-in once every region finished (reading their stored results), and the
 * step after it; a failed step under `cancel` and `ignore`; the refusals at enqueue.
 */
describeEachDialect('workflows (dependsOn, enqueueFlow)', ({ name: dialect }) => {
  let db: TestSchema;
  beforeEach(() => {
    db = e2eDatabase(dialect);
    ran.length = 0;
    totals.length = 0;
  });
  afterEach(async () => db.close());

  it('runs a fan-out, then its fan-in with the regions results, then the last step', async () => {
    const app = await bootApp(db, {
      providers: [FlowHandlers],
      options: { rescue: { intervalMs: 200 } },
    });
    try {
      const jobs = app.get(JobClient);
      const admin = app.get(ChokaQAdmin);
      const { jobIds } = await jobs.enqueueFlow({
        east: flowStep(Region, { region: 'east', sales: 3 }),
        west: flowStep(Region, { region: 'west', sales: 4 }),
        total: flowStep(Total, { month: '2026-11' }, { after: ['east', 'west'] }),
        publish: flowStep(Publish, { month: '2026-11' }, { after: ['total'] }),
      });
      expect(Object.keys(jobIds)).toEqual(['east', 'west', 'total', 'publish']);
      await waitFor('the flow to finish', () => ran.includes('publish'), {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      expect(ran.slice(0, 2).sort()).toEqual(['region:east', 'region:west']);
      expect(ran.slice(2)).toEqual(['total', 'publish']);
      expect(totals).toEqual([7]);
      expect(await jobs.getResult(Total, jobIds.total)).toEqual({ sales: 7 });
      const graph = await admin.getDependencies(jobIds.total);
      expect(graph.dependsOn.map((e) => [e.dependsOn, e.state]).sort()).toEqual(
        [
          [jobIds.east, 'succeeded'],
          [jobIds.west, 'succeeded'],
        ].sort(),
      );
      expect(graph.dependents.map((e) => e.jobId)).toEqual([jobIds.publish]);
    } finally {
      await closeAndCheck(app, db);
    }
  });

  it('a failed step: cancel sends its dependent to the DLQ unrun, ignore runs it anyway', async () => {
    const app = await bootApp(db, {
      providers: [FlowHandlers],
      options: { rescue: { intervalMs: 200 } },
    });
    try {
      const jobs = app.get(JobClient);
      const { jobIds } = await jobs.enqueueFlow({
        broken: flowStep(Broken, { why: 'no data' }),
        cancelled: flowStep(
          Never,
          { label: 'cancelled' },
          { after: [{ step: 'broken', onFailure: 'cancel' }] },
        ),
        anyway: flowStep(
          Never,
          { label: 'anyway' },
          { after: [{ step: 'broken', onFailure: 'ignore' }] },
        ),
      });
      await waitFor(
        'the cancel to land',
        async () => (await jobs.getJob(jobIds.cancelled))?.pillar === 'dlq',
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      await waitFor('the ignoring step to run', () => ran.includes('never:anyway'), {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      expect(await jobs.getJob(jobIds.cancelled)).toMatchObject({
        status: JobStatus.Cancelled,
        failureReason: FailureReason.DependencyFailed,
        attemptCount: 0,
      });
      expect(ran).not.toContain('never:cancelled');
    } finally {
      await closeAndCheck(app, db);
    }
  });

  it('counts the jobs a flow enqueued per queue and type', async () => {
    const { provider, collect } = meterHarness();
    const app = await bootApp(db, {
      providers: [FlowHandlers],
      options: { worker: { enabled: false }, metrics: { meterProvider: provider } },
    });
    try {
      await app.get(JobClient).enqueueFlow({
        east: flowStep(Region, { region: 'east', sales: 1 }),
        west: flowStep(Region, { region: 'west', sales: 2 }),
        audit: flowStep('flows.audit', { month: '2026-11' }, { after: ['east', 'west'] }),
      });
      expect(
        pointLines(await collect()).filter((line) => line.startsWith('chokaq.jobs.enqueued')),
      ).toEqual([
        'chokaq.jobs.enqueued{queue=flows,type=region.v1} 2',
        'chokaq.jobs.enqueued{queue=flows.audit,type=flows.audit} 1',
      ]);
    } finally {
      await closeAndCheck(app, db);
    }
  });

  it('refuses a cycle, an unknown step and a key, writing nothing; a flow with ids retries safely', async () => {
    const app = await bootApp(db, {
      providers: [FlowHandlers],
      options: { worker: { enabled: false } },
    });
    try {
      const jobs = app.get(JobClient);
      const admin = app.get(ChokaQAdmin);
      let caught: unknown;
      try {
        await jobs.enqueueFlow({
          a: flowStep(Never, { label: 'a' }, { after: ['b'] }),
          b: flowStep(Never, { label: 'b' }, { after: ['a'] }),
        });
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(ChokaQValidationError);
      expect((caught as ChokaQValidationError).issues.map((i) => i.path)).toEqual([
        'steps.a.dependsOn',
        'steps.b.dependsOn',
      ]);
      await expect(
        jobs.enqueueFlow({ a: flowStep(Never, { label: 'a' }, { after: ['nope'] }) }),
      ).rejects.toThrow('steps.a.after[0]');
      await expect(
        jobs.enqueueFlow({
          a: flowStep(Never, { label: 'a' }, { idempotencyKey: 'k' } as never),
        }),
      ).rejects.toThrow('steps.a.idempotencyKey');
      expect((await admin.getSummary()).waiting).toBe(0);
      expect((await admin.getSummary()).pending).toBe(0);
      // With ids of their own, a retried flow makes none of its steps twice.
      const steps = () => ({
        a: flowStep(Never, { label: 'a' }, { id: ids.a }),
        b: flowStep(Never, { label: 'b' }, { id: ids.b, after: ['a'] }),
      });
      const ids = { a: randomUUID(), b: randomUUID() };
      expect((await jobs.enqueueFlow(steps())).jobIds).toEqual(ids);
      expect((await jobs.enqueueFlow(steps())).jobIds).toEqual(ids);
      expect(await admin.getSummary()).toMatchObject({ pending: 1, waiting: 1 });
      expect((await admin.getDependencies(ids.b)).dependsOn).toHaveLength(1);
    } finally {
      await closeAndCheck(app, db);
    }
  });
});
