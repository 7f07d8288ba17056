import type { DlqErrorFamily } from '../../interfaces/job-view.interface';

/*
 * Error families of the DLQ (`getTopDlqErrors`), in one place for every dialect. Each dialect
 * reads a bounded window of DLQ rows and, of each, only the first line of the error, cut to
 * {@link ERROR_LINE_PREFIX} characters; the grouping happens here. A family is that line with the
 * values that differ from one occurrence of a cause to the next replaced by placeholders, so
 * "timeout after 3000 ms calling job 0190…" and "timeout after 5000 ms calling job 0191…" are one
 * family. SQL could not do this the same way everywhere: SQLite and SQL Server have no regular
 * expressions.
 */

/** Characters of the error's first line a dialect reads per row (the rest is never sent). */
export const ERROR_LINE_PREFIX = 500;

/** Longest family and sample text returned. */
export const ERROR_FAMILY_LENGTH = 200;

/**
 * The replacements, in order. Quoted values go first (so digits inside them do not leave
 * fragments), then values with a shape (UUIDs, timestamps, hex), then any remaining digits.
 * A quote opens only after a non-word character and closes only before one, so the apostrophe of
 * "can't" is not taken for a quote.
 */
const RULES: ReadonlyArray<[RegExp, string]> = [
  [/(?<![\p{L}\p{N}_])'[^'\n]*'(?![\p{L}\p{N}_])/gu, "'…'"],
  [/(?<![\p{L}\p{N}_])"[^"\n]*"(?![\p{L}\p{N}_])/gu, '"…"'],
  [/(?<![\p{L}\p{N}_])`[^`\n]*`(?![\p{L}\p{N}_])/gu, '`…`'],
  [
    /(?<![0-9A-Za-z])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9A-Za-z])/gi,
    '<uuid>',
  ],
  // ISO 8601 dates and date-times (2026-01-02, 2026-01-02T03:04:05.678Z, 2026-01-02 03:04:05+02:00).
  [
    /(?<![0-9A-Za-z])\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?![0-9A-Za-z])/g,
    '<time>',
  ],
  // Times of day (03:04:05, 03:04:05.678).
  [/(?<![0-9A-Za-z:])\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?![0-9A-Za-z:])/g, '<time>'],
  // 0x-prefixed hex, and hex words of 8 or more characters with both digits and letters
  // (hashes, object ids, `job_8f3a2b1c`): a plain word such as "deadline" has no digit.
  [/(?<![0-9A-Za-z])0x[0-9a-f]+(?![0-9A-Za-z])/gi, '<hex>'],
  [/(?<![0-9A-Za-z])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}(?![0-9A-Za-z])/gi, '<hex>'],
  // Every other run of digits, with its decimal or thousands separators (3000, 1.5, 10.0.0.1).
  [/\d+(?:[.,]\d+)*/g, '<n>'],
];

/** The first line of an error text, without its line break and surrounding blanks. */
export function firstLine(text: string | null | undefined): string {
  const value = text ?? '';
  const end = value.search(/[\r\n]/);
  return (end === -1 ? value : value.slice(0, end)).trim();
}

/** At most `max` characters, never cutting a surrogate pair in two. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const out = text.slice(0, max);
  const last = out.charCodeAt(out.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? out.slice(0, -1) : out;
}

/**
 * The family of an error: its first line with quoted values, UUIDs, timestamps, hex values and
 * numbers replaced by placeholders (`'…'`, `<uuid>`, `<time>`, `<hex>`, `<n>`), blanks collapsed,
 * at most {@link ERROR_FAMILY_LENGTH} characters.
 */
export function errorFamily(text: string | null | undefined): string {
  let family = cut(firstLine(text), ERROR_LINE_PREFIX);
  for (const [pattern, placeholder] of RULES) family = family.replace(pattern, placeholder);
  return cut(family.replace(/\s+/g, ' ').trim(), ERROR_FAMILY_LENGTH);
}

/** One DLQ row of the window: the first line of its error (as read) and when it failed. */
export interface ErrorLine {
  line: string;
  failedAtUtc: Date;
}

/**
 * Groups the rows of a window into families and returns the `limit` most frequent: by count, then
 * the most recent failure, then the family text. `sample` is the first line of the newest error of
 * the family, as stored. `familyOf` is {@link errorFamily}, or a memo of it
 * (`ErrorFamilyMemo.familyOf`).
 */
export function topErrorFamilies(
  rows: Iterable<ErrorLine>,
  limit: number,
  familyOf: (line: string) => string = errorFamily,
): DlqErrorFamily[] {
  const families = new Map<string, DlqErrorFamily>();
  for (const row of rows) {
    const key = familyOf(row.line);
    const family = families.get(key);
    if (!family) {
      families.set(key, {
        error: key,
        sample: cut(firstLine(row.line), ERROR_FAMILY_LENGTH),
        count: 1,
        lastFailedAtUtc: row.failedAtUtc,
      });
      continue;
    }
    family.count += 1;
    if (row.failedAtUtc.getTime() > family.lastFailedAtUtc.getTime()) {
      family.lastFailedAtUtc = row.failedAtUtc;
      family.sample = cut(firstLine(row.line), ERROR_FAMILY_LENGTH);
    }
  }
  return [...families.values()]
    .sort(
      (a, b) =>
        b.count - a.count ||
        b.lastFailedAtUtc.getTime() - a.lastFailedAtUtc.getTime() ||
        (a.error < b.error ? -1 : a.error > b.error ? 1 : 0),
    )
    .slice(0, limit);
}
