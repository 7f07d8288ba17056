import { randomUUID } from 'node:crypto';
import { decodeListCursor } from '../../validation/list-cursor';
import { ListRequest } from '../../validation/validate-list';
import { toListPage } from './page';

/** A hot list row as SQLite returns it (epoch milliseconds), its key `i` ms after 2026. */
function row(i: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: randomUUID(),
    queue: 'q',
    type: 't',
    status: 0,
    attempt_count: 0,
    priority: 10,
    tags: null,
    created_at_utc: Date.UTC(2026, 0, 1) + i,
    enqueued_at_utc: Date.UTC(2026, 0, 1) + i,
    payload_bytes: 2,
    error_prefix: null,
    ...extra,
  };
}

function request(limit: number, scanBound: number | null): ListRequest<unknown> {
  return { pillar: 'hot', filter: {}, limit, order: 'newest', after: null, scanBound };
}

/** The position a page's next cursor points at. */
function next(page: { nextCursor: string | null }): { at: string; id: string } | null {
  if (page.nextCursor === null) return null;
  const position = decodeListCursor(page.nextCursor, 'hot', 'newest');
  if ('path' in position) throw new Error(position.message);
  return { at: position.at, id: position.id };
}

describe('toListPage', () => {
  it('plain: one row more than the limit means a next page, after the last row returned', () => {
    const rows = [row(3), row(2), row(1)];
    const page = toListPage(request(2, null), rows);
    expect(page.items.map((i) => i.id)).toEqual([rows[0].id, rows[1].id]);
    expect(page.scanLimited).toBe(false);
    expect(next(page)).toEqual({ at: '2026-01-01T00:00:00.002Z', id: rows[1].id });
    expect(toListPage(request(3, null), rows).nextCursor).toBeNull();
  });

  it('keeps a sort key given as text (microseconds) for the cursor', () => {
    const rows = [row(2, { sort_at: '2026-01-01T00:00:00.002501Z' }), row(1)];
    expect(next(toListPage(request(1, null), rows))?.at).toBe('2026-01-01T00:00:00.002501Z');
  });

  it('bounded scan: a full page of matches continues after the last match', () => {
    const rows = [1, 2, 3].map((rn) => row(10 - rn, { rn, hit: 1 }));
    const page = toListPage(request(2, 5), rows);
    expect(page.items).toHaveLength(2);
    expect(page.scanLimited).toBe(false);
    expect(next(page)?.id).toBe(rows[1].id);
  });

  it('bounded scan: stopped at the bound with rows left continues after the last row read', () => {
    // Bound 5: one match (rank 2), the rows ranked 5 (the last read) and 6 (one left).
    const rows = [row(8, { rn: 2, hit: 1 }), row(5, { rn: 5, hit: 0 }), row(4, { rn: 6, hit: 0 })];
    const page = toListPage(request(10, 5), rows);
    expect(page.items.map((i) => i.id)).toEqual([rows[0].id]);
    expect(page.scanLimited).toBe(true);
    expect(next(page)?.id).toBe(rows[1].id);
  });

  it('bounded scan: the bound reached with nothing left is the end, not a limited scan', () => {
    const rows = [row(8, { rn: 2, hit: 1 }), row(5, { rn: 5, hit: 1 })];
    const page = toListPage(request(10, 5), rows);
    expect(page.items.map((i) => i.id)).toEqual([rows[0].id, rows[1].id]);
    expect(page).toMatchObject({ nextCursor: null, scanLimited: false });
  });

  it('bounded scan: a match ranked past the bound is not on the page', () => {
    const rows = [row(5, { rn: 5, hit: 0 }), row(4, { rn: 6, hit: 1 })];
    const page = toListPage(request(10, 5), rows);
    expect(page.items).toEqual([]);
    expect(page.scanLimited).toBe(true);
    expect(next(page)?.id).toBe(rows[0].id);
  });
});
