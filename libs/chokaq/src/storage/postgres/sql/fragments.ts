/**
 * Building blocks the PostgreSQL statements share: the schema's identifiers and notification
 * channels, column lists, the lease arrays of worker-owned statements, and the counter, bucket and
 * attempt-row upserts a move writes in its own statement. The rules every statement follows
 * (literals and parameters, the database clock, one statement per move): docs/storage.md,
 * "PostgreSQL: statement conventions".
 */
import type { JobLease } from '../../../interfaces/job.interface';
import { createHash } from 'node:crypto';
import { MAX_ATTEMPT_ERROR } from '../../../validation/limits';
import { hotColumnsExcept } from '../../shared/columns';

/** Quotes a schema name that already matched `^[A-Za-z_][A-Za-z0-9_]{0,62}$`. */
export function quoteSchema(schema: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new Error(`Refusing to build SQL for an unvalidated schema name: ${schema}`);
  }
  return `"${schema}"`;
}

/**
 * The `LISTEN/NOTIFY` channel woken on enqueue: the schema name itself, so two ChokaQ installations
 * in one database (two schemas) never wake each other. Payload: the queue name.
 */
export function enqueueChannel(schema: string): string {
  return schema;
}

/**
 * The channel told about cancellation requests of Processing jobs (payload: the job id, one
 * notification per job). Schema names cannot contain `:`, so it never collides with an enqueue
 * channel. A name longer than 56 characters would not fit PostgreSQL's 63-byte channel limit with
 * the suffix, so it is cut and a hash of the whole name added: two schemas sharing a long prefix
 * must not share this channel, or a worker would abort its own job that has the other's cancelled
 * id.
 */
export function cancelChannel(schema: string): string {
  if (schema.length <= 56) return `${schema}:cancel`;
  const hash = createHash('sha256').update(schema).digest('hex').slice(0, 8);
  return `${schema.slice(0, 47)}_${hash}:cancel`;
}

/** Hot columns copied unchanged into the archive (status is virtual there; heartbeat and cancel flags end with the run). */
export const ARCHIVE_COPIED = hotColumnsExcept('status', 'heartbeat_utc', 'cancel_requested_utc');

/** Hot columns copied unchanged into the DLQ (all but `status`, which becomes the DLQ status). */
const DLQ_COPIED = hotColumnsExcept('status');

export const cols = (list: readonly string[], alias?: string): string =>
  list.map((c) => (alias ? `${alias}.${c}` : c)).join(', ');

export const MS = "* interval '1 millisecond'";

/**
 * An instant as whole epoch milliseconds (`floor`, so it truncates to the millisecond as the
 * driver's own date parsing does), a float8 the driver reads as a number: no date text to parse.
 */
export const EPOCH_MS = (instant: string): string =>
  `floor(extract(epoch FROM ${instant}) * 1000)::float8`;

/** The `settings` row that holds how far `metric_totals` is sealed (epoch seconds, as text). */
export const METRIC_SEAL_SETTING = 'metric_totals.sealed_to';

/**
 * Metric-bucket upsert of one outcome; `source` yields (queue, duration_ms) per moved row. One row per
 * (minute, queue, outcome, reason) and per statement (grouped first, so ON CONFLICT never meets a row
 * twice); concurrent movers serialise on that row only for this upsert. Buckets are one minute wide
 * (`METRIC_BUCKET_MS`): a day is 1,440 rows per queue and outcome, which a throughput series over
 * it reads in a few milliseconds.
 */
export const bucketUpsert = (
  s: string,
  outcome: number,
  reasonSql: string,
  source: string,
): string => `
  INSERT INTO ${s}.metric_buckets AS b (
    bucket_utc, queue, outcome, failure_reason,
    completed_count, duration_count, total_duration_ms, max_duration_ms)
  SELECT date_trunc('minute', now()), queue, ${outcome}, ${reasonSql},
         count(*), count(duration_ms), coalesce(sum(duration_ms), 0), coalesce(max(duration_ms), 0)
  FROM ${source} AS o GROUP BY queue
  ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE
  SET completed_count = b.completed_count + EXCLUDED.completed_count,
      duration_count = b.duration_count + EXCLUDED.duration_count,
      total_duration_ms = b.total_duration_ms + EXCLUDED.total_duration_ms,
      max_duration_ms = greatest(b.max_duration_ms, EXCLUDED.max_duration_ms)`;

/**
 * Start lag of a row being started now, in ms: from when it became due (`coalesce(scheduled,
 * enqueued)`, the claim's due time) to `now()`. Never negative (a due time is at most now).
 */
export const START_LAG_MS = (alias: string): string =>
  `greatest(0, round(extract(epoch FROM now() - coalesce(${alias}.scheduled_at_utc, ${alias}.enqueued_at_utc)) * 1000))::bigint`;

/**
 * The start bucket of this minute (outcome 4, reason −1) of each queue of `source`, which yields
 * (queue, lag_ms) per started row: `completed_count` and `lag_count` grow by the starts, `lag_sum_ms`
 * by their lags, `lag_max_ms` keeps the longest. Written by the statement that starts the rows (the
 * claim, `markAsProcessing`), so a start and its lag commit together. Two starters of one queue
 * serialise on this row only from the upsert to their COMMIT, which follows at once (autocommit).
 */
export const startLagUpsert = (s: string, source: string): string => `
  INSERT INTO ${s}.metric_buckets AS b (
    bucket_utc, queue, outcome, failure_reason,
    completed_count, lag_count, lag_sum_ms, lag_max_ms)
  SELECT date_trunc('minute', now()), queue, 4, -1,
         count(*), count(*), sum(lag_ms), max(lag_ms)
  FROM ${source} AS o GROUP BY queue
  ON CONFLICT (bucket_utc, queue, outcome, failure_reason) DO UPDATE
  SET completed_count = b.completed_count + EXCLUDED.completed_count,
      lag_count = b.lag_count + EXCLUDED.lag_count,
      lag_sum_ms = b.lag_sum_ms + EXCLUDED.lag_sum_ms,
      lag_max_ms = greatest(b.lag_max_ms, EXCLUDED.lag_max_ms)`;

/**
 * The `job_attempts` rows of runs a move ends (the rules: `storage/shared/attempts.ts`), as the
 * body of a CTE of that move's statement, so the history commits or rolls back with the move.
 * `source` yields (id, attempt_count, worker_id, lease_id, started_at_utc, outcome, error) per
 * ended run, read from the hot row the move locked. `seq` is one more than the job's last row:
 * a range read of the primary key `(job_id, seq)`, and no other writer can add a row for this job
 * meanwhile (only the mover of its locked hot row writes one). The error keeps its first
 * `MAX_ATTEMPT_ERROR` characters; the duration is the database clock's, finish minus start.
 */
export const attemptInsert = (s: string, source: string): string => `
  INSERT INTO ${s}.job_attempts (
    job_id, seq, attempt, worker_id, lease_id, started_at_utc, finished_at_utc, outcome, error,
    duration_ms)
  SELECT a.id,
         coalesce((SELECT max(x.seq) FROM ${s}.job_attempts x WHERE x.job_id = a.id), 0) + 1,
         a.attempt_count, a.worker_id, a.lease_id, a.started_at_utc, now(), a.outcome,
         left(a.error, ${MAX_ATTEMPT_ERROR}),
         CASE WHEN a.started_at_utc IS NOT NULL
              THEN greatest(0, round(extract(epoch FROM now() - a.started_at_utc) * 1000))::bigint
         END
  FROM (${source}) AS a`;

/**
 * Deletes the `job_attempts` rows of the jobs whose ids `gone` (a CTE of deleted archive or DLQ
 * rows, with `id`) yields, as the body of a CTE of the same statement: the history goes with the
 * job's last row, in its transaction. One primary-key range per job.
 */
export const attemptsDelete = (s: string, gone: string): string => `
  DELETE FROM ${s}.job_attempts t USING ${gone} g WHERE t.job_id = g.id`;

/** Parallel lease arrays $1 ids, $2 worker ids, $3 lease ids. */
export const LEASES = `unnest($1::text[], $2::text[], $3::text[]) AS l(id, worker_id, lease_id)`;

export const OWNED = `j.id = l.id AND j.worker_id = l.worker_id AND j.lease_id = l.lease_id`;

/**
 * `status` of the hot row `alias` is one of `codes`, for a statement that finds its rows by `id`.
 * The test goes through a cast so that no partial index of `jobs_hot` matches it (`WHERE status =
 * 1`, `= 2`, `IN (1, 2)`): those hold the claimed rows, whose number the planner knows only from
 * the last ANALYZE. Taken while a backlog waited and nothing ran, it counts one claimed row, and
 * a generic plan that scans such an index once per lease of a batch (a nested loop) looked
 * cheapest: every claimed row read for every lease (bench `scale`: an archive of 500 took 117 ms
 * beside 1,000 claimed rows, a heartbeat 444 ms). Unmatched, the primary key is the only index on
 * `id`: one probe per lease. `test/postgres/lease-plans.spec.ts` holds it.
 */
export const statusIn = (alias: string, ...codes: number[]): string =>
  codes.length === 1
    ? `${alias}.status::int = ${codes[0]}`
    : `${alias}.status::int IN (${codes.join(', ')})`;

/** An element of an array literal that needs no quotes: not empty, no delimiter, not `NULL`. */
const BARE_ELEMENT = /^[0-9A-Za-z_.:@+-]+$/;

/**
 * A `text[]` (or numeric array) value as PostgreSQL's array literal, `{a,b,"c d"}`, for a
 * parameter the statement casts (`$1::text[]`). The driver would build the same literal from an
 * array, but with a quoted copy of every element and one concatenation after another: on a
 * drain's archive that was about 950 bytes of garbage per job. Here elements that need no quotes
 * (ids, lease ids, numbers) are joined as they are, once; otherwise every element is quoted with
 * `\` and `"` escaped, as `array_in` reads them. No NULL elements: every caller sends values.
 */
export function arrayLiteral(values: readonly (string | number)[]): string {
  let bare = true;
  for (const v of values) {
    if (typeof v === 'string' && (!BARE_ELEMENT.test(v) || (v.length === 4 && /^null$/i.test(v)))) {
      bare = false;
      break;
    }
  }
  if (bare) return `{${values.join(',')}}`;
  const quoted = values.map((v) =>
    typeof v === 'number' ? String(v) : `"${v.replace(/[\\"]/g, '\\$&')}"`,
  );
  return `{${quoted.join(',')}}`;
}

/**
 * Parallel lease arrays in the order {@link LEASES} reads them: $1 ids, $2 worker ids, $3 lease
 * ids, each an array literal ({@link arrayLiteral}).
 */
export function leaseParams(leases: readonly JobLease[]): [string, string, string] {
  return [
    arrayLiteral(leases.map((l) => l.id)),
    arrayLiteral(leases.map((l) => l.workerId)),
    arrayLiteral(leases.map((l) => l.leaseId)),
  ];
}

/** What a Hot → DLQ move writes: status, outcome and counter are fixed per statement text. */
export interface DlqMoveShape {
  /** DLQ status literal: 4 Failed, 5 Cancelled, 6 Zombie. */
  status: 4 | 5 | 6;
  /** Metric outcome literal: 1 failed, 2 cancelled. */
  outcome: 1 | 2;
  /** The lifetime counter that grows. */
  counter: 'failed_total' | 'cancelled_total';
}

/**
 * The DLQ insert of every Hot → DLQ move, as a CTE `src(id, queue)`, fed by a CTE `moved` of deleted
 * hot rows. The SQL arguments are the failure reason, the error text and the actor (NULL keeps
 * `last_modified_by`).
 */
export const dlqInsert = (
  s: string,
  status: DlqMoveShape['status'],
  reasonSql: string,
  errorSql: string,
  actorSql: string,
): string => `
src AS (
  INSERT INTO ${s}.jobs_dlq (${cols(DLQ_COPIED)}, status, failure_reason, error_details, failed_at_utc)
  SELECT ${DLQ_COPIED.map((c) => (c === 'last_modified_by' ? `coalesce(${actorSql}, m.last_modified_by)` : `m.${c}`)).join(', ')},
         ${status}, ${reasonSql}, ${errorSql}, now()
  FROM moved m
  RETURNING id, queue
),`;

/** Lifetime counter upsert fed by `src(queue)`: one row per queue per statement. */
export const counterUpsert = (s: string, counter: DlqMoveShape['counter']): string => `
counted AS (
  INSERT INTO ${s}.stats_summary AS t (queue, ${counter}, last_activity_utc)
  SELECT queue, count(*), now() FROM src GROUP BY queue
  ON CONFLICT (queue) DO UPDATE
  SET ${counter} = t.${counter} + EXCLUDED.${counter},
      last_activity_utc = EXCLUDED.last_activity_utc
),`;

/** A SQL string literal of trusted text (channel names built from the validated schema). */
export function literal(text: string): string {
  if (!/^[A-Za-z0-9_:]+$/.test(text)) throw new Error(`Refusing to inline ${text}`);
  return `'${text}'`;
}

/** Whether the `queues` row `alias` has group limits: a grouped queue, claimed group by group. */
export const GROUPED = (alias: string): string =>
  `(${alias}.group_concurrency IS NOT NULL OR ${alias}.group_rate_max IS NOT NULL)`;

/**
 * The stored group of a job of queue `queue` whose own group is `group`: its own, else `''` when
 * the queue has group limits, else NULL. In a grouped queue every job must be in a group for the
 * grouped claim to reach it, so the jobs without one share the group `''` (read back as no group);
 * `groupedQueues` is a subquery yielding the names of the grouped queues as one `text[]`
 * ({@link GROUPED_QUEUES}), evaluated once per statement.
 */
export const STORED_GROUP = (group: string, queue: string, groupedQueues: string): string =>
  `coalesce(${group}, CASE WHEN ${queue} = ANY (${groupedQueues}::text[]) THEN '' END)`;

/** The names of the queues with group limits among `queues` (a `text[]` expression), as one array. */
export const GROUPED_QUEUES = (s: string, queues: string): string =>
  `(SELECT coalesce(array_agg(gq.name::text), '{}'::text[]) FROM ${s}.queues gq
    WHERE gq.name = ANY (${queues}::text[])
      AND ${GROUPED('gq')})`;
