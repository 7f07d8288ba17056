import { SpanStatusCode, trace } from '@opentelemetry/api';
import { hotJob } from '../../../../test/runtime/support/hot-job';
import { parentSpanId, traceHarness } from '../../../../test/support/span-recorder';
import { RecordingLogger } from '../../../../test/runtime/support/silent-logger';
import { z } from 'zod';
import {
  ChokaQFatalError,
  ChokaQJobAbortedError,
  ChokaQJobTimeoutError,
  ChokaQResultError,
  ChokaQPayloadValidationError,
  ChokaQPayloadVersionError,
  ChokaQThrottledError,
} from '../errors';
import type { HandlerDefinition } from '../interfaces/handler.interface';
import type { JobContext } from '../interfaces/job-context.interface';
import type { HotJob } from '../interfaces/job.interface';
import type { ChokaQMiddleware } from '../interfaces/middleware.interface';
import { ChokaQTracing } from '../observability/chokaq-tracing';
import type { HandlerTransaction } from '../storage/job-storage';
import { JobExecutor } from './job-executor';

const job = (): HotJob => hotJob({ payload: { n: 1 } });
const lease = { id: 'job-1', workerId: 'w', leaseId: 'l' };
const handler = (invoke: HandlerDefinition['invoke']): HandlerDefinition => ({
  queue: 'q',
  name: 'T.run',
  invoke,
});

describe('JobExecutor', () => {
  afterEach(() => jest.useRealTimers());

  it('builds the context (attempt = attemptCount + 1) and runs middleware outermost first', async () => {
    const order: string[] = [];
    const mw = (name: string): ChokaQMiddleware => ({
      use: async (_ctx, _payload, next) => {
        order.push(`${name}>`);
        const result = await next();
        order.push(`<${name}`);
        return result;
      },
    });
    let seen: JobContext | undefined;
    const executor = new JobExecutor([mw('a'), mw('b')], new RecordingLogger());
    const run = executor.start({
      job: job(),
      lease,
      timeoutMs: 1_000,
      handler: handler(async (_p, ctx) => {
        order.push('handler');
        seen = ctx;
      }),
    });
    await expect(run.result).resolves.toMatchObject({ kind: 'succeeded' });
    expect(order).toEqual(['a>', 'b>', 'handler', '<b', '<a']);
    expect(seen).toMatchObject({ id: 'job-1', queue: 'q', type: 't', attempt: 3, leaseId: 'l' });
    expect(seen!.signal.aborted).toBe(false);
  });

  it('measures a run on its clock, from its start to its verdict', async () => {
    const times = [1_000, 1_250];
    const executor = new JobExecutor([], new RecordingLogger(), () => times.shift() ?? 9_999);
    const run = executor.start({
      job: job(),
      lease,
      timeoutMs: 1_000,
      handler: handler(async () => 1),
    });
    expect(await run.result).toMatchObject({ kind: 'succeeded', durationMs: 250 });
  });

  it('turns synchronous throws and non-Error throws into failures', async () => {
    const executor = new JobExecutor([], new RecordingLogger());
    const sync = executor.start({
      job: job(),
      lease,
      timeoutMs: 1_000,
      handler: handler(() => {
        throw 'plain string';
      }),
    });
    await expect(sync.result).resolves.toMatchObject({ kind: 'failed', error: 'plain string' });
    const undef = executor.start({
      job: job(),
      lease,
      timeoutMs: 1_000,
      handler: handler(() => Promise.reject(undefined)),
    });
    await expect(undef.result).resolves.toMatchObject({ kind: 'failed', error: undefined });
  });

  it('records the returned value as JSON only for a handler that records results', async () => {
    const executor = new JobExecutor([], new RecordingLogger(), Date.now, undefined, 20);
    const recording = (value: unknown): HandlerDefinition => ({
      ...handler(async () => value),
      recordResult: true,
    });
    const start = (h: HandlerDefinition) =>
      executor.start({ job: job(), lease, timeoutMs: 1_000, handler: h }).result;

    const stored = await start(recording({ rows: 3 }));
    expect(stored).toMatchObject({ kind: 'succeeded', result: '{"rows":3}' });
    expect(await start(recording(undefined))).toMatchObject({ result: 'null' });
    const plain = await start(handler(async () => ({ rows: 3 })));
    expect(plain).toMatchObject({ kind: 'succeeded' });
    expect('result' in plain).toBe(false);

    // Over the cap (20 bytes here) or not JSON: the run fails, fatally, and nothing is cut.
    for (const [value, problem] of [
      ['x'.repeat(30), 'must be at most 20 bytes of JSON (was 32)'],
      [1n, 'must be JSON-serialisable'],
    ] as const) {
      const failed = await start(recording(value));
      expect(failed).toMatchObject({ kind: 'failed' });
      const error = (failed as { error: unknown }).error;
      expect(error).toBeInstanceOf(ChokaQResultError);
      expect(error).toBeInstanceOf(ChokaQFatalError);
      expect((error as Error).message).toContain(problem);
    }
  });

  it('rolls back the transaction of a recording run whose result cannot be stored', async () => {
    const executor = new JobExecutor([], new RecordingLogger(), Date.now, undefined, 5);
    const rollback = jest.fn(async () => undefined);
    const transaction = { rollback, abandon: jest.fn() } as unknown as HandlerTransaction;
    const run = executor.start({
      job: job(),
      lease,
      timeoutMs: 1_000,
      handler: { ...handler(async () => 'too long a result'), recordResult: true },
      openTransaction: async () => transaction,
    });
    await expect(run.result).resolves.toMatchObject({ kind: 'failed' });
    expect(rollback).toHaveBeenCalledTimes(1);
  });

  it('frees the run at the timeout even if the handler never settles', async () => {
    jest.useFakeTimers();
    const logger = new RecordingLogger();
    const executor = new JobExecutor([], logger);
    let signal: AbortSignal | undefined;
    const run = executor.start({
      job: job(),
      lease,
      timeoutMs: 500,
      handler: handler((_p, ctx) => {
        signal = ctx.signal;
        return new Promise(() => undefined);
      }),
    });
    await jest.advanceTimersByTimeAsync(499);
    expect(run.settled).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    await expect(run.result).resolves.toMatchObject({ kind: 'timeout', timeoutMs: 500 });
    expect(signal!.aborted).toBe(true);
    expect(signal!.reason).toBeInstanceOf(ChokaQJobTimeoutError);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('a timeout beyond the longest timer does not fire at once (Node clamps longer timers to 1 ms)', async () => {
    jest.useFakeTimers();
    const executor = new JobExecutor([], new RecordingLogger());
    // A queue's ExecutionTimeoutMs row may hold such a value (written before it was capped).
    const run = executor.start({
      job: job(),
      lease,
      timeoutMs: 2 ** 31,
      handler: handler(() => new Promise(() => undefined)),
    });
    await jest.advanceTimersByTimeAsync(60_000);
    expect(run.settled).toBe(false);
    run.abort('cancelled');
    await expect(run.result).resolves.toMatchObject({ kind: 'aborted', cause: 'cancelled' });
    expect(jest.getTimerCount()).toBe(0);
  });

  it('a signal first read after the timeout is already aborted, with the timeout as reason', async () => {
    jest.useFakeTimers();
    const executor = new JobExecutor([], new RecordingLogger());
    let ctx: JobContext | undefined;
    const run = executor.start({
      job: job(),
      lease,
      timeoutMs: 100,
      handler: handler((_p, c) => {
        ctx = c; // keeps the context, reads nothing yet
        return new Promise(() => undefined);
      }),
    });
    await jest.advanceTimersByTimeAsync(100);
    await expect(run.result).resolves.toMatchObject({ kind: 'timeout' });
    expect(ctx!.signal.aborted).toBe(true);
    expect(ctx!.signal.reason).toBeInstanceOf(ChokaQJobTimeoutError);
    expect(ctx!.signal).toBe(run.signal); // one signal, however it is reached
    // A later abort does not replace the first reason.
    run.abort('cancelled');
    expect(ctx!.signal.reason).toBeInstanceOf(ChokaQJobTimeoutError);
  });

  it('counts a late result after the timeout and ignores it', async () => {
    jest.useFakeTimers();
    const logger = new RecordingLogger();
    const executor = new JobExecutor([], logger);
    const run = executor.start({
      job: job(),
      lease,
      timeoutMs: 100,
      handler: handler(() => new Promise((resolve) => setTimeout(resolve, 300))),
    });
    await jest.advanceTimersByTimeAsync(100);
    await expect(run.result).resolves.toMatchObject({ kind: 'timeout' });
    await jest.advanceTimersByTimeAsync(300);
    expect(executor.lateResults).toBe(1);
    expect(logger.count('warn', 'late result is ignored')).toBe(1);
  });

  it('settles a cancel at once, but waits for the handler on a shutdown abort', async () => {
    const executor = new JobExecutor([], new RecordingLogger());
    const cancelled = executor.start({
      job: job(),
      lease,
      timeoutMs: 10_000,
      handler: handler(() => new Promise(() => undefined)),
    });
    cancelled.abort('cancelled');
    await expect(cancelled.result).resolves.toMatchObject({ kind: 'aborted', cause: 'cancelled' });
    expect(cancelled.signal.reason).toBeInstanceOf(ChokaQJobAbortedError);

    const cooperative = executor.start({
      job: job(),
      lease,
      timeoutMs: 10_000,
      handler: handler(
        (_p, ctx) =>
          new Promise((_resolve, reject) => {
            // The abort may come before the handler starts: check first, then listen.
            if (ctx.signal.aborted) return reject(ctx.signal.reason);
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
          }),
      ),
    });
    cooperative.abort('shutdown');
    await expect(cooperative.result).resolves.toMatchObject({
      kind: 'failed',
      abortedBy: 'shutdown',
    });

    const stubborn = executor.start({
      job: job(),
      lease,
      timeoutMs: 10_000,
      handler: handler(() => new Promise(() => undefined)),
    });
    stubborn.abort('shutdown');
    expect(stubborn.settled).toBe(false);
    stubborn.abandon();
    await expect(stubborn.result).resolves.toMatchObject({ kind: 'abandoned' });
  });

  it('rejects a middleware that calls next() twice', async () => {
    const twice: ChokaQMiddleware = {
      use: async (_c, _p, next) => {
        await next();
        return next();
      },
    };
    const executor = new JobExecutor([twice], new RecordingLogger());
    const run = executor.start({
      job: job(),
      lease,
      timeoutMs: 1_000,
      handler: handler(async () => 1),
    });
    const result = await run.result;
    expect(result.kind).toBe('failed');
    expect(String((result as { error: Error }).error.message)).toContain('next() twice');
  });

  it('hands the progress writer a note cut to 500 characters, NUL and split pairs replaced', async () => {
    const notes: Array<string | undefined> = [];
    const executor = new JobExecutor([], new RecordingLogger());
    const run = executor.start({
      job: job(),
      lease,
      timeoutMs: 1_000,
      reportProgress: async (_percent, note) => {
        notes.push(note);
      },
      handler: handler(async (_p, ctx) => {
        await ctx.reportProgress(10);
        await ctx.reportProgress(20, 'a\u0000b');
        // 499 characters, then a surrogate pair the cut splits.
        await ctx.reportProgress(30, `${'x'.repeat(499)}\u{1F600}`);
        await ctx.reportProgress(40, 42 as never);
      }),
    });
    await expect(run.result).resolves.toMatchObject({ kind: 'succeeded' });
    expect(notes).toEqual([undefined, 'a\uFFFDb', `${'x'.repeat(499)}\uFFFD`, undefined]);
  });

  it("gives the handler the job's facts, and accessors that work unbound and are made once", async () => {
    const percents: number[] = [];
    let seen: Record<string, unknown> = {};
    const logger = new RecordingLogger();
    const executor = new JobExecutor([], logger);
    const run = executor.start({
      job: hotJob({ id: 'job-7', queue: 'mail', type: 'send', batchId: 'b-1', attemptCount: 2 }),
      lease: { id: 'job-7', workerId: 'w', leaseId: 'lease-7' },
      timeoutMs: 1_000,
      reportProgress: async (percent) => {
        percents.push(percent);
      },
      handler: handler(async (_p, ctx) => {
        const { reportProgress, signal, logger } = ctx;
        await reportProgress(25);
        logger.log('hello');
        seen = {
          facts: [ctx.id, ctx.queue, ctx.type, ctx.attempt, ctx.leaseId, ctx.batchId],
          sameLogger: logger === ctx.logger,
          sameSignal: signal === ctx.signal,
          sameWriter: reportProgress === ctx.reportProgress,
          transaction: ctx.transaction,
          queryRunner: ctx.queryRunner,
        };
      }),
    });
    await expect(run.result).resolves.toMatchObject({ kind: 'succeeded' });
    expect(percents).toEqual([25]);
    expect(logger.lines.map((l) => l.message)).toEqual([
      expect.stringMatching(/ChokaQ mail\/send job-7.*hello/),
    ]);
    expect(seen).toEqual({
      facts: ['job-7', 'mail', 'send', 3, 'lease-7', 'b-1'],
      sameLogger: true,
      sameSignal: true,
      sameWriter: true,
      transaction: undefined,
      queryRunner: undefined,
    });
  });

  describe('with tracing (an SDK registered, the in-memory exporter)', () => {
    let harness: ReturnType<typeof traceHarness>;
    let executor: JobExecutor;
    /** The span id active when the middleware ran. */
    let inMiddleware: string | undefined;
    const producer = {
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    };
    const traced = (): HotJob => hotJob({ traceContext: producer });
    beforeEach(() => {
      harness = traceHarness({ register: true });
      const tracing = ChokaQTracing.create({ enabled: true });
      const seen: ChokaQMiddleware = {
        use: (_ctx, _payload, next) => {
          inMiddleware = trace.getActiveSpan()?.spanContext().spanId;
          return next();
        },
      };
      executor = new JobExecutor([seen], new RecordingLogger(), Date.now, tracing);
    });
    afterEach(() => harness.disable());

    it('runs the middleware and the handler inside the span of the run, ended when the run settles', async () => {
      let inHandler: string | undefined;
      const run = executor.start({
        job: traced(),
        lease,
        timeoutMs: 1_000,
        handler: handler(async () => {
          await new Promise((resolve) => setImmediate(resolve));
          inHandler = trace.getActiveSpan()?.spanContext().spanId;
        }),
      });
      await expect(run.result).resolves.toMatchObject({ kind: 'succeeded' });
      const [span] = harness.spans();
      expect(span.name).toBe('process q');
      expect(span.attributes).toMatchObject({
        'messaging.message.id': 'job-1',
        'chokaq.job.attempt': 3,
        'chokaq.run.result': 'succeeded',
      });
      expect(parentSpanId(span)).toBe('00f067aa0ba902b7');
      expect([inMiddleware, inHandler]).toEqual([
        span.spanContext().spanId,
        span.spanContext().spanId,
      ]);
    });

    it('a handler that throws: status ERROR and the exception on the span', async () => {
      const run = executor.start({
        job: traced(),
        lease,
        timeoutMs: 1_000,
        handler: handler(async () => {
          throw new RangeError('quota exceeded');
        }),
      });
      await expect(run.result).resolves.toMatchObject({ kind: 'failed' });
      const [span] = harness.spans();
      expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'quota exceeded' });
      expect(span.attributes['chokaq.run.result']).toBe('failed');
      expect(span.events.map((e) => e.attributes?.['exception.type'])).toEqual(['RangeError']);
    });

    it('a timeout and a cancellation end the span at once, with their own result and error', async () => {
      const never = handler(() => new Promise(() => undefined));
      const timedOut = executor.start({ job: traced(), lease, timeoutMs: 20, handler: never });
      await expect(timedOut.result).resolves.toMatchObject({ kind: 'timeout' });
      const cancelled = executor.start({ job: traced(), lease, timeoutMs: 10_000, handler: never });
      cancelled.abort('cancelled');
      await expect(cancelled.result).resolves.toMatchObject({ kind: 'aborted' });
      expect(
        harness
          .spans()
          .map((s) => [
            s.attributes['chokaq.run.result'],
            s.status.code,
            s.events[0]?.attributes?.['exception.type'],
          ]),
      ).toEqual([
        ['timeout', SpanStatusCode.ERROR, 'ChokaQJobTimeoutError'],
        ['cancelled', SpanStatusCode.ERROR, 'ChokaQJobAbortedError'],
      ]);
    });
  });

  describe('a handler with a schema', () => {
    const schema = z.object({ n: z.number(), label: z.string().default('none') });
    const withSchema = (invoke: HandlerDefinition['invoke']): HandlerDefinition => ({
      ...handler(invoke),
      schema,
    });

    it('hands the middleware and the handler the schema output', async () => {
      const seen: unknown[] = [];
      const mw: ChokaQMiddleware = {
        use: (_ctx, payload, next) => {
          seen.push(payload);
          return next();
        },
      };
      const executor = new JobExecutor([mw], new RecordingLogger());
      const run = executor.start({
        job: job(),
        lease,
        timeoutMs: 1_000,
        handler: withSchema(async (payload) => void seen.push(payload)),
      });
      await expect(run.result).resolves.toMatchObject({ kind: 'succeeded' });
      expect(seen).toEqual([
        { n: 1, label: 'none' },
        { n: 1, label: 'none' },
      ]);
    });

    it('fails a payload the schema refuses before any middleware or the handler runs', async () => {
      const calls: string[] = [];
      const mw: ChokaQMiddleware = {
        use: (_ctx, _payload, next) => {
          calls.push('middleware');
          return next();
        },
      };
      const executor = new JobExecutor([mw], new RecordingLogger());
      const run = executor.start({
        job: hotJob({ payload: { n: 'one' } }),
        lease,
        timeoutMs: 1_000,
        handler: withSchema(async () => void calls.push('handler')),
      });
      const result = await run.result;
      expect(result.kind).toBe('failed');
      const error = (result as { error: unknown }).error;
      expect(error).toBeInstanceOf(ChokaQPayloadValidationError);
      expect(error).toMatchObject({
        queue: 'q',
        type: 't',
        stage: 'run',
        issues: [{ path: 'payload.n', value: 'one' }],
      });
      expect((error as Error).message).toMatch(/^Payload of q\/t does not match its schema/);
      expect(calls).toEqual([]);
    });

    it('runs an async validation under the execution timeout', async () => {
      jest.useFakeTimers();
      const never: HandlerDefinition['schema'] = {
        '~standard': { version: 1, vendor: 't', validate: () => new Promise(() => undefined) },
      };
      const invoke = jest.fn(async () => undefined);
      const executor = new JobExecutor([], new RecordingLogger());
      const run = executor.start({
        job: job(),
        lease,
        timeoutMs: 500,
        handler: { ...handler(invoke), schema: never },
      });
      await jest.advanceTimersByTimeAsync(500);
      await expect(run.result).resolves.toMatchObject({ kind: 'timeout', timeoutMs: 500 });
      expect(invoke).not.toHaveBeenCalled();
    });
  });

  describe('a versioned handler', () => {
    const schema = z.object({ first: z.string(), last: z.string(), tags: z.array(z.string()) });
    const v3 = (
      invoke: HandlerDefinition['invoke'],
      upgrade: HandlerDefinition['upgrade'] = {
        1: (p: { name: string }) => ({ first: p.name.split(' ')[0], last: p.name.split(' ')[1] }),
        2: async (p: object) => ({ ...p, tags: [] }),
      },
    ): HandlerDefinition => ({ ...handler(invoke), type: 't', version: 3, upgrade, schema });

    it('runs an older payload through the chain on a copy, then the schema, then the handler', async () => {
      const seen: unknown[] = [];
      const stored = hotJob({ payload: { name: 'Ada Lovelace' }, payloadVersion: 1 });
      const executor = new JobExecutor([], new RecordingLogger());
      const run = executor.start({
        job: stored,
        lease,
        timeoutMs: 1_000,
        handler: v3(async (payload) => void seen.push(payload)),
      });
      await expect(run.result).resolves.toMatchObject({ kind: 'succeeded' });
      expect(seen).toEqual([{ first: 'Ada', last: 'Lovelace', tags: [] }]);
      expect(stored.payload).toEqual({ name: 'Ada Lovelace' });
    });

    it('runs a payload of its own version as it is', async () => {
      const seen: unknown[] = [];
      const executor = new JobExecutor([], new RecordingLogger());
      const payload = { first: 'A', last: 'B', tags: ['x'] };
      const run = executor.start({
        job: hotJob({ payload, payloadVersion: 3 }),
        lease,
        timeoutMs: 1_000,
        handler: v3(async (p) => void seen.push(p)),
      });
      await expect(run.result).resolves.toMatchObject({ kind: 'succeeded' });
      expect(seen).toEqual([payload]);
    });

    it('fails with a ChokaQPayloadVersionError naming the step that threw, before the handler', async () => {
      const invoke = jest.fn(async () => undefined);
      const executor = new JobExecutor([], new RecordingLogger());
      const run = executor.start({
        job: hotJob({ payload: {}, payloadVersion: 2 }),
        lease,
        timeoutMs: 1_000,
        handler: v3(invoke, {
          2: () => {
            throw new RangeError('bad tags');
          },
        }),
      });
      const result = (await run.result) as { kind: string; error: unknown };
      expect(result.kind).toBe('failed');
      expect(result.error).toBeInstanceOf(ChokaQPayloadVersionError);
      expect(result.error).toMatchObject({ storedVersion: 2, handlerVersion: 3, step: 2 });
      expect((result.error as Error).message).toContain(
        'its upgrade step 2 → 3 threw: RangeError: bad tags',
      );
      expect(invoke).not.toHaveBeenCalled();
    });

    it('fails a version it cannot run (newer, or older than its chain) without calling the handler', async () => {
      const invoke = jest.fn(async () => undefined);
      const executor = new JobExecutor([], new RecordingLogger());
      for (const [payloadVersion, upgrade] of [
        [4, undefined],
        [1, { 2: (p: unknown) => p }],
      ] as const) {
        const run = executor.start({
          job: hotJob({ payload: {}, payloadVersion }),
          lease,
          timeoutMs: 1_000,
          handler: v3(invoke, upgrade),
        });
        const result = (await run.result) as { error: unknown };
        expect(result.error).toMatchObject({ storedVersion: payloadVersion, step: null });
      }
      expect(invoke).not.toHaveBeenCalled();
    });

    it('leaves a queue-wide handler to run every version as stored', async () => {
      const seen: unknown[] = [];
      const executor = new JobExecutor([], new RecordingLogger());
      const run = executor.start({
        job: hotJob({ payload: { n: 1 }, payloadVersion: 7 }),
        lease,
        timeoutMs: 1_000,
        handler: handler(async (p) => void seen.push(p)),
      });
      await expect(run.result).resolves.toMatchObject({ kind: 'succeeded' });
      expect(seen).toEqual([{ n: 1 }]);
    });
  });

  describe('a transactional handler', () => {
    /** A stand-in for the storage's transaction: records how it ended. */
    function fakeTransaction() {
      const ends: string[] = [];
      const manager = { name: 'manager' };
      const queryRunner = { name: 'runner' };
      const transaction = {
        manager,
        queryRunner,
        archive: jest.fn(async () => true),
        rollback: jest.fn(async () => void ends.push('rollback')),
        abandon: jest.fn(async () => void ends.push('abandon')),
      } as unknown as HandlerTransaction;
      return { transaction, ends, manager, queryRunner };
    }

    it('opens the transaction before the handler, hands it over and returns it on success', async () => {
      const { transaction, ends, manager, queryRunner } = fakeTransaction();
      const order: string[] = [];
      let seen: JobContext | undefined;
      const run = new JobExecutor([], new RecordingLogger()).start({
        job: job(),
        lease,
        timeoutMs: 1_000,
        openTransaction: async () => {
          order.push('open');
          return transaction;
        },
        handler: handler(async (_p, ctx) => {
          order.push('handler');
          seen = ctx;
        }),
      });
      const result = await run.result;
      expect(result).toMatchObject({ kind: 'succeeded', transaction });
      expect(order).toEqual(['open', 'handler']);
      expect(seen!.transaction).toBe(manager);
      expect(seen!.queryRunner).toBe(queryRunner);
      expect(ends).toEqual([]);
    });

    it('a run decided already is not decided again: a late abandon or abort leaves its transaction and its signal alone', async () => {
      const { transaction, ends } = fakeTransaction();
      let signal: AbortSignal | undefined;
      const run = new JobExecutor([], new RecordingLogger()).start({
        job: job(),
        lease,
        timeoutMs: 1_000,
        openTransaction: async () => transaction,
        handler: handler(async (_p, ctx) => {
          signal = ctx.signal;
        }),
      });
      expect(await run.result).toMatchObject({ kind: 'succeeded', transaction });
      // The finaliser now owns the transaction; a shutdown's abandon or a cancel arriving late
      // must not end it or abort the finished run's signal.
      run.abandon();
      run.abort('cancelled');
      expect(ends).toEqual([]);
      expect(signal!.aborted).toBe(false);
      expect(run.settled).toBe(true);
    });

    it('rolls back before a failure is reported', async () => {
      const { transaction, ends } = fakeTransaction();
      const run = new JobExecutor([], new RecordingLogger()).start({
        job: job(),
        lease,
        timeoutMs: 1_000,
        openTransaction: async () => transaction,
        handler: handler(async () => {
          throw new Error('boom');
        }),
      });
      const result = await run.result;
      expect(result).toMatchObject({ kind: 'failed' });
      expect(result).not.toHaveProperty('transaction');
      expect(ends).toEqual(['rollback']);
    });

    it('abandons the transaction at the timeout, without waiting for the handler', async () => {
      jest.useFakeTimers();
      const { transaction, ends } = fakeTransaction();
      const run = new JobExecutor([], new RecordingLogger()).start({
        job: job(),
        lease,
        timeoutMs: 500,
        openTransaction: async () => transaction,
        handler: handler(() => new Promise(() => undefined)),
      });
      await jest.advanceTimersByTimeAsync(500);
      await expect(run.result).resolves.toMatchObject({ kind: 'timeout' });
      expect(ends).toEqual(['abandon']);
    });

    it('abandons a transaction that opens after the run was decided, and never runs the handler', async () => {
      const { transaction, ends } = fakeTransaction();
      let open!: (tx: HandlerTransaction) => void;
      const invoke = jest.fn(async () => undefined);
      const logger = new RecordingLogger();
      const run = new JobExecutor([], logger).start({
        job: job(),
        lease,
        timeoutMs: 1_000,
        openTransaction: () => new Promise((resolve) => (open = resolve)),
        handler: handler(invoke),
      });
      run.abort('cancelled');
      await expect(run.result).resolves.toMatchObject({ kind: 'aborted', cause: 'cancelled' });
      open(transaction);
      await new Promise((resolve) => setImmediate(resolve));
      expect(ends).toEqual(['abandon']);
      expect(invoke).not.toHaveBeenCalled();
      expect(logger.events('JobLateResult')).toEqual([]);
    });
  });
});

describe('JobExecutor batch handlers', () => {
  /** A batch handler of `size` that waits `waitMs`, calling `invokeBatch`. */
  const batchHandler = (
    invokeBatch: NonNullable<HandlerDefinition['invokeBatch']>,
    size = 3,
    waitMs = 10_000,
  ): HandlerDefinition => ({
    queue: 'q',
    type: 't',
    name: 'T.batch',
    batch: { size, waitMs },
    invoke: async () => {
      throw new Error('a batch handler is never called one job at a time');
    },
    invokeBatch,
  });
  const start = (executor: JobExecutor, h: HandlerDefinition, id: string, timeoutMs = 60_000) =>
    executor.start({
      job: hotJob({ id, payload: { id } }),
      lease: { id, workerId: 'w', leaseId: `l-${id}` },
      timeoutMs,
      handler: h,
    });

  it('sends a batch once it is full, each run decided by its own outcome', async () => {
    const calls: unknown[][] = [];
    const h = batchHandler(async (items) => {
      calls.push(items.map((i) => i.payload));
      return [
        { status: 'succeeded', result: 1 },
        { status: 'failed', error: new Error('two') },
        { status: 'retry', delayMs: 250 },
      ];
    });
    const executor = new JobExecutor([], new RecordingLogger());
    const runs = ['a', 'b', 'c'].map((id) => start(executor, h, id));
    const [a, b, c] = await Promise.all(runs.map((r) => r.result));
    expect(calls).toEqual([[{ id: 'a' }, { id: 'b' }, { id: 'c' }]]);
    expect(a).toMatchObject({ kind: 'succeeded' });
    expect(b).toMatchObject({ kind: 'failed', error: new Error('two') });
    expect(c).toMatchObject({ kind: 'failed' });
    expect((c as { error: unknown }).error).toBeInstanceOf(ChokaQThrottledError);
    expect((c as { error: ChokaQThrottledError }).error.retryAfterMs).toBe(250);
  });

  it('sends a batch that is not full after its wait, and fails every run on a wrong outcome list', async () => {
    jest.useFakeTimers();
    let called = 0;
    const h = batchHandler(
      async () => {
        called++;
        return [{ status: 'succeeded' }];
      },
      5,
      100,
    );
    const executor = new JobExecutor([], new RecordingLogger());
    const runs = ['a', 'b'].map((id) => start(executor, h, id));
    await jest.advanceTimersByTimeAsync(99);
    expect(called).toBe(0);
    await jest.advanceTimersByTimeAsync(1);
    const results = await Promise.all(runs.map((r) => r.result));
    expect(called).toBe(1);
    for (const result of results) {
      expect(result).toMatchObject({ kind: 'failed' });
      expect(String((result as { error: unknown }).error)).toContain(
        'returned 1 outcome(s) for a batch of 2 job(s)',
      );
    }
  });

  it('leaves out a run cancelled while it waited, and sends its batch at once on shutdown', async () => {
    const sent: unknown[][] = [];
    const h = batchHandler(async (items) => {
      sent.push(items.map((i) => i.payload));
    });
    const executor = new JobExecutor([], new RecordingLogger());
    const a = start(executor, h, 'a');
    const b = start(executor, h, 'b');
    a.abort('cancelled');
    expect(await a.result).toMatchObject({ kind: 'aborted', cause: 'cancelled' });
    b.abort('shutdown');
    expect(await b.result).toMatchObject({ kind: 'succeeded' });
    expect(sent).toEqual([[{ id: 'b' }]]);
  });
});
