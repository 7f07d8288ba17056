/*
 * The one table of input limits: every bound an argument, a stored field or an option is checked
 * against. The rules that apply them live beside this file (validate-job.ts, validate-args.ts,
 * validate-filter.ts, option-rules.ts); the storage and the runtime read the same constants, so a
 * bound is stated once. It imports nothing, so every folder and the CLI may read it.
 */

/** Input limits of SPEC §6. */
export const LIMITS = {
  queueName: 255,
  type: 255,
  tag: 100,
  tags: 20,
  idempotencyKey: 255,
  groupKey: 255,
  createdBy: 100,
  /** A progress note (`ctx.reportProgress(percent, note)`); a longer one is cut to this length. */
  progressNote: 500,
  /**
   * The stored trace context of a job: characters of its JSON text (`{"traceparent":"…",…}`),
   * printable ASCII only. A W3C `traceparent` is 55 characters, and a `tracestate` is propagated
   * up to 512 (W3C Trace Context, "tracestate limits"); what remains is room for baggage.
   */
  traceContext: 2_048,
  priority: 1_000_000,
  maxDelayMs: 10 * 365 * 24 * 3_600_000,
  /** `runAt` must be before 9000-01-01T00:00:00Z. */
  maxRunAt: Date.UTC(9000, 0, 1),
  /**
   * …and not before 0001-01-01T00:00:00Z: every dialect can store that (SQL Server `datetime2`
   * starts there; PostgreSQL rejects instants before 4714 BC with a raw "timestamp out of range").
   */
  minRunAt: Date.parse('0001-01-01T00:00:00Z'),
} as const;

/** At most this many items per `enqueueMany` call. @publicApi */
export const MAX_ENQUEUE_MANY = 10_000;

/** Most dependencies one job may wait on (`NewJob.dependsOn`): a fan-in as wide as one enqueue. */
export const MAX_DEPENDENCIES = MAX_ENQUEUE_MANY;

/** Most dependents `getDependencies` lists (a fan-out may have 10,000). */
export const MAX_DEPENDENTS_SHOWN = 1_000;

/** Most edges one step of the rescue loop's dependency check takes. */
export const DEPENDENCY_CHECK_BATCH = 500;

/**
 * At most this many rows per page of a list (`ListQuery.limit`) or of a batch's results
 * (`BatchResultsQuery.limit`). @publicApi
 */
export const MAX_PAGE_SIZE = 1_000;

/**
 * Most rows one page of a list reads when its filter has a part no index serves (`search`, `tag`):
 * the page stops there and says so (`ListPage.scanLimited`), and its cursor continues from the
 * last row read. 10,000 rows of one pillar, newest (or oldest) first from where the page starts,
 * so a search costs the same whatever the table's size. @publicApi
 */
export const MAX_LIST_SCAN = 10_000;

/** Longest list cursor accepted (the ones ChokaQ writes are about 150 characters). */
export const MAX_CURSOR_LENGTH = 1_000;

/**
 * Longest delay Node's timers accept (2^31 − 1 ms, about 24.8 days). A larger value makes
 * `setTimeout` fire after 1 ms, so every option that becomes a timer is capped here, and the timers
 * themselves clamp to it (a jittered interval may exceed its option by 20 %).
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** Most rows one claim may take. */
export const MAX_CLAIM = MAX_ENQUEUE_MANY;

/**
 * Most rows one bulk DLQ action of the storage (resurrect, purge, preview by filter) may touch; a
 * dialect runs it in chunks of its own.
 */
export const MAX_DLQ_BULK = 100_000;

/**
 * Most rows one bulk DLQ action of `ChokaQAdmin` may touch: an operator's call is held to one
 * `enqueueMany` worth of rows, a tenth of what the storage accepts from code.
 */
export const MAX_ADMIN_BULK = MAX_ENQUEUE_MANY;

/**
 * The audit log: the longest `target` stored (a bulk action's filter as JSON is cut to this
 * length), the most ids a `details.ids` list keeps, and how long retention keeps entries when the
 * policy names no window (90 days: longer than the default DLQ window, so an entry outlives the
 * rows it describes).
 */
export const AUDIT_LIMITS = {
  target: 4_000,
  detailIds: 100,
  retentionMs: 90 * 86_400_000,
} as const;

/**
 * Confirmation tokens of bulk actions by filter: valid for 5 minutes after the preview, and the
 * largest tolerance a caller may allow between the previewed count and the count at the action.
 */
export const CONFIRMATION = {
  validForMs: 5 * 60_000,
  maxTolerance: 0.1,
} as const;

/**
 * Characters of an attempt's error text kept in `JobAttempts` (its first ones): one row per
 * attempt that did not end in the archive, so a job retried many times with long stacks stays
 * small. The full text of the last error is the job's own (`lastError`, `errorDetails`).
 */
export const MAX_ATTEMPT_ERROR = 4_000;

/**
 * Most rows one rescue statement (`recoverAbandoned`, `archiveZombies`) takes: one short
 * transaction, the size of the largest claim.
 */
export const MAX_RESCUE_BATCH = MAX_CLAIM;

/**
 * Largest retention batch (rows per delete transaction); the smallest is 1, since a batch of 0
 * would delete nothing.
 */
export const MAX_RETENTION_BATCH = 10_000;

/** Most DLQ error families `getTopDlqErrors` returns. */
export const MAX_TOP_ERRORS = 1_000;

/**
 * The window `getTopDlqErrors` groups: at most this many of the newest matching DLQ rows…
 * (bounded telemetry, whatever the size of the DLQ).
 */
export const TOP_ERRORS_WINDOW_ROWS = 10_000;

/** …and only those that failed within this many ms before the database's now (24 hours). */
export const TOP_ERRORS_WINDOW_MS = 24 * 3_600_000;

/**
 * Width of one metric bucket (`MetricBuckets`), in ms: one minute. A throughput series steps by
 * whole buckets.
 */
export const METRIC_BUCKET_MS = 60_000;

/** Most points one throughput series may have (a day at one-minute steps is 1,440). */
export const MAX_SERIES_POINTS = 10_000;

/**
 * The window of `getQueueOutcomes`, in whole minutes before the current one: 5 by default, at
 * most a day. It reads (minutes + 1) one-minute buckets per queue and outcome, so a day over 20
 * queues is about 115,000 bucket rows, the cost of a day's throughput series.
 */
export const QUEUE_OUTCOMES_MINUTES = { default: 5, max: 1_440 } as const;

/** Ids a bulk preview returns as a sample. */
export const PREVIEW_SAMPLE = 20;

/** Most `retryRules` one `archiveZombies` call may pass: one per handler of a process, with room. */
export const MAX_ZOMBIE_RETRY_RULES = 10_000;

/** Longest worker id (`hostname:pid:random`); the columns are 255 characters wide. */
export const MAX_WORKER_ID = 255;

/** Most rows `listWorkers` returns (the most recently seen first). */
export const MAX_WORKER_LIST = 10_000;

/** Rows `listWorkers` returns when the query names no limit. */
export const DEFAULT_WORKER_LIST = 1_000;

/**
 * Most entries one worker report may list, in each of its handled queues, handled types and
 * circuits: one per handler of a process, with room (as {@link MAX_ZOMBIE_RETRY_RULES}).
 */
export const MAX_WORKER_REPORT_ENTRIES = 10_000;

/** Longest host name of a worker report (a DNS name is at most 253 characters). */
export const MAX_WORKER_HOST = 255;

/** Longest library version of a worker report (semantic versions are far shorter). */
export const MAX_LIBRARY_VERSION = 100;

/** Highest process id a worker report may carry (the columns are 32-bit integers). */
export const MAX_PID = 2_147_483_647;

/** Longest recurring-job name and cron expression. */
export const MAX_RECURRING_TEXT = 255;

/** Longest IANA time-zone name of a recurring job. */
export const MAX_TIME_ZONE = 100;

/** Ranges of the numeric queue controls (null clears one). */
export const QUEUE_RANGES = {
  maxWorkers: [0, 1_000_000],
  zombieTimeoutSeconds: [1, 10 * 365 * 24 * 3_600],
  // A timer: Node fires a longer one after 1 ms.
  executionTimeoutMs: [1, MAX_TIMER_MS],
  // 0 would hold every grouped job forever: pause the queue instead.
  groupConcurrency: [1, 1_000_000],
} as const;

/**
 * Ranges of a queue's start rate limit (`QueuePatch.rateLimit`): `max` starts per `perMs`. A window
 * longer than a day is a schedule rather than a rate (use a recurring job); 1,000,000 starts per
 * window is the `maxWorkers` ceiling.
 */
export const RATE_LIMIT_RANGES = {
  max: [1, 1_000_000],
  perMs: [1, 86_400_000],
} as const;

/** Default rows per page of a list. */
export const DEFAULT_PAGE_SIZE = 50;

/** Jobs per page of `getBatchResults` when the query names no limit. */
export const DEFAULT_BATCH_RESULTS_PAGE = 100;

/** Longest search term accepted by lists. */
export const MAX_SEARCH_LENGTH = 200;

/**
 * A schema name (PostgreSQL, SQL Server) or table prefix (SQLite): a plain identifier, since it is
 * inlined into DDL and statements. `createJobStorage` and the CLI both apply it.
 */
export const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Most rows a bulk action of the `chokaq` CLI (DLQ resurrect or purge, cancel) touches without
 * `--yes`: enough for a handful of jobs named by hand, small enough that a filter wider than the
 * operator meant stops and shows its count first.
 */
export const CLI_UNCONFIRMED_ROWS = 25;

/**
 * A job type, an idempotency key or a recurring job's name must not end with whitespace: SQL
 * Server's `=` pads the shorter string with blanks before it compares
 * (https://learn.microsoft.com/en-us/sql/t-sql/language-elements/string-comparison-assignment-transact-sql),
 * so `order-7 ` and `order-7` would be one key there and two on PostgreSQL and SQLite. Refused on
 * every dialect, so that a value means the same thing everywhere. Queue names cannot hold a blank at
 * all.
 */
export function endsWithWhitespace(value: string): boolean {
  return /\s$/u.test(value);
}

/** The message of a value {@link endsWithWhitespace} refuses. */
export const TRAILING_WHITESPACE = 'must not end with whitespace';
