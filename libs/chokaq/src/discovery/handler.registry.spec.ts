import { z } from 'zod';
import { HandlerDefinition } from '../interfaces/handler.interface';
import { HandlerRegistry } from './handler.registry';

function handler(queue: string, type?: string, retryZombies?: boolean): HandlerDefinition {
  return {
    queue,
    type,
    retryZombies,
    name: `H.${queue}.${type ?? '*'}`,
    invoke: async () => undefined,
  };
}

describe('HandlerRegistry.zombieRetryRules', () => {
  it('is empty when no handler opts into retryZombies', () => {
    const registry = new HandlerRegistry();
    registry.replaceAll([handler('mail'), handler('billing', 'charge.v1', false)]);
    expect(registry.zombieRetryRules()).toEqual([]);
  });

  it('lists every handler of a queue where one opts in, so a zombie resolves as a claim does', () => {
    const registry = new HandlerRegistry();
    registry.replaceAll([
      handler('billing', 'refund.v1', true),
      handler('billing', 'charge.v1'),
      handler('billing'),
      handler('mail', 'welcome.v1'),
      handler('reports', undefined, true),
    ]);
    expect(registry.zombieRetryRules()).toEqual([
      { queue: 'billing', type: undefined, retry: false },
      { queue: 'billing', type: 'refund.v1', retry: true },
      { queue: 'billing', type: 'charge.v1', retry: false },
      { queue: 'reports', type: undefined, retry: true },
    ]);
  });
});

describe('HandlerRegistry.register with a schema', () => {
  it('keeps a Standard Schema and refuses anything else, naming the handler', () => {
    const registry = new HandlerRegistry();
    const schema = z.object({ to: z.string() });
    registry.register({ ...handler('mail', 'welcome.v1'), schema });
    expect(registry.resolve('mail', 'welcome.v1')?.schema).toBe(schema);
    expect(() =>
      registry.register({
        ...handler('mail', 'other.v1'),
        schema: { parse: () => 1 } as unknown as HandlerDefinition['schema'],
      }),
    ).toThrow('@JobHandler of H.mail.other.v1: schema must be a Standard Schema v1 validator');
  });
});

describe('HandlerRegistry.handled with versions', () => {
  it('gives each exact pair the versions its handler runs; unversioned handlers run version 1', () => {
    const registry = new HandlerRegistry();
    const step = (p: unknown) => p;
    registry.replaceAll([
      { ...handler('mail', 'welcome'), version: 3, upgrade: { 1: step, 2: step } },
      { ...handler('mail', 'digest'), version: 4, upgrade: { 3: step } },
      handler('mail', 'plain'),
    ]);
    expect(registry.handled()).toEqual({
      queues: [],
      types: [
        { queue: 'mail', type: 'digest', minVersion: 3, maxVersion: 4 },
        { queue: 'mail', type: 'plain', minVersion: 1, maxVersion: 1 },
        { queue: 'mail', type: 'welcome', minVersion: 1, maxVersion: 3 },
      ],
    });
  });

  it('refuses a hand-registered handler whose chain has a gap, naming the handler', () => {
    const registry = new HandlerRegistry();
    expect(() =>
      registry.register({
        ...handler('mail', 'welcome'),
        version: 3,
        upgrade: { 1: (p: unknown) => p },
      }),
    ).toThrow('@JobHandler of H.mail.welcome: upgrade[2] is missing');
  });
});

describe('HandlerRegistry backoff', () => {
  it('keeps a list or a function and refuses anything else, naming the handler', () => {
    const registry = new HandlerRegistry();
    const backoff = [0, 1_000];
    registry.register({ ...handler('mail', 'list.v1'), backoff });
    registry.register({ ...handler('mail', 'fn.v1'), backoff: (attempt) => attempt });
    expect(registry.resolve('mail', 'list.v1')?.backoff).toBe(backoff);
    expect(typeof registry.resolve('mail', 'fn.v1')?.backoff).toBe('function');
    const refused = [[], [-1], [1.5], [2 ** 31], Array(101).fill(0), 'fast', 5];
    refused.forEach((bad, i) => {
      expect(() =>
        registry.register({
          ...handler('mail', `bad${i}.v1`),
          backoff: bad as unknown as HandlerDefinition['backoff'],
        }),
      ).toThrow(
        `@JobHandler of H.mail.bad${i}.v1: backoff must be a function (attempt, error) => ms or a list of 1 to 100 integers from 0 to 2147483647`,
      );
    });
  });
});

describe('HandlerRegistry batch', () => {
  const invokeBatch = async () => undefined;

  it('keeps a batch handler of a type and refuses a bad batch, naming the handler', () => {
    const registry = new HandlerRegistry();
    const batch = { size: 100, waitMs: 0 };
    registry.register({ ...handler('mail', 'ok.v1'), batch, invokeBatch });
    expect(registry.resolve('mail', 'ok.v1')?.batch).toBe(batch);
    const refused: Array<[Partial<HandlerDefinition>, string]> = [
      [
        { batch: { size: 0, waitMs: 0 }, invokeBatch },
        'batch must be { size: an integer from 1 to 1000',
      ],
      [{ batch: { size: 1001, waitMs: 0 }, invokeBatch }, 'batch must be { size'],
      [{ batch: { size: 2, waitMs: 60_001 }, invokeBatch }, 'batch must be { size'],
      [{ batch: { size: 2, waitMs: 1.5 }, invokeBatch }, 'batch must be { size'],
      [{ batch: { size: 2, waitMs: 0 } }, 'batch needs invokeBatch'],
      [
        { batch: { size: 2, waitMs: 0 }, invokeBatch, transactional: true },
        'batch cannot be combined with transactional',
      ],
    ];
    refused.forEach(([bad, message], i) => {
      expect(() => registry.register({ ...handler('mail', `bad${i}.v1`), ...bad })).toThrow(
        `@JobHandler of H.mail.bad${i}.v1: ${message}`,
      );
    });
    expect(() =>
      registry.register({ ...handler('mail'), batch: { size: 2, waitMs: 0 }, invokeBatch }),
    ).toThrow('@JobHandler of H.mail.*: batch needs a job type');
  });
});
