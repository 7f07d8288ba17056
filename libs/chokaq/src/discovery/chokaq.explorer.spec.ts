import { Injectable, Scope } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { defineJob } from '../decorators/job-definition';
import { JobHandler } from '../decorators/job-handler.decorator';
import { RecurringJob } from '../decorators/recurring-job.decorator';
import {
  ChokaQDuplicateHandlerError,
  ChokaQDuplicateRecurringJobError,
  ChokaQHandlerScopeError,
  ChokaQValidationError,
} from '../errors';
import { JobContext } from '../runtime/job-context';
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
    await expect(explore(PerRequest)).resolves.toEqual({ handlers: [], recurring: [] });
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
      types: [{ queue: 'reports', type: 'daily' }],
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
      types: [{ queue: 'reports', type: 'daily' }],
    });
    registry.replaceAll(handlers);
    expect(registry.handled()).toEqual({ queues: ['emails'], types: [] });
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
