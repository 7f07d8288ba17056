import { Injectable, Scope } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { resolveChokaQOptions } from '../config/resolve-options';
import { defineJob } from '../decorators/job-definition';
import { JobHandler } from '../decorators/job-handler.decorator';
import { OnJobEvent } from '../decorators/on-job-event.decorator';
import { RecurringJob } from '../decorators/recurring-job.decorator';
import {
  ChokaQDuplicateHandlerError,
  ChokaQDuplicateRecurringJobError,
  ChokaQHandlerScopeError,
  ChokaQValidationError,
} from '../errors';
import { JobContext } from '../interfaces/job-context.interface';
import { ChokaQModuleOptions } from '../interfaces/module-options.interface';
import { ChokaQMetadataAccessor } from './chokaq-metadata.accessor';
import { ChokaQExplorer, ExploredJobs } from './chokaq.explorer';
import { HandlerRegistry } from './handler.registry';

const Welcome = defineJob<{ to: string }>('emails', 'welcome.v1');

@Injectable()
class EmailHandlers {
  readonly seen: unknown[] = [];

  @JobHandler(Welcome, { timeoutMs: 30_000, maxAttempts: 5 })
  async welcome(payload: { to: string }, ctx: JobContext): Promise<string> {
    this.seen.push(payload);
    return `welcome ${payload.to} #${ctx.attempt}`;
  }

  @JobHandler('emails')
  anyEmail(): string {
    throw new Error('sync throw');
  }

  @RecurringJob('digest', '0 8 * * *', { timeZone: 'Europe/Paris' })
  @JobHandler('emails', { type: 'digest.v1', retryZombies: true })
  async digest(): Promise<void> {}

  notAHandler(): void {}
}

@RecurringJob('cleanup', '*/5 * * * *', {
  queue: 'maintenance',
  payload: { all: true },
  misfire: 'none',
})
@RecurringJob('vacuum', '0 4 * * *', { queue: 'maintenance', type: 'vacuum.v1' })
@Injectable()
class Schedules {}

@Injectable()
class ReportHandlers {
  @JobHandler('reports', { type: 'daily' })
  daily(): void {}
  @JobHandler('billing')
  billing(): void {}
}

async function explore(
  ...providers: Array<new (...args: never[]) => unknown>
): Promise<ExploredJobs> {
  const moduleRef = await Test.createTestingModule({
    imports: [DiscoveryModule],
    providers: [ChokaQMetadataAccessor, ChokaQExplorer, ...providers],
  }).compile();
  try {
    return moduleRef.get(ChokaQExplorer).explore();
  } finally {
    await moduleRef.close();
  }
}

describe('ChokaQExplorer', () => {
  it('finds handlers bound to their singleton instance', async () => {
    const { handlers } = await explore(EmailHandlers);
    const byName = Object.fromEntries(handlers.map((h) => [h.name, h]));
    expect(Object.keys(byName).sort()).toEqual([
      'EmailHandlers.anyEmail',
      'EmailHandlers.digest',
      'EmailHandlers.welcome',
    ]);
    expect(byName['EmailHandlers.welcome']).toMatchObject({
      queue: 'emails',
      type: 'welcome.v1',
      timeoutMs: 30_000,
      maxAttempts: 5,
    });
    expect(byName['EmailHandlers.anyEmail'].type).toBeUndefined();
    expect(byName['EmailHandlers.digest'].retryZombies).toBe(true);
    const ctx = { attempt: 2 } as JobContext;
    await expect(byName['EmailHandlers.welcome'].invoke({ to: 'x' }, ctx)).resolves.toBe(
      'welcome x #2',
    );
    // A synchronous throw becomes a rejection.
    await expect(byName['EmailHandlers.anyEmail'].invoke({}, ctx)).rejects.toThrow('sync throw');
  });

  it('collects method- and class-level recurring jobs with their defaults', async () => {
    const { recurring } = await explore(EmailHandlers, Schedules);
    expect(recurring.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      {
        name: 'cleanup',
        cron: '*/5 * * * *',
        queue: 'maintenance',
        type: 'maintenance',
        payload: { all: true },
        timeZone: 'UTC',
        misfire: 'none',
      },
      {
        name: 'digest',
        cron: '0 8 * * *',
        queue: 'emails',
        type: 'digest.v1',
        payload: {},
        timeZone: 'Europe/Paris',
        misfire: 'skip',
      },
      {
        name: 'vacuum',
        cron: '0 4 * * *',
        queue: 'maintenance',
        type: 'vacuum.v1',
        payload: {},
        timeZone: 'UTC',
        misfire: 'skip',
      },
    ]);
  });

  it('refuses handlers on request-scoped and transient providers, saying what to change', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {
      @JobHandler('q')
      run(): void {}
    }
    @Injectable({ scope: Scope.TRANSIENT })
    class Transient {
      @JobHandler('q')
      run(): void {}
    }
    await expect(explore(PerRequest)).rejects.toThrow(ChokaQHandlerScopeError);
    await expect(explore(PerRequest)).rejects.toThrow(
      /PerRequest\.run is on a request-scoped provider.*singleton/,
    );
    await expect(explore(Transient)).rejects.toThrow(
      /Transient\.run is on a transient-scoped provider/,
    );
  });

  it('ignores undecorated request-scoped providers', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {
      run(): void {}
    }
    await expect(explore(PerRequest)).resolves.toEqual({
      handlers: [],
      recurring: [],
      listeners: [],
    });
  });

  it('finds @OnJobEvent listeners bound to their instance, with their filter', async () => {
    @Injectable()
    class Alerts {
      readonly heard: string[] = [];
      @OnJobEvent(['dead', 'cancelled'], { queue: 'emails', type: 'welcome.v1' })
      onDead(event: { name: string }): void {
        this.heard.push(event.name);
      }
      @OnJobEvent('succeeded')
      onDone(): void {}
    }
    const { listeners } = await explore(Alerts);
    expect(listeners.map(({ listener: _l, ...rest }) => rest)).toEqual([
      { name: 'Alerts.onDead', events: ['dead', 'cancelled'], queue: 'emails', type: 'welcome.v1' },
      { name: 'Alerts.onDone', events: ['succeeded'] },
    ]);
    const heard: string[] = [];
    const probe = { heard };
    await listeners[0].listener.call(probe, { name: 'dead' } as never);
    // Bound to the provider instance, not to whatever `this` the caller has.
    expect(heard).toEqual([]);
  });

  it('refuses an unknown event name, an empty list and a bad filter, all at once', async () => {
    @Injectable()
    class Bad {
      @OnJobEvent('done' as never)
      a(): void {}
      @OnJobEvent([])
      b(): void {}
      @OnJobEvent('dead', { queue: 'not a queue', type: '', extra: 1 } as never)
      c(): void {}
    }
    const error = await explore(Bad).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChokaQValidationError);
    const paths = (error as ChokaQValidationError).issues.map((i) => i.path);
    expect(paths).toEqual([
      '@OnJobEvent of Bad.a: event',
      '@OnJobEvent of Bad.b: event',
      '@OnJobEvent of Bad.c: queue',
      '@OnJobEvent of Bad.c: type',
      '@OnJobEvent of Bad.c: extra',
    ]);
  });

  it('validates queue names', async () => {
    @Injectable()
    class Bad {
      @JobHandler('not a queue')
      run(): void {}
    }
    await expect(explore(Bad)).rejects.toThrow(ChokaQValidationError);
    await expect(explore(Bad)).rejects.toThrow('@JobHandler of Bad.run: queue');
  });

  it('requires a queue for a recurring job that is not on a handler', async () => {
    @Injectable()
    class NoQueue {
      @RecurringJob('orphan', '* * * * *')
      run(): void {}
    }
    await expect(explore(NoQueue)).rejects.toThrow(
      /@RecurringJob\('orphan'\) on NoQueue\.run: queue is required/,
    );
  });

  it('refuses two recurring jobs with one name', async () => {
    @RecurringJob('cleanup', '* * * * *', { queue: 'other' })
    @Injectable()
    class Again {}
    await expect(explore(Schedules, Again)).rejects.toThrow(ChokaQDuplicateRecurringJobError);
  });
});

describe('ChokaQExplorer: decorator options', () => {
  /** The issues of the one ChokaQValidationError that `explore` throws, by path. */
  async function issuesOf(
    ...providers: Array<new (...args: never[]) => unknown>
  ): Promise<Record<string, { message: string; value: unknown }>> {
    const error = await explore(...providers).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ChokaQValidationError);
    return Object.fromEntries(
      (error as ChokaQValidationError).issues.map((i) => [
        i.path,
        { message: i.message, value: i.value },
      ]),
    );
  }

  /** The message `forRoot` gives for one bad option, so decorators are held to the same words. */
  function forRootMessage(options: ChokaQModuleOptions): string {
    try {
      resolveChokaQOptions(options);
    } catch (error) {
      return (error as ChokaQValidationError).issues[0].message;
    }
    throw new Error('expected forRoot to refuse the options');
  }

  it('reports every problem of every decorator at once, with the rules and words of forRoot', async () => {
    @Injectable()
    class SlowHandlers {
      // 2^31 ms: Node would clamp the timer to 1 ms and time every job out at once.
      @JobHandler('slow', { timeoutMs: 2 ** 31 })
      run(): void {}
    }
    @Injectable()
    class PickyHandlers {
      @JobHandler('picky', { maxAttempts: 0, retryZombies: 'yes' as never })
      run(): void {}
      @JobHandler('picky', { type: '', timeoutMs: 1.5, colour: 'red' } as never)
      typed(): void {}
    }
    @RecurringJob('never', 'nope', { queue: 'reports' })
    @RecurringJob('zoned', '0 3 * * *', {
      queue: 'reports',
      timeZone: 'Mars/Olympus',
      misfire: 'always' as never,
    })
    @Injectable()
    class BadSchedules {}

    const issues = await issuesOf(SlowHandlers, PickyHandlers, BadSchedules);
    expect(Object.keys(issues).sort()).toEqual([
      '@JobHandler of PickyHandlers.run: maxAttempts',
      '@JobHandler of PickyHandlers.run: retryZombies',
      '@JobHandler of PickyHandlers.typed: colour',
      '@JobHandler of PickyHandlers.typed: timeoutMs',
      '@JobHandler of PickyHandlers.typed: type',
      '@JobHandler of SlowHandlers.run: timeoutMs',
      "@RecurringJob('never') on BadSchedules: cron",
      "@RecurringJob('zoned') on BadSchedules: misfire",
      "@RecurringJob('zoned') on BadSchedules: timeZone",
    ]);
    expect(issues['@JobHandler of SlowHandlers.run: timeoutMs']).toEqual({
      message: forRootMessage({ execution: { timeoutMs: 2 ** 31 } }),
      value: 2 ** 31,
    });
    expect(issues['@JobHandler of PickyHandlers.run: maxAttempts']).toEqual({
      message: forRootMessage({ retry: { maxAttempts: 0 } }),
      value: 0,
    });
    expect(issues['@JobHandler of PickyHandlers.run: retryZombies'].message).toBe(
      forRootMessage({ worker: { enabled: 'yes' as never } }),
    );
    expect(issues['@JobHandler of PickyHandlers.typed: colour'].message).toBe(
      forRootMessage({ retry: { colour: 1 } as never }),
    );
    expect(issues["@RecurringJob('never') on BadSchedules: cron"]).toMatchObject({
      message: expect.stringMatching(/^must be a cron expression/),
      value: 'nope',
    });
    expect(issues["@RecurringJob('zoned') on BadSchedules: timeZone"]).toMatchObject({
      message: expect.stringMatching(/IANA time zone/),
      value: 'Mars/Olympus',
    });
  });

  it('accepts the largest timer and the smallest attempt count', async () => {
    @Injectable()
    class Edge {
      @JobHandler('edge', { timeoutMs: 2 ** 31 - 1, maxAttempts: 1, retryZombies: false })
      run(): void {}
    }
    const { handlers } = await explore(Edge);
    expect(handlers[0]).toMatchObject({ timeoutMs: 2 ** 31 - 1, maxAttempts: 1 });
  });

  it('refuses a cron expression that has no next slot, and a payload an enqueue would refuse', async () => {
    @RecurringJob('feb-30', '0 0 30 2 *', { queue: 'reports', payload: { n: 1n } })
    @Injectable()
    class Impossible {}
    const issues = await issuesOf(Impossible);
    expect(Object.keys(issues).sort()).toEqual([
      "@RecurringJob('feb-30') on Impossible: cron",
      "@RecurringJob('feb-30') on Impossible: payload",
    ]);
  });

  it('reports a bad queue together with the other problems', async () => {
    @Injectable()
    class Both {
      @JobHandler('not a queue', { maxAttempts: -1 })
      run(): void {}
      @RecurringJob('orphan', '* * * * *')
      orphan(): void {}
    }
    const issues = await issuesOf(Both);
    expect(Object.keys(issues).sort()).toEqual([
      '@JobHandler of Both.run: maxAttempts',
      '@JobHandler of Both.run: queue',
      "@RecurringJob('orphan') on Both.orphan: queue",
    ]);
  });
});

describe('HandlerRegistry', () => {
  async function registryOf(
    ...providers: Array<new (...args: never[]) => unknown>
  ): Promise<HandlerRegistry> {
    const registry = new HandlerRegistry();
    for (const h of (await explore(...providers)).handlers) registry.register(h);
    return registry;
  }

  it('resolves exact handlers before queue-wide ones', async () => {
    const registry = await registryOf(EmailHandlers, ReportHandlers);
    expect(registry.resolve('emails', 'welcome.v1')?.name).toBe('EmailHandlers.welcome');
    expect(registry.resolve('emails', 'anything')?.name).toBe('EmailHandlers.anyEmail');
    expect(registry.resolve('reports', 'daily')?.name).toBe('ReportHandlers.daily');
    expect(registry.resolve('reports', 'weekly')).toBeUndefined();
    expect(registry.resolve('nowhere', 'x')).toBeUndefined();
  });

  it('claims queue-wide queues plus exact pairs of the other queues', async () => {
    const registry = await registryOf(EmailHandlers, ReportHandlers);
    expect(registry.handled()).toEqual({
      queues: ['billing', 'emails'],
      types: [{ queue: 'reports', type: 'daily', minVersion: 1, maxVersion: 1 }],
    });
    expect(registry.list()).toHaveLength(5);
    expect(registry.isEmpty).toBe(false);
    expect(new HandlerRegistry().handled()).toEqual({ queues: [], types: [] });
  });

  it('replaces all handlers at once, or none on a duplicate', async () => {
    const registry = await registryOf(ReportHandlers);
    const { handlers } = await explore(EmailHandlers);
    expect(() => registry.replaceAll([...handlers, handlers[0]])).toThrow(
      ChokaQDuplicateHandlerError,
    );
    expect(registry.handled()).toEqual({
      queues: ['billing'],
      types: [{ queue: 'reports', type: 'daily', minVersion: 1, maxVersion: 1 }],
    });
    registry.replaceAll(handlers);
    expect(registry.handled()).toEqual({ queues: ['emails'], types: [] });
  });

  it('refuses a registered handler whose options break the @JobHandler rules', () => {
    const registry = new HandlerRegistry();
    const invoke = async (): Promise<void> => undefined;
    expect(() =>
      registry.register({ queue: 'q', name: 'X.y', timeoutMs: 2 ** 31, invoke }),
    ).toThrow(
      '@JobHandler of X.y: timeoutMs must be an integer from 1 to 2147483647 (got 2147483648)',
    );
    expect(registry.isEmpty).toBe(true);
  });

  it('refuses duplicate handlers with both names', async () => {
    @Injectable()
    class MoreEmails {
      @JobHandler(Welcome)
      welcomeAgain(): void {}
    }
    @Injectable()
    class AllReports {
      @JobHandler('billing')
      billing(): void {}
    }
    await expect(registryOf(EmailHandlers, MoreEmails)).rejects.toThrow(
      'Two ChokaQ handlers for queue "emails", type "welcome.v1": EmailHandlers.welcome and MoreEmails.welcomeAgain',
    );
    await expect(registryOf(ReportHandlers, AllReports)).rejects.toThrow(
      ChokaQDuplicateHandlerError,
    );
    await expect(registryOf(ReportHandlers, AllReports)).rejects.toThrow(
      'every type of queue "billing"',
    );
  });
});
