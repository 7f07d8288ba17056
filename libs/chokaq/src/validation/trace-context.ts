import type { ValidationIssue } from '../errors';
import { LIMITS } from './limits';

/*
 * The rule of a job's stored trace context (`NewJob.traceContext`): the carrier a propagator wrote
 * (`traceparent`, `tracestate`, maybe `baggage`), stored as its JSON text. Propagation headers are
 * printable ASCII (W3C Trace Context: https://www.w3.org/TR/trace-context/#traceparent-header and
 * #tracestate-header), so the columns are narrow ASCII text on every dialect; a key is a header
 * name (no space).
 */

/** A carrier key: 1–256 printable ASCII characters without space. */
const KEY = /^[\x21-\x7E]{1,256}$/;

/** A carrier value: printable ASCII (space allowed). */
const VALUE = /^[\x20-\x7E]*$/;

/** The keys kept when a carrier is too long to store whole: the trace's identity first. */
const ESSENTIAL_KEYS = ['traceparent', 'tracestate'] as const;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * Checks a trace context given with a job and returns its JSON text, or null when none was given.
 * An issue (at `path`) for anything but a plain object of printable-ASCII strings whose JSON text
 * is at most `LIMITS.traceContext` characters.
 */
export function checkTraceContext(
  issues: ValidationIssue[],
  path: string,
  value: unknown,
): string | null {
  if (value === undefined || value === null) return null;
  if (!isPlainObject(value)) {
    issues.push({ path, message: 'must be an object of strings (a propagation carrier)', value });
    return null;
  }
  for (const [key, entry] of Object.entries(value)) {
    if (!KEY.test(key) || typeof entry !== 'string' || !VALUE.test(entry)) {
      issues.push({
        path: `${path}.${key}`,
        message:
          'must be a string of printable ASCII under a key of 1–256 printable ASCII characters',
        value: entry,
      });
      return null;
    }
  }
  const json = JSON.stringify(value);
  if (json.length > LIMITS.traceContext) {
    issues.push({
      path,
      message: `must be at most ${LIMITS.traceContext} characters as JSON (was ${json.length})`,
      value,
    });
    return null;
  }
  return json === '{}' ? null : json;
}

/**
 * What `JobClient` stores of the carrier the propagator wrote at enqueue: its printable-ASCII
 * entries, whole when their JSON text fits `LIMITS.traceContext`, else only `traceparent` and
 * `tracestate` (then `traceparent` alone) — the trace's identity outlives a large baggage. Never
 * throws, so tracing can never fail an enqueue; undefined when nothing is left.
 */
export function fitTraceContext(
  carrier: Readonly<Record<string, unknown>> | undefined,
): Record<string, string> | undefined {
  if (!carrier) return undefined;
  const kept: Record<string, string> = {};
  let any = false;
  for (const [key, value] of Object.entries(carrier)) {
    if (KEY.test(key) && typeof value === 'string' && VALUE.test(value)) {
      kept[key] = value;
      any = true;
    }
  }
  if (!any) return undefined;
  if (JSON.stringify(kept).length <= LIMITS.traceContext) return kept;
  for (let n = ESSENTIAL_KEYS.length; n > 0; n--) {
    const essential: Record<string, string> = {};
    for (const key of ESSENTIAL_KEYS.slice(0, n)) {
      if (kept[key] !== undefined) essential[key] = kept[key];
    }
    const json = JSON.stringify(essential);
    if (json !== '{}' && json.length <= LIMITS.traceContext) return essential;
  }
  return undefined;
}
