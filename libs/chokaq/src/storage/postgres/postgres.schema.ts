/**
 * DDL and migrations of the PostgreSQL dialect (SPEC §2). `ensureSchema()` applies the missing
 * versions in one transaction under a transaction-scoped advisory lock; `npx chokaq schema
 * --dialect postgres` prints {@link postgresSchemaScript} for DBAs who apply scripts by hand.
 *
 * Column conventions: ids `varchar(36)` (UUIDv7 strings sort by creation time, so the primary key
 * grows at the end); payload `text`, not `jsonb` (jsonb rejects `\u0000` and the queue never looks
 * inside); tags one `,a,b,` string; every time `timestamptz` written from the database clock.
 */

import { MAX_ATTEMPT_ERROR } from '../../validation/limits';

/** One schema version: statements applied in order inside the bootstrap transaction. */
export interface PostgresMigration {
  version: number;
  description: string;
  statements: (s: string) => string[];
}

/**
 * Version 1: every table and index. Every statement is idempotent (`IF NOT EXISTS`) so a half-applied
 * manual script can be re-run, but under `ensureSchema` the whole version commits or rolls back.
 */
const V1: PostgresMigration = {
  version: 1,
  description: 'ChokaQ tables and indexes',
  statements: (s) => [
    // Hot table: only statuses 0–2 (Pending, Fetched, Processing).
    `CREATE TABLE IF NOT EXISTS ${s}.jobs_hot (
      id varchar(36) PRIMARY KEY,
      queue varchar(255) NOT NULL,
      type varchar(255) NOT NULL,
      payload text NOT NULL,
      tags text NULL,
      idempotency_key varchar(255) NULL,
      priority integer NOT NULL DEFAULT 10,
      status smallint NOT NULL DEFAULT 0 CONSTRAINT ck_jobs_hot_status CHECK (status IN (0, 1, 2)),
      attempt_count integer NOT NULL DEFAULT 0,
      worker_id varchar(255) NULL,
      lease_id varchar(36) NULL,
      heartbeat_utc timestamptz NULL,
      scheduled_at_utc timestamptz NULL,
      created_at_utc timestamptz NOT NULL,
      enqueued_at_utc timestamptz NOT NULL,
      started_at_utc timestamptz NULL,
      last_updated_utc timestamptz NOT NULL,
      created_by varchar(100) NULL,
      last_modified_by varchar(100) NULL,
      last_error text NULL,
      cancel_requested_utc timestamptz NULL,
      progress double precision NULL
    )`,
    // Serves the claim (fetchNextBatch): one ordered index scan per queue inside the LATERAL,
    // `queue = $` then (priority DESC, due) exactly as the ORDER BY, with `due <= now()` checked
    // inside the index. Also serves queue health (due pending and lag). Version 2 rebuilds it
    // with `id` as the last key.
    `CREATE INDEX IF NOT EXISTS ix_jobs_hot_pending ON ${s}.jobs_hot
      (queue, priority DESC, (coalesce(scheduled_at_utc, enqueued_at_utc)))
      WHERE status = 0`,
    // Serves the MaxWorkers budget: count of Fetched + Processing rows of one queue.
    `CREATE INDEX IF NOT EXISTS ix_jobs_hot_active ON ${s}.jobs_hot (queue) WHERE status IN (1, 2)`,
    // Serves enqueue: at most one hot job per idempotency key (ON CONFLICT DO NOTHING relies on it).
    `CREATE UNIQUE INDEX IF NOT EXISTS ux_jobs_hot_idempotency_key ON ${s}.jobs_hot (idempotency_key)
      WHERE idempotency_key IS NOT NULL`,
    // Serves recoverAbandoned (Fetched rows untouched for too long, oldest first).
    `CREATE INDEX IF NOT EXISTS ix_jobs_hot_fetched ON ${s}.jobs_hot (last_updated_utc) WHERE status = 1`,
    // Serves archiveZombies (Processing rows with an old heartbeat, oldest first).
    `CREATE INDEX IF NOT EXISTS ix_jobs_hot_processing ON ${s}.jobs_hot (heartbeat_utc) WHERE status = 2`,

    // Archive: succeeded jobs.
    `CREATE TABLE IF NOT EXISTS ${s}.jobs_archive (
      id varchar(36) PRIMARY KEY,
      queue varchar(255) NOT NULL,
      type varchar(255) NOT NULL,
      payload text NOT NULL,
      tags text NULL,
      idempotency_key varchar(255) NULL,
      priority integer NOT NULL,
      attempt_count integer NOT NULL,
      worker_id varchar(255) NULL,
      lease_id varchar(36) NULL,
      scheduled_at_utc timestamptz NULL,
      created_at_utc timestamptz NOT NULL,
      enqueued_at_utc timestamptz NOT NULL,
      started_at_utc timestamptz NULL,
      last_updated_utc timestamptz NULL,
      created_by varchar(100) NULL,
      last_modified_by varchar(100) NULL,
      last_error text NULL,
      progress double precision NULL,
      finished_at_utc timestamptz NOT NULL,
      duration_ms bigint NULL
    )`,
    // Serves archive pages by date and retention (finished before a cutoff, oldest first).
    // Version 5 rebuilds this index and the next five with `id` as the last key.
    `CREATE INDEX IF NOT EXISTS ix_jobs_archive_finished ON ${s}.jobs_archive (finished_at_utc)`,
    // Serves archive pages filtered by queue, newest first.
    `CREATE INDEX IF NOT EXISTS ix_jobs_archive_queue ON ${s}.jobs_archive (queue, finished_at_utc)`,

    // DLQ: failed, cancelled and zombie jobs.
    `CREATE TABLE IF NOT EXISTS ${s}.jobs_dlq (
      id varchar(36) PRIMARY KEY,
      queue varchar(255) NOT NULL,
      type varchar(255) NOT NULL,
      payload text NOT NULL,
      tags text NULL,
      idempotency_key varchar(255) NULL,
      priority integer NOT NULL,
      status smallint NOT NULL CONSTRAINT ck_jobs_dlq_status CHECK (status IN (4, 5, 6)),
      attempt_count integer NOT NULL,
      worker_id varchar(255) NULL,
      lease_id varchar(36) NULL,
      heartbeat_utc timestamptz NULL,
      scheduled_at_utc timestamptz NULL,
      created_at_utc timestamptz NOT NULL,
      enqueued_at_utc timestamptz NOT NULL,
      started_at_utc timestamptz NULL,
      last_updated_utc timestamptz NULL,
      created_by varchar(100) NULL,
      last_modified_by varchar(100) NULL,
      last_error text NULL,
      cancel_requested_utc timestamptz NULL,
      progress double precision NULL,
      failure_reason smallint NOT NULL,
      error_details text NULL,
      failed_at_utc timestamptz NOT NULL
    )`,
    // Serves DLQ pages by date, retention, bulk actions (oldest failure first) and top errors.
    `CREATE INDEX IF NOT EXISTS ix_jobs_dlq_failed ON ${s}.jobs_dlq (failed_at_utc)`,
    // Serves DLQ pages and bulk actions filtered by queue.
    `CREATE INDEX IF NOT EXISTS ix_jobs_dlq_queue ON ${s}.jobs_dlq (queue, failed_at_utc)`,
    // Serves DLQ pages, bulk actions and top errors filtered by failure reason.
    `CREATE INDEX IF NOT EXISTS ix_jobs_dlq_reason ON ${s}.jobs_dlq (failure_reason, failed_at_utc)`,
    // Serves DLQ pages and bulk actions filtered by job type.
    `CREATE INDEX IF NOT EXISTS ix_jobs_dlq_type ON ${s}.jobs_dlq (type, failed_at_utc)`,

    // Lifetime counters per queue, never decremented.
    `CREATE TABLE IF NOT EXISTS ${s}.stats_summary (
      queue varchar(255) PRIMARY KEY,
      succeeded_total bigint NOT NULL DEFAULT 0,
      failed_total bigint NOT NULL DEFAULT 0,
      cancelled_total bigint NOT NULL DEFAULT 0,
      retried_total bigint NOT NULL DEFAULT 0,
      resurrected_total bigint NOT NULL DEFAULT 0,
      last_activity_utc timestamptz NULL
    )`,

    // One-second completion buckets. The primary key (bucket_utc first) serves the throughput
    // window and retention by age.
    `CREATE TABLE IF NOT EXISTS ${s}.metric_buckets (
      bucket_utc timestamptz NOT NULL,
      queue varchar(255) NOT NULL,
      outcome smallint NOT NULL,
      failure_reason smallint NOT NULL DEFAULT -1,
      completed_count bigint NOT NULL DEFAULT 0,
      duration_count bigint NOT NULL DEFAULT 0,
      total_duration_ms bigint NOT NULL DEFAULT 0,
      max_duration_ms bigint NOT NULL DEFAULT 0,
      CONSTRAINT pk_metric_buckets PRIMARY KEY (bucket_utc, queue, outcome, failure_reason)
    )`,

    // Runtime controls per queue.
    `CREATE TABLE IF NOT EXISTS ${s}.queues (
      name varchar(255) PRIMARY KEY,
      is_paused boolean NOT NULL DEFAULT false,
      is_active boolean NOT NULL DEFAULT true,
      max_workers integer NULL,
      zombie_timeout_seconds integer NULL,
      execution_timeout_ms integer NULL,
      retry_zombies boolean NOT NULL DEFAULT false,
      last_updated_utc timestamptz NOT NULL DEFAULT now()
    )`,

    // Recurring definitions: the durable record that makes "each slot once" true.
    `CREATE TABLE IF NOT EXISTS ${s}.recurring_jobs (
      name varchar(255) PRIMARY KEY,
      cron varchar(255) NOT NULL,
      time_zone varchar(100) NOT NULL,
      queue varchar(255) NOT NULL,
      type varchar(255) NOT NULL,
      payload text NOT NULL,
      last_slot_utc timestamptz NULL,
      next_slot_utc timestamptz NOT NULL,
      misfire_policy varchar(10) NOT NULL CONSTRAINT ck_recurring_misfire CHECK (misfire_policy IN ('skip', 'none')),
      is_paused boolean NOT NULL DEFAULT false
    )`,
  ],
};

/**
 * Version 2: the claim's index gets `id` as its last key, so jobs of equal priority and due time
 * are claimed in id order by an ordered index scan. Ids of one producer increase (UUIDv7 with a
 * counter), so that is first in, first out; before, a B-tree ordered such ties by heap position,
 * which changes as rows move. `COLLATE "C"` makes the order the ids' byte order whatever the
 * database's collation. Rebuilt inside the migration's transaction, so writers to `jobs_hot` wait
 * while it builds (the hot table holds only live jobs). Dropped and created again by name, so a
 * re-run of the printed script rebuilds it once more and changes nothing else.
 */
const V2: PostgresMigration = {
  version: 2,
  description: 'Claim index breaks ties by id (first in, first out)',
  statements: (s) => [
    `DROP INDEX IF EXISTS ${s}.ix_jobs_hot_pending`,
    // Serves the claim as in version 1, ties of priority and due time now in id order.
    `CREATE INDEX ix_jobs_hot_pending ON ${s}.jobs_hot
      (queue, priority DESC, (coalesce(scheduled_at_utc, enqueued_at_utc)), id COLLATE "C")
      WHERE status = 0`,
  ],
};

/**
 * Version 3: recurring jobs you can operate. `source` says whether a definition comes from a
 * `@RecurringJob` (re-asserted at each start) or from `ChokaQAdmin.upsertRecurringJob` (kept until
 * removed); `last_job_id` is the job the last claimed slot or trigger enqueued. Rows of earlier
 * versions came from decorators, hence the default. A constant default makes `ADD COLUMN` a
 * catalog-only change (no table rewrite, PostgreSQL 11+), and a worker of version 2 still runs:
 * it names its columns on insert and reads with `SELECT *`.
 */
const V3: PostgresMigration = {
  version: 3,
  description: 'Recurring jobs: source and last job id',
  statements: (s) => [
    `ALTER TABLE ${s}.recurring_jobs ADD COLUMN IF NOT EXISTS source varchar(10) NOT NULL DEFAULT 'decorator'
      CONSTRAINT ck_recurring_source CHECK (source IN ('decorator', 'runtime'))`,
    `ALTER TABLE ${s}.recurring_jobs ADD COLUMN IF NOT EXISTS last_job_id varchar(36) NULL`,
  ],
};

/**
 * Version 4: the Workers table (one row per worker process, upserted with its heartbeat) and the
 * progress note (`ctx.reportProgress(percent, note)`) beside the percentage in every pillar.
 *
 * Adding a nullable column without a default changes only the catalog (no table rewrite), but it
 * takes an ACCESS EXCLUSIVE lock on the table until the migration's transaction commits: writers
 * of the previous release wait for that instant, then carry on (their statements name their
 * columns, so a column more changes nothing for them).
 */
const V4: PostgresMigration = {
  version: 4,
  description: 'Workers table; progress note',
  statements: (s) => [
    // One row per worker process; a few dozen rows (live workers, and stopped or lost ones until
    // retention removes them), read whole by listWorkers, so the primary key is the only index.
    `CREATE TABLE IF NOT EXISTS ${s}.workers (
      worker_id varchar(255) PRIMARY KEY,
      host varchar(255) NOT NULL,
      pid integer NOT NULL,
      library_version varchar(100) NOT NULL,
      started_at_utc timestamptz NOT NULL,
      last_seen_utc timestamptz NOT NULL,
      concurrency integer NOT NULL,
      running integer NOT NULL,
      handled text NOT NULL,
      circuits text NOT NULL,
      is_draining boolean NOT NULL DEFAULT false,
      stopped_at_utc timestamptz NULL
    )`,
    `ALTER TABLE ${s}.jobs_hot ADD COLUMN IF NOT EXISTS progress_note varchar(500) NULL`,
    `ALTER TABLE ${s}.jobs_archive ADD COLUMN IF NOT EXISTS progress_note varchar(500) NULL`,
    `ALTER TABLE ${s}.jobs_dlq ADD COLUMN IF NOT EXISTS progress_note varchar(500) NULL`,
  ],
};

/**
 * Version 5: the indexes of the keyset lists (`listActive`, `listArchive`, `listDlq`). A list page
 * reads `(sort key, id)` from where its cursor points, newest or oldest first, with an equality on
 * a leading key for a queue, type or failure-reason filter; so every such index ends with
 * `id COLLATE "C"`, the tie-breaker the statements compare and order by (the ids' byte order,
 * whatever the database's collation, as the claim's). The archive and DLQ indexes of version 1
 * are rebuilt under their own names with that last key (each still serves what it served:
 * retention, bulk actions, error families, per-queue counts); the hot table and the archive's type
 * get theirs. Built inside the migration's transaction: writers to the three tables wait until
 * it commits, a time in proportion to their rows (18 s for 1,000,000 archived, 100,000 dead and
 * 100,000 active jobs on a loaded 2-core test server). Dropped and created again by name, so a
 * re-run of the printed script rebuilds them and changes nothing else.
 */
const V5: PostgresMigration = {
  version: 5,
  description: 'Keyset list indexes: (sort key, id) per pillar, by queue, type and reason',
  statements: (s) => [
    `DROP INDEX IF EXISTS ${s}.ix_jobs_hot_enqueued`,
    // Serves the active list, newest (or oldest) enqueue first.
    `CREATE INDEX ix_jobs_hot_enqueued ON ${s}.jobs_hot (enqueued_at_utc, id COLLATE "C")`,
    `DROP INDEX IF EXISTS ${s}.ix_jobs_hot_queue_enqueued`,
    // Serves the active list filtered by queue.
    `CREATE INDEX ix_jobs_hot_queue_enqueued ON ${s}.jobs_hot
      (queue, enqueued_at_utc, id COLLATE "C")`,
    `DROP INDEX IF EXISTS ${s}.ix_jobs_archive_finished`,
    // Serves the archive list, retention (finished before a cutoff, oldest first).
    `CREATE INDEX ix_jobs_archive_finished ON ${s}.jobs_archive (finished_at_utc, id COLLATE "C")`,
    `DROP INDEX IF EXISTS ${s}.ix_jobs_archive_queue`,
    // Serves the archive list by queue, archived counts per queue.
    `CREATE INDEX ix_jobs_archive_queue ON ${s}.jobs_archive
      (queue, finished_at_utc, id COLLATE "C")`,
    `DROP INDEX IF EXISTS ${s}.ix_jobs_archive_type`,
    // Serves the archive list by type.
    `CREATE INDEX ix_jobs_archive_type ON ${s}.jobs_archive (type, finished_at_utc, id COLLATE "C")`,
    `DROP INDEX IF EXISTS ${s}.ix_jobs_dlq_failed`,
    // Serves the DLQ list, retention, bulk actions (oldest failure first), error families.
    `CREATE INDEX ix_jobs_dlq_failed ON ${s}.jobs_dlq (failed_at_utc, id COLLATE "C")`,
    `DROP INDEX IF EXISTS ${s}.ix_jobs_dlq_queue`,
    // Serves the DLQ list and bulk actions by queue; DLQ counts per queue.
    `CREATE INDEX ix_jobs_dlq_queue ON ${s}.jobs_dlq (queue, failed_at_utc, id COLLATE "C")`,
    `DROP INDEX IF EXISTS ${s}.ix_jobs_dlq_reason`,
    // Serves the DLQ list, bulk actions and error families by failure reason.
    `CREATE INDEX ix_jobs_dlq_reason ON ${s}.jobs_dlq
      (failure_reason, failed_at_utc, id COLLATE "C")`,
    `DROP INDEX IF EXISTS ${s}.ix_jobs_dlq_type`,
    // Serves the DLQ list and bulk actions by type.
    `CREATE INDEX ix_jobs_dlq_type ON ${s}.jobs_dlq (type, failed_at_utc, id COLLATE "C")`,
  ],
};

/**
 * Version 6: what the dashboard reads need of `metric_buckets`. Buckets become one minute wide (a
 * property of the statements, not of the table: rows written per second before stay valid and are
 * summed into whatever step a read asks for), and they also count retries (outcome 3) and starts
 * (outcome 4), the starts with their start lag: `lag_count`, `lag_sum_ms`, `lag_max_ms`, written by
 * the statement that starts the runs. `ADD COLUMN … DEFAULT 0` (a constant) changes only the
 * catalog since PostgreSQL 11, so existing rows are not rewritten; the table is small anyway
 * (retention). Workers of version 5 keep writing their rows; the new columns stay 0 there.
 */
const V6: PostgresMigration = {
  version: 6,
  description: 'Metric buckets count retries and starts with their start lag',
  statements: (s) => [
    `ALTER TABLE ${s}.metric_buckets
      ADD COLUMN IF NOT EXISTS lag_count bigint NOT NULL DEFAULT 0,
      ADD COLUMN IF NOT EXISTS lag_sum_ms bigint NOT NULL DEFAULT 0,
      ADD COLUMN IF NOT EXISTS lag_max_ms bigint NOT NULL DEFAULT 0`,
    // Serves a throughput series of one queue and the start lag of queue health: a range of one
    // queue's buckets instead of every queue's.
    `CREATE INDEX IF NOT EXISTS ix_metric_buckets_queue ON ${s}.metric_buckets (queue, bucket_utc)`,
  ],
};

/**
 * Version 7: the audit log and the settings it needs.
 * - `audit_log`: one row per operator action (`ChokaQAdmin`'s mutations, retention runs), written
 *   in the transaction of the change it records. Its id is a UUIDv7 given before the first write,
 *   so the batches of one bulk action add to one row. Read newest first through
 *   `ix_audit_log_at (at_utc, id)`, which also serves retention; `at_utc` is stored to the
 *   millisecond, the precision of a cursor on every dialect.
 * - `settings`: named values kept in the database; today the secret that signs the confirmation
 *   tokens of bulk actions, so that every process verifies what any process issued.
 * New tables only: workers of version 6 never read or write them.
 */
const V7: PostgresMigration = {
  version: 7,
  description: 'Audit log; settings (the confirmation secret)',
  statements: (s) => [
    `CREATE TABLE IF NOT EXISTS ${s}.audit_log (
      id varchar(36) PRIMARY KEY,
      at_utc timestamptz(3) NOT NULL,
      actor varchar(100) NOT NULL,
      action varchar(50) NOT NULL,
      target varchar(4000) NULL,
      rows_affected bigint NOT NULL DEFAULT 0,
      details text NULL
    )`,
    // Serves getAuditLog (newest first from the cursor) and audit retention.
    `CREATE INDEX IF NOT EXISTS ix_audit_log_at ON ${s}.audit_log (at_utc, id COLLATE "C")`,
    `CREATE TABLE IF NOT EXISTS ${s}.settings (
      name varchar(100) PRIMARY KEY,
      value text NOT NULL
    )`,
  ],
};

/**
 * Version 8: the claim's index `ix_jobs_hot_pending` INCLUDEs `scheduled_at_utc` and
 * `enqueued_at_utc`, the two columns of its due-time key expression, so queue health (each queue's
 * due pending rows, their mean wait and the oldest) is an index-only scan of it: PostgreSQL plans
 * an index-only scan only when every column a query names is stored in the index, and an
 * expression key does not count ("this can be worked around by adding x as an included column",
 * https://www.postgresql.org/docs/15/indexes-index-only-scans.html). On 100,000 pending rows over
 * 20 queues the read no longer visits the heap (33,920 heap blocks before). The keys and their
 * order are version 2's, so the claim reads it as before; an entry is 16 bytes longer. Rebuilt
 * inside the migration's transaction: writers to `jobs_hot` wait while it builds (the hot table
 * holds only live jobs; 100,000 pending rows: 0.15 s). Dropped and created again
 * by name, so a re-run of the printed script rebuilds it and changes nothing else.
 */
const V8: PostgresMigration = {
  version: 8,
  description: 'Claim index includes the due-time columns (index-only queue health)',
  statements: (s) => [
    `DROP INDEX IF EXISTS ${s}.ix_jobs_hot_pending`,
    // Serves the claim as in version 2, and queue health by an index-only scan.
    `CREATE INDEX ix_jobs_hot_pending ON ${s}.jobs_hot
      (queue, priority DESC, (coalesce(scheduled_at_utc, enqueued_at_utc)), id COLLATE "C")
      INCLUDE (scheduled_at_utc, enqueued_at_utc)
      WHERE status = 0`,
  ],
};

/**
 * How many leading characters of an audit entry's target the target index keys (schema version
 * 9): every target but a bulk action's filter is whole in it (job ids are 36 characters, queue and
 * recurring names at most 255). Part of the index's definition: `getAuditLog` repeats the same
 * expression so the planner matches it, and changing it needs a migration that rebuilds the index.
 */
export const AUDIT_TARGET_KEY_LENGTH = 255;

/**
 * Version 9: `ix_audit_log_target`, for the audit entries of one target (a job's, in a dashboard's
 * job view), newest first. Without it such a read walks `ix_audit_log_at` from the newest entry
 * and, for a job with fewer entries than a page (nearly every job), reads the whole log, which
 * retention keeps for 90 days. The key is the target's first {@link AUDIT_TARGET_KEY_LENGTH}
 * characters, not the target: a target may be 4,000 characters (a filter's JSON) and a B-tree
 * entry "cannot exceed approximately one-third of a page (after TOAST compression)", 2,704 bytes
 * at the default 8 kB (https://www.postgresql.org/docs/current/btree-intro.html): a longer one
 * would fail the insert, and with it the audited change. `left` is immutable, so the
 * expression can key an index (https://www.postgresql.org/docs/current/indexes-expressional.html);
 * the read compares the whole target too. Built inside the migration's transaction: writers of
 * the audit log (operator actions, not the runtime) wait while it builds. A new index only:
 * workers of version 8 keep writing rows, which it indexes.
 */
const V9: PostgresMigration = {
  version: 9,
  description: 'Audit log index by target',
  statements: (s) => [
    // Serves getAuditLog by target: one target's entries newest first from the cursor.
    `CREATE INDEX IF NOT EXISTS ix_audit_log_target ON ${s}.audit_log
      ((left(target, ${AUDIT_TARGET_KEY_LENGTH})), at_utc, id COLLATE "C")`,
  ],
};

/**
 * Version 10: `trace_context`, the trace context of the enqueuing code (the JSON text of a
 * propagation carrier: W3C `traceparent`, `tracestate`; printable ASCII, at most 2,048 characters,
 * `LIMITS.traceContext`), in every pillar, so that the moves carry it and a resurrected job keeps
 * it. As version 4's progress note: a nullable column without a default changes only the catalog
 * (no table rewrite), under an ACCESS EXCLUSIVE lock held to the migration's COMMIT; writers of the
 * previous release wait for that instant, then carry on (their statements name their columns; a
 * prepared `RETURNING j.*` whose row shape changed is prepared again). A job such a writer moves
 * leaves its trace context behind, as a job it enqueues has none.
 */
const V10: PostgresMigration = {
  version: 10,
  description: 'Trace context of the enqueuing code',
  statements: (s) => [
    `ALTER TABLE ${s}.jobs_hot ADD COLUMN IF NOT EXISTS trace_context varchar(2048) NULL`,
    `ALTER TABLE ${s}.jobs_archive ADD COLUMN IF NOT EXISTS trace_context varchar(2048) NULL`,
    `ALTER TABLE ${s}.jobs_dlq ADD COLUMN IF NOT EXISTS trace_context varchar(2048) NULL`,
  ],
};

/**
 * Version 11: `job_attempts`, the history of a job's attempts that did not end in the archive
 * (retried, timed out, zombie, cancelled while running, failed), one row per such attempt, written
 * by the statement of the move that ended it (`storage/shared/attempts.ts` has the rules). The
 * successful last attempt is the archive row itself, so the claim-run-archive path writes nothing
 * here. Keyed `(job_id, seq)`: a job's rows are read, and deleted with its archive or DLQ row, as
 * one range of the primary key, which is the only index (nothing else reads the table). A new
 * table only: workers of version 10 never read or write it (their retries and failures leave no
 * rows).
 */
const V11: PostgresMigration = {
  version: 11,
  description: 'Attempt history of jobs',
  statements: (s) => [
    `CREATE TABLE IF NOT EXISTS ${s}.job_attempts (
      job_id varchar(36) NOT NULL,
      seq integer NOT NULL,
      attempt integer NOT NULL,
      worker_id varchar(255) NULL,
      lease_id varchar(36) NULL,
      started_at_utc timestamptz NULL,
      finished_at_utc timestamptz NOT NULL,
      outcome varchar(10) NOT NULL
        CONSTRAINT ck_job_attempts_outcome CHECK (outcome IN ('retried', 'timeout', 'zombie', 'cancelled', 'failed')),
      error varchar(${MAX_ATTEMPT_ERROR}) NULL,
      duration_ms bigint NULL,
      CONSTRAINT pk_job_attempts PRIMARY KEY (job_id, seq)
    )`,
  ],
};

/**
 * Version 12: a queue's start rate limit (`rate_limit_max` starts per `rate_limit_per_ms`) and the
 * state the claim keeps for it: the current window (its first and last start and how many started
 * in it) and the previous window's count and last start (see `fetchNextBatch`). Nullable columns
 * without a default, like version 10's: a catalog-only change under a short ACCESS EXCLUSIVE lock
 * on `queues`. Workers of version 11 keep running and ignore the limit (their claim does not know
 * it): upgrade every worker before relying on one.
 */
const V12: PostgresMigration = {
  version: 12,
  description: 'Queue rate limits',
  statements: (s) => [
    `ALTER TABLE ${s}.queues ADD COLUMN IF NOT EXISTS rate_limit_max integer NULL`,
    `ALTER TABLE ${s}.queues ADD COLUMN IF NOT EXISTS rate_limit_per_ms integer NULL`,
    `ALTER TABLE ${s}.queues ADD COLUMN IF NOT EXISTS rate_window_start timestamptz NULL`,
    `ALTER TABLE ${s}.queues ADD COLUMN IF NOT EXISTS rate_window_last timestamptz NULL`,
    `ALTER TABLE ${s}.queues ADD COLUMN IF NOT EXISTS rate_window_count integer NULL`,
    `ALTER TABLE ${s}.queues ADD COLUMN IF NOT EXISTS rate_prev_last timestamptz NULL`,
    `ALTER TABLE ${s}.queues ADD COLUMN IF NOT EXISTS rate_prev_count integer NULL`,
  ],
};

/**
 * Version 13: `payload_version`, the version of the job definition that enqueued the payload
 * (`defineJob(…, { version })`, 1 without one), in every pillar, so that the moves carry it and the
 * claim can filter on it. `int NOT NULL DEFAULT 1`: since PostgreSQL 11 adding a column with a
 * constant default stores the default in the catalog and rewrites no row (existing rows read 1),
 * under a short ACCESS EXCLUSIVE lock held to the migration's COMMIT. Workers of version 12 keep
 * running: their inserts take the default, and their claim does not filter on the version (upgrade
 * every worker before enqueuing a version 2).
 */
const V13: PostgresMigration = {
  version: 13,
  description: 'Payload version of each job',
  statements: (s) => [
    `ALTER TABLE ${s}.jobs_hot ADD COLUMN IF NOT EXISTS payload_version integer NOT NULL DEFAULT 1`,
    `ALTER TABLE ${s}.jobs_archive ADD COLUMN IF NOT EXISTS payload_version integer NOT NULL DEFAULT 1`,
    `ALTER TABLE ${s}.jobs_dlq ADD COLUMN IF NOT EXISTS payload_version integer NOT NULL DEFAULT 1`,
  ],
};

/**
 * Version 14: jobs an open circuit breaker holds back are told apart and counted on their own.
 * `jobs_hot.held_since_utc` is set by the release of an open circuit to when the job was first due
 * (kept when it is held again, cleared when a run of it is rescheduled), so the queue's lag counts
 * those jobs from there; `stats_summary.deferred_total` counts the releases, which `retried_total`
 * no longer does. A nullable column without a default and a constant default both change only the
 * catalog (https://www.postgresql.org/docs/15/sql-altertable.html, "Notes"). `ix_jobs_hot_held`
 * serves the health read's pass over the held rows of a queue; it holds only those rows, so it is
 * empty while every circuit is closed.
 */
const V14: PostgresMigration = {
  version: 14,
  description: 'Jobs held by an open circuit, and a deferral counter',
  statements: (s) => [
    `ALTER TABLE ${s}.jobs_hot ADD COLUMN IF NOT EXISTS held_since_utc timestamptz NULL`,
    `ALTER TABLE ${s}.stats_summary ADD COLUMN IF NOT EXISTS deferred_total bigint NOT NULL DEFAULT 0`,
    // Serves getQueueHealth's pass over the held rows of a queue (only those rows are in it).
    `CREATE INDEX IF NOT EXISTS ix_jobs_hot_held ON ${s}.jobs_hot (queue, held_since_utc)
      WHERE status = 0 AND held_since_utc IS NOT NULL`,
  ],
};

/**
 * Version 15: the active list's two indexes hold Pending rows only. A claim moves a row from
 * Pending to Processing, and PostgreSQL writes the new row version into every index whose
 * predicate it meets: these two had none, so each claimed row cost two more index entries than it
 * needs (8–10 % of the server's CPU in a drain, bench/RESULTS.md). The active list reads Pending
 * rows from them, in list order, and the Fetched and Processing rows (a few per worker slot)
 * through `ix_jobs_hot_active`, sorted (`listJobs`). Built inside the migration's transaction:
 * writers to the hot table wait until it commits, a time in proportion to its Pending rows.
 * Dropped and created again by name, so a re-run of the printed script changes nothing else.
 */
const V15: PostgresMigration = {
  version: 15,
  description: 'The active list indexes hold Pending rows only',
  statements: (s) => [
    `DROP INDEX IF EXISTS ${s}.ix_jobs_hot_enqueued`,
    // Serves the active list's Pending rows, newest (or oldest) enqueue first.
    `CREATE INDEX ix_jobs_hot_enqueued ON ${s}.jobs_hot (enqueued_at_utc, id COLLATE "C")
      WHERE status = 0`,
    `DROP INDEX IF EXISTS ${s}.ix_jobs_hot_queue_enqueued`,
    // Serves the active list's Pending rows of one queue.
    `CREATE INDEX ix_jobs_hot_queue_enqueued ON ${s}.jobs_hot
      (queue, enqueued_at_utc, id COLLATE "C") WHERE status = 0`,
  ],
};

/**
 * Version 16: stored results. The Archive's `result` holds the JSON text a handler that records
 * its result returned (`recordResult`), NULL for every other job. A nullable column without a
 * default changes only the catalog (https://www.postgresql.org/docs/15/sql-altertable.html,
 * "Notes"): no row is rewritten.
 */
const V16: PostgresMigration = {
  version: 16,
  description: 'Stored results in the Archive',
  statements: (s) => [`ALTER TABLE ${s}.jobs_archive ADD COLUMN IF NOT EXISTS result text NULL`],
};

/**
 * Version 17: dedupe keys (`NewJob.dedupe`). One row per key taken with a window: the job that
 * holds it, the mode (1 throttle, 2 debounce, 3 unique), a unique key's states (bits: 1 pending,
 * 2 running, 4 finished), the window's length, start and end (NULL for unique). A new table: no
 * existing row changes, and workers of version 16 never read or write it.
 */
const V17: PostgresMigration = {
  version: 17,
  description: 'Dedupe keys',
  statements: (s) => [
    `CREATE TABLE IF NOT EXISTS ${s}.dedupe_keys (
      key varchar(255) PRIMARY KEY,
      job_id varchar(36) NOT NULL,
      mode smallint NOT NULL,
      states smallint NOT NULL,
      window_ms bigint NOT NULL,
      window_started_utc timestamptz NOT NULL,
      window_ends_utc timestamptz NULL
    )`,
    // Serves getJob's "which key does this job hold".
    `CREATE INDEX IF NOT EXISTS ix_dedupe_keys_job ON ${s}.dedupe_keys (job_id)`,
  ],
};

/**
 * Version 18: groups (`NewJob.group`) and per-group limits. `group_key` in every pillar (a job
 * keeps its group through every move); the queue's `group_concurrency` and group rate limit
 * (`group_rate_max` per `group_rate_per_ms`), and `group_cursor`, the last group a grouped claim
 * visited (the claim takes turns across groups in key order from there). Group keys are compared
 * byte for byte (`COLLATE "C"`), so the walk's order is the keys' byte order. `job_groups` holds each
 * group's rate window, written only by grouped claims (under the queue's row lock) and by
 * retention. Nullable columns without defaults change only the catalog
 * (https://www.postgresql.org/docs/15/sql-altertable.html, "Notes"). The two partial indexes hold
 * only rows that have a group, so a queue without groups never writes to them.
 */
const V18: PostgresMigration = {
  version: 18,
  description: 'Groups and per-group limits',
  statements: (s) => [
    `ALTER TABLE ${s}.jobs_hot ADD COLUMN IF NOT EXISTS group_key varchar(255) COLLATE "C" NULL`,
    `ALTER TABLE ${s}.jobs_archive ADD COLUMN IF NOT EXISTS group_key varchar(255) COLLATE "C" NULL`,
    `ALTER TABLE ${s}.jobs_dlq ADD COLUMN IF NOT EXISTS group_key varchar(255) COLLATE "C" NULL`,
    `ALTER TABLE ${s}.queues ADD COLUMN IF NOT EXISTS group_concurrency integer NULL`,
    `ALTER TABLE ${s}.queues ADD COLUMN IF NOT EXISTS group_rate_max integer NULL`,
    `ALTER TABLE ${s}.queues ADD COLUMN IF NOT EXISTS group_rate_per_ms integer NULL`,
    `ALTER TABLE ${s}.queues ADD COLUMN IF NOT EXISTS group_cursor varchar(255) NULL`,
    `CREATE TABLE IF NOT EXISTS ${s}.job_groups (
      queue varchar(255) NOT NULL,
      group_key varchar(255) COLLATE "C" NOT NULL,
      last_started_utc timestamptz NULL,
      rate_window_start timestamptz NULL,
      rate_window_count integer NULL,
      rate_window_last timestamptz NULL,
      rate_prev_count integer NULL,
      rate_prev_last timestamptz NULL,
      PRIMARY KEY (queue, group_key)
    )`,
    // Serves the grouped claim: its walk to the next group with Pending rows (min(group_key) past
    // the last one, one descent per group) and, within a group, its rows in claim order.
    `CREATE INDEX IF NOT EXISTS ix_jobs_hot_group_pending ON ${s}.jobs_hot
      (queue, group_key, priority DESC, (coalesce(scheduled_at_utc, enqueued_at_utc)),
       id COLLATE "C")
      WHERE status = 0 AND group_key IS NOT NULL`,
    // Serves the group concurrency: the Fetched and Processing rows of one group.
    `CREATE INDEX IF NOT EXISTS ix_jobs_hot_group_active ON ${s}.jobs_hot
      (queue, group_key) WHERE status IN (1, 2) AND group_key IS NOT NULL`,
  ],
};

/**
 * Version 19: batches (`enqueueBatch`). `batch_id` in every pillar (a job keeps its batch through
 * every move), with a partial index in each that holds only rows of a batch, so a job outside any
 * batch writes no index entry for it. `batches` holds a batch's counts, kept by the moves in their
 * own statements (the row's lock serialises the moves that settle one batch), the callbacks fired
 * (`fired`, a bit per kind) and those the last update fired (`fired_now`, read by the same
 * statement's insert of the callbacks' jobs). `batch_callbacks` holds each callback's job, made at
 * enqueue with its id; `job_id` is unique, so a move tells a callback from a member by one probe.
 */
const V19: PostgresMigration = {
  version: 19,
  description: 'Batches and their callbacks',
  statements: (s) => [
    `ALTER TABLE ${s}.jobs_hot ADD COLUMN IF NOT EXISTS batch_id varchar(36) NULL`,
    `ALTER TABLE ${s}.jobs_archive ADD COLUMN IF NOT EXISTS batch_id varchar(36) NULL`,
    `ALTER TABLE ${s}.jobs_dlq ADD COLUMN IF NOT EXISTS batch_id varchar(36) NULL`,
    `CREATE TABLE IF NOT EXISTS ${s}.batches (
      id varchar(36) PRIMARY KEY,
      created_at_utc timestamptz NOT NULL,
      created_by varchar(100) NULL,
      total integer NOT NULL,
      succeeded integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      fired smallint NOT NULL DEFAULT 0,
      fired_now smallint NOT NULL DEFAULT 0,
      settled_at_utc timestamptz NULL
    )`,
    `CREATE TABLE IF NOT EXISTS ${s}.batch_callbacks (
      batch_id varchar(36) NOT NULL,
      kind smallint NOT NULL,
      job_id varchar(36) NOT NULL UNIQUE,
      queue varchar(255) NOT NULL,
      type varchar(255) NOT NULL,
      payload text NOT NULL,
      tags text NULL,
      priority integer NOT NULL,
      created_by varchar(100) NULL,
      trace_context text NULL,
      payload_version integer NOT NULL,
      group_key varchar(255) COLLATE "C" NULL,
      PRIMARY KEY (batch_id, kind)
    )`,
    // Serves a batch's hot jobs (a cancel of a batch, the Deck's batch view).
    `CREATE INDEX IF NOT EXISTS ix_jobs_hot_batch ON ${s}.jobs_hot (batch_id)
      WHERE batch_id IS NOT NULL`,
    // Serves a batch's archived jobs: getBatchResults, one range in id order (the ids' byte order,
    // `COLLATE "C"`, as its statement compares and sorts them), and the Deck's batch view.
    `CREATE INDEX IF NOT EXISTS ix_jobs_archive_batch
      ON ${s}.jobs_archive (batch_id, id COLLATE "C") WHERE batch_id IS NOT NULL`,
    // Serves retention of batches: those settled before a cutoff, oldest first.
    `CREATE INDEX IF NOT EXISTS ix_batches_settled ON ${s}.batches (settled_at_utc)
      WHERE settled_at_utc IS NOT NULL`,
    // Serves a batch's jobs in the DLQ (the Deck's batch view).
    `CREATE INDEX IF NOT EXISTS ix_jobs_dlq_batch ON ${s}.jobs_dlq (batch_id)
      WHERE batch_id IS NOT NULL`,
  ],
};

/**
 * Version 20: job dependencies (continuations and flows). Every pillar gets `waiting_on` (the
 * dependencies a waiting job still counts: its open edges, and those whose failure cancels it;
 * NULL for a job that never waited) and `has_dependents` (some job waits or waited on this one:
 * the moves look for edges only from such rows). `job_dependencies` holds the edges: its primary
 * key leads with the dependency, which is how a move finds the edges it settles; `needs_check`
 * marks the edges the check pass of the rescue loop must look at (a continuation whose
 * dependency was hot at enqueue, a dependent to cancel). The rules: docs/storage.md,
 * "Dependencies".
 */
const V20: PostgresMigration = {
  version: 20,
  description: 'Job dependencies',
  statements: (s) => [
    ...['jobs_hot', 'jobs_archive', 'jobs_dlq'].flatMap((t) => [
      `ALTER TABLE ${s}.${t} ADD COLUMN IF NOT EXISTS waiting_on integer NULL`,
      `ALTER TABLE ${s}.${t} ADD COLUMN IF NOT EXISTS has_dependents boolean NOT NULL DEFAULT false`,
    ]),
    // Status 7, Waiting, joins the hot table's statuses. The wider check holds for every row there
    // is: added NOT VALID (no scan under the table's exclusive lock), then validated under a lock
    // that lets reads and writes go on.
    `ALTER TABLE ${s}.jobs_hot DROP CONSTRAINT IF EXISTS ck_jobs_hot_status`,
    `ALTER TABLE ${s}.jobs_hot ADD CONSTRAINT ck_jobs_hot_status CHECK (status IN (0, 1, 2, 7)) NOT VALID`,
    `ALTER TABLE ${s}.jobs_hot VALIDATE CONSTRAINT ck_jobs_hot_status`,
    `CREATE TABLE IF NOT EXISTS ${s}.job_dependencies (
      depends_on varchar(36) NOT NULL,
      job_id varchar(36) NOT NULL,
      on_failure smallint NOT NULL,
      state smallint NOT NULL,
      needs_check boolean NOT NULL,
      created_at_utc timestamptz NOT NULL,
      settled_at_utc timestamptz NULL,
      PRIMARY KEY (depends_on, job_id)
    )`,
    // Serves a job's own dependencies (its page, a purge of the dependent).
    `CREATE INDEX IF NOT EXISTS ix_job_dependencies_job ON ${s}.job_dependencies (job_id)`,
    // Serves the check pass: the edges it must look at, oldest first.
    `CREATE INDEX IF NOT EXISTS ix_job_dependencies_check ON ${s}.job_dependencies (created_at_utc)
      WHERE needs_check`,
    // Serves the lists and counts of waiting jobs.
    `CREATE INDEX IF NOT EXISTS ix_jobs_hot_waiting ON ${s}.jobs_hot (queue, enqueued_at_utc)
      WHERE status = 7`,
  ],
};

/**
 * Version 21: `metric_totals`, the metric buckets of every queue summed per minute and outcome, for
 * the minutes no transaction can still write (sealed by retention's pass: `sealMetricTotals`). A
 * throughput series of all queues reads these for the sealed minutes and the buckets only for the
 * rest, so a day of 20 queues is about 7,000 rows instead of 115,000 (the admin-reads bench). The
 * seal's mark is a `settings` row (`metric_totals.sealed_to`); without one, every minute is read from
 * the buckets. A new table only: workers of version 20 never read or write it.
 */
const V21: PostgresMigration = {
  version: 21,
  description: 'Metric totals of every queue per minute',
  statements: (s) => [
    `CREATE TABLE IF NOT EXISTS ${s}.metric_totals (
      bucket_utc timestamptz NOT NULL,
      outcome smallint NOT NULL,
      completed_count bigint NOT NULL,
      duration_count bigint NOT NULL,
      total_duration_ms bigint NOT NULL,
      lag_count bigint NOT NULL,
      lag_sum_ms bigint NOT NULL,
      lag_max_ms bigint NOT NULL,
      CONSTRAINT pk_metric_totals PRIMARY KEY (bucket_utc, outcome)
    )`,
  ],
};

/**
 * Version 22: one index of the active rows, by queue and group (`ix_jobs_hot_active (queue,
 * group_key) WHERE status IN (1, 2)`), in place of the queue's (`(queue)`) and the groups'
 * (`(queue, group_key) ... AND group_key IS NOT NULL`, version 18). With both, a planner that
 * believed no row was active (statistics gathered before the workers started) counted a group's
 * running rows through the queue's index, filtering by group: every group the grouped claim
 * visits read every active row of the queue. The one index serves the queue's count (`MaxWorkers`,
 * the active list) by its first column and a group's by both, so no plan can do that; a grouped
 * claim writes one entry per started row instead of two. Workers of version 21 need neither of
 * the dropped indexes by name.
 */
const V22: PostgresMigration = {
  version: 22,
  description: 'One index of the active rows, by queue and group',
  statements: (s) => [
    `DROP INDEX IF EXISTS ${s}.ix_jobs_hot_group_active`,
    `DROP INDEX IF EXISTS ${s}.ix_jobs_hot_active`,
    // Serves the MaxWorkers budget and the active list (a queue's Fetched and Processing rows) and
    // the group concurrency (a group's).
    `CREATE INDEX ix_jobs_hot_active ON ${s}.jobs_hot (queue, group_key) WHERE status IN (1, 2)`,
  ],
};

/**
 * The columns that hold job ids: the three pillars' keys and every reference to a job. Version 23
 * gives them one collation together, so a join between two of them compares in that collation and
 * uses the other's index (a clause's collation must match an index's for the index to serve it).
 */
export const JOB_ID_COLUMNS: ReadonlyArray<readonly [table: string, column: string]> = [
  ['jobs_hot', 'id'],
  ['jobs_archive', 'id'],
  ['jobs_dlq', 'id'],
  ['job_attempts', 'job_id'],
  ['job_dependencies', 'depends_on'],
  ['job_dependencies', 'job_id'],
  ['batch_callbacks', 'job_id'],
  ['dedupe_keys', 'job_id'],
  ['recurring_jobs', 'last_job_id'],
];

/**
 * Gives one job-id column of {@link JOB_ID_COLUMNS} the byte-wise collation: version 23 on an
 * install that holds no job, and `convertKeysToBinary` (`chokaq migrate --binary-keys`) on one that
 * does. On a partitioned Archive or DLQ, the statement on the parent converts every partition.
 */
export const byteWiseJobIds = (s: string, table: string, column: string): string =>
  `ALTER TABLE ${s}.${table} ALTER COLUMN ${column} TYPE varchar(36) COLLATE "C"`;

/**
 * Version 23: job ids compared byte by byte (`COLLATE "C"`) on an install that holds no job yet.
 * On a database whose collation is a locale's (en_US.UTF-8, an ICU locale), every comparison in
 * the id indexes (the claim's and the archive's primary-key inserts and lookups, dozens per job)
 * went through the locale's collation function; on an en_US.UTF-8 database a drain's PostgreSQL
 * CPU per job fell by a quarter with byte-wise ids, and on C.UTF-8 it did not move
 * (bench/RESULTS.md, issue 26). Equality is byte equality under every deterministic collation, and
 * the claim and the keyset lists already compare ids `COLLATE "C"`; the other orders by id (a lock
 * order, a job's dependents) order lowercase ids alike under both.
 *
 * Changing a column's collation rewrites its table and indexes under an ACCESS EXCLUSIVE lock
 * (https://www.postgresql.org/docs/15/sql-altertable.html), so this version converts only when no
 * table that holds a job id has a row: a new install, or one that holds nothing yet. An install
 * with jobs keeps its collation until `chokaq migrate --binary-keys` (`convertKeysToBinary`)
 * converts it with the workers stopped. Every statement works with either, since one install's
 * job-id columns share one collation. Workers of version 22 run unchanged on either.
 */
const V23: PostgresMigration = {
  version: 23,
  description: 'Job ids compared byte by byte (an install that holds no job yet)',
  statements: (s) => {
    // Recurring definitions may exist before any job; their table is small, so it converts anyway.
    const tables = [...new Set(JOB_ID_COLUMNS.map(([table]) => table))].filter(
      (table) => table !== 'recurring_jobs',
    );
    const empty = tables
      .map((table) => `NOT EXISTS (SELECT 1 FROM ${s}.${table})`)
      .join('\n     AND ');
    const alters = JOB_ID_COLUMNS.map(
      ([table, column]) => `    ${byteWiseJobIds(s, table, column)};`,
    ).join('\n');
    return [
      `DO $chokaq$
BEGIN
  IF ${empty} THEN
${alters}
  END IF;
END
$chokaq$`,
    ];
  },
};

/** Every migration, in version order. */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
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
  V18,
  V19,
  V20,
  V21,
  V22,
  V23,
];

/** The newest schema version this code expects. */
export const POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1].version;

/** Statements that create the schema and the migration ledger (before any version is applied). */
export const bootstrapStatements = (s: string): string[] => [
  `CREATE SCHEMA IF NOT EXISTS ${s}`,
  `CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (
    version integer PRIMARY KEY,
    description varchar(255) NOT NULL,
    applied_at_utc timestamptz NOT NULL DEFAULT now()
  )`,
];

/**
 * The migrations a database whose ledger records `applied` still needs, oldest first: what
 * `ensureSchema` applies under its lock, and what `schemaStatus` reports.
 */
export function pendingPostgresMigrations(applied: Iterable<number>): PostgresMigration[] {
  const done = new Set(applied);
  return POSTGRES_MIGRATIONS.filter((migration) => !done.has(migration.version));
}

/**
 * The whole schema as one script (what `npx chokaq schema --dialect postgres` prints), wrapped in
 * a transaction with the same advisory lock `ensureSchema` uses. With `migrations`, only those
 * versions (what `ensureSchema` would apply to a database that lacks them).
 */
export function postgresSchemaScript(
  quotedSchema: string,
  schemaName: string,
  migrations: readonly PostgresMigration[] = POSTGRES_MIGRATIONS,
): string {
  const lines = [
    'BEGIN;',
    `SELECT pg_advisory_xact_lock(hashtextextended('chokaq.schema:${schemaName}', 0));`,
  ];
  for (const statement of bootstrapStatements(quotedSchema)) lines.push(`${statement};`);
  for (const migration of migrations) {
    for (const statement of migration.statements(quotedSchema)) lines.push(`${statement};`);
    lines.push(
      `INSERT INTO ${quotedSchema}.schema_migrations (version, description) VALUES (${migration.version}, '${migration.description.replace(/'/g, "''")}') ON CONFLICT (version) DO NOTHING;`,
    );
  }
  lines.push('COMMIT;');
  return lines.join('\n');
}
