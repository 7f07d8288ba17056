/** The three lists (active, archive, DLQ): keyset pages over whitelisted sort keys. */
import { ActiveFilter, DlqFilter } from '../../../interfaces/job-view.interface';
import type { ListRequest } from '../../../validation/validate-list';
import { ERROR_PREFIX_CHARS, LIST_SORT_KEY } from '../../shared/page';
import { PILLAR_TABLE, bind, searchPredicate, statusLiteral, tagPredicate } from './filters';

/**
 * What a list item reads of each pillar: no payload and no full error text. `payload_bytes` is
 * `octet_length(payload)`, which for `text` "need[s] not detoast the input at all": it reads the
 * value's length from its header, or from the TOAST pointer of a value stored out of line
 * (`textoctetlen`, https://github.com/postgres/postgres/blob/REL_15_STABLE/src/backend/utils/adt/varlena.c),
 * so a 1 MB payload costs a list nothing (it lives in the TOAST table, which the list never
 * reads). `error_prefix` is the first {@link ERROR_PREFIX_CHARS} characters of the error, read as
 * a slice.
 */
const LIST_COLUMNS = {
  hot:
    'x.id, x.queue, x.type, x.status, x.attempt_count, x.priority, x.tags, x.created_at_utc, ' +
    'x.enqueued_at_utc, x.scheduled_at_utc, x.started_at_utc, x.worker_id, x.progress, ' +
    'x.held_since_utc, ' +
    `left(x.last_error, ${ERROR_PREFIX_CHARS}) AS error_prefix, octet_length(x.payload) AS payload_bytes`,
  archive:
    'x.id, x.queue, x.type, x.attempt_count, x.priority, x.tags, x.created_at_utc, ' +
    'x.enqueued_at_utc, x.scheduled_at_utc, x.started_at_utc, x.finished_at_utc, x.duration_ms, ' +
    `x.worker_id, x.progress, left(x.last_error, ${ERROR_PREFIX_CHARS}) AS error_prefix, ` +
    'octet_length(x.payload) AS payload_bytes',
  dlq:
    'x.id, x.queue, x.type, x.status, x.failure_reason, x.attempt_count, x.priority, x.tags, ' +
    'x.created_at_utc, x.enqueued_at_utc, x.scheduled_at_utc, x.started_at_utc, x.failed_at_utc, ' +
    `x.worker_id, x.progress, left(coalesce(x.error_details, x.last_error), ${ERROR_PREFIX_CHARS}) AS error_prefix, ` +
    'octet_length(x.payload) AS payload_bytes',
} as const;

/** The WHERE clause of a list page: `indexed` on an index's keys, `unindexed` (tag, search) or null. */
export interface ListWhere {
  indexed: string;
  unindexed: string | null;
  /** The column the page orders by ahead of its key ({@link leadingColumn}), or null. */
  lead: string | null;
}

/**
 * The equality filter of an Archive or DLQ page whose index leads with its column and continues
 * with `(key, id)`: `type`, else `queue`, else the DLQ's `failure_reason`; null for the hot list
 * (small by design), a page of given ids (the primary key) or no such filter.
 *
 * Why: ordered by its key alone, a filtered page may be planned as a walk of the key's own index
 * that filters each row, priced as if the filter's rows were spread evenly over time. When the
 * newest rows all belong to another queue that walk reads every one of them before the first
 * match: beside 10,000,000 archived rows whose newest 40,000 were a busy queue's, the first page
 * of another queue read 40,182 rows and took 620 ms (its own index: 51 rows, 2 ms; bench `scale`).
 * Ordering by the column first is not enough, since the planner drops a sort column that an
 * equality makes constant; so the filter is written as the range `col >= $v AND col <= $v` (the
 * same rows), which keeps the column in the order, and only the column's index can then give
 * that order without sorting every match. The cursor names the column too, `(col, key, id) <=
 * ($v, at, id) AND id <> $id`, so a deep page still starts where the cursor points in that index
 * (see {@link listWhere} for why not `<`).
 */
function leadingColumn(pillar: string, filter: ActiveFilter & DlqFilter): string | null {
  if (pillar === 'hot' || filter.ids !== undefined) return null;
  if (filter.type !== undefined) return 'type';
  if (filter.queue !== undefined) return 'queue';
  if (pillar === 'dlq' && filter.reason !== undefined) return 'failure_reason';
  return null;
}

/**
 * The conditions of a list page, values appended to `params`. `indexed`: queue, type, status,
 * failure reason, ids, the time range on the sort key and the cursor, all on the keys of the
 * list's indexes (the status and type of hot rows excepted: the hot table is small by design).
 * The cursor is a row comparison, `(key, id COLLATE "C") < ($k, $id)` (newest first) or `>`
 * (oldest first), which a B-tree index on `(key, id COLLATE "C")` (after any equality on its
 * leading keys) reads as one range (https://www.postgresql.org/docs/15/functions-comparisons.html#ROW-WISE-COMPARISON,
 * https://www.postgresql.org/docs/15/indexes-multicolumn.html). The key is bound as text at
 * microsecond precision (`timestamptz` keeps microseconds). `unindexed`: the tag and the search.
 */
export function listWhere(
  request: ListRequest<ActiveFilter & DlqFilter>,
  params: unknown[],
): ListWhere {
  const { pillar, filter } = request;
  const p = (value: unknown): string => bind(params, value);
  const key = `x.${LIST_SORT_KEY[pillar]}`;
  const lead = leadingColumn(pillar, filter);
  // The lead's value is bound once and named by its range and by the cursor (leadingColumn).
  let leadValue = '';
  const equals = (column: string, value: unknown, cast = ''): string => {
    if (column !== lead) return `x.${column} = ${p(value)}${cast}`;
    leadValue = `${p(value)}${cast}`;
    return `x.${column} >= ${leadValue} AND x.${column} <= ${leadValue}`;
  };
  const parts: string[] = [];
  if (filter.queue !== undefined) parts.push(equals('queue', filter.queue));
  if (filter.type !== undefined) parts.push(equals('type', filter.type));
  if (pillar === 'hot' && filter.status !== undefined) {
    parts.push(`x.status = ${statusLiteral(filter.status)}`);
  }
  if (pillar === 'dlq') {
    if (filter.reason !== undefined) {
      parts.push(equals('failure_reason', filter.reason, '::smallint'));
    }
    if (filter.ids !== undefined) parts.push(`x.id = ANY (${p([...filter.ids])}::text[])`);
  }
  if (filter.from !== undefined) parts.push(`${key} >= ${p(filter.from)}::timestamptz`);
  if (filter.to !== undefined) parts.push(`${key} < ${p(filter.to)}::timestamptz`);
  if (request.after !== null) {
    const op = request.order === 'newest' ? '<' : '>';
    const at = `${p(request.after.at)}::timestamptz`;
    const id = `${p(request.after.id)}::text`;
    if (lead === null) {
      parts.push(`(${key}, x.id COLLATE "C") ${op} (${at}, ${id})`);
    } else {
      // `<=` (or `>=`) and the cursor's own row left out by its id: the same rows as `<`, and
      // the same one range of the lead's index. PostgreSQL estimates a row comparison by its
      // first column alone: `lead < $v` found no row when $v is the column's smallest value (a
      // DLQ failure reason, 0), and a partitioned DLQ was then planned as a sort of every match
      // of every partition (81,698 of them: 158 ms); `lead <= $v` counts the filter's rows.
      parts.push(
        `(x.${lead}, ${key}, x.id COLLATE "C") ${op}= (${leadValue}, ${at}, ${id})`,
        `x.id <> ${id}`,
      );
    }
  }
  const unindexed: string[] = [];
  if (filter.tag !== undefined) unindexed.push(tagPredicate('x.tags', filter.tag, params));
  if (filter.search !== undefined && filter.search !== '') {
    unindexed.push(searchPredicate(pillar, (col) => `x.${col}`, filter.search, params));
  }
  return {
    indexed: parts.length === 0 ? 'TRUE' : parts.join(' AND '),
    unindexed: unindexed.length === 0 ? null : unindexed.join(' AND '),
    lead,
  };
}

/**
 * One page of a list (`listActive`, `listArchive`, `listDlq`): `where` from {@link listWhere},
 * `limitParam` the parameter holding `limit + 1`. Read committed, one autocommit statement, no
 * row locks. See `shared/page.ts` for the two shapes. The plain one is an index range scan in list
 * order that stops after `limit + 1` rows. The bounded scan reads the first `scanBound + 1` rows
 * in the same order (an index range scan with a LIMIT: the payload is read only to test
 * the search term), ranks them and keeps the matches and the two rows at the bound.
 */
export function listJobs(
  s: string,
  request: ListRequest<unknown>,
  where: ListWhere,
  limitParam: string,
): string {
  const { pillar } = request;
  const dir = request.order === 'newest' ? 'DESC' : 'ASC';
  const key = LIST_SORT_KEY[pillar];
  // Microseconds, which a JS Date would drop: the cursor must name the row exactly.
  const sortAt = `to_char(x.${key} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_at`;
  if (request.scanBound === null || where.unindexed === null) {
    return `\n${inListOrder(s, request, `${LIST_COLUMNS[pillar]}, ${sortAt}`, where, limitParam).join('\n')}`;
  }
  const bound = request.scanBound;
  const inOrder = `ORDER BY w.${key} ${dir}, w.id COLLATE "C" ${dir}`;
  const scan = inListOrder(
    s,
    request,
    `${LIST_COLUMNS[pillar]}, ${sortAt},\n           CASE WHEN ${where.unindexed} THEN 1 ELSE 0 END AS hit`,
    where,
    `${bound + 1}`,
  );
  return `
SELECT r.* FROM (
  SELECT w.*,
         row_number() OVER (${inOrder}) AS rn,
         sum(w.hit) OVER (${inOrder} ROWS UNBOUNDED PRECEDING) AS hit_rank
  FROM (
${scan.map((line) => `    ${line}`).join('\n')}) w
) r
WHERE (r.hit = 1 AND r.hit_rank <= ${limitParam} AND r.rn <= ${bound}) OR r.rn >= ${bound}
ORDER BY r.rn`;
}

/**
 * The lines of a SELECT of `select` over the rows of a list that meet `where`, in list order, at
 * most `limit` of them: one ordered, limited index range scan of the pillar's table.
 *
 * The hot table's list indexes hold Pending rows only (schema version 15: a claim writes two index
 * entries fewer per row), so the active list without a status filter reads two parts, each in
 * list order and limited: the Pending rows from those indexes, and the Fetched and Processing
 * rows (a few per worker slot) through `ix_jobs_hot_active`, sorted; the outer query merges them.
 * Each part carries its own ORDER BY and LIMIT because PostgreSQL keeps the branches of a UNION ALL
 * that have a WHERE clause as subqueries (`is_safe_append_member` in
 * https://github.com/postgres/postgres/blob/REL_15_STABLE/src/backend/optimizer/prep/prepjointree.c)
 * and does not push the outer ORDER BY … LIMIT into them. A status filter names one part: the
 * plain scan, with the status in `where`, reads it.
 */
function inListOrder(
  s: string,
  request: ListRequest<unknown>,
  select: string,
  { indexed: where, lead }: ListWhere,
  limit: string,
): string[] {
  const { pillar } = request;
  const dir = request.order === 'newest' ? 'DESC' : 'ASC';
  const first = lead === null ? '' : `x.${lead} ${dir}, `;
  const order = `ORDER BY ${first}x.${LIST_SORT_KEY[pillar]} ${dir}, x.id COLLATE "C" ${dir}`;
  const scan = (table: string, condition: string): string[] => [
    `SELECT ${select}`,
    `FROM ${s}.${table} x`,
    `WHERE ${condition}`,
    order,
    `LIMIT ${limit}`,
  ];
  if (pillar !== 'hot' || (request.filter as ActiveFilter).status !== undefined) {
    return scan(PILLAR_TABLE[pillar], where);
  }
  const part = (status: string): string[] => {
    const lines = scan(PILLAR_TABLE.hot, `${status} AND (${where})`).map((line) => `  ${line}`);
    lines[0] = `  (${lines[0].trimStart()}`;
    lines[lines.length - 1] += ')';
    return lines;
  };
  return [
    'SELECT * FROM (',
    ...part('x.status = 0'),
    '  UNION ALL',
    ...part('x.status IN (1, 2)'),
    '  UNION ALL',
    ...part('x.status = 7'),
    ') x',
    order,
    `LIMIT ${limit}`,
  ];
}

/** One keyset page ({@link listJobs}) of a checked request, with its values (the page's last is the limit + 1). */
export function listJobsQuery(
  s: string,
  request: ListRequest<object>,
): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const where = listWhere(request as ListRequest<ActiveFilter & DlqFilter>, values);
  values.push(request.limit + 1);
  return { text: listJobs(s, request, where, `$${values.length}`), values };
}
