/**
 * Compile-time contract of `defineJob(queue, type, { schema })`: the payload types are inferred
 * from a zod or valibot schema (input for producers, output for handlers). `npm run typecheck`
 * fails if any `@ts-expect-error` line below stops being an error (or any other line becomes one).
 * The Jest part checks what the definition holds at run time.
 */
import { Injectable } from '@nestjs/common';
import * as v from 'valibot';
import { z } from 'zod';
import { JobClient } from '../client/job-client';
import { ChokaQValidationError } from '../errors';
import { JobContext } from '../interfaces/job-context.interface';
import type { StandardSchemaV1 } from '../interfaces/standard-schema.interface';
import { JobDefinition, JobInput, JobPayload, defineJob } from './job-definition';
import { JobHandler } from './job-handler.decorator';

/** Compiles only when `A` and `B` are the same type. */
type Equal<A, B> =
  (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
const same = <A, B>(check: Equal<A, B>): Equal<A, B> => check;

const ZodWelcome = defineJob('emails', 'welcome.v1', {
  schema: z.object({ to: z.string(), lang: z.string().default('en') }),
});
const ValibotResize = defineJob('images', 'resize.v1', {
  schema: v.object({ width: v.number(), height: v.optional(v.number(), 100) }),
});
/** Input and output differ: a string in, its length out. */
const Transformed = defineJob('text', 'length.v1', {
  schema: z.object({ text: z.string().transform((s) => s.length) }),
});
const Untyped = defineJob('plain', undefined, { schema: z.unknown() });

// Handlers receive the output, producers pass the input.
same<JobPayload<typeof ZodWelcome>, { to: string; lang: string }>(true);
same<JobInput<typeof ZodWelcome>, { to: string; lang?: string | undefined }>(true);
same<JobPayload<typeof ValibotResize>, { width: number; height: number }>(true);
same<JobInput<typeof ValibotResize>, { width: number; height?: number | undefined }>(true);
same<JobPayload<typeof Transformed>, { text: number }>(true);
same<JobInput<typeof Transformed>, { text: string }>(true);
same<JobPayload<typeof Untyped>, unknown>(true);
// A definition without a schema keeps one payload type for both sides.
same<JobInput<JobDefinition<{ a: 1 }>>, { a: 1 }>(true);

@Injectable()
export class SchemaHandlers {
  @JobHandler(ZodWelcome)
  async welcome(payload: { to: string; lang: string }, ctx: JobContext): Promise<string> {
    return `${payload.to}:${payload.lang}:${ctx.id}`;
  }

  @JobHandler(Transformed)
  async length(payload: { text: number }): Promise<number> {
    return payload.text;
  }

  // @ts-expect-error the handler receives the schema's output ({ text: number }), not its input
  @JobHandler(Transformed)
  async wrongSide(payload: { text: string }): Promise<void> {
    void payload;
  }

  // @ts-expect-error the payload parameter does not match the schema
  @JobHandler(ValibotResize)
  async wrongPayload(payload: { to: string }): Promise<void> {
    void payload;
  }
}

export async function producer(jobs: JobClient): Promise<void> {
  await jobs.enqueue(ZodWelcome, { to: 'a@b.c' }); // `lang` has a default: optional for producers
  await jobs.enqueue(ValibotResize, { width: 10 }, { priority: 5 });
  await jobs.enqueue(Transformed, { text: 'abc' });
  await jobs.enqueueMany(ZodWelcome, [
    { payload: { to: 'x' } },
    { payload: { to: 'y', lang: 'fr' } },
  ]);
  await jobs.schedule(ValibotResize, { width: 1, height: 2 }, new Date());
  await jobs.enqueue(Untyped, 'anything');
  // @ts-expect-error wrong field type
  await jobs.enqueue(ZodWelcome, { to: 42 });
  // @ts-expect-error a producer passes the input ({ text: string }), not the output
  await jobs.enqueue(Transformed, { text: 3 });
  // @ts-expect-error enqueueMany items are checked against the input too
  await jobs.enqueueMany(ValibotResize, [{ payload: { width: '1' } }]);
  // @ts-expect-error schedule too
  await jobs.schedule(ZodWelcome, {}, new Date());
}

/** Type checks only: never called (each call throws at run time, as the Jest part shows). */
export function refusedDefinitions(): void {
  // @ts-expect-error not a Standard Schema
  defineJob('emails', 'x', { schema: { parse: (x: unknown) => x } });
  // @ts-expect-error a version is a number
  defineJob('emails', 'x', { version: '2' });
  // @ts-expect-error an upgrade step is a function
  defineJob('emails', 'x', { version: 2, upgrade: { 1: 'v2' } });
}

// Vendored interface: zod and valibot schemas satisfy it as they are.
export const zodIsStandard: StandardSchemaV1<{ to: string }> = z.object({ to: z.string() });
export const valibotIsStandard: StandardSchemaV1<{ to: string }> = v.object({ to: v.string() });

describe('defineJob with a schema', () => {
  it('keeps the schema on the frozen definition; without one the definition is as before', () => {
    expect(ZodWelcome.queue).toBe('emails');
    expect(ZodWelcome.type).toBe('welcome.v1');
    expect(ZodWelcome.schema?.['~standard'].vendor).toBe('zod');
    expect(ValibotResize.schema?.['~standard'].vendor).toBe('valibot');
    expect(Untyped.type).toBe('plain');
    expect(Object.isFrozen(ZodWelcome)).toBe(true);
    expect(defineJob('reports')).toEqual({ queue: 'reports', type: 'reports' });
  });

  it('refuses a schema that is not a Standard Schema v1, naming the option', () => {
    for (const schema of [undefined, null, {}, { parse: () => 1 }]) {
      const define = () => defineJob('emails', 'x', { schema } as never);
      expect(define).toThrow(ChokaQValidationError);
      expect(define).toThrow('defineJob.options.schema must be a Standard Schema v1 validator');
    }
  });
});
