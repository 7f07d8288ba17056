/**
 * What an error may echo of a rejected value (`ChokaQValidationError.issues[].value` and its
 * message), wherever the error ends up: a log, a 400 body the Deck serialises, a CLI's output.
 *
 * - **No secret.** The password of a connection URL (`scheme://user:password@host`) and of a
 *   connection string (`Password=…;`, `Pwd=…;`) is replaced by `***`, and so is the value of any
 *   key that names a secret (`password`, `pwd`, `secret`, `token`, `apiKey`, `authorization`).
 * - **Bounded.** Strings are cut to {@link MAX_ECHO_STRING} characters, objects and arrays to
 *   {@link MAX_ECHO_ENTRIES} entries and {@link MAX_ECHO_DEPTH} levels (deeper ones are described,
 *   as `[array(n)]` or `[object]`), and a cycle is cut: serialising the echo can never fail,
 *   however deep or large the rejected value was.
 *
 * A value that needs neither is returned as it is (the same reference).
 */
export const MAX_ECHO_STRING = 1_000;
export const MAX_ECHO_ENTRIES = 50;
export const MAX_ECHO_DEPTH = 4;

const SECRET_KEY = /pass(word)?|^pwd$|secret|token|api[-_]?key|authorization/i;
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/[^/\s:@]*):[^@\s/]*@/gi;
const CONNECTION_STRING_SECRET = /\b(password|pwd)(\s*=\s*)(?:"[^"]*"|'[^']*'|[^;]*)/gi;

/** `value` as an error may show it: secrets masked, size and depth bounded. */
export function echoValue(value: unknown): unknown {
  return echo(value, 0, new WeakSet());
}

/** A string with the credentials of any connection URL or connection string in it masked. */
export function redactCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, '$1:***@').replace(CONNECTION_STRING_SECRET, '$1$2***');
}

function echo(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (typeof value === 'string') {
    const masked = redactCredentials(value);
    return masked.length > MAX_ECHO_STRING ? `${masked.slice(0, MAX_ECHO_STRING)}…` : masked;
  }
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  if (!Array.isArray(value) && !isPlainObject(value)) return `[${typeName(value)}]`;
  if (seen.has(value)) return '[circular]';
  if (depth >= MAX_ECHO_DEPTH) {
    return Array.isArray(value) ? `[array(${value.length})]` : '[object]';
  }
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      const items = value.slice(0, MAX_ECHO_ENTRIES).map((v) => echo(v, depth + 1, seen));
      const changed = value.length > MAX_ECHO_ENTRIES || items.some((v, i) => v !== value[i]);
      if (value.length > MAX_ECHO_ENTRIES) items.push(`… ${value.length - MAX_ECHO_ENTRIES} more`);
      return changed ? items : value;
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    const out: Record<string, unknown> = {};
    let changed = keys.length > MAX_ECHO_ENTRIES;
    for (const key of keys.slice(0, MAX_ECHO_ENTRIES)) {
      const v = record[key];
      const shown =
        SECRET_KEY.test(key) && v !== undefined && v !== null ? '***' : echo(v, depth + 1, seen);
      if (shown !== v) changed = true;
      out[key] = shown;
    }
    if (keys.length > MAX_ECHO_ENTRIES) out['…'] = `${keys.length - MAX_ECHO_ENTRIES} more keys`;
    return changed ? out : value;
  } finally {
    seen.delete(value);
  }
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function typeName(value: object): string {
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' ? name : 'object';
}
