import { runInNewContext } from 'node:vm';
import {
  MAX_AGGREGATE_ERRORS,
  MAX_ERROR_CAUSE_DEPTH,
  MAX_ERROR_TEXT,
  errorText,
  sanitizeErrorText,
  toError,
} from './error-text';

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

  it('keeps the cause chain, the reason behind errors such as fetch failed', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
      code: 'ECONNREFUSED',
    });
    const fetchFailed = new TypeError('fetch failed', { cause: refused });
    const text = errorText(new Error('order sync failed', { cause: fetchFailed }));
    const lines = text.split('\n');
    expect(lines[0]).toBe('Error: order sync failed');
    expect(lines).toContain('Caused by: TypeError: fetch failed');
    expect(lines).toContain('Caused by: Error: connect ECONNREFUSED 127.0.0.1:1');
    expect(text.indexOf('fetch failed')).toBeLessThan(text.indexOf('ECONNREFUSED'));
    // Each cause keeps its own stack.
    expect(text.split('text.spec.ts').length - 1).toBeGreaterThanOrEqual(3);
  });

  it('keeps a cause that is not an error, without inventing a stack for it', () => {
    expect(errorText(new Error('outer', { cause: 'disk full' }))).toContain('Caused by: disk full');
    expect(errorText(new Error('outer', { cause: { status: 503 } }))).toContain(
      'Caused by: {"status":503}',
    );
    expect(errorText(new Error('outer', { cause: 42n }))).toContain('Caused by: 42');
    const text = errorText(new Error('outer', { cause: 'disk full' }));
    expect(text.slice(text.indexOf('Caused by: disk full')).split('\n')).toHaveLength(1);
  });

  it('adds nothing for an error without a cause, or with cause undefined', () => {
    expect(errorText(new Error('plain'))).not.toContain('Caused by');
    expect(errorText(new Error('plain', { cause: undefined }))).not.toContain('Caused by');
  });

  it('follows causes to a bounded depth', () => {
    let error = new Error('level 0');
    for (let n = 1; n <= 20; n++) error = new Error(`level ${n}`, { cause: error });
    const causes = errorText(error)
      .split('\n')
      .filter((l) => l.startsWith('Caused by: '));
    expect(causes).toHaveLength(MAX_ERROR_CAUSE_DEPTH + 1);
    expect(causes.slice(0, MAX_ERROR_CAUSE_DEPTH)).toEqual(
      Array.from({ length: MAX_ERROR_CAUSE_DEPTH }, (_, n) => `Caused by: Error: level ${19 - n}`),
    );
    expect(causes[MAX_ERROR_CAUSE_DEPTH]).toBe('Caused by: … (further causes not shown)');
  });

  it('stops at a cycle instead of looping', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    a.cause = b;
    const text = errorText(a);
    expect(text.split('\n').filter((l) => l.startsWith('Caused by: '))).toEqual([
      'Caused by: Error: b',
      'Caused by: [circular: Error: a]',
    ]);
    const self = new Error('self');
    self.cause = self;
    expect(errorText(self)).toContain('Caused by: [circular: Error: self]');
  });

  it("keeps an AggregateError's errors, a bounded number of them", () => {
    const text = errorText(
      new AggregateError([new Error('first'), 'second', new RangeError('third')], 'all failed'),
    );
    const lines = text.split('\n');
    expect(lines[0]).toBe('AggregateError: all failed');
    expect(lines).toContain('Error 1 of 3: Error: first');
    expect(lines).toContain('Error 2 of 3: second');
    expect(lines).toContain('Error 3 of 3: RangeError: third');

    // Short stacks, so the length bound (tested below) is not what stops the list here.
    const short = (message: string): Error =>
      Object.assign(new Error(message), { stack: `Error: ${message}\n    at test` });
    const many = errorText(
      new AggregateError(
        Array.from({ length: 50 }, (_, n) => short(`e${n}`)),
        'many',
      ),
    );
    const shown = many.split('\n').filter((l) => /^Error \d+ of 50: /.test(l));
    expect(shown).toHaveLength(MAX_AGGREGATE_ERRORS);
    expect(many).toContain(`… ${50 - MAX_AGGREGATE_ERRORS} more errors not shown`);
  });

  it("follows an aggregated error's own cause, and guards cycles through errors", () => {
    const inner = new Error('inner', { cause: new Error('root cause') });
    const outer = new AggregateError([inner], 'outer');
    (outer.errors as unknown[]).push(outer);
    const text = errorText(outer);
    expect(text).toContain('Error 1 of 2: Error: inner');
    expect(text).toContain('Caused by: Error: root cause');
    expect(text).toContain('Error 2 of 2: [circular: AggregateError: outer]');
  });

  it('stays within the length bound and sanitises causes too', () => {
    const long = new Error('x'.repeat(MAX_ERROR_TEXT * 2), {
      cause: new Error('nul\u0000 and \ud800 lone'),
    });
    // A long message still leaves room for its cause.
    expect(errorText(long).length).toBeLessThanOrEqual(MAX_ERROR_TEXT);
    expect(errorText(long)).toContain('Caused by: Error: nul\uFFFD and \uFFFD lone');
    // Nested aggregates would multiply out (10^5 members): the walk stops at the bound.
    let nest: unknown = new Error('leaf '.repeat(500));
    for (let n = 0; n < 5; n++) nest = new AggregateError(Array(10).fill(nest), `level ${n}`);
    expect(errorText(nest).length).toBeLessThanOrEqual(MAX_ERROR_TEXT);
    const text = errorText(new Error('outer', { cause: new Error('nul\u0000 and \ud800 lone') }));
    expect(text).toContain('Caused by: Error: nul\uFFFD and \uFFFD lone');
  });

  it('never throws, whatever the cause getter does', () => {
    const hostile = new Error('outer');
    Object.defineProperty(hostile, 'cause', {
      get() {
        throw new Error('getter says no');
      },
    });
    expect(errorText(hostile)).toContain('Error: outer');
  });

  it('reads causes of errors from another realm', () => {
    const foreign = runInNewContext(
      'new Error("outer", { cause: new RangeError("inner") })',
    ) as unknown;
    expect(errorText(foreign)).toContain('Caused by: RangeError: inner');
  });
});
