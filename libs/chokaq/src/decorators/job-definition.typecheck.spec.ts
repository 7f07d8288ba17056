/**
 * Compile-time contract of `defineJob`: `npm run typecheck` fails if any `@ts-expect-error` line
 * below stops being an error (or any other line becomes one). The Jest part only proves the file
 * loads; the assertions are the type checker's.
 */
import { Injectable } from '@nestjs/common';
import { JobClient } from '../client/job-client';
import type { JobBatchItem, JobBatchOutcome } from '../interfaces/handler.interface';
import { JobContext } from '../interfaces/job-context.interface';
import { JobDefinition, JobPayload, JobResult, defineJob } from './job-definition';
import { JobHandler } from './job-handler.decorator';

const WelcomeEmail = defineJob<{ to: string }>('emails', 'welcome.v1');
const Resize = defineJob<{ width: number; height: number }>('images', 'resize.v1');

@Injectable()
export class TypedHandlers {
  @JobHandler(WelcomeEmail, { timeoutMs: 30_000 })
  async welcome(payload: { to: string }, ctx: JobContext): Promise<string> {
    return `${payload.to}:${ctx.id}`;
  }

  @JobHandler(WelcomeEmail)
  async payloadOnly(payload: { to: string }): Promise<void> {
    void payload;
  }

  // @ts-expect-error the payload parameter does not match the definition's payload type
  @JobHandler(Resize)
  async wrongPayload(payload: { to: string }): Promise<void> {
    void payload;
  }

  @JobHandler(WelcomeEmail, { batch: { size: 50 } })
  async welcomeMany(items: JobBatchItem<{ to: string }>[]): Promise<JobBatchOutcome[]> {
    return items.map(() => ({ status: 'succeeded' }));
  }

  // @ts-expect-error a batch handler takes the items of a batch, not one payload
  @JobHandler(WelcomeEmail, { batch: { size: 50 } })
  async batchOfOne(payload: { to: string }): Promise<void> {
    void payload;
  }

  // @ts-expect-error the items' payload type does not match the definition's
  @JobHandler(Resize, { batch: { size: 50 } })
  async batchOfOthers(items: JobBatchItem<{ to: string }>[]): Promise<void> {
    void items;
  }

  // A string-queue handler takes any payload.
  @JobHandler('emails', { type: 'other.v1' })
  async untyped(payload: unknown): Promise<void> {
    void payload;
  }
}

// @ts-expect-error a definition fixes the type; `type` is not an option then
JobHandler(WelcomeEmail, { type: 'x' });

export async function producer(jobs: JobClient): Promise<void> {
  await jobs.enqueue(WelcomeEmail, { to: 'a@b.c' });
  await jobs.enqueue(
    WelcomeEmail,
    { to: 'a@b.c' },
    { priority: 20, delayMs: 5_000, idempotencyKey: 'k' },
  );
  await jobs.enqueueMany(WelcomeEmail, [
    { payload: { to: 'x' } },
    { payload: { to: 'y' }, priority: 1 },
  ]);
  await jobs.schedule(WelcomeEmail, { to: 'a' }, new Date());
  // @ts-expect-error wrong payload field type
  await jobs.enqueue(WelcomeEmail, { to: 42 });
  // @ts-expect-error missing payload field
  await jobs.enqueue(WelcomeEmail, {});
  // @ts-expect-error payload of another definition
  await jobs.enqueue(WelcomeEmail, { width: 1, height: 2 });
  // @ts-expect-error enqueueMany items are checked too
  await jobs.enqueueMany(WelcomeEmail, [{ payload: { to: 1 } }]);
  // @ts-expect-error schedule is checked too
  await jobs.schedule(Resize, { to: 'a' }, new Date());
  // @ts-expect-error a definition fixes the type; `type` is not an enqueue option then
  await jobs.enqueue(WelcomeEmail, { to: 'a' }, { type: 'other' });
  // Plain queues accept anything.
  await jobs.enqueue('emails', { anything: true }, { type: 'welcome.v1' });
}

// Results: the definition names what its handler returns; getResult reads it back with that type.
const MonthlyReport = defineJob<{ month: string }, { rows: number }>('reports', 'monthly.v1');

@Injectable()
export class ResultHandlers {
  @JobHandler(MonthlyReport, { recordResult: true })
  async report(payload: { month: string }): Promise<{ rows: number }> {
    return { rows: payload.month.length };
  }

  @JobHandler(MonthlyReport)
  syncReport(): { rows: number } {
    return { rows: 1 };
  }

  // @ts-expect-error the return type does not match the definition's result type
  @JobHandler(MonthlyReport, { recordResult: true })
  async wrongResult(): Promise<{ rows: string }> {
    return { rows: 'x' };
  }
}

export async function resultReader(jobs: JobClient, id: string): Promise<number> {
  const result = await jobs.getResult(MonthlyReport, id);
  // @ts-expect-error the result may be missing (not archived) or null (none stored)
  void result.rows;
  const typed: JobResult<typeof MonthlyReport> = { rows: 1 };
  return (result?.rows ?? 0) + typed.rows;
}

// Definitions of different payload types are not interchangeable.
// @ts-expect-error { to: string } is not { width; height }
export const wrongDefinition: JobDefinition<{ width: number; height: number }> = WelcomeEmail;
export const payloadType: JobPayload<typeof WelcomeEmail> = { to: 'x' };

describe('defineJob typing', () => {
  it('binds queue and type', () => {
    expect(WelcomeEmail).toEqual({ queue: 'emails', type: 'welcome.v1' });
    expect(defineJob('reports')).toEqual({ queue: 'reports', type: 'reports' });
    expect(Object.isFrozen(WelcomeEmail)).toBe(true);
  });

  it('validates the queue name and type at once', () => {
    expect(() => defineJob('bad queue')).toThrow('defineJob.queue');
    expect(() => defineJob('ok', '')).toThrow('defineJob.type');
  });
});
