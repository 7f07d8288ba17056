import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  ChokaQAdmin,
  FailureReason,
  JobClient,
  JobContext,
  JobHandler,
  defineJob,
  getJobStorageToken,
} from '../../libs/chokaq/src';
import type { JobStorage } from '../../libs/chokaq/src/storage';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';
import { TestSchema, describeEachDialect } from '../support/test-database';

const Idempotent = defineJob<{ n: number }>('zombies', 'idempotent.v1');
const Charge = defineJob<{ n: number }>('zombies', 'charge.v1');

@Injectable()
class ZombieHandlers {
  readonly runs: Array<{ type: string; attempt: number }> = [];

  @JobHandler(Idempotent, { retryZombies: true })
  async idempotent(_payload: { n: number }, ctx: JobContext): Promise<void> {
    this.runs.push({ type: ctx.type, attempt: ctx.attempt });
  }

  @JobHandler(Charge)
  async charge(_payload: { n: number }, ctx: JobContext): Promise<void> {
    this.runs.push({ type: ctx.type, attempt: ctx.attempt });
  }
}

/**
 * `@JobHandler(def, { retryZombies: true })` reaches the rescue: a process hosting that handler
 * returns its zombie to Pending (and then runs it again, attempt kept), while a zombie of another
 * handler of the same queue goes to the DLQ as Zombie. The zombies belong to a worker that is gone:
 * they were claimed and started under a worker id no process runs, and their heartbeat ages past
 * the rescuing app's zombie timeout.
 */
describeEachDialect('@JobHandler retryZombies', ({ name: dialect }) => {
  let db: TestSchema;
  beforeEach(() => (db = e2eDatabase(dialect)));
  afterEach(async () => db.close());

  it('a zombie of an opted-in handler is retried; another type of the same queue goes to the DLQ', async () => {
    // A producer with no worker creates the zombies: claimed and started by a dead worker.
    const producer = await bootApp(db, { options: { worker: { enabled: false } } });
    const jobs = producer.get(JobClient);
    const retried = await jobs.enqueue(Idempotent, { n: 1 });
    const dead = await jobs.enqueue(Charge, { n: 2 });
    const storage = producer.get<JobStorage>(getJobStorageToken());
    const claimed = await storage.fetchNextBatch({
      workerId: 'dead-worker',
      leaseId: randomUUID(),
      limit: 2,
      start: 2,
      handled: { queues: ['zombies'], types: [] },
    });
    expect(claimed.map((j) => j.id).sort()).toEqual([retried, dead].sort());
    await producer.close();

    const app = await bootApp(db, {
      providers: [ZombieHandlers],
      options: { rescue: { intervalMs: 200, fetchedJobTimeoutMs: 1_000, zombieTimeoutMs: 1_000 } },
    });
    const client = app.get(JobClient);
    await waitFor(
      'both zombies to leave the hot table',
      async () =>
        (await client.getJob(retried))?.pillar !== 'hot' &&
        (await client.getJob(dead))?.pillar !== 'hot',
      { timeoutMs: 20_000, intervalMs: 50 },
    );

    expect(await client.getJob(dead)).toMatchObject({
      pillar: 'dlq',
      failureReason: FailureReason.Zombie,
    });
    // Retried by the rescue (attempt 1 kept), then claimed and run again here as attempt 2.
    expect(await client.getJob(retried)).toMatchObject({ pillar: 'archive', attemptCount: 2 });
    expect(app.get(ZombieHandlers).runs).toEqual([{ type: 'idempotent.v1', attempt: 2 }]);
    // The attempt history: each lost run is one row naming the dead worker; the run that
    // succeeded here is the archive row, not an attempt row.
    const admin = app.get(ChokaQAdmin);
    for (const id of [dead, retried]) {
      const view = await admin.getJob(id, { attempts: true });
      expect(view?.attempts).toEqual([
        expect.objectContaining({ seq: 1, attempt: 1, outcome: 'zombie', workerId: 'dead-worker' }),
      ]);
    }
    await closeAndCheck(app, db);
  });
});
