// @ts-check
// Plain formatting for the panels. Everything here returns text; the views render text only.

const nf = new Intl.NumberFormat();

/**
 * An instant as the server's JSON carries it (an ISO string), or as the page made it.
 * @typedef {string | number | Date | null | undefined} Instant
 */

/** @param {number | null | undefined} n */
export function num(n) {
  return n === null || n === undefined ? '–' : nf.format(n);
}

/** @param {number | null | undefined} x */
export function pct(x) {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : `${(x * 100).toFixed(1)}%`;
}

/** @param {number | null | undefined} n */
export function ms(n) {
  if (n === null || n === undefined) return '–';
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60_000) return `${(n / 1000).toFixed(1)} s`;
  if (n < 3_600_000) return `${Math.floor(n / 60_000)} min ${Math.round((n % 60_000) / 1000)} s`;
  return `${Math.floor(n / 3_600_000)} h ${Math.round((n % 3_600_000) / 60_000)} min`;
}

/** @param {Instant} value */
export function time(value) {
  if (!value) return '–';
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? '–' : d.toLocaleString();
}

/**
 * @param {Instant} value
 * @param {number} [now]
 */
export function ago(value, now = Date.now()) {
  if (!value) return '–';
  const diff = now - new Date(value).getTime();
  if (!Number.isFinite(diff)) return '–';
  if (diff < 0) return `in ${ms(-diff)}`;
  return `${ms(diff)} ago`;
}

/** @param {number | null | undefined} n */
export function bytes(n) {
  if (n === null || n === undefined) return '–';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Job statuses by their stored number.
 * @type {Record<number, string>}
 */
export const STATUSES = {
  0: 'Pending',
  1: 'Fetched',
  2: 'Processing',
  3: 'Succeeded',
  4: 'Failed',
  5: 'Cancelled',
  6: 'Zombie',
  7: 'Waiting',
};

/**
 * DLQ failure reasons by their stored number.
 * @type {Record<number, string>}
 */
export const REASONS = {
  0: 'Max retries exceeded',
  1: 'Cancelled',
  2: 'Zombie',
  3: 'Circuit breaker open',
  5: 'Throttled',
  6: 'Fatal error',
  7: 'Timeout',
  9: 'Heartbeat failure',
  10: 'Retry lifetime expired',
  11: 'No handler',
  12: 'Dependency failed',
};

/** @param {number} n */
export function status(n) {
  return STATUSES[n] || String(n);
}

/**
 * The time of day of an instant (a hold's end is minutes away, so the date would be noise).
 * @param {Instant} value
 */
export function clock(value) {
  if (!value) return '–';
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? '–' : d.toLocaleTimeString();
}

/**
 * The fields of a job (a list row or the inspector's view, as JSON) that say whether a circuit holds it.
 * @typedef {Pick<import('./api.js').JobListItem, 'status' | 'heldSinceUtc' | 'scheduledAtUtc'>} HeldFields
 */

/**
 * True for a Pending job an open circuit breaker holds back.
 * @param {HeldFields} j
 */
export function isHeld(j) {
  return j.status === 0 && Boolean(j.heldSinceUtc);
}

/**
 * A job's status, and for a Pending job an open circuit holds back, until when.
 * @param {HeldFields} j
 */
export function jobState(j) {
  const text = status(j.status);
  return isHeld(j) ? `${text} · held: circuit open until ${clock(j.scheduledAtUtc)}` : text;
}

/**
 * {@link jobState} in a list row's few words (the full sentence as its title).
 * @param {HeldFields} j
 */
export function shortJobState(j) {
  return isHeld(j) ? `Held until ${clock(j.scheduledAtUtc)}` : status(j.status);
}

/** @param {number | null | undefined} n */
export function reason(n) {
  return n === null || n === undefined ? '–' : REASONS[n] || String(n);
}
