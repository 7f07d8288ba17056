import * as v from 'valibot';
import { z } from 'zod';
import type { StandardSchemaV1 } from '../interfaces/standard-schema.interface';
import { checkPayload, isStandardSchema, storedForm, toValidationIssue } from './validate-payload';

/** A hand-written Standard Schema whose `validate` returns a promise, as the spec allows. */
const asyncPositive: StandardSchemaV1<number> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: async (value) =>
      typeof value === 'number' && value > 0
        ? { value }
        : { issues: [{ message: 'must be a positive number' }] },
  },
};

describe('payload validation through Standard Schema', () => {
  it('recognises zod, valibot, callable (arktype-like) and hand-written schemas, nothing else', () => {
    const callable = Object.assign(() => undefined, {
      '~standard': { version: 1, vendor: 'fn', validate: () => ({ value: 1 }) },
    });
    expect(isStandardSchema(z.string())).toBe(true);
    expect(isStandardSchema(v.string())).toBe(true);
    expect(isStandardSchema(callable)).toBe(true);
    expect(isStandardSchema(asyncPositive)).toBe(true);
    for (const notOne of [
      undefined,
      null,
      'schema',
      {},
      { '~standard': null },
      { '~standard': { version: 2, validate: () => ({ value: 1 }) } },
      { '~standard': { version: 1, validate: 'no' } },
      { parse: () => 1 },
    ]) {
      expect(isStandardSchema(notOne)).toBe(false);
    }
  });

  it('returns the output of a passing zod schema synchronously, defaults and transforms applied', () => {
    const schema = z.object({
      to: z.string().trim().toLowerCase(),
      lang: z.string().default('en'),
    });
    const check = checkPayload(schema, { to: '  A@B.C ' }, 'payload');
    expect(check).toEqual({ ok: true, value: { to: 'a@b.c', lang: 'en' } });
  });

  it('names each zod issue by its full path, with the schema message and the value found there', () => {
    const schema = z.object({
      to: z.string(),
      tags: z.array(z.string()),
      'first name': z.string(),
    });
    const payload = { to: 42, tags: ['ok', 7], 'first name': 'x' };
    const check = checkPayload(schema, payload, 'items[3].payload');
    expect(check).toMatchObject({ ok: false });
    if (check instanceof Promise || check.ok) throw new Error('expected a synchronous failure');
    expect(check.issues).toEqual([
      { path: 'items[3].payload.to', message: expect.stringMatching(/string/), value: 42 },
      { path: 'items[3].payload.tags[1]', message: expect.stringMatching(/string/), value: 7 },
    ]);
  });

  it('reads valibot path segments (objects with a key) the same way', () => {
    const schema = v.object({ user: v.object({ emails: v.array(v.pipe(v.string(), v.email())) }) });
    const check = checkPayload(
      schema,
      { user: { emails: ['ada@example.com', 'nope'] } },
      'payload',
    );
    if (check instanceof Promise || check.ok) throw new Error('expected a synchronous failure');
    expect(check.issues).toEqual([
      {
        path: 'payload.user.emails[1]',
        message: expect.stringMatching(/email/i),
        value: 'nope',
      },
    ]);
  });

  it('awaits a schema whose validate returns a promise (a zod async refinement, a hand-written one)', async () => {
    const refined = z.object({ n: z.number().refine(async (n) => n % 2 === 0, 'must be even') });
    const pending = checkPayload(refined, { n: 3 }, 'payload');
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).resolves.toEqual({
      ok: false,
      issues: [{ path: 'payload.n', message: 'must be even', value: 3 }],
    });
    await expect(checkPayload(refined, { n: 4 }, 'payload')).resolves.toEqual({
      ok: true,
      value: { n: 4 },
    });
    await expect(checkPayload(asyncPositive, -1, 'payload')).resolves.toEqual({
      ok: false,
      issues: [{ path: 'payload', message: 'must be a positive number', value: -1 }],
    });
  });

  it('treats an empty issue list as a failure, as the spec does', () => {
    const empty: StandardSchemaV1 = {
      '~standard': { version: 1, vendor: 't', validate: () => ({ issues: [] }) },
    };
    expect(checkPayload(empty, 1, 'payload')).toEqual({
      ok: false,
      issues: [{ path: 'payload', message: 'is invalid', value: 1 }],
    });
  });

  it('lets a validator that throws, rather than reporting issues, throw', () => {
    const throwing: StandardSchemaV1 = {
      '~standard': {
        version: 1,
        vendor: 't',
        validate: () => {
          throw new Error('validator bug');
        },
      },
    };
    expect(() => checkPayload(throwing, 1, 'payload')).toThrow('validator bug');
  });

  it('formats odd keys and paths that leave the value', () => {
    const sym = Symbol('id');
    expect(
      toValidationIssue(
        { message: 'm', path: ['a-b', { key: 0 }, sym, 'x'] },
        { 'a-b': [null] },
        'p',
      ),
    ).toEqual({ path: 'p["a-b"][0][Symbol(id)].x', message: 'm', value: undefined });
    expect(toValidationIssue({ message: 'root' }, 5, 'payload')).toEqual({
      path: 'payload',
      message: 'root',
      value: 5,
    });
  });

  it('gives the stored form of a payload: a JSON round trip, undefined read as null', () => {
    const at = new Date('2026-01-02T03:04:05.000Z');
    expect(storedForm({ at, skip: undefined })).toEqual({ value: { at: at.toISOString() } });
    expect(storedForm(undefined)).toEqual({ value: null });
    expect(storedForm({ n: 1n })).toBeUndefined();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(storedForm(cyclic)).toBeUndefined();
    expect(storedForm(() => 1)).toBeUndefined();
  });
});
