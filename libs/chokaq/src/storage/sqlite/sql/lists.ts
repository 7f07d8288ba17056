/** The three lists (active, archive, DLQ): keyset pages over whitelisted sort keys. */
import { ActiveFilter, DlqFilter, Pillar } from '../../../interfaces/job-view.interface';
import type { ListRequest } from '../../../validation/validate-list';
import { ERROR_PREFIX_CHARS, LIST_SORT_KEY } from '../../shared/page';
import {
  STATUS_LITERAL,
  SqlWhere,
  dateRange,
  finish,
  searchPredicate,
  tagPredicate,
} from './filters';

/**
 * What a list item reads of each pillar: no payload and no full error text. `payload_bytes` is
 * `octet_length(payload)`: "the number of bytes in the encoding of text string X"
 * (https://www.sqlite.org/lang_corefunc.html#octet_length), which SQLite reads from the record
 * header, not from the value: `OP_Column` skips the content of a column it reads only for
 * `octet_length()` (`OPFLAG_BYTELENARG`), so a 1 MB payload's overflow pages are not loaded for
 * it. The columns stored after the payload (most of them: the tables' column order is version
 * 1's) still sit behind it in the record, so reading them follows the chain of its overflow pages
 * (read, not copied): about 1.5 ms per MB of payload on a warm page cache.
 */
const LIST_COLUMNS: Record<Pillar, string> = {
  hot:
    'id, queue, type, status, attempt_count, priority, tags, created_at_utc, enqueued_at_utc, ' +
    'scheduled_at_utc, started_at_utc, worker_id, progress, held_since_utc, ' +
    `substr(last_error, 1, ${ERROR_PREFIX_CHARS}) AS error_prefix, octet_length(payload) AS payload_bytes`,
  archive:
    'id, queue, type, attempt_count, priority, tags, created_at_utc, enqueued_at_utc, ' +
    'scheduled_at_utc, started_at_utc, finished_at_utc, duration_ms, worker_id, progress, ' +
    `substr(last_error, 1, ${ERROR_PREFIX_CHARS}) AS error_prefix, octet_length(payload) AS payload_bytes`,
  dlq:
    'id, queue, type, status, failure_reason, attempt_count, priority, tags, created_at_utc, ' +
    'enqueued_at_utc, scheduled_at_utc, started_at_utc, failed_at_utc, worker_id, progress, ' +
    `substr(COALESCE(error_details, last_error), 1, ${ERROR_PREFIX_CHARS}) AS error_prefix, ` +
    'octet_length(payload) AS payload_bytes',
};

/** The conditions of a list page: `indexed` (on index keys) and `unindexed` (tag, search) or null. */
export interface ListWhere {
  indexed: SqlWhere;
  unindexed: string | null;
}

/**
 * The conditions of a list page. `indexed`: queue, type, status, failure reason, ids, the time
 * range on the sort key and the cursor, the last a row-value comparison
 * `(key, id) < (@after_at, @after_id)` (newest first) or `>` (oldest first), which SQLite reads
 * as one range of an index on `(key, id)` ("scrolling window queries",
 * https://www.sqlite.org/rowvalue.html#scrolling_window_queries). `unindexed`: the tag and the
 * search, whose parameters join `indexed.params`.
 */
export function listWhere(request: ListRequest<ActiveFilter & DlqFilter>): ListWhere {
  const { pillar, filter } = request;
  const where: string[] = [];
  const params: Record<string, unknown> = {};
  if (filter.queue !== undefined) {
    where.push('queue = @f_queue');
    params.f_queue = filter.queue;
  }
  if (filter.type !== undefined) {
    where.push('type = @f_type');
    params.f_type = filter.type;
  }
  if (pillar === 'hot' && filter.status !== undefined) where.push(STATUS_LITERAL[filter.status]);
  if (pillar === 'dlq') {
    if (filter.reason !== undefined) {
      where.push('failure_reason = @f_reason');
      params.f_reason = filter.reason;
    }
    if (filter.ids !== undefined) {
      where.push('id IN (SELECT value FROM json_each(@f_ids))');
      params.f_ids = JSON.stringify(filter.ids);
    }
  }
  dateRange(LIST_SORT_KEY[pillar], filter, where, params);
  if (request.after !== null) {
    where.push(
      `(${LIST_SORT_KEY[pillar]}, id) ${request.order === 'newest' ? '<' : '>'} (@after_at, @after_id)`,
    );
    params.after_at = request.after.atMs;
    params.after_id = request.after.id;
  }
  const unindexed: string[] = [];
  if (filter.tag !== undefined) unindexed.push(tagPredicate(filter.tag, params));
  if (filter.search !== undefined && filter.search !== '') {
    unindexed.push(searchPredicate(pillar, filter.search, params));
  }
  return {
    indexed: finish(where, params),
    unindexed: unindexed.length === 0 ? null : unindexed.join(' AND '),
  };
}

/**
 * One page of a list (`listActive`, `listArchive`, `listDlq`) of `table`, `@limit` being
 * `limit + 1`; see `shared/page.ts` for the two shapes. A read (deferred `BEGIN`): one WAL
 * snapshot, no lock a writer waits for.
 */
export function listJobs(table: string, request: ListRequest<unknown>, where: ListWhere): string {
  const dir = request.order === 'newest' ? 'DESC' : 'ASC';
  const key = LIST_SORT_KEY[request.pillar];
  const columns = LIST_COLUMNS[request.pillar];
  if (request.scanBound === null || where.unindexed === null) {
    return `SELECT ${columns} FROM ${table} WHERE ${where.indexed.sql}
      ORDER BY ${key} ${dir}, id ${dir} LIMIT @limit`;
  }
  const bound = request.scanBound;
  const inOrder = `ORDER BY w.${key} ${dir}, w.id ${dir}`;
  return `SELECT r.* FROM (
      SELECT w.*, row_number() OVER (${inOrder}) AS rn,
        sum(w.hit) OVER (${inOrder} ROWS UNBOUNDED PRECEDING) AS hit_rank
      FROM (
        SELECT ${columns}, CASE WHEN ${where.unindexed} THEN 1 ELSE 0 END AS hit
        FROM ${table} WHERE ${where.indexed.sql}
        ORDER BY ${key} ${dir}, id ${dir} LIMIT ${bound + 1}) AS w
    ) AS r
    WHERE (r.hit = 1 AND r.hit_rank <= @limit AND r.rn <= ${bound}) OR r.rn >= ${bound}
    ORDER BY r.rn`;
}
