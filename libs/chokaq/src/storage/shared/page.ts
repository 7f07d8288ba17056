import type { JobListItem, ListPage } from '../../interfaces/job-view.interface';
import { encodeListCursor } from '../../validation/list-cursor';
import type { ListRequest } from '../../validation/validate-list';
import { mapListRow } from './row-mapper';

/**
 * How the three dialects read a keyset page, and the one place that turns its rows into a
 * {@link ListPage}.
 *
 * Each list has one sort key and the id as tie-breaker ({@link LIST_SORT_KEY}); a page is the rows
 * strictly after the cursor's `(key, id)` in the list's order, read from an index on
 * `(key, id)` (or `(queue, key, id)`, …), so its cost does not grow with its depth. A dialect runs
 * one of two statement shapes:
 *
 * - **Plain** (every filter has an index): `limit + 1` rows in order. One row more than asked says
 *   whether there is a next page; the cursor is the last row returned.
 * - **Bounded scan** (a search term or a tag, which no index serves): the first `scanBound + 1`
 *   rows in order, each with its rank `rn` in that order, whether it matches (`hit`), and the
 *   running count of matches (`hit_rank`); the statement keeps the first `limit + 1` matches
 *   within the bound and the rows ranked `scanBound` and `scanBound + 1`. Those two say whether
 *   the page stopped at the bound with rows left ({@link ListPage.scanLimited}) and where the next
 *   page continues: after the last row read, not the last row returned, so the rows read and
 *   rejected are never read again.
 */

/** Sort key (snake_case) of each list; the id breaks ties. */
export const LIST_SORT_KEY = {
  hot: 'enqueued_at_utc',
  archive: 'finished_at_utc',
  dlq: 'failed_at_utc',
} as const;

/** Characters of the error text a list item carries (`JobListItem.errorPrefix`). */
export const ERROR_PREFIX_CHARS = 200;

type Row = Record<string, unknown>;

/**
 * The page a list statement's `rows` make for `request`. Rows come in list order; a bounded-scan
 * statement's rows carry `rn` and `hit` (any spelling the row mapper folds).
 */
export function toListPage(request: ListRequest<unknown>, rows: readonly Row[]): ListPage {
  const mapped = rows.map((row) => mapListRow(row, request.pillar));
  const cursorAfter = (row: (typeof mapped)[number]): string =>
    encodeListCursor(request.pillar, request.order, { at: row.sortAt, id: row.item.id });
  const bound = request.scanBound;
  if (bound === null) {
    const page = mapped.slice(0, request.limit);
    return {
      items: page.map((r) => r.item),
      nextCursor: mapped.length > request.limit ? cursorAfter(page[page.length - 1]) : null,
      scanLimited: false,
    };
  }
  const hits = mapped.filter((r) => r.hit && r.rn !== null && r.rn <= bound);
  const page = hits.slice(0, request.limit);
  const items: JobListItem[] = page.map((r) => r.item);
  if (hits.length > request.limit) {
    return { items, nextCursor: cursorAfter(page[page.length - 1]), scanLimited: false };
  }
  // Every match within the bound is on this page. Rows left past the bound: continue after the
  // last row read.
  const lastRead = mapped.find((r) => r.rn === bound);
  const rowsLeft = mapped.some((r) => r.rn === bound + 1);
  if (lastRead && rowsLeft) {
    return { items, nextCursor: cursorAfter(lastRead), scanLimited: true };
  }
  return { items, nextCursor: null, scanLimited: false };
}
