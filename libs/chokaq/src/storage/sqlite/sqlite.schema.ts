import { SQLITE_NOW_MS } from './sql';

/**
 * SQLite DDL of ChokaQ (SPEC §2): tables `{prefix}jobs_hot`, `jobs_archive`, `jobs_dlq`,
 * `stats_summary`, `metric_buckets`, `queues`, `recurring_jobs`, `schema_migrations`,
 * `row_counts` (version 5: the archive's and the DLQ's row counts, kept by triggers) and
 * `job_attempts` (version 9: the attempts that did not end in the archive).
 *
 * Conventions: ids are TEXT (UUIDv7 strings, so inserts land at the end of the primary key); payloads
 * are TEXT (the queue never looks inside); times are INTEGER epoch milliseconds from the database
 * clock; booleans are INTEGER 0/1. Tables are STRICT so a wrong type is an error, not a silent
 * affinity conversion.
 *
 * Partial indexes (`WHERE status = 0` …) are only used when the query repeats the same predicate with
 * the status written as a literal, which is why every statement in `sql/` writes it so.
 */

/** One schema version: the statements that take the schema from the previous version to this one. */
export interface SqliteMigration {
  version: number;
  description: string;
  statements: (prefix: string) => string[];
}

/** Version 1: the whole schema of SPEC §2. */
const V1: SqliteMigration = {
  version: 1,
  description: 'ChokaQ schema: three pillars, counters, buckets, queues, recurring jobs',
  statements: (p) => [
    `CREATE TABLE IF NOT EXISTS ${p}jobs_hot (
      id                   TEXT    NOT NULL PRIMARY KEY,
      queue                TEXT    NOT NULL,
      type                 TEXT    NOT NULL,
      payload              TEXT    NOT NULL,
      tags                 TEXT    NULL,
      idempotency_key      TEXT    NULL,
      priority             INTEGER NOT NULL DEFAULT 10,
      status               INTEGER NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2)),
      attempt_count        INTEGER NOT NULL DEFAULT 0,
      worker_id            TEXT    NULL,
      lease_id             TEXT    NULL,
      heartbeat_utc        INTEGER NULL,
      scheduled_at_utc     INTEGER NULL,
      created_at_utc       INTEGER NOT NULL,
      enqueued_at_utc      INTEGER NOT NULL,
      started_at_utc       INTEGER NULL,
      last_updated_utc     INTEGER NOT NULL,
      created_by           TEXT    NULL,
      last_modified_by     TEXT    NULL,
      last_error           TEXT    NULL,
      cancel_requested_utc INTEGER NULL,
      progress             REAL    NULL
    ) STRICT`,
    // Serves fetchNextBatch: per queue, the best Pending rows in claim order (priority desc, then
    // due time), read in index order so the claim stops after `limit` rows per queue.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_hot_pending_ix
      ON ${p}jobs_hot (queue, priority DESC, COALESCE(scheduled_at_utc, enqueued_at_utc), id)
      WHERE status = 0`,
    // Serves the per-queue MaxWorkers budget of fetchNextBatch and the active counts of reads.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_hot_active_ix ON ${p}jobs_hot (queue) WHERE status IN (1, 2)`,
    // Serves enqueue: at most one active (hot) job per idempotency key; ON CONFLICT DO NOTHING
    // relies on it so concurrent enqueues with one key insert one row.
    `CREATE UNIQUE INDEX IF NOT EXISTS ${p}jobs_hot_idempotency_ux
      ON ${p}jobs_hot (idempotency_key) WHERE idempotency_key IS NOT NULL`,
    // Serves recoverAbandoned: Fetched rows not touched since the fetched-job timeout.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_hot_fetched_ix ON ${p}jobs_hot (last_updated_utc) WHERE status = 1`,
    // Serves archiveZombies: Processing rows by heartbeat age.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_hot_heartbeat_ix ON ${p}jobs_hot (heartbeat_utc) WHERE status = 2`,

    `CREATE TABLE IF NOT EXISTS ${p}jobs_archive (
      id               TEXT    NOT NULL PRIMARY KEY,
      queue            TEXT    NOT NULL,
      type             TEXT    NOT NULL,
      payload          TEXT    NOT NULL,
      tags             TEXT    NULL,
      idempotency_key  TEXT    NULL,
      priority         INTEGER NOT NULL,
      attempt_count    INTEGER NOT NULL,
      worker_id        TEXT    NULL,
      scheduled_at_utc INTEGER NULL,
      created_at_utc   INTEGER NOT NULL,
      enqueued_at_utc  INTEGER NOT NULL,
      started_at_utc   INTEGER NULL,
      created_by       TEXT    NULL,
      last_modified_by TEXT    NULL,
      last_error       TEXT    NULL,
      progress         REAL    NULL,
      finished_at_utc  INTEGER NOT NULL,
      duration_ms      INTEGER NULL
    ) STRICT`,
    // Serves archive retention (finished before a cutoff) and the default archive page sort.
    // Version 4 rebuilds this index and the next five with `id` as the last key.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_archive_finished_ix ON ${p}jobs_archive (finished_at_utc)`,
    // Serves archive pages filtered by queue and the per-queue archived counts.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_archive_queue_ix ON ${p}jobs_archive (queue, finished_at_utc)`,

    `CREATE TABLE IF NOT EXISTS ${p}jobs_dlq (
      id                   TEXT    NOT NULL PRIMARY KEY,
      queue                TEXT    NOT NULL,
      type                 TEXT    NOT NULL,
      payload              TEXT    NOT NULL,
      tags                 TEXT    NULL,
      idempotency_key      TEXT    NULL,
      priority             INTEGER NOT NULL,
      status               INTEGER NOT NULL CHECK (status IN (4, 5, 6)),
      attempt_count        INTEGER NOT NULL,
      worker_id            TEXT    NULL,
      lease_id             TEXT    NULL,
      heartbeat_utc        INTEGER NULL,
      scheduled_at_utc     INTEGER NULL,
      created_at_utc       INTEGER NOT NULL,
      enqueued_at_utc      INTEGER NOT NULL,
      started_at_utc       INTEGER NULL,
      last_updated_utc     INTEGER NULL,
      created_by           TEXT    NULL,
      last_modified_by     TEXT    NULL,
      last_error           TEXT    NULL,
      cancel_requested_utc INTEGER NULL,
      progress             REAL    NULL,
      failure_reason       INTEGER NOT NULL,
      error_details        TEXT    NULL,
      failed_at_utc        INTEGER NOT NULL
    ) STRICT`,
    // Serves DLQ retention, the default DLQ page sort and bulk actions (oldest failure first).
    `CREATE INDEX IF NOT EXISTS ${p}jobs_dlq_failed_ix ON ${p}jobs_dlq (failed_at_utc)`,
    // Serves DLQ pages filtered by queue and the per-queue DLQ counts.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_dlq_queue_ix ON ${p}jobs_dlq (queue, failed_at_utc)`,
    // Serves DLQ pages, top errors and bulk actions filtered by failure reason.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_dlq_reason_ix ON ${p}jobs_dlq (failure_reason, failed_at_utc)`,
    // Serves DLQ pages and bulk actions filtered by job type.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_dlq_type_ix ON ${p}jobs_dlq (type, failed_at_utc)`,

    `CREATE TABLE IF NOT EXISTS ${p}stats_summary (
      queue             TEXT    NOT NULL PRIMARY KEY,
      succeeded_total   INTEGER NOT NULL DEFAULT 0,
      failed_total      INTEGER NOT NULL DEFAULT 0,
      cancelled_total   INTEGER NOT NULL DEFAULT 0,
      retried_total     INTEGER NOT NULL DEFAULT 0,
      resurrected_total INTEGER NOT NULL DEFAULT 0,
      last_activity_utc INTEGER NULL
    ) STRICT`,

    // The primary key leads with bucket_utc: it serves the throughput window scan and retention.
    `CREATE TABLE IF NOT EXISTS ${p}metric_buckets (
      bucket_utc        INTEGER NOT NULL,
      queue             TEXT    NOT NULL,
      outcome           INTEGER NOT NULL CHECK (outcome IN (0, 1, 2)),
      failure_reason    INTEGER NOT NULL DEFAULT -1,
      completed_count   INTEGER NOT NULL DEFAULT 0,
      duration_count    INTEGER NOT NULL DEFAULT 0,
      total_duration_ms INTEGER NOT NULL DEFAULT 0,
      max_duration_ms   INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (bucket_utc, queue, outcome, failure_reason)
    ) STRICT`,

    `CREATE TABLE IF NOT EXISTS ${p}queues (
      name                   TEXT    NOT NULL PRIMARY KEY,
      is_paused              INTEGER NOT NULL DEFAULT 0,
      is_active              INTEGER NOT NULL DEFAULT 1,
      max_workers            INTEGER NULL,
      zombie_timeout_seconds INTEGER NULL,
      execution_timeout_ms   INTEGER NULL,
      retry_zombies          INTEGER NOT NULL DEFAULT 0,
      last_updated_utc       INTEGER NOT NULL
    ) STRICT`,

    `CREATE TABLE IF NOT EXISTS ${p}recurring_jobs (
      name           TEXT    NOT NULL PRIMARY KEY,
      cron           TEXT    NOT NULL,
      time_zone      TEXT    NOT NULL,
      queue          TEXT    NOT NULL,
      type           TEXT    NOT NULL,
      payload        TEXT    NOT NULL,
      last_slot_utc  INTEGER NULL,
      next_slot_utc  INTEGER NOT NULL,
      misfire_policy TEXT    NOT NULL CHECK (misfire_policy IN ('skip', 'none')),
      is_paused      INTEGER NOT NULL DEFAULT 0
    ) STRICT`,
  ],
};

/**
 * Version 2: recurring jobs you can operate. `source` says whether a definition comes from a
 * `@RecurringJob` (re-asserted at each start) or from `ChokaQAdmin.upsertRecurringJob` (kept until
 * removed); `last_job_id` is the job the last claimed slot or trigger enqueued. Rows of earlier
 * versions came from decorators, hence the default. `ADD COLUMN` only edits the table's definition
 * (no row is rewritten), and a worker of version 1 still runs: it names its columns on insert and
 * reads with `SELECT *`. SQLite has no `ADD COLUMN IF NOT EXISTS`: the ledger row of this version
 * is what keeps it from running twice.
 */
const V2: SqliteMigration = {
  version: 2,
  description: 'Recurring jobs: source and last job id',
  statements: (p) => [
    `ALTER TABLE ${p}recurring_jobs ADD COLUMN source TEXT NOT NULL DEFAULT 'decorator'
      CHECK (source IN ('decorator', 'runtime'))`,
    `ALTER TABLE ${p}recurring_jobs ADD COLUMN last_job_id TEXT NULL`,
  ],
};

/**
 * Version 3: the Workers table (one row per worker process, upserted with its heartbeat) and the
 * progress note (`ctx.reportProgress(percent, note)`) beside the percentage in every pillar.
 * `ADD COLUMN` of a nullable column without a default rewrites nothing (only the table's
 * definition changes), so it is instant however large the archive is.
 */
const V3: SqliteMigration = {
  version: 3,
  description: 'Workers table; progress note',
  statements: (p) => [
    // One row per worker process; a few dozen rows (live workers, and stopped or lost ones until
    // retention removes them), read whole by listWorkers, so the primary key is the only index.
    `CREATE TABLE IF NOT EXISTS ${p}workers (
      worker_id       TEXT    NOT NULL PRIMARY KEY,
      host            TEXT    NOT NULL,
      pid             INTEGER NOT NULL,
      library_version TEXT    NOT NULL,
      started_at_utc  INTEGER NOT NULL,
      last_seen_utc   INTEGER NOT NULL,
      concurrency     INTEGER NOT NULL,
      running         INTEGER NOT NULL,
      handled         TEXT    NOT NULL,
      circuits        TEXT    NOT NULL,
      is_draining     INTEGER NOT NULL DEFAULT 0,
      stopped_at_utc  INTEGER NULL
    ) STRICT`,
    `ALTER TABLE ${p}jobs_hot ADD COLUMN progress_note TEXT NULL`,
    `ALTER TABLE ${p}jobs_archive ADD COLUMN progress_note TEXT NULL`,
    `ALTER TABLE ${p}jobs_dlq ADD COLUMN progress_note TEXT NULL`,
  ],
};

/**
 * Version 4: the indexes of the keyset lists (`listActive`, `listArchive`, `listDlq`). A list page
 * reads `(sort key, id)` from where its cursor points, newest or oldest first, after an equality
 * on a leading key for a queue, type or failure-reason filter; so every such index ends with `id`
 * (a secondary index of a rowid table otherwise ends with the rowid, which is not the order the
 * lists promise). The archive and DLQ indexes of version 1 are rebuilt under their own names with
 * that last key (each still serves what it served: retention, bulk actions, error families,
 * per-queue counts); the hot table and the archive's type get theirs. Applied inside
 * `ensureSchema`'s `BEGIN IMMEDIATE`, so writers wait while they build.
 */
const V4: SqliteMigration = {
  version: 4,
  description: 'Keyset list indexes: (sort key, id) per pillar, by queue, type and reason',
  statements: (p) => [
    `DROP INDEX IF EXISTS ${p}jobs_hot_enqueued_ix`,
    // Serves the active list, newest (or oldest) enqueue first.
    `CREATE INDEX ${p}jobs_hot_enqueued_ix ON ${p}jobs_hot (enqueued_at_utc, id)`,
    `DROP INDEX IF EXISTS ${p}jobs_hot_queue_enqueued_ix`,
    // Serves the active list filtered by queue.
    `CREATE INDEX ${p}jobs_hot_queue_enqueued_ix ON ${p}jobs_hot (queue, enqueued_at_utc, id)`,
    `DROP INDEX IF EXISTS ${p}jobs_archive_finished_ix`,
    // Serves the archive list and retention (finished before a cutoff, oldest first).
    `CREATE INDEX ${p}jobs_archive_finished_ix ON ${p}jobs_archive (finished_at_utc, id)`,
    `DROP INDEX IF EXISTS ${p}jobs_archive_queue_ix`,
    // Serves the archive list by queue and the per-queue archived counts.
    `CREATE INDEX ${p}jobs_archive_queue_ix ON ${p}jobs_archive (queue, finished_at_utc, id)`,
    `DROP INDEX IF EXISTS ${p}jobs_archive_type_ix`,
    // Serves the archive list by type.
    `CREATE INDEX ${p}jobs_archive_type_ix ON ${p}jobs_archive (type, finished_at_utc, id)`,
    `DROP INDEX IF EXISTS ${p}jobs_dlq_failed_ix`,
    // Serves the DLQ list, retention, bulk actions (oldest failure first), error families.
    `CREATE INDEX ${p}jobs_dlq_failed_ix ON ${p}jobs_dlq (failed_at_utc, id)`,
    `DROP INDEX IF EXISTS ${p}jobs_dlq_queue_ix`,
    // Serves the DLQ list by queue and the per-queue DLQ counts.
    `CREATE INDEX ${p}jobs_dlq_queue_ix ON ${p}jobs_dlq (queue, failed_at_utc, id)`,
    `DROP INDEX IF EXISTS ${p}jobs_dlq_reason_ix`,
    // Serves the DLQ list, error families and bulk actions by failure reason.
    `CREATE INDEX ${p}jobs_dlq_reason_ix ON ${p}jobs_dlq (failure_reason, failed_at_utc, id)`,
    `DROP INDEX IF EXISTS ${p}jobs_dlq_type_ix`,
    // Serves the DLQ list and bulk actions by type.
    `CREATE INDEX ${p}jobs_dlq_type_ix ON ${p}jobs_dlq (type, failed_at_utc, id)`,
  ],
};

/** The columns of `metric_buckets` that version 5 keeps when it rebuilds the table. */
const BUCKET_COLUMNS_BEFORE_V5 = [
  'bucket_utc',
  'queue',
  'outcome',
  'failure_reason',
  'completed_count',
  'duration_count',
  'total_duration_ms',
  'max_duration_ms',
].join(', ');

/**
 * Version 5: what the dashboard reads need.
 *
 * - `row_counts`: the rows the archive and the DLQ retain, kept exact by triggers that fire on
 *   every insert and delete of those tables, in the transaction that makes the change. So
 *   `getSummary` reads two rows instead of counting two tables that grow to millions of rows, and
 *   the count cannot drift: every writer is counted, whatever it is (each move, purge and
 *   retention batch of this code, a worker of version 4 still running during an upgrade, a DBA's
 *   manual DELETE). It costs one primary-key UPDATE per row moved, in the same write transaction
 *   (SQLite has a single writer, so the row is never contended). Initialised here from one count
 *   of each table, under the migration's write lock.
 * - `metric_buckets` also counts retries (outcome 3) and starts (outcome 4), the starts with their
 *   start lag (`lag_count`, `lag_sum_ms`, `lag_max_ms`), and buckets become one minute wide (a
 *   property of the statements; per-second rows written before stay valid). The outcome CHECK of
 *   version 1 allows 0–2 only and SQLite cannot alter a CHECK, so the table is rebuilt, as SQLite
 *   documents for such changes (https://www.sqlite.org/lang_altertable.html#otheralter): create
 *   the new table, copy the rows, drop the old one, rename. Buckets are few (retention), so the
 *   copy is short.
 * - An index on `metric_buckets (queue, bucket_utc)` for one queue's series and start lag.
 */
const V5: SqliteMigration = {
  version: 5,
  description:
    'Exact archive and DLQ row counts; metric buckets count retries and starts with their start lag',
  statements: (p) => [
    `CREATE TABLE IF NOT EXISTS ${p}row_counts (
      pillar    TEXT    NOT NULL PRIMARY KEY CHECK (pillar IN ('archive', 'dlq')),
      row_count INTEGER NOT NULL
    ) STRICT`,
    `INSERT INTO ${p}row_counts (pillar, row_count)
      SELECT 'archive', COUNT(*) FROM ${p}jobs_archive WHERE true
      ON CONFLICT (pillar) DO UPDATE SET row_count = excluded.row_count`,
    `INSERT INTO ${p}row_counts (pillar, row_count)
      SELECT 'dlq', COUNT(*) FROM ${p}jobs_dlq WHERE true
      ON CONFLICT (pillar) DO UPDATE SET row_count = excluded.row_count`,
    ...(['archive', 'dlq'] as const).flatMap((pillar) => [
      `CREATE TRIGGER IF NOT EXISTS ${p}jobs_${pillar}_counted_insert AFTER INSERT ON ${p}jobs_${pillar}
      BEGIN
        UPDATE ${p}row_counts SET row_count = row_count + 1 WHERE pillar = '${pillar}';
      END`,
      `CREATE TRIGGER IF NOT EXISTS ${p}jobs_${pillar}_counted_delete AFTER DELETE ON ${p}jobs_${pillar}
      BEGIN
        UPDATE ${p}row_counts SET row_count = row_count - 1 WHERE pillar = '${pillar}';
      END`,
    ]),

    `DROP TABLE IF EXISTS ${p}metric_buckets_next`,
    `CREATE TABLE ${p}metric_buckets_next (
      bucket_utc        INTEGER NOT NULL,
      queue             TEXT    NOT NULL,
      outcome           INTEGER NOT NULL CHECK (outcome IN (0, 1, 2, 3, 4)),
      failure_reason    INTEGER NOT NULL DEFAULT -1,
      completed_count   INTEGER NOT NULL DEFAULT 0,
      duration_count    INTEGER NOT NULL DEFAULT 0,
      total_duration_ms INTEGER NOT NULL DEFAULT 0,
      max_duration_ms   INTEGER NOT NULL DEFAULT 0,
      lag_count         INTEGER NOT NULL DEFAULT 0,
      lag_sum_ms        INTEGER NOT NULL DEFAULT 0,
      lag_max_ms        INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (bucket_utc, queue, outcome, failure_reason)
    ) STRICT`,
    `INSERT INTO ${p}metric_buckets_next (${BUCKET_COLUMNS_BEFORE_V5})
      SELECT ${BUCKET_COLUMNS_BEFORE_V5} FROM ${p}metric_buckets`,
    `DROP TABLE ${p}metric_buckets`,
    `ALTER TABLE ${p}metric_buckets_next RENAME TO ${p}metric_buckets`,
    // Serves a throughput series of one queue and the start lag of queue health.
    `CREATE INDEX IF NOT EXISTS ${p}metric_buckets_queue_ix ON ${p}metric_buckets (queue, bucket_utc)`,
  ],
};

/**
 * Version 6: the audit log and the settings it needs (new tables only; workers of version 5 never
 * touch them).
 * - `audit_log`: one row per operator action, written in the transaction of the change it records;
 *   its id is a UUIDv7 given before the first write, so the batches of one bulk action add to one
 *   row. Read newest first through `audit_log_at_ix (at_utc, id)`, which also serves retention.
 * - `settings`: named values; today the secret that signs the confirmation tokens of bulk actions.
 */
const V6: SqliteMigration = {
  version: 6,
  description: 'Audit log; settings (the confirmation secret)',
  statements: (p) => [
    `CREATE TABLE IF NOT EXISTS ${p}audit_log (
      id            TEXT    NOT NULL PRIMARY KEY,
      at_utc        INTEGER NOT NULL,
      actor         TEXT    NOT NULL,
      action        TEXT    NOT NULL,
      target        TEXT    NULL,
      rows_affected INTEGER NOT NULL DEFAULT 0,
      details       TEXT    NULL
    ) STRICT`,
    `CREATE INDEX IF NOT EXISTS ${p}audit_log_at_ix ON ${p}audit_log (at_utc, id)`,
    `CREATE TABLE IF NOT EXISTS ${p}settings (
      name  TEXT NOT NULL PRIMARY KEY,
      value TEXT NOT NULL
    ) STRICT`,
  ],
};

/**
 * Version 7: `audit_log_target_ix (target, at_utc, id)`, for the audit entries of one target (a
 * job's, in a dashboard's job view), newest first. Without it such a read walks `audit_log_at_ix`
 * from the newest entry and, for a job with fewer entries than a page (nearly every job), reads the
 * whole log, which retention keeps for 90 days. The target itself is the key: SQLite bounds no key
 * size (a key larger than its share of a page continues on overflow pages,
 * https://www.sqlite.org/fileformat2.html#b_tree_pages), so the 4,000-character target of a bulk
 * action's filter is stored like a job id. The server dialects key a prefix of it instead. A new
 * index only: workers of version 6 keep writing rows, which it indexes.
 */
const V7: SqliteMigration = {
  version: 7,
  description: 'Audit log index by target',
  statements: (p) => [
    // Serves getAuditLog by target: one target's entries newest first from the cursor.
    `CREATE INDEX IF NOT EXISTS ${p}audit_log_target_ix ON ${p}audit_log (target, at_utc, id)`,
  ],
};

/**
 * Version 8: `trace_context`, the trace context of the enqueuing code (the JSON text of a
 * propagation carrier: W3C `traceparent`, `tracestate`), in every pillar, so that the moves carry it
 * and a resurrected job keeps it. As version 3's progress note: `ADD COLUMN` of a nullable column
 * without a default only edits the table's definition (no row is rewritten), and a worker of
 * version 7 keeps running (it names its columns; a job it moves leaves its trace context behind,
 * as a job enqueued by it has none).
 */
const V8: SqliteMigration = {
  version: 8,
  description: 'Trace context of the enqueuing code',
  statements: (p) => [
    `ALTER TABLE ${p}jobs_hot ADD COLUMN trace_context TEXT NULL`,
    `ALTER TABLE ${p}jobs_archive ADD COLUMN trace_context TEXT NULL`,
    `ALTER TABLE ${p}jobs_dlq ADD COLUMN trace_context TEXT NULL`,
  ],
};

/**
 * Version 9: `job_attempts`, the history of a job's attempts that did not end in the archive
 * (retried, timed out, zombie, cancelled while running, failed), one row per such attempt, written
 * in the transaction of the move that ended it (`storage/shared/attempts.ts` has the rules). The
 * successful last attempt is the archive row itself, so the claim-run-archive path writes nothing
 * here. Keyed `(job_id, seq)` (a WITHOUT ROWID table: the rows are stored in that key's order, so a
 * job's history is one range, read or deleted with its archive or DLQ row). A new table only:
 * workers of version 8 never read or write it.
 */
const V9: SqliteMigration = {
  version: 9,
  description: 'Attempt history of jobs',
  statements: (p) => [
    `CREATE TABLE IF NOT EXISTS ${p}job_attempts (
      job_id          TEXT    NOT NULL,
      seq             INTEGER NOT NULL,
      attempt         INTEGER NOT NULL,
      worker_id       TEXT    NULL,
      lease_id        TEXT    NULL,
      started_at_utc  INTEGER NULL,
      finished_at_utc INTEGER NOT NULL,
      outcome         TEXT    NOT NULL
        CHECK (outcome IN ('retried', 'timeout', 'zombie', 'cancelled', 'failed')),
      error           TEXT    NULL,
      duration_ms     INTEGER NULL,
      PRIMARY KEY (job_id, seq)
    ) STRICT, WITHOUT ROWID`,
  ],
};

/**
 * Version 10: a queue's start rate limit (`rate_limit_max` starts per `rate_limit_per_ms`) and the
 * state the claim keeps for it: the current window (its first and last start, epoch ms, and how
 * many started in it) and the previous window's count and last start (see `fetchNextBatch`).
 * Nullable columns without a default, as version 8's: only the table's definition changes. A
 * worker of version 9 keeps running and ignores the limit: upgrade every worker before relying on it.
 */
const V10: SqliteMigration = {
  version: 10,
  description: 'Queue rate limits',
  statements: (p) => [
    `ALTER TABLE ${p}queues ADD COLUMN rate_limit_max INTEGER NULL`,
    `ALTER TABLE ${p}queues ADD COLUMN rate_limit_per_ms INTEGER NULL`,
    `ALTER TABLE ${p}queues ADD COLUMN rate_window_start INTEGER NULL`,
    `ALTER TABLE ${p}queues ADD COLUMN rate_window_last INTEGER NULL`,
    `ALTER TABLE ${p}queues ADD COLUMN rate_window_count INTEGER NULL`,
    `ALTER TABLE ${p}queues ADD COLUMN rate_prev_last INTEGER NULL`,
    `ALTER TABLE ${p}queues ADD COLUMN rate_prev_count INTEGER NULL`,
  ],
};

/**
 * Version 11: `payload_version`, the version of the job definition that enqueued the payload
 * (`defineJob(…, { version })`, 1 without one), in every pillar, so that the moves carry it and the
 * claim can filter on it. `ADD COLUMN … NOT NULL DEFAULT 1` only edits the table's definition:
 * existing rows read the default without being rewritten. A worker of version 10 keeps running
 * (its inserts take the default; its claim does not filter on the version, so upgrade every
 * worker before enqueuing a version 2).
 */
const V11: SqliteMigration = {
  version: 11,
  description: 'Payload version of each job',
  statements: (p) => [
    `ALTER TABLE ${p}jobs_hot ADD COLUMN payload_version INTEGER NOT NULL DEFAULT 1`,
    `ALTER TABLE ${p}jobs_archive ADD COLUMN payload_version INTEGER NOT NULL DEFAULT 1`,
    `ALTER TABLE ${p}jobs_dlq ADD COLUMN payload_version INTEGER NOT NULL DEFAULT 1`,
  ],
};

/**
 * Version 12: jobs an open circuit breaker holds back are told apart and counted on their own.
 * `jobs_hot.held_since_utc` is set by the release of an open circuit to when the job was first due
 * (kept when it is held again, cleared when a run of it is rescheduled), so the queue's lag counts
 * those jobs from there; `stats_summary.deferred_total` counts the releases, which `retried_total`
 * no longer does. `ADD COLUMN` edits the table's definition only. `jobs_hot_held_ix` serves the
 * health read's pass over a queue's held rows and holds only those.
 */
const V12: SqliteMigration = {
  version: 12,
  description: 'Jobs held by an open circuit, and a deferral counter',
  statements: (p) => [
    `ALTER TABLE ${p}jobs_hot ADD COLUMN held_since_utc INTEGER NULL`,
    `ALTER TABLE ${p}stats_summary ADD COLUMN deferred_total INTEGER NOT NULL DEFAULT 0`,
    `CREATE INDEX IF NOT EXISTS ${p}jobs_hot_held_ix ON ${p}jobs_hot (queue, held_since_utc)
      WHERE status = 0 AND held_since_utc IS NOT NULL`,
  ],
};

/**
 * Version 13: stored results. The archive's `result` holds the JSON text a handler that records its
 * result returned (`recordResult`), NULL for every other job. As version 3's progress note:
 * `ADD COLUMN` of a nullable column without a default only edits the table's definition, no row is
 * rewritten (https://www.sqlite.org/lang_altertable.html), so it is instant however large the
 * archive is. A worker of version 12 keeps running: it names its columns on insert (it records no
 * result, so its jobs store NULL) and reads with `SELECT *`.
 */
const V13: SqliteMigration = {
  version: 13,
  description: 'Stored results in the archive',
  statements: (p) => [`ALTER TABLE ${p}jobs_archive ADD COLUMN result TEXT NULL`],
};

/**
 * Version 14: dedupe keys (`NewJob.dedupe`). One row per key taken with a window: the job that
 * holds it, the mode (1 throttle, 2 debounce, 3 unique), a unique key's states (bits: 1 pending,
 * 2 running, 4 finished), the window's length, start and end (NULL for unique), in epoch ms. A
 * new table: workers of version 13 never read or write it.
 */
const V14: SqliteMigration = {
  version: 14,
  description: 'Dedupe keys',
  statements: (p) => [
    `CREATE TABLE IF NOT EXISTS ${p}dedupe_keys (
      key                TEXT    NOT NULL PRIMARY KEY,
      job_id             TEXT    NOT NULL,
      mode               INTEGER NOT NULL,
      states             INTEGER NOT NULL,
      window_ms          INTEGER NOT NULL,
      window_started_utc INTEGER NOT NULL,
      window_ends_utc    INTEGER NULL
    ) STRICT`,
    // Serves getJob's "which key does this job hold".
    `CREATE INDEX IF NOT EXISTS ${p}dedupe_keys_job_ix ON ${p}dedupe_keys (job_id)`,
  ],
};

/**
 * Version 15: groups (`NewJob.group`) and per-group limits. `group_key` in every pillar (a job
 * keeps its group through every move); the queue's `group_concurrency` and group rate limit
 * (`group_rate_max` starts per `group_rate_per_ms`), and `group_cursor`, the last group a grouped
 * claim visited (the claim takes turns across the groups in key order from there). Group keys
 * compare byte for byte: TEXT columns take SQLite's default BINARY collation (memcmp of the UTF-8
 * text), so the walk's order is the keys' byte order. `job_groups` holds each group's rate window,
 * written only by grouped claims and by retention (a WITHOUT ROWID table: one B-tree keyed by
 * queue and group, read by primary key). As version 8's trace context: `ADD COLUMN` of a nullable
 * column without a default only edits the table's definition (no row is rewritten), and SQLite
 * has no `ADD COLUMN IF NOT EXISTS`, so the ledger row of this version is what keeps it from
 * running twice. The two partial indexes hold only rows that have a group, so a queue without
 * groups never writes to them. A worker of version 14 keeps running but ignores groups: upgrade
 * every worker before setting group limits.
 */
const V15: SqliteMigration = {
  version: 15,
  description: 'Groups and per-group limits',
  statements: (p) => [
    `ALTER TABLE ${p}jobs_hot ADD COLUMN group_key TEXT NULL`,
    `ALTER TABLE ${p}jobs_archive ADD COLUMN group_key TEXT NULL`,
    `ALTER TABLE ${p}jobs_dlq ADD COLUMN group_key TEXT NULL`,
    `ALTER TABLE ${p}queues ADD COLUMN group_concurrency INTEGER NULL`,
    `ALTER TABLE ${p}queues ADD COLUMN group_rate_max INTEGER NULL`,
    `ALTER TABLE ${p}queues ADD COLUMN group_rate_per_ms INTEGER NULL`,
    `ALTER TABLE ${p}queues ADD COLUMN group_cursor TEXT NULL`,
    `CREATE TABLE IF NOT EXISTS ${p}job_groups (
      queue             TEXT    NOT NULL,
      group_key         TEXT    NOT NULL,
      rate_window_start INTEGER NULL,
      rate_window_count INTEGER NULL,
      rate_window_last  INTEGER NULL,
      rate_prev_count   INTEGER NULL,
      rate_prev_last    INTEGER NULL,
      PRIMARY KEY (queue, group_key)
    ) STRICT, WITHOUT ROWID`,
    // Serves the grouped claim: its walk to the next group with Pending rows (the first key past
    // the last one, one descent per group) and, within a group, its rows in claim order.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_hot_group_pending_ix ON ${p}jobs_hot
      (queue, group_key, priority DESC, COALESCE(scheduled_at_utc, enqueued_at_utc), id)
      WHERE status = 0 AND group_key IS NOT NULL`,
    // Serves the group concurrency: the Fetched and Processing rows of one group.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_hot_group_active_ix ON ${p}jobs_hot (queue, group_key)
      WHERE status IN (1, 2) AND group_key IS NOT NULL`,
  ],
};

/**
 * Version 16: batches (`enqueueBatch`). `batch_id` in every pillar (a job keeps its batch through
 * every move), with a partial index in each that holds only rows of a batch, so a job outside any
 * batch writes no index entry for it. `batches` holds a batch's counts, kept by the moves in their
 * own transactions (the write lock held since BEGIN IMMEDIATE serialises the moves that settle one
 * batch), the callbacks fired (`fired`, a bit per kind) and when it settled. Unlike PostgreSQL's
 * schema it has no `fired_now`: a SQLite move settles a batch in code, between its statements
 * (`dueCallbacks`), so what the last update fired never has to be read back from the row.
 * `batch_callbacks` holds each callback's job, made at enqueue with its id (a WITHOUT ROWID table:
 * one B-tree keyed by batch and kind); `job_id` is unique, so a move tells a callback from a
 * member by one probe of that index. As version 15's groups: `ADD COLUMN` of a nullable column
 * without a default only edits the table's definition (no row is rewritten), and the ledger row of
 * this version is what keeps it from running twice. `jobs_hot_active_ix` is created again, last,
 * so the planner keeps counting active rows through it (see there). A worker of version 15 keeps
 * running but neither counts nor settles batches: upgrade every worker before enqueuing a batch.
 */
const V16: SqliteMigration = {
  version: 16,
  description: 'Batches and their callbacks',
  statements: (p) => [
    `ALTER TABLE ${p}jobs_hot ADD COLUMN batch_id TEXT NULL`,
    `ALTER TABLE ${p}jobs_archive ADD COLUMN batch_id TEXT NULL`,
    `ALTER TABLE ${p}jobs_dlq ADD COLUMN batch_id TEXT NULL`,
    `CREATE TABLE IF NOT EXISTS ${p}batches (
      id             TEXT    NOT NULL PRIMARY KEY,
      created_at_utc INTEGER NOT NULL,
      created_by     TEXT    NULL,
      total          INTEGER NOT NULL,
      succeeded      INTEGER NOT NULL DEFAULT 0,
      failed         INTEGER NOT NULL DEFAULT 0,
      fired          INTEGER NOT NULL DEFAULT 0,
      settled_at_utc INTEGER NULL
    ) STRICT`,
    `CREATE TABLE IF NOT EXISTS ${p}batch_callbacks (
      batch_id        TEXT    NOT NULL,
      kind            INTEGER NOT NULL,
      job_id          TEXT    NOT NULL UNIQUE,
      queue           TEXT    NOT NULL,
      type            TEXT    NOT NULL,
      payload         TEXT    NOT NULL,
      tags            TEXT    NULL,
      priority        INTEGER NOT NULL,
      created_by      TEXT    NULL,
      trace_context   TEXT    NULL,
      payload_version INTEGER NOT NULL,
      group_key       TEXT    NULL,
      PRIMARY KEY (batch_id, kind)
    ) STRICT, WITHOUT ROWID`,
    // Serves a batch's jobs in the hot table (the Deck's batch view, a cancel of a batch).
    `CREATE INDEX IF NOT EXISTS ${p}jobs_hot_batch_ix ON ${p}jobs_hot (batch_id)
      WHERE batch_id IS NOT NULL`,
    // Serves a batch's jobs in the archive: getBatchResults, one range in id order (TEXT compares
    // byte for byte), and the Deck's batch view.
    `CREATE INDEX IF NOT EXISTS ${p}jobs_archive_batch_ix ON ${p}jobs_archive (batch_id, id)
      WHERE batch_id IS NOT NULL`,
    // Serves a batch's jobs in the DLQ (the Deck's batch view).
    `CREATE INDEX IF NOT EXISTS ${p}jobs_dlq_batch_ix ON ${p}jobs_dlq (batch_id)
      WHERE batch_id IS NOT NULL`,
    // Serves retention of batches: those settled before a cutoff, oldest first.
    `CREATE INDEX IF NOT EXISTS ${p}batches_settled_ix ON ${p}batches (settled_at_utc)
      WHERE settled_at_utc IS NOT NULL`,
    `DROP INDEX IF EXISTS ${p}jobs_hot_active_ix`,
    // Serves the per-queue MaxWorkers budget of fetchNextBatch and the active counts of reads:
    // version 1's index, created again so that it is the last index of the hot table. The planner
    // estimates a row's width from the declared columns (a TEXT column counts five times an
    // INTEGER), and with `batch_id` the wider hot table makes a count of one queue's Fetched and
    // Processing rows cost the same, without statistics, through this index and through
    // `jobs_hot_queue_enqueued_ix`; on that tie SQLite takes the index created last. Through the
    // other one the count would read every row of the queue, its Pending backlog included. The
    // index holds only the rows workers run, so it is rebuilt at once.
    `CREATE INDEX ${p}jobs_hot_active_ix ON ${p}jobs_hot (queue) WHERE status IN (1, 2)`,
  ],
};

/**
 * The columns of `jobs_hot` at version 16, in their order: what version 17 copies when it rebuilds
 * the table.
 */
const HOT_COLUMNS_BEFORE_V17 = [
  'id',
  'queue',
  'type',
  'payload',
  'tags',
  'idempotency_key',
  'priority',
  'status',
  'attempt_count',
  'worker_id',
  'lease_id',
  'heartbeat_utc',
  'scheduled_at_utc',
  'created_at_utc',
  'enqueued_at_utc',
  'started_at_utc',
  'last_updated_utc',
  'created_by',
  'last_modified_by',
  'last_error',
  'cancel_requested_utc',
  'progress',
  'progress_note',
  'trace_context',
  'payload_version',
  'held_since_utc',
  'group_key',
  'batch_id',
].join(', ');

/**
 * Version 17: job dependencies (continuations and flows), as PostgreSQL's version 20: every pillar
 * gets `waiting_on` (the dependencies a waiting job still counts; NULL for a job that never waited)
 * and `has_dependents` (0/1: some job waits or waited on this one), and `job_dependencies` holds
 * the edges, keyed by the dependency first (how a move finds the edges it settles). `needs_check`
 * marks the edges the rescue loop's check pass must look at (a dependent to cancel, a dependency
 * removed while a job was blocked on it). The rules: docs/storage.md, "Dependencies".
 *
 * Status 7, Waiting, joins the hot table's statuses, which version 1's `CHECK (status IN (0, 1,
 * 2))` refuses, and SQLite cannot alter a CHECK: the hot table is rebuilt as version 5 rebuilt the
 * metric buckets, the way SQLite documents
 * (https://www.sqlite.org/lang_altertable.html#otheralter): create `jobs_hot_next` with every
 * column of version 16 (version 1's, then those `ADD COLUMN` appended, in that order), the wider
 * check and the two new columns last, copy the rows, drop the old table, rename the new one, and
 * create every index of version 16 again with its own definition (the drop took them; no trigger
 * or view names the hot table). The hot table holds only live jobs, so the copy is short; it runs
 * inside `ensureSchema`'s `BEGIN IMMEDIATE`, so writers wait meanwhile. `jobs_hot_active_ix` is
 * created last again, as version 16 wants it (see there). The archive and the DLQ take the two
 * columns by `ADD COLUMN`, which only edits their definitions. A worker of version 16 keeps
 * running (its statements name their columns; a prepared statement is prepared again on the new
 * table) but neither copies the two columns nor settles edges: upgrade every worker before the
 * first `dependsOn`.
 */
const V17: SqliteMigration = {
  version: 17,
  description: 'Job dependencies',
  statements: (p) => [
    `DROP TABLE IF EXISTS ${p}jobs_hot_next`,
    `CREATE TABLE ${p}jobs_hot_next (
      id                   TEXT    NOT NULL PRIMARY KEY,
      queue                TEXT    NOT NULL,
      type                 TEXT    NOT NULL,
      payload              TEXT    NOT NULL,
      tags                 TEXT    NULL,
      idempotency_key      TEXT    NULL,
      priority             INTEGER NOT NULL DEFAULT 10,
      status               INTEGER NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2, 7)),
      attempt_count        INTEGER NOT NULL DEFAULT 0,
      worker_id            TEXT    NULL,
      lease_id             TEXT    NULL,
      heartbeat_utc        INTEGER NULL,
      scheduled_at_utc     INTEGER NULL,
      created_at_utc       INTEGER NOT NULL,
      enqueued_at_utc      INTEGER NOT NULL,
      started_at_utc       INTEGER NULL,
      last_updated_utc     INTEGER NOT NULL,
      created_by           TEXT    NULL,
      last_modified_by     TEXT    NULL,
      last_error           TEXT    NULL,
      cancel_requested_utc INTEGER NULL,
      progress             REAL    NULL,
      progress_note        TEXT    NULL,
      trace_context        TEXT    NULL,
      payload_version      INTEGER NOT NULL DEFAULT 1,
      held_since_utc       INTEGER NULL,
      group_key            TEXT    NULL,
      batch_id             TEXT    NULL,
      waiting_on           INTEGER NULL,
      has_dependents       INTEGER NOT NULL DEFAULT 0
    ) STRICT`,
    `INSERT INTO ${p}jobs_hot_next (${HOT_COLUMNS_BEFORE_V17})
      SELECT ${HOT_COLUMNS_BEFORE_V17} FROM ${p}jobs_hot`,
    `DROP TABLE ${p}jobs_hot`,
    `ALTER TABLE ${p}jobs_hot_next RENAME TO ${p}jobs_hot`,
    // Every index of version 16 again, each as its latest version defined it (version 1's, 4's,
    // 12's, 15's and 16's): what each serves is said there.
    `CREATE INDEX ${p}jobs_hot_pending_ix
      ON ${p}jobs_hot (queue, priority DESC, COALESCE(scheduled_at_utc, enqueued_at_utc), id)
      WHERE status = 0`,
    `CREATE UNIQUE INDEX ${p}jobs_hot_idempotency_ux
      ON ${p}jobs_hot (idempotency_key) WHERE idempotency_key IS NOT NULL`,
    `CREATE INDEX ${p}jobs_hot_fetched_ix ON ${p}jobs_hot (last_updated_utc) WHERE status = 1`,
    `CREATE INDEX ${p}jobs_hot_heartbeat_ix ON ${p}jobs_hot (heartbeat_utc) WHERE status = 2`,
    `CREATE INDEX ${p}jobs_hot_enqueued_ix ON ${p}jobs_hot (enqueued_at_utc, id)`,
    `CREATE INDEX ${p}jobs_hot_queue_enqueued_ix ON ${p}jobs_hot (queue, enqueued_at_utc, id)`,
    `CREATE INDEX ${p}jobs_hot_held_ix ON ${p}jobs_hot (queue, held_since_utc)
      WHERE status = 0 AND held_since_utc IS NOT NULL`,
    `CREATE INDEX ${p}jobs_hot_group_pending_ix ON ${p}jobs_hot
      (queue, group_key, priority DESC, COALESCE(scheduled_at_utc, enqueued_at_utc), id)
      WHERE status = 0 AND group_key IS NOT NULL`,
    `CREATE INDEX ${p}jobs_hot_group_active_ix ON ${p}jobs_hot (queue, group_key)
      WHERE status IN (1, 2) AND group_key IS NOT NULL`,
    `CREATE INDEX ${p}jobs_hot_batch_ix ON ${p}jobs_hot (batch_id)
      WHERE batch_id IS NOT NULL`,
    // Serves the counts of waiting jobs per queue (`getQueueStats`, `getSummary`).
    `CREATE INDEX ${p}jobs_hot_waiting_ix ON ${p}jobs_hot (queue, enqueued_at_utc)
      WHERE status = 7`,
    // Last, as version 16 made it: see there.
    `CREATE INDEX ${p}jobs_hot_active_ix ON ${p}jobs_hot (queue) WHERE status IN (1, 2)`,
    ...['jobs_archive', 'jobs_dlq'].flatMap((t) => [
      `ALTER TABLE ${p}${t} ADD COLUMN waiting_on INTEGER NULL`,
      `ALTER TABLE ${p}${t} ADD COLUMN has_dependents INTEGER NOT NULL DEFAULT 0`,
    ]),
    `CREATE TABLE IF NOT EXISTS ${p}job_dependencies (
      depends_on     TEXT    NOT NULL,
      job_id         TEXT    NOT NULL,
      on_failure     INTEGER NOT NULL,
      state          INTEGER NOT NULL,
      needs_check    INTEGER NOT NULL,
      created_at_utc INTEGER NOT NULL,
      settled_at_utc INTEGER NULL,
      PRIMARY KEY (depends_on, job_id)
    ) STRICT, WITHOUT ROWID`,
    // Serves a job's own dependencies (its page, a purge of the dependent).
    `CREATE INDEX IF NOT EXISTS ${p}job_dependencies_job_ix ON ${p}job_dependencies (job_id)`,
    // Serves the check pass: the edges it must look at, oldest first.
    `CREATE INDEX IF NOT EXISTS ${p}job_dependencies_check_ix
      ON ${p}job_dependencies (created_at_utc) WHERE needs_check = 1`,
  ],
};

/** Every migration, oldest first. Append new versions; never edit a released one. */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  V1,
  V2,
  V3,
  V4,
  V5,
  V6,
  V7,
  V8,
  V9,
  V10,
  V11,
  V12,
  V13,
  V14,
  V15,
  V16,
  V17,
];

/** The ledger table; created before any migration runs so its own existence is not a migration. */
export function schemaMigrationsDdl(prefix: string): string {
  return `CREATE TABLE IF NOT EXISTS ${prefix}schema_migrations (
    version        INTEGER NOT NULL PRIMARY KEY,
    description    TEXT    NOT NULL,
    applied_at_utc INTEGER NOT NULL
  ) STRICT`;
}

/**
 * The migrations a database whose ledger records `applied` still needs, oldest first: what
 * `ensureSchema` applies in its transaction, and what `schemaStatus` reports.
 */
export function pendingSqliteMigrations(applied: Iterable<number>): SqliteMigration[] {
  const done = new Set(applied);
  return SQLITE_MIGRATIONS.filter((migration) => !done.has(migration.version));
}

/** Each migration's statements followed by the ledger row that records it. */
function migrationStatements(prefix: string, migrations: readonly SqliteMigration[]): string[] {
  const lines: string[] = [];
  for (const migration of migrations) {
    lines.push(...migration.statements(prefix));
    lines.push(
      `INSERT INTO ${prefix}schema_migrations (version, description, applied_at_utc) ` +
        `VALUES (${migration.version}, '${migration.description.replace(/'/g, "''")}', ` +
        `${SQLITE_NOW_MS}) ON CONFLICT (version) DO NOTHING`,
    );
  }
  return lines;
}

/**
 * The complete DDL for `npx chokaq schema --dialect sqlite` (DBAs applying scripts by hand). SQLite
 * cannot add a column only where it is missing, so unlike the server dialects' scripts this one
 * is for a new database: an existing one is migrated by `ensureSchema()` at startup.
 */
export function sqliteSchemaScript(prefix: string): string {
  const lines = [
    `-- ChokaQ for NestJS: SQLite schema '${prefix}*', for a new database (run it once; ` +
      `ensureSchema() migrates an existing one)\n${schemaMigrationsDdl(prefix)}`,
    ...migrationStatements(prefix, SQLITE_MIGRATIONS),
  ];
  return `${lines.join(';\n\n')};\n`;
}

/**
 * What `ensureSchema()` runs on a database that lacks `migrations`: the ledger, then each version
 * and its ledger row, in the one `BEGIN IMMEDIATE` transaction that holds the file's write lock.
 */
export function sqliteMigrationScript(
  prefix: string,
  migrations: readonly SqliteMigration[],
): string {
  const versions = migrations.map((m) => m.version).join(', ');
  const lines = [
    `-- ChokaQ for NestJS: what ensureSchema() applies to SQLite schema '${prefix}*' ` +
      `(versions ${versions}), in one transaction\nBEGIN IMMEDIATE`,
    schemaMigrationsDdl(prefix),
    ...migrationStatements(prefix, migrations),
    'COMMIT',
  ];
  return `${lines.join(';\n\n')};\n`;
}
