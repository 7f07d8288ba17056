import { isUuid } from '../common/uuid';
import type { ValidationIssue } from '../errors';
import type { ListOrder, Pillar } from '../interfaces/job-view.interface';
import { LIMITS, MAX_CURSOR_LENGTH } from './limits';

/*
 * The one format of a list cursor: written by the dialects when they finish a page
 * (`storage/shared/page.ts`), read back here by the validating edge before any SQL runs. A cursor
 * is the position of the last row a page read (its sort key and id) plus the list and order it
 * belongs to, as base64url of a small versioned JSON object. Callers treat it as opaque; the
 * edge trusts nothing in it: every field is checked, and a cursor of another list or order, or an
 * altered one, is a `ChokaQValidationError`, never a driver error.
 */

/** The lists a cursor may belong to: the three pillars' lists and the audit log. */
export type CursorList = Pillar | 'audit';

/** Where a page continues from: the sort key and id of the last row the previous page read. */
export interface ListPosition {
  /**
   * The row's sort key as ISO-8601 UTC text, at the precision the database stores it
   * (microseconds on PostgreSQL, milliseconds on SQLite and SQL Server), so the next page starts
   * exactly after it.
   */
  readonly at: string;
  /** {@link at} in epoch milliseconds (digits past the millisecond dropped). */
  readonly atMs: number;
  /** The row's id: the tie-breaker among rows with the same sort key. */
  readonly id: string;
}

/** The version of the cursor's JSON; a cursor of another version is refused. */
const CURSOR_VERSION = 1;

/** The cursor's JSON: version, list, order, sort key, id (short keys: it travels in URLs). */
interface CursorJson {
  v: number;
  l: CursorList;
  o: ListOrder;
  k: string;
  i: string;
}

const CURSOR_KEYS = ['i', 'k', 'l', 'o', 'v'];

/** ISO-8601 UTC with up to microseconds, as the dialects write a sort key. */
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?Z$/;

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** Year 1 to year 9999, what every dialect's time type holds (PostgreSQL refuses year 0 raw). */
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

/** The instant `text` in epoch milliseconds, or null when it is not a real ISO-8601 UTC instant. */
function instantMs(text: string): number | null {
  const m = INSTANT.exec(text);
  if (!m) return null;
  const [, year, month, day, hour, minute, second, fraction = ''] = m;
  const ms = Date.parse(
    `${year}-${month}-${day}T${hour}:${minute}:${second}.${fraction.padEnd(3, '0').slice(0, 3)}Z`,
  );
  // Date.parse rolls 2026-02-30 over to March; a sort key the database wrote never needs that.
  if (
    !Number.isFinite(ms) ||
    ms < LIMITS.minRunAt ||
    ms > LATEST ||
    new Date(ms).toISOString().slice(0, 19) !== text.slice(0, 19)
  ) {
    return null;
  }
  return ms;
}

/** The cursor that continues `list` in `order` after `position` (its sort key text and id). */
export function encodeListCursor(
  list: CursorList,
  order: ListOrder,
  position: Pick<ListPosition, 'at' | 'id'>,
): string {
  const json: CursorJson = { v: CURSOR_VERSION, l: list, o: order, k: position.at, i: position.id };
  return Buffer.from(JSON.stringify(json), 'utf8').toString('base64url');
}

/**
 * Reads a cursor given for `list` in `order`: its position, or the issue (path `cursor`) that
 * refuses it. Refused: anything but a string ChokaQ could have written for this very list and
 * order (another list's or order's cursor, another version, an altered or truncated one).
 */
export function decodeListCursor(
  cursor: unknown,
  list: CursorList,
  order: ListOrder,
): ListPosition | ValidationIssue {
  const refuse = (why: string): ValidationIssue => ({
    path: 'cursor',
    message: `must be a nextCursor of this list and order (${why})`,
    value: cursor,
  });
  if (typeof cursor !== 'string' || cursor.length === 0) return refuse('not a non-empty string');
  if (cursor.length > MAX_CURSOR_LENGTH || !BASE64URL.test(cursor)) {
    return refuse('not a cursor');
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return refuse('not a cursor');
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    return refuse('not a cursor');
  }
  const keys = Object.keys(json).sort();
  if (keys.length !== CURSOR_KEYS.length || keys.some((k, i) => k !== CURSOR_KEYS[i])) {
    return refuse('not a cursor');
  }
  const c = json as CursorJson;
  if (c.v !== CURSOR_VERSION) return refuse('another version');
  if (c.l !== list) return refuse('a cursor of another list');
  if (c.o !== order) return refuse('a cursor of the other order');
  const atMs = typeof c.k === 'string' ? instantMs(c.k) : null;
  if (atMs === null || !isUuid(c.i)) return refuse('altered');
  return { at: c.k, atMs, id: c.i };
}
