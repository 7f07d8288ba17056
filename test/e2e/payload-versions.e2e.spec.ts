import { INestApplication, Injectable, Type } from '@nestjs/common';
import * as v from 'valibot';
import { z } from 'zod';
import {
  ChokaQAdmin,
  ChokaQPayloadValidationError,
  FailureReason,
  JobClient,
  JobContext,
  JobHandler,
  JobStatus,
  defineJob,
} from '../../libs/chokaq/src';
import { TestSchema, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';

/**
 * Versioned payloads on real storage and real workers: a definition's `version` is stored with
 * each job it enqueues; a handler of version 3 runs payloads enqueued as version 1 or 2 through the
 * upgrade chain, then its schema, and the stored payload stays as it was; a process whose handler
 * runs version 1 never claims a version 2 job (it stays Pending with no attempt spent while older
 * jobs behind it run), and a process of the newer release runs it later; an upgrade step that
 * throws sends its job to the DLQ at once as FatalError.
 */

const QUEUE = 'versions-e2e';

/** Version 1: one `name`. */
const ProfileV1 = defineJob(QUEUE, 'profile', { schema: z.object({ name: z.string().min(1) }) });
/** Version 2: `first` and `last`; a version 1 payload is split. */
const ProfileV2 = defineJob(QUEUE, 'profile', {
  version: 2,
  schema: z.object({ first: z.string(), last: z.string() }),
  upgrade: {
    1: (p: { name: string }) => {
      const [first, ...rest] = p.name.split(' ');
      return { first, last: rest.join(' ') };
    },
  },
});
/** Version 3 (valibot): `tags` as well; version 2 gains them asynchronously. */
const ProfileV3 = defineJob(QUEUE, 'profile', {
  version: 3,
  schema: v.object({
    first: v.string(),
    last: v.pipe(v.string(), v.minLength(1)),
    tags: v.array(v.string()),
  }),
  upgrade: {
    ...ProfileV2.upgrade,
    2: async (p: { first: string; last: string }) => ({ ...p, tags: ['upgraded'] }),
  },
});
/** A version 2 whose only step throws. */
const BrokenV1 = defineJob<{ name: string }>(QUEUE, 'broken');
const BrokenV2 = defineJob<{ first: string }>(QUEUE, 'broken', {
  version: 2,
  upgrade: {
    1: () => {
      throw new TypeError('no name to split');
    },
  },
});

@Injectable()
class Received {
  readonly runs: Array<{ pod: string; id: string; payload: unknown }> = [];
}

/** A pod of the previous release: its handler runs version 1 only. */
@Injectable()
class OldPod {
  constructor(private readonly received: Received) {}

  @JobHandler(ProfileV1)
  profile(payload: { name: string }, ctx: JobContext): void {
    this.received.runs.push({ pod: 'old', id: ctx.id, payload });
  }
}

/** A pod of this release: version 3, and the broken definition's version 2. */
@Injectable()
class NewPod {
  constructor(private readonly received: Received) {}

  @JobHandler(ProfileV3)
  profile(payload: { first: string; last: string; tags: string[] }, ctx: JobContext): void {
    this.received.runs.push({ pod: 'new', id: ctx.id, payload });
  }

  @JobHandler(BrokenV2)
  broken(payload: { first: string }, ctx: JobContext): void {
    this.received.runs.push({ pod: 'new', id: ctx.id, payload });
  }
}

describeEachDialect('versioned payloads', ({ name: dialect }) => {
  let db: TestSchema;
  let app: INestApplication | undefined;

  beforeEach(() => {
    db = e2eDatabase(dialect);
  });

  afterEach(async () => {
    if (app) await closeAndCheck(app, db);
    app = undefined;
    await db.close();
  });

  async function boot(pod: Type<unknown>): Promise<{ jobs: JobClient; received: Received }> {
    if (app) await closeAndCheck(app, db);
    app = await bootApp(db, { providers: [Received, pod] });
    return { jobs: app.get(JobClient), received: app.get(Received) };
  }

  const settled = (jobs: JobClient, id: string) =>
    waitFor(`job ${id} to leave the hot table`, async () => {
      const job = await jobs.getJob(id);
      return job && job.pillar !== 'hot' ? job : undefined;
    });

  it('stores the version of the definition that enqueued the job, 1 without one', async () => {
    const { jobs } = await boot(NewPod);
    // Delayed, so they stay where enqueue put them.
    const later = { delayMs: 3_600_000 };
    const v3 = await jobs.enqueue(ProfileV3, { first: 'Ada', last: 'Lovelace', tags: [] }, later);
    const v1 = await jobs.enqueue(ProfileV1, { name: 'Ada Lovelace' }, later);
    const plain = await jobs.enqueue(QUEUE, { any: true }, { ...later, type: 'profile' });
    expect(await jobs.getJob(v3)).toMatchObject({ payloadVersion: 3 });
    expect(await jobs.getJob(v1)).toMatchObject({ payloadVersion: 1 });
    expect(await jobs.getJob(plain)).toMatchObject({ payloadVersion: 1 });
    expect(await db.count('hot', 'payload_version = 3')).toBe(1);
  });

  it('stores an edited payload under the version of the definition (or the handler) that checked it', async () => {
    const { jobs } = await boot(NewPod);
    const admin = app!.get(ChokaQAdmin);
    const later = { delayMs: 3_600_000 };
    const id = await jobs.enqueue(ProfileV1, { name: 'Ada Lovelace' }, later);
    await jobs.updatePending(ProfileV2, id, { payload: { first: 'Ada', last: 'King' } });
    expect(await jobs.getJob(id)).toMatchObject({
      payloadVersion: 2,
      payload: { first: 'Ada', last: 'King' },
    });
    // The admin checks by the handler this pod registers (version 3) and stores its version.
    await expect(admin.updatePending(id, { payload: { first: 'Ada' } })).rejects.toMatchObject({
      name: 'ChokaQPayloadValidationError',
    });
    await admin.updatePending(id, { payload: { first: 'Ada', last: 'King', tags: ['x'] } });
    expect(await jobs.getJob(id)).toMatchObject({ payloadVersion: 3 });
    // Edits without a payload keep its version.
    await admin.updatePending(id, { priority: 1 });
    expect(await jobs.getJob(id)).toMatchObject({ payloadVersion: 3, priority: 1 });
  });

  it('refuses at enqueue a payload the version’s schema rejects, writing nothing', async () => {
    const { jobs } = await boot(NewPod);
    await expect(
      jobs.enqueue(ProfileV3, { first: 'Ada', last: '', tags: [] }),
    ).rejects.toBeInstanceOf(ChokaQPayloadValidationError);
    expect(await db.count('hot')).toBe(0);
  });

  it('runs a version 1 payload through the chain 1 → 2 → 3 and the schema; the stored payload is unchanged', async () => {
    const { jobs, received } = await boot(NewPod);
    const id = await jobs.enqueue(ProfileV1, { name: 'Ada King Lovelace' });
    expect(await settled(jobs, id)).toMatchObject({
      pillar: 'archive',
      attemptCount: 1,
      payloadVersion: 1,
      payload: { name: 'Ada King Lovelace' },
    });
    expect(received.runs).toEqual([
      { pod: 'new', id, payload: { first: 'Ada', last: 'King Lovelace', tags: ['upgraded'] } },
    ]);
  });

  it('sends a stored payload whose upgrade fails the newer schema to the DLQ as FatalError', async () => {
    const { jobs, received } = await boot(NewPod);
    // A one-word name upgrades to an empty `last`, which version 3's schema refuses.
    const id = await jobs.enqueue(ProfileV1, { name: 'Plato' });
    const job = await settled(jobs, id);
    expect(job).toMatchObject({
      pillar: 'dlq',
      status: JobStatus.Failed,
      failureReason: FailureReason.FatalError,
      attemptCount: 1,
      payloadVersion: 1,
      payload: { name: 'Plato' },
    });
    expect(job.errorDetails).toContain('ChokaQPayloadValidationError');
    expect(job.errorDetails).toMatch(/payload\.last: /);
    expect(received.runs).toEqual([]);
  });

  it('sends a job whose upgrade step throws to the DLQ at once as FatalError, naming the step', async () => {
    const { jobs, received } = await boot(NewPod);
    const id = await jobs.enqueue(BrokenV1, { name: 'Ada' });
    const job = await settled(jobs, id);
    expect(job).toMatchObject({
      pillar: 'dlq',
      failureReason: FailureReason.FatalError,
      attemptCount: 1,
      payload: { name: 'Ada' },
    });
    expect(job.errorDetails).toContain(
      `ChokaQPayloadVersionError: Payload of ${QUEUE}/broken stored as version 1 could not be brought to version 2: its upgrade step 1 → 2 threw: TypeError: no name to split`,
    );
    expect(received.runs).toEqual([]);
  });

  it('an old pod never claims a newer version: it stays Pending, no attempt spent, while a job behind it runs; the new pod runs it', async () => {
    const old = await boot(OldPod);
    // The version 2 job comes first in claim order (higher priority, enqueued first).
    const newer = await old.jobs.enqueue(
      ProfileV2,
      { first: 'Grace', last: 'Hopper' },
      { priority: 100 },
    );
    const older = await old.jobs.enqueue(ProfileV1, { name: 'Alan Turing' });
    expect(await settled(old.jobs, older)).toMatchObject({ pillar: 'archive', attemptCount: 1 });
    expect(old.received.runs).toEqual([
      { pod: 'old', id: older, payload: { name: 'Alan Turing' } },
    ]);
    expect(await old.jobs.getJob(newer)).toMatchObject({
      pillar: 'hot',
      status: JobStatus.Pending,
      attemptCount: 0,
      workerId: null,
      payloadVersion: 2,
    });

    // The rolling deploy reaches this pod: the newer release runs it (2 → 3).
    const fresh = await boot(NewPod);
    expect(await settled(fresh.jobs, newer)).toMatchObject({
      pillar: 'archive',
      attemptCount: 1,
      payload: { first: 'Grace', last: 'Hopper' },
    });
    expect(fresh.received.runs).toEqual([
      { pod: 'new', id: newer, payload: { first: 'Grace', last: 'Hopper', tags: ['upgraded'] } },
    ]);
  });
});
