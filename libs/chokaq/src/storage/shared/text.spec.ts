import { runInNewContext } from 'node:vm';
import { MAX_ERROR_TEXT, errorText, escapeLike, sanitizeErrorText, toError } from './text';

describe('sanitizeErrorText', () => {
  it('replaces NUL characters and lone surrogates so PostgreSQL text accepts it', () => {
    expect(sanitizeErrorText('a\u0000b\ud800c')).toBe('a\uFFFDb\uFFFDc');
  });

  it(`cuts text to ${MAX_ERROR_TEXT} characters`, () => {
    const out = sanitizeErrorText('x'.repeat(MAX_ERROR_TEXT + 10));
    expect(out).toHaveLength(MAX_ERROR_TEXT);
    expect(out.endsWith('…')).toBe(true);
  });
});

describe('toError', () => {
  it('keeps errors, including errors of another realm', () => {
    const own = new TypeError('own');
    expect(toError(own)).toBe(own);
    const foreign = runInNewContext('new RangeError("from another realm")') as unknown;
    expect(foreign instanceof Error).toBe(false);
    expect(toError(foreign).message).toBe('from another realm');
  });

  it.each([
    [undefined, 'undefined was thrown'],
    [null, 'null was thrown'],
    ['plain string', 'plain string'],
    [{ code: 42 }, 'Non-error thrown: {"code":42}'],
  ])('coerces %p', (thrown, message) => {
    expect(toError(thrown)).toBeInstanceOf(Error);
    expect(toError(thrown).message).toBe(message);
  });

  it('survives a circular object', () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(toError(circular).message).toBe('Non-error thrown: [object Object]');
  });
});

describe('errorText', () => {
  it('stores the stack when there is one, sanitised', () => {
    const error = new Error('bad\u0000thing');
    expect(errorText(error)).toContain('Error: bad\uFFFDthing');
    expect(errorText(error)).toContain('text.spec.ts');
  });
});

describe('escapeLike', () => {
  it('escapes %, _, [ and the escape character itself', () => {
    expect(escapeLike('50%_off[x]\\')).toBe('50\\%\\_off\\[x]\\\\');
  });
});
