import { ChokaQValidationError } from '../errors';
import { MAX_ECHO_ENTRIES, MAX_ECHO_STRING, echoValue, redactCredentials } from './echo-value';

function nested(depth: number): unknown {
  let value: unknown = { leaf: true };
  for (let i = 0; i < depth; i++) value = { next: value };
  return value;
}

describe('what an error echoes of a rejected value', () => {
  it('masks the password of connection URLs and connection strings', () => {
    expect(redactCredentials('postgres://app:s3cret@db.internal:5432/jobs')).toBe(
      'postgres://app:***@db.internal:5432/jobs',
    );
    expect(redactCredentials('mssql://sa:p%40ss:w0rd@sql:1433')).not.toContain('w0rd');
    expect(redactCredentials('Server=sql;User Id=sa;Password=Pa55;Database=x')).toBe(
      'Server=sql;User Id=sa;Password=***;Database=x',
    );
    expect(redactCredentials('Server=sql;pwd = "a;b";')).not.toMatch(/a;b/);
    expect(redactCredentials('https://example.com/a:b@c')).toBe('https://example.com/a:b@c');
  });

  it('masks the values of keys that name a secret, at any depth', () => {
    const echoed = echoValue({
      url: 'postgres://u:topsecret@h/d',
      options: { password: 'hunter2', apiKey: 'k', authToken: 't', user: 'u' },
    });
    expect(JSON.stringify(echoed)).not.toMatch(/topsecret|hunter2|"k"|"t"/);
    expect(echoed).toMatchObject({ options: { password: '***', user: 'u' } });
  });

  it('bounds strings, entries and depth, and cuts cycles, so serialising never fails', () => {
    expect(echoValue('x'.repeat(5_000))).toBe(`${'x'.repeat(MAX_ECHO_STRING)}…`);
    const wide = echoValue(Array.from({ length: 1_000 }, (_, i) => i)) as unknown[];
    expect(wide).toHaveLength(MAX_ECHO_ENTRIES + 1);
    expect(wide.at(-1)).toBe(`… ${1_000 - MAX_ECHO_ENTRIES} more`);
    const deep = echoValue(nested(10_000));
    expect(JSON.stringify(deep)).toBe('{"next":{"next":{"next":{"next":"[object]"}}}}');
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(echoValue(cyclic)).toEqual({ a: 1, self: '[circular]' });
    expect(echoValue(new Map([[1, 2]]))).toBe('[Map]');
  });

  it('returns a value that needs neither as it is', () => {
    const small = { queue: 'q', tags: ['a', 'b'], at: new Date(0) };
    expect(echoValue(small)).toBe(small);
    expect(echoValue(42)).toBe(42);
  });

  it('applies to every ChokaQValidationError: its issues and its message', () => {
    const url = 'postgres://app:s3cret@db:5432/x';
    const error = new ChokaQValidationError([
      { path: 'storage.url', message: 'must be valid', value: url },
      { path: 'payload', message: 'too deep', value: nested(10_000) },
    ]);
    expect(error.message).not.toContain('s3cret');
    expect(JSON.stringify(error.issues)).not.toContain('s3cret');
    expect(error.issues[0].value).toBe('postgres://app:***@db:5432/x');
    expect(() => JSON.stringify(error.issues)).not.toThrow();
  });
});
