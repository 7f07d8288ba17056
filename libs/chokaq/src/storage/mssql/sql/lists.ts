/** The three lists (active, archive, DLQ): keyset pages over whitelisted sort keys. */
import { ActiveFilter, DlqFilter, HistoryFilter } from '../../../interfaces/job-view.interface';
import type { ListRequest } from '../../../validation/validate-list';
import { ERROR_PREFIX_CHARS } from '../../shared/page';
import { MssqlStatement, ParamList } from '../mssql-params';
import { ARCHIVE_COLUMNS, DLQ_COLUMNS, HOT_TABLE_COLUMNS } from '../mssql.schema';
import { PILLAR_TABLE, searchPredicate, tagPredicate, whereClause } from './filters';
import { ID_JSON, isDate, isoText, tables, type MssqlSchema } from './fragments';

/** Sort key of each list; `Id` breaks ties. */
const LIST_KEY = {
  hot: 'EnqueuedAtUtc',
  archive: 'FinishedAtUtc',
  dlq: 'FailedAtUtc',
} as const;

/** The columns a list item reads of each pillar (dates as ISO text): no payload, no error text. */
const LIST_COLUMNS: Record<'hot' | 'archive' | 'dlq', readonly string[]> = {
  hot: [
    'Id',
    'Queue',
    'Type',
    'Status',
    'AttemptCount',
    'Priority',
    'Tags',
    'CreatedAtUtc',
    'EnqueuedAtUtc',
    'ScheduledAtUtc',
    'StartedAtUtc',
    'WorkerId',
    'Progress',
    'HeldSinceUtc',
  ],
  archive: [
    'Id',
    'Queue',
    'Type',
    'AttemptCount',
    'Priority',
    'Tags',
    'CreatedAtUtc',
    'EnqueuedAtUtc',
    'ScheduledAtUtc',
    'StartedAtUtc',
    'FinishedAtUtc',
    'DurationMs',
    'WorkerId',
    'Progress',
  ],
  dlq: [
    'Id',
    'Queue',
    'Type',
    'Status',
    'FailureReason',
    'AttemptCount',
    'Priority',
    'Tags',
    'CreatedAtUtc',
    'EnqueuedAtUtc',
    'ScheduledAtUtc',
    'StartedAtUtc',
    'FailedAtUtc',
    'DurationMs',
    'WorkerId',
    'Progress',
  ],
};

/**
 * The select list of a list page. `PayloadBytes` is `DATALENGTH(Payload)`, the bytes of the
 * stored `nvarchar` (UTF-16) value (https://learn.microsoft.com/en-us/sql/t-sql/functions/datalength-transact-sql):
 * for a value stored off-row, SQL Server reads only the root of its LOB tree, which holds the
 * length, not the value ("DATALENGTH optimizations for LOB data types",
 * https://learn.microsoft.com/en-us/archive/blogs/sqltips/datalength-optimizations-for-lob-data-types).
 * `ErrorPrefix` is `LEFT(…, 200)` of the error.
 */
function listSelect(pillar: 'hot' | 'archive' | 'dlq', a: string): string {
  const byName = new Map(
    [...HOT_TABLE_COLUMNS, ...ARCHIVE_COLUMNS, ...DLQ_COLUMNS].map((col) => [col.name, col]),
  );
  const error = pillar === 'dlq' ? `ISNULL(${a}.ErrorDetails, ${a}.LastError)` : `${a}.LastError`;
  return [
    ...LIST_COLUMNS[pillar].map((name) =>
      isDate(byName.get(name)!) ? `${isoText(`${a}.${name}`)} AS ${name}` : `${a}.${name}`,
    ),
    `CAST(LEFT(${error}, ${ERROR_PREFIX_CHARS}) AS nvarchar(${ERROR_PREFIX_CHARS})) AS ErrorPrefix`,
    `DATALENGTH(${a}.Payload) AS PayloadBytes`,
  ].join(', ');
}

/** A list request as the builders take it (checked by the validating edge). */
export type MssqlListRequest = ListRequest<ActiveFilter & HistoryFilter & DlqFilter>;

/**
 * The conditions of a list page. `indexed`: queue, type, status, failure reason, ids, the time
 * range on the sort key and the cursor, all on the keys of the list's indexes (the status and type
 * of hot rows excepted: the hot table is small by design); `unindexed`: the tag and the search.
 *
 * SQL Server has no row-value comparison, so the cursor is written out:
 * `k <= @k AND (k < @k OR (k = @k AND Id < @id))` (newest first; `>=`, `>`, `>` oldest first).
 * The leading `k <= @k` is implied by the rest and is there for the optimizer: it is a plain range
 * on the index's key, the seek predicate, and the disjunction that follows only rejects the rows of
 * the cursor's own key up to its id (the residual predicate). `@k` and `@id` are each one
 * parameter, referenced three and once.
 */
function listWhere(
  p: ParamList,
  a: string,
  request: MssqlListRequest,
): { indexed: string[]; unindexed: string[] } {
  const { pillar, filter } = request;
  const key = `${a}.${LIST_KEY[pillar]}`;
  const indexed: string[] = [];
  if (filter.queue !== undefined) indexed.push(`${a}.Queue = ${p.varchar(filter.queue, 255)}`);
  if (filter.type !== undefined) indexed.push(`${a}.Type = ${p.nvarchar(filter.type, 255)}`);
  if (pillar === 'hot' && filter.status !== undefined) {
    indexed.push(`${a}.Status = ${Number(filter.status)}`);
  }
  if (pillar === 'dlq') {
    if (filter.reason !== undefined) indexed.push(`${a}.FailureReason = ${p.int(filter.reason)}`);
    if (filter.ids !== undefined) {
      indexed.push(`${a}.Id IN (SELECT j.Id FROM OPENJSON(${p.json(filter.ids)}) ${ID_JSON} AS j)`);
    }
  }
  if (filter.from !== undefined) indexed.push(`${key} >= ${p.instant(filter.from)}`);
  if (filter.to !== undefined) indexed.push(`${key} < ${p.instant(filter.to)}`);
  if (request.after !== null) {
    const at = p.instant(new Date(request.after.atMs));
    const id = p.varchar(request.after.id, 36);
    const [within, past] = request.order === 'newest' ? ['<=', '<'] : ['>=', '>'];
    indexed.push(
      `${key} ${within} ${at} AND (${key} ${past} ${at} OR (${key} = ${at} AND ${a}.Id ${past} ${id}))`,
    );
  }
  const unindexed: string[] = [];
  if (filter.tag !== undefined) unindexed.push(tagPredicate(p, a, filter.tag));
  if (filter.search !== undefined && filter.search !== '') {
    unindexed.push(searchPredicate(p, a, pillar, filter.search));
  }
  return { indexed, unindexed };
}

/**
 * listActive, listArchive, listDlq — one keyset page (see `shared/page.ts` for the two shapes).
 * Read committed without hints (a list is not telemetry), no update locks. `TOP (n)` with an
 * `ORDER BY` on the index's keys returns the first n rows in that order
 * (https://learn.microsoft.com/en-us/sql/t-sql/queries/top-transact-sql#best-practices): a seek
 * from the cursor that stops after `limit + 1` rows. The bounded scan takes the first
 * `scanBound + 1` rows in that order, ranks them (`ROW_NUMBER`), counts matches as it goes (a
 * running `SUM … ROWS UNBOUNDED PRECEDING`,
 * https://learn.microsoft.com/en-us/sql/t-sql/queries/select-over-clause-transact-sql), and keeps
 * the first `limit + 1` matches and the rows ranked at the bound. `SortKey` (the key as
 * `datetime2`) orders the ranking; the item's own date columns are ISO text.
 */
export function listJobs(schema: MssqlSchema, request: MssqlListRequest): MssqlStatement {
  const t = tables(schema);
  const p = new ParamList();
  const { pillar } = request;
  const dir = request.order === 'newest' ? 'DESC' : 'ASC';
  const key = LIST_KEY[pillar];
  const top = p.int(request.limit + 1);
  const where = listWhere(p, 'j', request);
  const from = `FROM ${t[PILLAR_TABLE[pillar]]} AS j${whereClause(where.indexed)}`;
  const order = `ORDER BY j.${key} ${dir}, j.Id ${dir}`;
  if (request.scanBound === null || where.unindexed.length === 0) {
    return p.statement(
      [`SELECT TOP (${top}) ${listSelect(pillar, 'j')}`, from, `${order};`].join('\n'),
    );
  }
  const bound = request.scanBound;
  const inOrder = `ORDER BY w.SortKey ${dir}, w.Id ${dir}`;
  return p.statement(
    [
      'SELECT r.* FROM (',
      `  SELECT w.*, ROW_NUMBER() OVER (${inOrder}) AS Rn,`,
      `    SUM(w.Hit) OVER (${inOrder} ROWS UNBOUNDED PRECEDING) AS HitRank`,
      '  FROM (',
      `    SELECT TOP (${bound + 1}) ${listSelect(pillar, 'j')}, j.${key} AS SortKey,`,
      `      CASE WHEN ${where.unindexed.join(' AND ')} THEN 1 ELSE 0 END AS Hit`,
      `    ${from}`,
      `    ${order}`,
      '  ) AS w',
      ') AS r',
      `WHERE (r.Hit = 1 AND r.HitRank <= ${top} AND r.Rn <= ${bound}) OR r.Rn >= ${bound}`,
      'ORDER BY r.Rn;',
    ].join('\n'),
  );
}
