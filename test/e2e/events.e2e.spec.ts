import { INestApplication, Injectable } from '@nestjs/common';
import {
  ChokaQAdmin,
  FailureReason,
  JobClient,
  JobContext,
  JobEvent,
  JobEvents,
  JobHandler,
  OnJobEvent,
  defineJob,
} from '../../libs/chokaq/src';
import { bootApp, closeAndCheck, e2eDatabase } from './support/e2e-app';
import { TestSchema, describeEachDialect } from '../support/test-database';
import { Gate, waitFor } from '../support/wait-for';

const Ok = defineJob<{ n: number }>('events', 'ok');
const Flaky = defineJob<Record<string, never>>('events', 'flaky');
const Broken = defineJob<Record<string, never>>('events', 'broken');
const Held = defineJob<Record<string, never>>('events', 'held');
const Other = defineJob<Record<string, never>>('other', 'ok');

@Injectable()
class Handlers {
  readonly held = new Gate();
  readonly started = new Set<string>();

  @JobHandler(Ok)
  async ok(_p: { n: number }, ctx: JobContext): Promise<void> {
    await ctx.reportProgress(50, 'half way');
  }

  @JobHandler(Flaky)
  flaky(_p: unknown, ctx: JobContext): void {
    if (ctx.attempt === 1) throw new Error('first attempt fails');
  }

  @JobHandler(Broken, { maxAttempts: 2 })
  broken(): void {
    throw new Error('always broken');
  }

  /** Runs until it is cancelled (cooperative: it rejects with its signal's reason). */
  @JobHandler(Held)
  async heldJob(_p: unknown, ctx: JobContext): Promise<void> {
    this.started.add(ctx.id);
    await new Promise((_, reject) => {
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
    });
  }

  @JobHandler(Other)
  other(): void {}
}

/** Listens as an application would, and checks that each move was committed when it hears it. */
@Injectable()
class Listeners {
  readonly heard: JobEvent[] = [];
  readonly onlyOk: string[] = [];
  /** For each `succeeded`/`dead`/`cancelled` heard: the pillar a fresh read finds the job in. */
  readonly committed = new Map<string, string | undefined>();

  constructor(private readonly admin: ChokaQAdmin) {}

  @OnJobEvent(['started', 'progress', 'succeeded', 'failed', 'retried', 'dead', 'cancelled'], {
    queue: 'events',
  })
  async onAny(event: JobEvent): Promise<void> {
    this.heard.push(event);
    if (['succeeded', 'dead', 'cancelled'].includes(event.name)) {
      const job = await this.admin.getJob(event.job.id);
      this.committed.set(`${event.name}:${event.job.id}`, job?.pillar);
    }
  }

  @OnJobEvent('succeeded', { type: 'ok' })
  onOk(event: JobEvent): void {
    this.onlyOk.push(`${event.job.queue}/${event.job.type}`);
  }

  @OnJobEvent('succeeded')
  throws(): void {
    throw new Error('a listener that always throws');
  }

  @OnJobEvent('started')
  hangs(): Promise<void> {
    return new Promise(() => undefined); // never settles: its own queue fills, nothing else waits
  }
}

describeEachDialect('lifecycle events through a Nest app', ({ name: dialect }) => {
  let db: TestSchema;
  let app: INestApplication;
  let jobs: JobClient;
  let admin: ChokaQAdmin;
  let listeners: Listeners;
  let handlers: Handlers;

  beforeEach(async () => {
    db = e2eDatabase(dialect);
    app = await bootApp(db, { providers: [Handlers, Listeners] });
    jobs = app.get(JobClient);
    admin = app.get(ChokaQAdmin);
    listeners = app.get(Listeners);
    handlers = app.get(Handlers);
  });

  afterEach(async () => {
    await closeAndCheck(app, db);
    await db.close();
  });

  const namesOf = (id: string) =>
    listeners.heard.filter((e) => e.job.id === id).map((e) => `${e.name}#${e.attempt}`);
  const heardAll = (id: string, count: number) =>
    waitFor(`${count} events of job ${id}`, () => namesOf(id).length >= count && namesOf(id));

  it('a success is started, progress, succeeded — each heard after its move committed', async () => {
    const id = await jobs.enqueue(Ok, { n: 1 });
    expect(await heardAll(id, 3)).toEqual(['started#1', 'progress#1', 'succeeded#1']);
    const progress = listeners.heard.find((e) => e.job.id === id && e.name === 'progress');
    expect(progress).toMatchObject({ progress: 50, note: 'half way', pillar: 'hot' });
    const done = listeners.heard.find((e) => e.job.id === id && e.name === 'succeeded');
    expect(done).toMatchObject({ pillar: 'archive', job: { payload: { n: 1 }, queue: 'events' } });
    expect(done?.durationMs).toEqual(expect.any(Number));
    await waitFor('the committed check', () => listeners.committed.has(`succeeded:${id}`));
    expect(listeners.committed.get(`succeeded:${id}`)).toBe('archive');
  });

  it('a failed attempt is failed then retried; the last one is failed then dead', async () => {
    const flaky = await jobs.enqueue(Flaky, {});
    expect(await heardAll(flaky, 5)).toEqual([
      'started#1',
      'failed#1',
      'retried#1',
      'started#2',
      'succeeded#2',
    ]);
    const failed = listeners.heard.find((e) => e.job.id === flaky && e.name === 'failed');
    expect(failed).toMatchObject({ willRetry: true });
    expect(failed?.error).toContain('first attempt fails');

    const broken = await jobs.enqueue(Broken, {});
    expect(await heardAll(broken, 6)).toEqual([
      'started#1',
      'failed#1',
      'retried#1',
      'started#2',
      'failed#2',
      'dead#2',
    ]);
    const dead = listeners.heard.find((e) => e.job.id === broken && e.name === 'dead');
    expect(dead).toMatchObject({
      pillar: 'dlq',
      reason: FailureReason.MaxRetriesExceeded,
      job: { failureReason: FailureReason.MaxRetriesExceeded },
    });
    await waitFor('the committed check', () => listeners.committed.has(`dead:${broken}`));
    expect(listeners.committed.get(`dead:${broken}`)).toBe('dlq');
  });

  it('a running job cancelled by an operator is cancelled, never failed or dead', async () => {
    const id = await jobs.enqueue(Held, {});
    await waitFor('the held job to start', () => handlers.started.has(id));
    await admin.cancel(id);
    expect(await heardAll(id, 2)).toEqual(['started#1', 'cancelled#1']);
    expect(listeners.heard.find((e) => e.name === 'cancelled')).toMatchObject({
      reason: FailureReason.Cancelled,
      pillar: 'dlq',
    });
    await waitFor('the committed check', () => listeners.committed.has(`cancelled:${id}`));
    expect(listeners.committed.get(`cancelled:${id}`)).toBe('dlq');
  });

  it('a pending job cancelled by the caller is cancelled, emitted by the caller after the move', async () => {
    const byAdmin = await jobs.enqueue(Ok, { n: 1 }, { delayMs: 3_600_000 });
    const byClient = await jobs.enqueue(Ok, { n: 2 }, { delayMs: 3_600_000 });
    await admin.cancel(byAdmin, 'operator');
    await jobs.cancel(byClient);
    expect(await heardAll(byAdmin, 1)).toEqual(['cancelled#1']);
    expect(await heardAll(byClient, 1)).toEqual(['cancelled#1']);
    expect(listeners.heard.find((e) => e.job.id === byAdmin)).toMatchObject({
      reason: FailureReason.Cancelled,
      pillar: 'dlq',
      job: { payload: { n: 1 }, lastModifiedBy: 'operator' },
    });
    await waitFor('the committed check', () => listeners.committed.has(`cancelled:${byClient}`));
    expect(listeners.committed.get(`cancelled:${byClient}`)).toBe('dlq');
  });

  it('filters by queue and type; a throwing or stuck listener holds up no job', async () => {
    const events = app.get(JobEvents);
    const viaStream: string[] = [];
    const subscription = events
      .on('succeeded', { queue: 'other' })
      .subscribe((e) => viaStream.push(e.job.id));

    const other = await jobs.enqueue(Other, {});
    // The stuck `started` listener never finishes its first event: the others, and the jobs, go on.
    const ids = await Promise.all(Array.from({ length: 8 }, (_, n) => jobs.enqueue(Ok, { n })));
    await waitFor('every job archived', async () => {
      const archived = await Promise.all([other, ...ids].map((id) => jobs.getJob(id)));
      return archived.every((j) => j?.pillar === 'archive');
    });
    await waitFor('the stream to hear the other queue', () => viaStream.length === 1);
    expect(viaStream).toEqual([other]);
    await waitFor('every ok success heard', () => listeners.onlyOk.length === 9);
    // `onOk` filters by type only: it hears 'ok' of both queues.
    expect(new Set(listeners.onlyOk)).toEqual(new Set(['events/ok', 'other/ok']));
    // `onAny` filters by queue: nothing of 'other'.
    expect(listeners.heard.some((e) => e.job.queue === 'other')).toBe(false);
    subscription.unsubscribe();

    const stats = await waitFor('the throwing listener to have heard every success', () => {
      const all = events.listenerStats();
      return all.find((s) => s.name === 'Listeners.throws')?.failed === 9 ? all : undefined;
    });
    const stuck = stats.find((s) => s.name === 'Listeners.hangs');
    // One event in its hands, the other eight queued (the drop at the bound is a unit test's).
    expect(stuck).toMatchObject({ queued: 8, dropped: 0 });
  });
});
