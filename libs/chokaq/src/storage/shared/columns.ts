/**
 * The hot table's columns in snake_case (PostgreSQL and SQLite spell them so; SQL Server uses the
 * PascalCase of SPEC §2), in table order. The move statements copy rows column by column, so both
 * dialects build their column lists from this one.
 */
export const HOT_COLUMNS = [
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
  'group_key',
  'batch_id',
  'waiting_on',
  'has_dependents',
] as const;

/** A hot column name. */
export type HotColumn = (typeof HOT_COLUMNS)[number];

/** The hot columns that hold an instant: those named `…_utc` (SQLite stores each as epoch milliseconds). */
export const HOT_TIMESTAMPS: readonly HotColumn[] = HOT_COLUMNS.filter((c) => c.endsWith('_utc'));

/** The hot columns but `left` (in table order), e.g. the columns a move copies into a pillar. */
export function hotColumnsExcept(...left: HotColumn[]): HotColumn[] {
  return HOT_COLUMNS.filter((c) => !left.includes(c));
}
