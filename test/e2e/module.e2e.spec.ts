import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  ChokaQAdmin,
  ChokaQDuplicateHandlerError,
  ChokaQMiddleware,
  ChokaQModule,
  ChokaQModuleOptions,
  ChokaQTesting,
  ChokaQValidationError,
  ChokaQWorkerDisabledError,
  FailureReason,
  JobClient,
  JobContext,
  JobHandler,
  RecurringJob,
  defineJob,
} from '../../libs/chokaq/src';
import { ChokaQOrchestrator } from '../../libs/chokaq/src/chokaq.orchestrator';
import { HandlerRegistry } from '../../libs/chokaq/src/discovery/handler.registry';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import {
  bootApp,
  closeAndCheck,
  FAST_OPTIONS,
  mergeOptions,
  quietLogger,
  e2eDatabase,
} from './support/e2e-app';
import { TestSchema, describeEachDialect } from '../support/test-database';

const Mail = defineJob<{ to: string }>('mail', 'send.v1');

@Injectable()
class Trace {
  readonly events: string[] = [];
}

@Injectable()
class OuterMiddleware implements ChokaQMiddleware {
  constructor(private readonly trace: Trace) {}
  async use(ctx: JobContext, _payload: unknown, next: () => Promise<unknown>): Promise<unknown> {
    this.trace.events.push(`outer:before:${ctx.type}`);
    const result = await next();
    this.trace.events.push('outer:after');
    return result;
  }
}

@Injectable()
class InnerMiddleware implements ChokaQMiddleware {
  constructor(private readonly trace: Trace) {}
  async use(_ctx: JobContext, _payload: unknown, next: () => Promise<unknown>): Promise<unknown> {
    this.trace.events.push('inner');
    return next();
  }
}

@Injectable()
class MailHandlers {
  constructor(private readonly trace: Trace) {}
  @JobHandler(Mail)
  async send(p: { to: string }, ctx: JobContext): Promise<void> {
    this.trace.events.push(`handler:${p.to}`);
    if (p.to === 'bad') throw new Error(`bounce ${ctx.attempt}`);
  }
}

@Injectable()
class DuplicateMail {
  @JobHandler('mail', { type: 'send.v1' })
  async again(): Promise<void> {}
}

/** Two handlers and a schedule with one bad option each: the start must name all three. */
@Injectable()
class OverlongTimeout {
  @JobHandler('slow', { timeoutMs: 2 ** 31 })
  async run(): Promise<void> {}
}

@Injectable()
class NoAttempts {
  @JobHandler('never', { maxAttempts: 0 })
  async run(): Promise<void> {}
}

@RecurringJob('broken-schedule', '61 * * * *', { queue: 'reports' })
@Injectable()
class BrokenSchedule {}

/** Trace lives in a global module, so middleware (providers of ChokaQModule) can inject it. */
@Module({ providers: [Trace], exports: [Trace] })
class TraceModule {}

describeEachDialect('ChokaQModule wiring', ({ name: dialect }) => {
  let db: TestSchema;
  beforeEach(() => (db = e2eDatabase(dialect)));
  afterEach(async () => db.close());

  it('producer-only: JobClient and admin work, no worker runs, ChokaQTesting runs due jobs', async () => {
    const app = await bootApp(db, {
      providers: [Trace, MailHandlers],
      options: { worker: { enabled: false }, retry: { baseDelayMs: 0 } },
    });
    const jobs = app.get(JobClient);
    const admin = app.get(ChokaQAdmin);
    const ok = await jobs.enqueue(Mail, { to: 'a@b.c' });
    const bad = await jobs.enqueue(Mail, { to: 'bad' });
    // No loop runs: the jobs stay Pending.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await db.count('hot', 'status = 0')).toBe(2);
    expect(admin.workerStats()).toBeNull();
    expect(() => admin.setConcurrency(3)).toThrow(ChokaQWorkerDisabledError);

    const outcomes = await ChokaQTesting.runDueJobs(app, { queues: ['mail'] });
    const final = outcomes.filter((o) => o.outcome !== 'retried');
    expect(final.map((o) => [o.id, o.outcome]).sort()).toEqual(
      [
        [ok, 'succeeded'],
        [bad, 'failed'],
      ].sort(),
    );
    expect(final.find((o) => o.id === bad)?.reason).toBe(FailureReason.MaxRetriesExceeded);
    expect((await jobs.getJob(ok))?.pillar).toBe('archive');
    expect((await jobs.getJob(bad))?.pillar).toBe('dlq');
    await closeAndCheck(app, db);
  });

  it('forRootAsync with useFactory, inject and DI-resolved middleware in order', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        TraceModule,
        ChokaQModule.forRootAsync({
          imports: [TraceModule],
          inject: [Trace],
          useFactory: (trace: Trace): ChokaQModuleOptions => {
            trace.events.push('factory');
            return mergeOptions(FAST_OPTIONS, { storage: db.options, worker: { enabled: false } });
          },
          middleware: [OuterMiddleware, InnerMiddleware],
        }),
      ],
      providers: [MailHandlers],
    })
      .overrideProvider(Trace)
      .useValue(new Trace())
      .compile();
    const app = moduleRef.createNestApplication({ logger: quietLogger() });
    await app.init();
    const trace = app.get(Trace);
    await app.get(JobClient).enqueue(Mail, { to: 'x' });
    await ChokaQTesting.runDueJobs(app);
    expect(trace.events).toEqual([
      'factory',
      'outer:before:send.v1',
      'inner',
      'handler:x',
      'outer:after',
    ]);
    await closeAndCheck(app, db);
  });

  it('forRootAsync with useClass', async () => {
    @Injectable()
    class ChokaQConfig {
      createChokaQOptions(): ChokaQModuleOptions {
        return mergeOptions(FAST_OPTIONS, { storage: db.options, worker: { enabled: false } });
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [ChokaQModule.forRootAsync({ useClass: ChokaQConfig })],
    }).compile();
    const app = await moduleRef.createNestApplication({ logger: quietLogger() }).init();
    expect(await app.get(JobClient).enqueue('plain', { any: 1 })).toMatch(/^[0-9a-f-]{36}$/);
    expect(app.get(HandlerRegistry).isEmpty).toBe(true);
    await closeAndCheck(app, db);
  });

  it('fails at startup on duplicate handlers, and leaves nothing open', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [ChokaQModule.forRoot(mergeOptions(FAST_OPTIONS, { storage: db.options }))],
      providers: [Trace, MailHandlers, DuplicateMail],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: quietLogger() });
    await expect(app.init()).rejects.toThrow(ChokaQDuplicateHandlerError);
    await expect(app.init()).rejects.toThrow(/MailHandlers\.send and DuplicateMail\.again/);
    await app.close();
    expect(app.get(WorkerRegistry).localWorker).toBeUndefined();
  });

  it('fails at startup on invalid options, reporting every problem', async () => {
    const moduleRef = Test.createTestingModule({
      imports: [
        ChokaQModule.forRoot({
          storage: db.options,
          retry: { maxAttempts: 0 },
          worker: { concurrency: -1 },
        }),
      ],
    });
    const error = await moduleRef.compile().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ChokaQValidationError);
    expect((error as ChokaQValidationError).issues.map((i) => i.path)).toEqual([
      'retry.maxAttempts',
      'worker.concurrency',
    ]);
  });

  it('fails at startup on invalid decorator options, reporting every problem of every decorator', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [ChokaQModule.forRoot(mergeOptions(FAST_OPTIONS, { storage: db.options }))],
      providers: [OverlongTimeout, NoAttempts, BrokenSchedule],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: quietLogger() });
    const error = await app.init().then(
      () => undefined,
      (e: unknown) => e,
    );
    // Closed before asserting, so a start that wrongly succeeds leaves no worker running.
    await app.close();
    expect(error).toBeInstanceOf(ChokaQValidationError);
    const issues = (error as ChokaQValidationError).issues;
    expect(issues.map((i) => [i.path, i.value])).toEqual([
      ['@JobHandler of OverlongTimeout.run: timeoutMs', 2 ** 31],
      ['@JobHandler of NoAttempts.run: maxAttempts', 0],
      ["@RecurringJob('broken-schedule') on BrokenSchedule: cron", '61 * * * *'],
    ]);
    expect((error as Error).message).toContain('must be an integer from 1 to 2147483647');
    expect(app.get(WorkerRegistry).localWorker).toBeUndefined();
    expect(await db.count('recurring')).toBe(0);
  });

  it('ChokaQTesting.runDueJobs refuses a timeout no timer can hold', async () => {
    const app = await bootApp(db, { options: { worker: { enabled: false } } });
    const result = ChokaQTesting.runDueJobs(app, { timeoutMs: 2 ** 31 });
    await result.catch(() => undefined);
    await closeAndCheck(app, db);
    await expect(result).rejects.toThrow(
      'timeoutMs must be an integer from 1 to 2147483647 (got 2147483648)',
    );
  });

  it('ChokaQTesting.runDueJobs runs between init() and close(), and refuses outside them', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ChokaQModule.forRoot(
          mergeOptions(FAST_OPTIONS, { storage: db.options, worker: { enabled: false } }),
        ),
      ],
      providers: [Trace, MailHandlers],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: quietLogger() });
    // Before init() no handler is discovered: an empty result would hide the missing call.
    await expect(ChokaQTesting.runDueJobs(app)).rejects.toThrow(ChokaQWorkerDisabledError);
    await app.init();
    const id = await app.get(JobClient).enqueue(Mail, { to: 'a@b.c' });
    const outcomes = await ChokaQTesting.runDueJobs(app);
    expect(outcomes.map((o) => [o.id, o.outcome])).toEqual([[id, 'succeeded']]);
    await closeAndCheck(app, db);
    await expect(ChokaQTesting.runDueJobs(app)).rejects.toThrow(ChokaQWorkerDisabledError);
  });

  it('app.close() is idempotent and safe to repeat', async () => {
    const app = await bootApp(db, { providers: [Trace, MailHandlers] });
    const orchestrator = app.get(ChokaQOrchestrator);
    await app.close();
    await orchestrator.stop();
    await orchestrator.stop();
    expect(app.get(WorkerRegistry).localWorker).toBeUndefined();
  });
});
