import { CHOKAQ_DEFAULTS } from '../../libs/chokaq/src/config/resolve-options';
import type { BenchDialect } from './args';

/*
 * The data of the admin-reads scenario, as SQL: `INSERT … SELECT` over a generated series, run
 * after the storage created its schema. Every value is a function of the row number `g` (and of
 * one `now` taken by the bench), so PostgreSQL and SQLite receive the same rows, except the
 * content of the large payloads (PostgreSQL builds them from md5, SQLite from randomblob; their
 * size is the same). The spread is what a year-old installation shows: skewed queues, types and
 * error families, finish and failure times over the last days, tags on some rows, a few large
 * payloads, retried runs with their last error.
 */

/** How much to seed. */
export interface SeedSizes {
  archived: number;
  dead: number;
  pending: number;
  /** Rows per `INSERT … SELECT` (each its own transaction), so progress shows and the WAL stays bounded. */
  chunk: number;
  /**
   * What the archived rows' finish times span, ending just before `now` ({@link ARCHIVE_SPAN_MS}
   * unless set): the partitions scenario seeds a day's rows at a time.
   */
  archiveSpanMs?: number;
}

/** The queues, most frequent first (queue `i` gets a share that falls with `i`). */
export const SEED_QUEUES = [
  'emails',
  'billing',
  'webhooks',
  'reports',
  'exports',
  'imports',
  'notifications',
  'search-index',
  'thumbnails',
  'payments',
  'invoices',
  'sync-crm',
  'sync-erp',
  'video',
  'sms',
  'push',
  'analytics',
  'audit',
  'refunds',
  'cleanup',
] as const;

/** Job types of a queue are `<queue>.<verb>`, the first verb the most frequent. */
export const SEED_VERBS = ['send', 'render', 'sync', 'notify', 'reconcile', 'cleanup'] as const;

/** What the finish (archive) and failure (DLQ) times span, back from `now`. */
export const ARCHIVE_SPAN_MS = 3 * 86_400_000;
export const DLQ_SPAN_MS = 4 * 86_400_000;

/**
 * How far back the seal of the metric totals (PostgreSQL) is set after the seed's retention pass:
 * where it stands just before retention's next pass (`retention.intervalMs`, an hour by default,
 * jittered by up to 20 %), when a series of all queues reads the most buckets.
 */
export const SEAL_AGE_MS = CHOKAQ_DEFAULTS.retention.intervalMs * 1.2;
/** What the pending rows' enqueue times span, back from `now`. */
export const PENDING_SPAN_MS = 2 * 3_600_000;
/** Minutes of metric buckets per queue (24 hours and the current minute). */
export const BUCKET_MINUTES = 1_441;

/**
 * The term of the text-search reads: one payload in 5,000 names this customer, so a search finds
 * a few rows within its scan bound and goes on to the bound.
 */
export const SEARCH_TERM = 'cust-4242';

/** FailureReason codes (interfaces/job-status.enum.ts), as the seed writes them. */
const REASON = {
  MaxRetriesExceeded: 0,
  Cancelled: 1,
  Zombie: 2,
  Throttled: 5,
  FatalError: 6,
  Timeout: 7,
} as const;

/** What differs between the dialects' SQL. */
interface SeedDialect {
  /** Table name, qualified. */
  table(name: string): string;
  /** `WITH` clause before the INSERT (SQLite's generated series) or ''. */
  withSeries(from: number, to: number): string;
  /** FROM source of the series, one column `g`. */
  series(from: number, to: number): string;
  /** A time column's value from epoch milliseconds. */
  time(ms: string): string;
  /** A non-negative integer as lower-case hex, zero-padded to `width`. */
  hex(expr: string, width: number): string;
  /** A line feed. */
  readonly nl: string;
  /** About 8,000 characters of incompressible text. */
  bigText(g: string): string;
}

function dialectOf(dialect: BenchDialect, qualifier: string): SeedDialect {
  if (dialect === 'postgres') {
    return {
      table: (name) => `${qualifier}.${name}`,
      withSeries: () => '',
      series: (from, to) => `generate_series(${from}::bigint, ${to}::bigint) AS s(g)`,
      time: (ms) => `to_timestamp((${ms})::double precision / 1000)`,
      hex: (expr, width) => `lpad(to_hex(${expr}), ${width}, '0')`,
      nl: 'chr(10)',
      // Random hex does not compress, so the value is stored out of line (TOAST), as a large
      // JSON payload would be.
      bigText: (g) =>
        `(SELECT string_agg(md5(${g}::text || '-' || k::text), '') FROM generate_series(1, 250) k)`,
    };
  }
  return {
    table: (name) => `${qualifier}${name}`,
    withSeries: (from, to) =>
      `WITH RECURSIVE s(g) AS (SELECT ${from} UNION ALL SELECT g + 1 FROM s WHERE g < ${to})`,
    series: () => 's',
    time: (ms) => `(${ms})`,
    hex: (expr, width) => `printf('%0${width}x', ${expr})`,
    nl: 'char(10)',
    bigText: () => 'hex(randomblob(4000))',
  };
}

/** A string literal. */
const lit = (text: string): string => `'${text.replace(/'/g, "''")}'`;

/**
 * A pseudo-random integer 0–999 of row `g`, one independent-looking stream per `salt` (a
 * multiplicative hash modulo a prime, so consecutive rows land far apart). Parenthesised: SQLite
 * binds `||` tighter than `%`.
 */
const u = (salt: number): string => `((g * ${HASH_MULTIPLIERS[salt]}) % 1000003 % 1000)`;
const HASH_MULTIPLIERS = [
  999_331, 871_271, 737_797, 612_349, 524_287, 433_494, 362_881, 299_993, 199_999, 131_071, 104_729,
  86_243, 65_537, 48_611, 39_119, 27_644,
];

/** Index 0 … n−1 of row `g`, skewed so that 0 is the most frequent (a squared uniform value). */
const skewed = (salt: number, n: number): string => `(${u(salt)} * ${u(salt)} * ${n} / 1000000)`;

/** `CASE expr WHEN 0 THEN values[0] … END`. */
function pick(expr: string, values: readonly string[]): string {
  return `CASE ${expr} ${values.map((v, i) => `WHEN ${i} THEN ${v}`).join(' ')} END`;
}

/**
 * One error family: a message template whose `{n}` become numbers, `{hex}` a hex word and
 * `{uuid}` a UUID of the row, and the failure reason it belongs to. A few dozen families, each
 * one cause whatever ids and numbers its messages carry, as `getTopErrors` groups them.
 */
const FAMILIES: ReadonlyArray<readonly [number, string]> = [
  [REASON.MaxRetriesExceeded, 'Error: connect ECONNREFUSED 10.0.{n}.{n}:5432'],
  [
    REASON.MaxRetriesExceeded,
    'TimeoutError: request to https://api.partner.io/v2/orders/{n} timed out after {n} ms',
  ],
  [
    REASON.MaxRetriesExceeded,
    'HttpError: 503 Service Unavailable from https://hooks.example.com/endpoints/{n}',
  ],
  [REASON.MaxRetriesExceeded, 'Error: customer cust-{n} not found'],
  [
    REASON.MaxRetriesExceeded,
    'QueryFailedError: deadlock detected (process {n} waits for ShareLock on transaction {n})',
  ],
  [REASON.MaxRetriesExceeded, 'Error: invoice INV-{n} is already paid'],
  [REASON.MaxRetriesExceeded, 'RateLimitError: 429 Too Many Requests (retry after {n} s)'],
  [REASON.MaxRetriesExceeded, 'Error: SMTP 421 4.7.0 try again later (session {hex})'],
  [REASON.MaxRetriesExceeded, "ValidationError: field 'email' is invalid for user {uuid}"],
  [REASON.MaxRetriesExceeded, "TypeError: Cannot read properties of undefined (reading 'items')"],
  [
    REASON.MaxRetriesExceeded,
    'Error: S3 PutObject failed for exports/{n}/report-{n}.csv: SlowDown',
  ],
  [REASON.MaxRetriesExceeded, 'Error: socket hang up (ECONNRESET) after {n} bytes'],
  [
    REASON.MaxRetriesExceeded,
    'HttpError: 502 Bad Gateway from https://payments.example.net/v1/charges/ch_{hex}',
  ],
  [REASON.MaxRetriesExceeded, 'Error: lock timeout on account {n} after {n} ms'],
  [REASON.MaxRetriesExceeded, 'Error: webhook {uuid} returned 410 Gone'],
  [REASON.MaxRetriesExceeded, 'SyntaxError: Unexpected token < in JSON at position {n}'],
  [REASON.MaxRetriesExceeded, 'Error: file /data/imports/batch-{n}.csv not found'],
  [REASON.MaxRetriesExceeded, 'Error: quota exceeded for tenant-{n} ({n} of {n} requests)'],
  [
    REASON.MaxRetriesExceeded,
    'Error: upstream closed the connection while reading the response from 10.1.{n}.{n}',
  ],
  [REASON.MaxRetriesExceeded, 'Error: stale version {n} of order {n} (expected {n})'],
  [REASON.Timeout, 'ChokaQTimeoutError: execution timeout of {n} ms exceeded'],
  [REASON.Timeout, 'Error: PDF render of report {n} exceeded {n} ms'],
  [REASON.Timeout, 'Error: transcoding of video {n} exceeded {n} ms'],
  [REASON.Timeout, 'Error: export {n} aborted after {n} ms'],
  [REASON.Zombie, 'Zombie: heartbeat of worker worker-{n} expired {n} s ago'],
  [REASON.Zombie, 'Zombie: worker api-{hex} was lost while running the job'],
  [REASON.Cancelled, 'Cancelled by ops-{n}'],
  [REASON.Cancelled, 'Cancelled: superseded by job {uuid}'],
  [REASON.FatalError, 'ChokaQFatalError: payload of order {n} failed validation'],
  [REASON.Throttled, 'ThrottledError: partner API throttled account {n}'],
];

/** Number of error families the seed writes. */
export const SEED_ERROR_FAMILIES = FAMILIES.length;

/** A family's message as SQL: its placeholders filled from hash streams of the row. */
function message(d: SeedDialect, template: string): string {
  let salt = 3;
  const parts = template.split(/(\{n\}|\{hex\}|\{uuid\})/).filter((p) => p !== '');
  return parts
    .map((part) => {
      salt = (salt + 1) % HASH_MULTIPLIERS.length;
      const n = `((g * ${HASH_MULTIPLIERS[salt]}) % 100003)`;
      if (part === '{n}') return `(${n} % ${[256, 100003, 5000, 997][salt % 4]})`;
      if (part === '{hex}') return d.hex(`(g * 2654435761) % 4294967291`, 8);
      if (part === '{uuid}') {
        // Each group's value below 16^width, so both dialects print exactly `width` digits.
        const h = (k: number, w: number) =>
          d.hex(`(g * ${HASH_MULTIPLIERS[(salt + k) % HASH_MULTIPLIERS.length]}) % ${16 ** w}`, w);
        return [h(0, 8), lit('-'), h(1, 4), lit('-4'), h(2, 3), lit('-a'), h(3, 3), lit('-')]
          .concat([h(4, 6), h(5, 6)])
          .join(' || ');
      }
      return lit(part);
    })
    .join(' || ');
}

/** The error text of family `f` (an SQL expression 0–29) for row `g`, with a stack for the DLQ. */
function errorText(d: SeedDialect, f: string, withStack: boolean): string {
  const first = pick(
    f,
    FAMILIES.map(([, template]) => message(d, template)),
  );
  if (!withStack) return `(${first})`;
  return (
    `(${first}) || ${d.nl} || '    at Handler.run (/app/dist/handlers/job-' || (g % 40) || '.js:' || ` +
    `(g % 400) || ':17)' || ${d.nl} || '    at processTicksAndRejections (node:internal/process/task_queues:95:5)'`
  );
}

/** A UUIDv7-shaped id: its first 48 bits the creation time, then the pillar, then the row number. */
function idOf(d: SeedDialect, createdMs: string, pillar: number): string {
  const t = d.hex(createdMs, 12);
  return (
    `substr(${t}, 1, 8) || '-' || substr(${t}, 9, 4) || '-7${pillar.toString(16).padStart(3, '0')}` +
    `-8000-' || ${d.hex('g', 12)}`
  );
}

/** The queue and type of row `g`. */
function queueAndType(): { queue: string; type: string } {
  const q = skewed(0, SEED_QUEUES.length);
  const queue = pick(q, SEED_QUEUES.map(lit));
  const verb = pick(skewed(1, SEED_VERBS.length), SEED_VERBS.map(lit));
  return { queue, type: `(${queue}) || '.' || (${verb})` };
}

/** Tags on three rows in ten: a tenant, sometimes also `priority`. */
const TAGS = `CASE WHEN ${u(11)} < 200 THEN ',tenant-' || (${u(11)} % 50) || ','
  WHEN ${u(11)} < 300 THEN ',tenant-' || (${u(11)} % 50) || ',priority,' ELSE NULL END`;

/** A JSON payload of about 80 bytes, or one in a hundred of about 8 KB. */
function payload(d: SeedDialect): string {
  return `CASE WHEN ${u(13)} < 10 THEN '{"orderId":' || g || ',"blob":"' || ${d.bigText('g')} || '"}'
    ELSE '{"orderId":' || g || ',"customer":"cust-' || ((g * 7) % 5000) || '","amount":' ||
      (${u(14)} * 13) || ',"currency":"EUR"}' END`;
}

const PRIORITY = `CASE WHEN ${u(12)} < 50 THEN 20 WHEN ${u(12)} < 100 THEN 0 ELSE 10 END`;

/** One chunked statement of the seed, with what it writes. */
export interface SeedStatement {
  label: string;
  rows: number;
  sql: string;
}

/** `INSERT … SELECT` of rows `from`–`to`, with derived values computed once in a subquery. */
function insertSeries(
  d: SeedDialect,
  table: string,
  columns: Record<string, string>,
  derived: Record<string, string>,
  from: number,
  to: number,
): string {
  const inner = Object.entries(derived)
    .map(([name, expr]) => `${expr} AS ${name}`)
    .join(', ');
  return `${d.withSeries(from, to)}
INSERT INTO ${d.table(table)} (${Object.keys(columns).join(', ')})
SELECT ${Object.values(columns).join(',\n  ')}
FROM (SELECT g, ${inner} FROM ${d.series(from, to)}) v`;
}

function chunks(total: number, chunk: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let from = 1; from <= total; from += chunk)
    out.push([from, Math.min(total, from + chunk - 1)]);
  return out;
}

/**
 * The statements that seed the archive, the DLQ, the hot table (Pending only) and the metric
 * buckets, in order. `qualifier`: the PostgreSQL schema (quoted) or the SQLite table prefix.
 */
export function seedStatements(
  dialect: BenchDialect,
  qualifier: string,
  sizes: SeedSizes,
  nowMs: number,
): SeedStatement[] {
  const d = dialectOf(dialect, qualifier);
  const out: SeedStatement[] = [];
  const { queue, type } = queueAndType();
  const family = skewed(3, FAMILIES.length);
  const reasonOf = pick(
    'f',
    FAMILIES.map(([reason]) => String(reason)),
  );

  // Archive: rows in finish order (row 1 the oldest), as a live archive is appended.
  const span = sizes.archiveSpanMs ?? ARCHIVE_SPAN_MS;
  const finished = `(${nowMs - span - 1_000} + g * ${span} / ${sizes.archived} - ${u(4)} % 250)`;
  const archiveDerived = {
    finished_ms: finished,
    duration_ms: `(5 + ${u(5)} * ${u(5)} * ${u(5)} / 200000000)`,
    lag_ms: `(${u(6)} * ${u(6)} / 500)`,
    delay_ms: `CASE WHEN ${u(7)} < 100 THEN ${u(7)} * 36000 ELSE 0 END`,
    attempts: `CASE WHEN ${u(9)} < 50 THEN 2 WHEN ${u(9)} < 60 THEN 3 ELSE 1 END`,
    f: family,
  };
  const started = '(finished_ms - duration_ms)';
  const due = `(${started} - lag_ms)`;
  const enqueued = `(${due} - delay_ms)`;
  for (const [from, to] of chunks(sizes.archived, sizes.chunk)) {
    out.push({
      label: 'archive',
      rows: to - from + 1,
      sql: insertSeries(
        d,
        'jobs_archive',
        {
          id: idOf(d, enqueued, 3),
          queue,
          type,
          payload: payload(d),
          tags: TAGS,
          priority: PRIORITY,
          attempt_count: 'attempts',
          worker_id: `'worker-' || (${u(10)} % 6)`,
          scheduled_at_utc: `CASE WHEN delay_ms > 0 THEN ${d.time(due)} ELSE NULL END`,
          created_at_utc: d.time(enqueued),
          enqueued_at_utc: d.time(enqueued),
          started_at_utc: d.time(started),
          last_error: `CASE WHEN attempts > 1 THEN ${errorText(d, 'f', false)} ELSE NULL END`,
          finished_at_utc: d.time('finished_ms'),
          duration_ms: 'duration_ms',
        },
        archiveDerived,
        from,
        to,
      ),
    });
  }

  // DLQ: failure order, over four days (the top errors read only the last 24 hours).
  const failed = `(${nowMs - DLQ_SPAN_MS - 1_000} + g * ${DLQ_SPAN_MS} / ${sizes.dead} - ${u(4)} % 250)`;
  const dlqDerived = {
    failed_ms: failed,
    duration_ms: `(5 + ${u(5)} * ${u(5)} * ${u(5)} / 100000000)`,
    f: family,
  };
  const reason = `(${reasonOf})`;
  const dlqStarted = '(failed_ms - duration_ms)';
  const dlqEnqueued = `(${dlqStarted} - 60000 * ${u(6)} / 100)`;
  for (const [from, to] of chunks(sizes.dead, sizes.chunk)) {
    out.push({
      label: 'dlq',
      rows: to - from + 1,
      sql: insertSeries(
        d,
        'jobs_dlq',
        {
          id: idOf(d, dlqEnqueued, 4),
          queue,
          type,
          payload: payload(d),
          tags: TAGS,
          priority: PRIORITY,
          // Failed, Cancelled or Zombie, as dlqStatusFor maps the reason.
          status: `CASE ${reason} WHEN ${REASON.Cancelled} THEN 5 WHEN ${REASON.Zombie} THEN 6 ELSE 4 END`,
          attempt_count: `CASE WHEN ${reason} = ${REASON.MaxRetriesExceeded} THEN 3 + g % 3 ELSE 1 END`,
          worker_id: `'worker-' || (${u(10)} % 6)`,
          created_at_utc: d.time(dlqEnqueued),
          enqueued_at_utc: d.time(dlqEnqueued),
          started_at_utc: d.time(dlqStarted),
          last_error: `CASE WHEN ${reason} = ${REASON.MaxRetriesExceeded} THEN ${errorText(d, 'f', false)} ELSE NULL END`,
          failure_reason: reason,
          error_details: errorText(d, 'f', true),
          failed_at_utc: d.time('failed_ms'),
        },
        dlqDerived,
        from,
        to,
      ),
    });
  }

  // Hot table: a backlog of Pending rows enqueued over the last two hours; one in ten scheduled
  // up to an hour ahead, three in a hundred waiting for a retry after an error.
  const hotDerived = {
    enqueued_ms: `(${nowMs - PENDING_SPAN_MS} + g * ${PENDING_SPAN_MS} / ${sizes.pending})`,
    kind: `CASE WHEN ${u(7)} < 100 THEN 1 WHEN ${u(7)} < 130 THEN 2 ELSE 0 END`,
    f: family,
  };
  for (const [from, to] of chunks(sizes.pending, sizes.chunk)) {
    out.push({
      label: 'pending',
      rows: to - from + 1,
      sql: insertSeries(
        d,
        'jobs_hot',
        {
          id: idOf(d, 'enqueued_ms', 0),
          queue,
          type,
          payload: payload(d),
          tags: TAGS,
          priority: PRIORITY,
          status: '0',
          attempt_count: 'CASE WHEN kind = 2 THEN 1 ELSE 0 END',
          scheduled_at_utc: `CASE kind WHEN 1 THEN ${d.time(`${nowMs} + ${u(8)} * 3600`)} WHEN 2 THEN ${d.time(`${nowMs} + ${u(8)} * 100`)} ELSE NULL END`,
          created_at_utc: d.time('enqueued_ms'),
          enqueued_at_utc: d.time('enqueued_ms'),
          last_updated_utc: d.time('enqueued_ms'),
          last_error: `CASE WHEN kind = 2 THEN ${errorText(d, 'f', false)} ELSE NULL END`,
        },
        hotDerived,
        from,
        to,
      ),
    });
  }

  out.push(...bucketStatements(d, nowMs));
  return out;
}

/**
 * One-minute metric buckets of every queue over the last 24 hours: succeeded, failed, retried
 * and started rows per minute (what the throughput series and the start lag read), and a
 * cancellation every half hour.
 */
function bucketStatements(d: SeedDialect, nowMs: number): SeedStatement[] {
  const minute0 = Math.floor(nowMs / 60_000) * 60_000;
  const columns =
    'bucket_utc, queue, outcome, failure_reason, completed_count, duration_count, ' +
    'total_duration_ms, max_duration_ms, lag_count, lag_sum_ms, lag_max_ms';
  const rows = BUCKET_MINUTES * SEED_QUEUES.length;
  // g runs over minute × queue: minute = g / queues, queue = g % queues.
  const q = `(g % ${SEED_QUEUES.length})`;
  const m = `(g / ${SEED_QUEUES.length})`;
  const succeeded = `(5 + (${m} * 7 + ${q} * 13) % 40)`;
  const failed = `(1 + (${m} + ${q}) % 3)`;
  const outcomes: Array<[string, number, string, string, string]> = [
    // [label, outcome, reason, count, filter]
    ['buckets succeeded', 0, '-1', succeeded, 'TRUE'],
    ['buckets failed', 1, '0', failed, 'TRUE'],
    ['buckets retried', 3, '-1', `(1 + (${m} * ${q}) % 4)`, 'TRUE'],
    ['buckets started', 4, '-1', `(${succeeded} + ${failed})`, 'TRUE'],
    ['buckets cancelled', 2, '1', '1', `${m} % 30 = 0`],
  ];
  return outcomes.map(([label, outcome, reason, count, filter]) => {
    const timed = outcome === 0 || outcome === 1;
    const started = outcome === 4;
    return {
      label,
      rows: outcome === 2 ? Math.ceil(BUCKET_MINUTES / 30) * SEED_QUEUES.length : rows,
      sql: `${d.withSeries(0, rows - 1)}
INSERT INTO ${d.table('metric_buckets')} (${columns})
SELECT ${d.time(`${minute0} - ${m} * 60000`)}, ${pick(q, SEED_QUEUES.map(lit))}, ${outcome}, ${reason},
  ${count}, ${timed ? count : 0}, ${timed ? `${count} * (40 + ${q} * 10)` : 0}, ${timed ? `400 + ${q}` : 0},
  ${started ? count : 0}, ${started ? `${count} * 35` : 0}, ${started ? `150 + ${m} % 100` : 0}
FROM ${d.series(0, rows - 1)} WHERE ${filter === 'TRUE' ? '1 = 1' : filter}`,
    };
  });
}

/** The filters the timed reads use: the largest queue, its most frequent type, a time window. */
export function readFilters(nowMs: number): {
  queue: string;
  type: string;
  from: Date;
  to: Date;
} {
  return {
    queue: SEED_QUEUES[0],
    type: `${SEED_QUEUES[0]}.${SEED_VERBS[0]}`,
    from: new Date(nowMs - 36 * 3_600_000),
    to: new Date(nowMs - 12 * 3_600_000),
  };
}
