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

  it("says how long a rejected array was, not its echo's length", () => {
    const items = Array.from({ length: 20_000 }, (_, n) => ({ queue: 'q', n }));
    const error = new ChokaQValidationError([
      { path: 'items', message: 'must have at most 10000 items', value: items },
    ]);
    expect(error.message).toBe(
      'Invalid input: items must have at most 10000 items (got array(20000))',
    );
    expect(error.issues[0].value).toHaveLength(MAX_ECHO_ENTRIES + 1);
  });

  it('names secrets by the exact key patterns, and masks quoted connection-string values whole', () => {
    const keys = {
      passphrase: 'a',
      pwd: 'b',
      oldpwd: 'c',
      pwdHint: 'd',
      'api-key': 'e',
      api_key: 'f',
    };
    expect(echoValue(keys)).toEqual({
      passphrase: '***',
      pwd: '***',
      oldpwd: 'c',
      pwdHint: 'd',
      'api-key': '***',
      api_key: '***',
    });
    expect(redactCredentials('Server=s;Password="ab;c";Database=x')).toBe(
      'Server=s;Password=***;Database=x',
    );
    expect(redactCredentials("Server=s;Pwd='x;y';Database=x")).toBe('Server=s;Pwd=***;Database=x');
    // A secret key without a value has nothing to hide: the value is returned as it is.
    const empty = { password: null, token: undefined };
    expect(echoValue(empty)).toBe(empty);
    const bare = Object.assign(Object.create(null) as object, { password: 'p', n: 1 });
    expect(echoValue(bare)).toEqual({ password: '***', n: 1 });
  });

  it('cuts exactly at the bounds: a value at a bound is returned as it is', () => {
    const atString = 'y'.repeat(MAX_ECHO_STRING);
    expect(echoValue(atString)).toBe(atString);
    const atArray = Array.from({ length: MAX_ECHO_ENTRIES }, (_, i) => i);
    expect(echoValue(atArray)).toBe(atArray);
    const atObject = Object.fromEntries(atArray.map((i) => [`k${i}`, i]));
    expect(echoValue(atObject)).toBe(atObject);
    const wide = Object.fromEntries(
      Array.from({ length: MAX_ECHO_ENTRIES + 10 }, (_, i) => [`k${i}`, i]),
    );
    const echoed = echoValue(wide) as Record<string, unknown>;
    expect(Object.keys(echoed)).toHaveLength(MAX_ECHO_ENTRIES + 1);
    expect(echoed['…']).toBe('10 more keys');
    expect(echoed[`k${MAX_ECHO_ENTRIES}`]).toBeUndefined();
  });

  it('rebuilds an array when any one item changed, and bounds nested arrays by depth', () => {
    const long = 'z'.repeat(MAX_ECHO_STRING + 5);
    expect(echoValue([long, 'a'])).toEqual([`${'z'.repeat(MAX_ECHO_STRING)}…`, 'a']);
    expect(echoValue([[[[[1, 2]]]]])).toEqual([[[['[array(2)]']]]]);
  });

  it('shows a value reached twice without a cycle both times', () => {
    const shared = { a: 1 };
    expect(echoValue({ x: shared, y: shared, token: 't' })).toEqual({
      x: { a: 1 },
      y: { a: 1 },
      token: '***',
    });
  });

  it('names a non-plain value by its class, or "object" when it has no name', () => {
    class Connection {}
    expect(echoValue(new Connection())).toBe('[Connection]');
    const Anonymous = (() => class {})();
    expect(echoValue(new Anonymous())).toBe('[object]');
  });
});
