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
    typeof (value as { message?: unknown }).message === 'string' &&
    typeof (value as { name?: unknown }).name === 'string'
  );
}

/** The text stored for an error: its stack when there is one, otherwise name and message. */
export function errorText(thrown: unknown): string {
  const error = toError(thrown);
  return sanitizeErrorText(error.stack ?? `${error.name}: ${error.message}`);
}

/**
 * Escapes `%`, `_`, `[` and the escape character itself for a `LIKE … ESCAPE '\'` pattern, so a
 * search term is matched literally (`[` matters on SQL Server, where it opens a character class).
 */
export function escapeLike(term: string): string {
  return term.replace(/[\\%_[]/g, (c) => `\\${c}`);
}
