import { ChokaQPayloadValidationError, type ValidationIssue } from '../errors';
import type {
  StandardSchemaIssue,
  StandardSchemaResult,
  StandardSchemaV1,
} from '../interfaces/standard-schema.interface';

/*
 * The one adapter between ChokaQ and a payload schema: it speaks Standard Schema v1 only
 * (`schema['~standard'].validate`), so zod, valibot, arktype and the others work alike and none of
 * them is a dependency. Used by the producer (before anything is written) and by the worker (before
 * the handler runs); both see the payload as it is stored, that is after a JSON round trip.
 */

/** What a payload check found: the schema's output, or its issues in ChokaQ's shape. */
export type PayloadCheck =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly issues: ValidationIssue[] };

/** What `defineJob` and `@JobHandler` require of `schema`, in the words of an issue. */
export const STANDARD_SCHEMA_RULE =
  'must be a Standard Schema v1 validator (an object with `~standard.version` 1 and a ' +
  '`~standard.validate` function: zod ≥ 3.24, valibot ≥ 1.0, arktype ≥ 2.0, …)';

/** True for a Standard Schema v1 validator. arktype's types are functions, so those count too. */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  const props = (value as { '~standard'?: unknown })['~standard'];
  return (
    typeof props === 'object' &&
    props !== null &&
    (props as { version?: unknown }).version === 1 &&
    typeof (props as { validate?: unknown }).validate === 'function'
  );
}

/**
 * Validates `value` with `schema`. Synchronous when the schema is (no promise, no extra tick),
 * a promise when its `validate` returns one. Issues are named from `path` (`payload`,
 * `items[3].payload`). A validator that throws, rather than returning issues, throws here.
 */
export function checkPayload(
  schema: StandardSchemaV1,
  value: unknown,
  path: string,
): PayloadCheck | Promise<PayloadCheck> {
  const result = schema['~standard'].validate(value);
  if (isPromiseLike(result)) {
    return Promise.resolve(result).then((settled) => toCheck(settled, value, path));
  }
  return toCheck(result, value, path);
}

/**
 * The payload as the worker will read it: `JSON.parse(JSON.stringify(payload))`, `undefined` read
 * as `null`, as the storage writes it. Undefined when it cannot be serialised: the storage edge
 * then refuses it with its own issue. A producer's schema check runs on this form, so a payload
 * that passes at enqueue also passes in the worker (a `Date` is an ISO string by then).
 */
export function storedForm(payload: unknown): { value: unknown } | undefined {
  try {
    const json = JSON.stringify(payload === undefined ? null : payload);
    return json === undefined ? undefined : { value: JSON.parse(json) as unknown };
  } catch {
    return undefined;
  }
}

function toCheck(result: StandardSchemaResult<unknown>, root: unknown, path: string): PayloadCheck {
  if (!result.issues) return { ok: true, value: result.value };
  // An empty issue list still means failure to the spec (only a falsy `issues` is success).
  const issues = result.issues.map((issue) => toValidationIssue(issue, root, path));
  return {
    ok: false,
    issues: issues.length > 0 ? issues : [{ path, message: 'is invalid', value: root }],
  };
}

/** One schema issue in ChokaQ's shape: the full path, the schema's message, the value found there. */
export function toValidationIssue(
  issue: StandardSchemaIssue,
  root: unknown,
  prefix: string,
): ValidationIssue {
  const keys = (issue.path ?? []).map((segment) =>
    typeof segment === 'object' && segment !== null ? segment.key : segment,
  );
  return {
    path: prefix + keys.map(formatKey).join(''),
    message: String(issue.message),
    value: valueAt(root, keys),
  };
}

/** `.to`, `[3]`, `["first name"]`, `[Symbol(id)]`. */
function formatKey(key: PropertyKey): string {
  if (typeof key === 'number') return `[${key}]`;
  if (typeof key === 'symbol') return `[${String(key)}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** The value at `keys` under `root`, or undefined where the path leaves the value. */
function valueAt(root: unknown, keys: readonly PropertyKey[]): unknown {
  let current = root;
  for (const key of keys) {
    if (current === null || (typeof current !== 'object' && typeof current !== 'function')) {
      return undefined;
    }
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

function isPromiseLike(value: unknown): value is PromiseLike<StandardSchemaResult<unknown>> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * Checks one payload with `schema` in its stored form, as an enqueue does; a refusal is a
 * `ChokaQPayloadValidationError` (stage `enqueue`: nothing was written). A payload that cannot be
 * serialised is left to the storage edge, which refuses it with its own issue.
 */
export async function assertPayloadMatches(
  schema: StandardSchemaV1,
  job: { queue: string; type: string },
  payload: unknown,
  path: string,
): Promise<void> {
  const stored = storedForm(payload);
  if (stored === undefined) return;
  const check = await checkPayload(schema, stored.value, path);
  if (!check.ok) {
    throw new ChokaQPayloadValidationError(job.queue, job.type, check.issues, 'enqueue');
  }
}
