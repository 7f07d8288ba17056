import { Injectable, Logger, type LoggerService } from '@nestjs/common';
import { ConsoleLogger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomUUID } from 'node:crypto';
import {
  ChokaQAdmin,
  ChokaQFatalError,
  ChokaQModule,
  JobClient,
  JobHandler,
  defineJob,
  getJobStorageToken,
} from '../../libs/chokaq/src';
import type { JobStorage } from '../../libs/chokaq/src/storage';
import { TestSchema } from '../support/test-database';
import { waitFor } from '../support/wait-for';
import { FAST_OPTIONS, closeAndCheck, e2eDatabase, mergeOptions } from './support/e2e-app';
import type { ChokaQModuleOptions } from '../../libs/chokaq/src';

const Fatal = defineJob<{ n: number }>('logs', 'fatal.v1');
const Charge = defineJob<{ n: number }>('logs', 'charge.v1');

@Injectable()
class LogHandlers {
  @JobHandler(Fatal)
  async fatal(): Promise<void> {
    throw new ChokaQFatalError('bad payload');
  }

  @JobHandler(Charge)
  async charge(): Promise<void> {}
}

/**
 * A JSON logger built the way `nestjs-pino` (5.x, `Logger.call`) builds its records: the context
 * is the last extra argument, an object message is merged into the record with `Object.assign`,
 * further arguments are only format values of a string message (which pino drops when the message
 * has no `%s`). Each line is `JSON.stringify`d, as pino writes it, and parsed back: only what a
 * JSON log line can carry counts.
 */
class JsonLinesLogger implements LoggerService {
  readonly lines: Array<Record<string, unknown>> = [];
  log(message: unknown, ...rest: unknown[]): void {
    this.write('info', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('trace', message, rest);
  }

  /** The parsed lines of `event`. */
  events(event: string): Array<Record<string, unknown>> {
    return this.lines.filter((line) => line.event === event);
  }

  private write(level: string, message: unknown, rest: unknown[]): void {
    const record: Record<string, unknown> = { level };
    if (rest.length > 0) record.context = rest[rest.length - 1];
    if (typeof message === 'object' && message !== null) Object.assign(record, message);
    else record.msg = String(message);
    this.lines.push(JSON.parse(JSON.stringify(record)) as Record<string, unknown>);
  }
}

/**
 * The log contract end to end, on a real app and database: a JSON logger receives `eventId`,
 * `event` and each event's fields as fields of the line, for the schema migration, the startup
 * banner, a job moved to the DLQ and a zombie rescued; Nest's default logger prints the same events
 * as plain lines.
 */
describe('log events reach the application logger as structured records [sqlite]', () => {
  let db: TestSchema;
  beforeEach(() => (db = e2eDatabase('sqlite')));
  afterEach(async () => {
    Logger.overrideLogger(new ConsoleLogger());
    await db.close();
  });

  /** An app whose every log line, from the storage's first one on, goes to `logger`. */
  async function boot(logger: LoggerService, options: ChokaQModuleOptions = {}) {
    // The storage is opened (and the schema migrated) while the module compiles, before the
    // application exists: the logger is the application-wide one from the start, as with
    // `NestFactory.create(AppModule, { bufferLogs: true })` and `app.useLogger(…)`.
    const moduleRef = await Test.createTestingModule({
      imports: [ChokaQModule.forRoot(mergeOptions(FAST_OPTIONS, { storage: db.options }, options))],
      providers: [LogHandlers],
    })
      .setLogger(logger)
      .compile();
    const app = moduleRef.createNestApplication({ logger });
    await app.init();
    return app;
  }

  it('a JSON logger gets the fields of SchemaMigrated, WorkerStarted, JobDeadLettered, ZombiesDeadLettered and admin actions', async () => {
    const json = new JsonLinesLogger();

    // A producer creates the schema and a zombie: a job claimed and started by a worker that is gone.
    const producer = await boot(json, { worker: { enabled: false } });
    const storage = producer.get<JobStorage>(getJobStorageToken());
    const zombie = await producer.get(JobClient).enqueue(Charge, { n: 1 });
    await storage.fetchNextBatch({
      workerId: 'gone-worker',
      leaseId: randomUUID(),
      limit: 1,
      start: 1,
      handled: { queues: [], types: [{ queue: 'logs', type: 'charge.v1' }] },
    });
    await producer.close();

    const app = await boot(json, {
      rescue: { intervalMs: 100, fetchedJobTimeoutMs: 1_000, zombieTimeoutMs: 1_000 },
    });
    const dead = await app.get(JobClient).enqueue(Fatal, { n: 2 });
    await waitFor(
      'the fatal job and the zombie in the DLQ',
      () =>
        json.events('JobDeadLettered').length > 0 && json.events('ZombiesDeadLettered').length > 0,
    );
    // Operator actions (6000s) carry what was done, to what.
    const admin = app.get(ChokaQAdmin);
    await admin.pauseQueue('logs');
    expect(await admin.purgeDlq([dead])).toBe(1);
    await closeAndCheck(app, db);

    expect(json.events('QueueUpdated')).toEqual([
      expect.objectContaining({
        context: 'ChokaQAdmin',
        eventId: 6000,
        queue: 'logs',
        settings: expect.objectContaining({ name: 'logs', isPaused: true }),
      }),
    ]);
    expect(json.events('DlqPurged')).toEqual([
      expect.objectContaining({ eventId: 6004, count: 1 }),
    ]);
    expect(json.events('SchemaMigrated')).toEqual([
      expect.objectContaining({
        level: 'info',
        context: 'SqliteJobStorage',
        eventId: 5000,
        dialect: 'sqlite',
        schema: db.schema,
        fromVersion: 0,
        applied: expect.arrayContaining([1]),
        message: expect.stringContaining('migrated from version 0'),
      }),
    ]);
    expect(json.events('WorkerStarted')).toEqual([
      expect.objectContaining({
        context: 'ChokaQWorker',
        eventId: 1000,
        workerId: expect.any(String),
        dialect: 'sqlite',
        schema: db.schema,
        queues: [],
        types: expect.arrayContaining(['logs/fatal.v1', 'logs/charge.v1']),
        recurring: [],
        concurrency: 10,
      }),
    ]);
    expect(json.events('JobDeadLettered')).toEqual([
      expect.objectContaining({
        level: 'error',
        context: 'ChokaQWorker',
        eventId: 2001,
        jobId: dead,
        queue: 'logs',
        type: 'fatal.v1',
        attempt: 1,
        reason: 'FatalError',
        error: expect.stringContaining('bad payload'),
      }),
    ]);
    expect(json.events('ZombiesDeadLettered')).toEqual([
      expect.objectContaining({
        level: 'warn',
        eventId: 4001,
        count: 1,
        workerIds: ['gone-worker'],
        jobIds: [zombie],
      }),
    ]);
    expect(json.events('WorkerStopped')).toHaveLength(1);
    // Every line ChokaQ wrote is an event: none came as a bare string.
    const chokaq = json.lines.filter((line) =>
      ['ChokaQ', 'ChokaQWorker', 'JobClient', 'ChokaQAdmin', 'SqliteJobStorage'].includes(
        String(line.context),
      ),
    );
    expect(chokaq.length).toBeGreaterThan(0);
    expect(chokaq.filter((line) => typeof line.eventId !== 'number')).toEqual([]);
  });

  it("Nest's default ConsoleLogger prints each event as its plain message", async () => {
    const out: string[] = [];
    const write = (chunk: string | Uint8Array) => (out.push(String(chunk)), true);
    jest.spyOn(process.stdout, 'write').mockImplementation(write);
    jest.spyOn(process.stderr, 'write').mockImplementation(write);
    try {
      const app = await boot(new ConsoleLogger({ colors: false }));
      const dead = await app.get(JobClient).enqueue(Fatal, { n: 1 });
      await waitFor('the DLQ line', () => out.some((line) => line.includes(dead)));
      await closeAndCheck(app, db);
    } finally {
      jest.restoreAllMocks();
    }
    const lines = out.filter((line) => /\[(ChokaQ\w*|SqliteJobStorage)\]/.test(line));
    expect(lines.some((l) => /LOG \[SqliteJobStorage\] Schema 'chokaq_\*' migrated/.test(l))).toBe(
      true,
    );
    expect(
      lines.some((l) =>
        /LOG \[ChokaQWorker\] Worker \S+ started on sqlite \(schema chokaq_\)/.test(l),
      ),
    ).toBe(true);
    expect(
      lines.some((l) =>
        /ERROR \[ChokaQWorker\] Job \S+ \(logs\/fatal\.v1\) moved to the DLQ \(FatalError\)/.test(
          l,
        ),
      ),
    ).toBe(true);
    // One line per event, never the record dumped as an object.
    expect(lines.filter((l) => l.includes('Object(') || l.includes('eventId'))).toEqual([]);
  });
});
