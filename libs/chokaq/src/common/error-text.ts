/** Longest error text stored in `LastError` / `ErrorDetails`. */
export const MAX_ERROR_TEXT = 8_000;

/**
 * Makes handler error text safe to store: NUL characters (which PostgreSQL text rejects) become
 * U+FFFD, lone surrogates are replaced, and the text is cut to {@link MAX_ERROR_TEXT} characters.
 * A failing handler must always be able to reach the DLQ, whatever it threw.
 */
export function sanitizeErrorText(text: string, max = MAX_ERROR_TEXT): string {
  // eslint-disable-next-line no-control-regex
  let out = text.replace(/\u0000/g, '\uFFFD').toWellFormed();
  if (out.length > max) out = `${out.slice(0, max - 1)}…`;
  return out;
}

/** Turns anything thrown into an `Error` (SPEC: unknown throws are coerced before they are logged or stored). */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error || isErrorLike(thrown)) return thrown as Error;
  if (typeof thrown === 'string') return new Error(thrown);
  if (thrown === undefined) return new Error('undefined was thrown');
  if (thrown === null) return new Error('null was thrown');
  try {
    return new Error(`Non-error thrown: ${JSON.stringify(thrown)}`);
  } catch {
    return new Error(`Non-error thrown: ${Object.prototype.toString.call(thrown)}`);
  }
}

/**
 * An error from another realm (a `vm` context such as a Jest test file, or a native addon that kept
 * the error class of the first context that loaded it) fails `instanceof Error` but is still an
 * error: it has a string `message` and `name`.
 */
function isErrorLike(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof read(value, 'message') === 'string' &&
    typeof read(value, 'name') === 'string'
  );
}

/** Deepest `cause` (or `AggregateError` member) written into the stored error text. */
export const MAX_ERROR_CAUSE_DEPTH = 5;

/** Most members of one `AggregateError` written into the stored error text. */
export const MAX_AGGREGATE_ERRORS = 10;

/**
 * Longest text of one cause or aggregated error (its message and stack). A stack is about a
 * kilobyte at Node's default of 10 frames; the cap keeps a deep chain's headlines inside
 * {@link MAX_ERROR_TEXT} instead of letting the first stacks use it all.
 */
const MAX_NESTED_ERROR_TEXT = 1_000;

/**
 * The text stored for an error: its stack when there is one, otherwise name and message; then, for
 * an `AggregateError`, its `errors` (`Error k of n: …`, at most {@link MAX_AGGREGATE_ERRORS}, each
 * indented with its own causes), and its `cause` chain (`Caused by: …`, at most
 * {@link MAX_ERROR_CAUSE_DEPTH} deep). The cause is often the only useful part: Node's `fetch
 * failed` says why only in its cause. A cause that points back at an error on its own chain is
 * written as `[circular: …]`. When there is a cause to show, the thrown error's own text keeps at
 * most half of {@link MAX_ERROR_TEXT} and each nested one {@link MAX_NESTED_ERROR_TEXT}, so the
 * chain survives a long message; the whole stays within {@link MAX_ERROR_TEXT} characters and is
 * sanitised like any other error text. It never throws, whatever the error's getters do.
 */
export function errorText(thrown: unknown): string {
  const out: TextOut = { lines: [], left: MAX_ERROR_TEXT };
  describeChain(toError(thrown), 0, '', '', new Set(), out);
  return sanitizeErrorText(out.lines.join('\n'));
}

/** Lines written so far, and how many characters the stored text still has room for. */
interface TextOut {
  lines: string[];
  left: number;
}

function write(out: TextOut, line: string): void {
  out.lines.push(line);
  out.left -= line.length + 1;
}

/**
 * Writes `value` and what it carries: its own text (first line after `label`, the rest after
 * `indent`), its aggregated errors, then its cause, whose own errors and cause follow in turn.
 * `level` counts the hops from the thrown error. `ancestors` holds the errors on the path here, so
 * only a real cycle is cut, not an error that two aggregates share. The walk stops once the stored
 * length is used up: nested aggregates could otherwise multiply out to far more text than is kept.
 */
function describeChain(
  value: unknown,
  level: number,
  label: string,
  indent: string,
  ancestors: Set<object>,
  out: TextOut,
): void {
  const entered: object[] = [];
  let current = value;
  let head = label;
  for (let hop = level; out.left > 0; hop++) {
    if (isObject(current) && ancestors.has(current)) {
      write(out, `${head}[circular: ${headline(current)}]`);
      break;
    }
    const error = isObject(current) && isErrorLike(current) ? current : undefined;
    const errors = error && read(error, 'errors');
    const members = Array.isArray(errors) ? (errors as unknown[]) : [];
    const cause = error && read(error, 'cause');
    const nested = members.length > 0 || cause !== undefined;
    const cap = hop > 0 ? MAX_NESTED_ERROR_TEXT : nested ? MAX_ERROR_TEXT / 2 : MAX_ERROR_TEXT;
    const [first, ...rest] = ownText(current, cap).split('\n');
    write(out, `${head}${first}`);
    for (const line of rest) write(out, `${indent}${line}`);
    if (!error) break;
    ancestors.add(error);
    entered.push(error);
    if (members.length > 0) {
      const shown =
        hop < MAX_ERROR_CAUSE_DEPTH ? Math.min(members.length, MAX_AGGREGATE_ERRORS) : 0;
      for (let k = 0; k < shown && out.left > 0; k++) {
        const memberLabel = `${indent}Error ${k + 1} of ${members.length}: `;
        describeChain(members[k], hop + 1, memberLabel, `${indent}  `, ancestors, out);
      }
      if (shown < members.length) {
        write(out, `${indent}… ${members.length - shown} more errors not shown`);
      }
    }
    if (cause === undefined) break;
    if (hop >= MAX_ERROR_CAUSE_DEPTH) {
      write(out, `${indent}Caused by: … (further causes not shown)`);
      break;
    }
    current = cause;
    head = `${indent}Caused by: `;
  }
  for (const error of entered) ancestors.delete(error);
}

/**
 * An error's stack (or name and message); any other value as itself, with no invented stack; cut
 * to `cap` characters before it is joined, so one oversized stack never costs a copy of megabytes.
 */
function ownText(value: unknown, cap: number): string {
  let text: string;
  if (isObject(value) && isErrorLike(value)) {
    const stack = read(value, 'stack');
    text = typeof stack === 'string' && stack !== '' ? stack : headline(value);
  } else if (typeof value === 'string') {
    text = value;
  } else if (isObject(value)) {
    try {
      text = JSON.stringify(value) ?? Object.prototype.toString.call(value);
    } catch {
      text = Object.prototype.toString.call(value);
    }
  } else {
    text = String(value as string | number | boolean | bigint | symbol | null | undefined);
  }
  return text.length > cap ? `${text.slice(0, cap - 1)}…` : text;
}

/** `Name: message` of an error-like object. */
function headline(error: object): string {
  return `${String(read(error, 'name'))}: ${String(read(error, 'message'))}`;
}

/** A property read that cannot throw (a hostile getter or a revoked proxy yields undefined). */
function read(target: object, key: string): unknown {
  try {
    return (target as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is object {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}

/**
 * A stable, short code for an error a client may be told about in place of its text: the first
 * `code` of the error or its `cause` chain that is a plain token (a driver's `ECONNREFUSED`, a
 * PostgreSQL SQLSTATE such as `57P01`, SQL Server's `ELOGIN`), else the error's class name. Never
 * the driver's message, which may name schemas, tables, hosts and ports.
 */
export function publicErrorCode(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth <= MAX_ERROR_CAUSE_DEPTH; depth++) {
    if (typeof current !== 'object' || current === null) break;
    const code = read(current, 'code');
    if (typeof code === 'string' && /^[A-Za-z0-9_]{1,40}$/.test(code)) return code;
    if (typeof code === 'number' && Number.isInteger(code)) return String(code);
    current = read(current, 'cause');
  }
  const name = typeof error === 'object' && error !== null ? read(error, 'name') : undefined;
  return typeof name === 'string' && /^[A-Za-z0-9_]{1,60}$/.test(name) ? name : 'Error';
}
