import { decodeTags } from '../../common/tags';
import type { AuditAction, AuditEntry } from '../../interfaces/audit.interface';
import { FailureReason, JobStatus } from '../../interfaces/job-status.enum';
import { JobListItem, JobView, Pillar, QueueOutcomes } from '../../interfaces/job-view.interface';
import { HandledJobs, HotJob, QueueInfo, RateLimit } from '../../interfaces/job.interface';
import type { CircuitState, WorkerInfo, WorkerState } from '../../interfaces/worker.interface';

/**
 * Rows come back as `scheduled_at_utc` (PostgreSQL, SQLite) or `ScheduledAtUtc` (SQL Server).
 * Both fold to `scheduledatutc`, so one mapper serves every dialect.
 */
type Row = Record<string, unknown>;

/** Folded column names, memoised: every row of a table repeats the same keys. */
const folded = new Map<string, string>();

export function fold(row: Row): Row {
  const out: Row = {};
  for (const key in row) {
    let name = folded.get(key);
    if (name === undefined) {
      name = key.replace(/_/g, '').toLowerCase();
      // Column names are a small fixed set; the bound only guards against unexpected input.
      if (folded.size < 1_000) folded.set(key, name);
    }
    out[name] = row[key];
  }
  return out;
}

/** Dates arrive as `Date` (pg, mssql), epoch milliseconds (SQLite) or strings. */
export function toDate(value: unknown): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  if (typeof value === 'number') return new Date(value);
  if (typeof value === 'bigint') return new Date(Number(value));
  if (typeof value === 'string')
    return /^\d+$/.test(value) ? new Date(Number(value)) : new Date(value);
  throw new TypeError(`Cannot read a date from ${typeof value}`);
}

function num(value: unknown): number {
  return typeof value === 'number' ? value : Number(value);
}

/** A nullable number column: its number, or null. */
export function numOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : num(value);
}

/** A nullable text column: its text, or null. */
export function str(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

export function bool(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't' || value === 'true';
}

/** A nullable JSON text column (a payload, a result): its parsed value, or null. */
export function parsePayload(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  return JSON.parse(String(value));
}

/**
 * A stored trace context (JSON text of a propagation carrier) as the carrier, or null: null too
 * for text that is not an object of strings (a hand-edited row), which must not fail a claim.
 */
export function parseTraceContext(value: unknown): Record<string, string> | null {
  if (value === null || value === undefined) return null;
  try {
    const parsed = JSON.parse(String(value)) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
    const entries = Object.entries(parsed as Record<string, unknown>);
    return entries.every(([, v]) => typeof v === 'string')
      ? (parsed as Record<string, string>)
      : null;
  } catch {
    return null;
  }
}

/** A stored group key as a job's group: the shared group `''` of a grouped queue's jobs without one reads as none. */
function groupOf(value: unknown): string | null {
  return value === null || value === undefined || value === '' ? null : String(value);
}

/** Maps a hot-table row. */
export function mapHotRow(raw: Row): HotJob {
  const r = fold(raw);
  return {
    id: String(r.id),
    queue: String(r.queue),
    type: String(r.type),
    payload: parsePayload(r.payload),
    tags: decodeTags(str(r.tags)),
    idempotencyKey: str(r.idempotencykey),
    group: groupOf(r.groupkey),
    priority: num(r.priority),
    status: num(r.status) as HotJob['status'],
    attemptCount: num(r.attemptcount),
    workerId: str(r.workerid),
    leaseId: str(r.leaseid),
    heartbeatUtc: toDate(r.heartbeatutc),
    scheduledAtUtc: toDate(r.scheduledatutc),
    createdAtUtc: toDate(r.createdatutc)!,
    enqueuedAtUtc: toDate(r.enqueuedatutc)!,
    startedAtUtc: toDate(r.startedatutc),
    lastUpdatedUtc: toDate(r.lastupdatedutc)!,
    createdBy: str(r.createdby),
    lastModifiedBy: str(r.lastmodifiedby),
    lastError: str(r.lasterror),
    cancelRequestedUtc: toDate(r.cancelrequestedutc),
    progress: numOrNull(r.progress),
    progressNote: str(r.progressnote),
    traceContext: parseTraceContext(r.tracecontext),
    payloadVersion: r.payloadversion == null ? 1 : num(r.payloadversion),
    batchId: str(r.batchid),
    waitingOn: numOrNull(r.waitingon),
  };
}

/** An instant as epoch milliseconds (a number, a bigint, or digits as text), or null. */
function epochDate(value: unknown): Date | null {
  return value === null || value === undefined ? null : new Date(Number(value));
}

/**
 * Maps a claimed hot row, the claim's hot path: its keys are the snake_case column names and each
 * timestamp is epoch milliseconds, as SQLite stores them and as PostgreSQL's claim returns them. So
 * no key is folded and no date text parsed ({@link mapHotRow} reads any other row).
 */
export function mapClaimedRow(r: Row): HotJob {
  return {
    id: String(r.id),
    queue: String(r.queue),
    type: String(r.type),
    payload: parsePayload(r.payload),
    tags: decodeTags(str(r.tags)),
    idempotencyKey: str(r.idempotency_key),
    group: groupOf(r.group_key),
    priority: num(r.priority),
    status: num(r.status) as HotJob['status'],
    attemptCount: num(r.attempt_count),
    workerId: str(r.worker_id),
    leaseId: str(r.lease_id),
    heartbeatUtc: epochDate(r.heartbeat_utc),
    scheduledAtUtc: epochDate(r.scheduled_at_utc),
    createdAtUtc: epochDate(r.created_at_utc)!,
    enqueuedAtUtc: epochDate(r.enqueued_at_utc)!,
    startedAtUtc: epochDate(r.started_at_utc),
    lastUpdatedUtc: epochDate(r.last_updated_utc)!,
    createdBy: str(r.created_by),
    lastModifiedBy: str(r.last_modified_by),
    lastError: str(r.last_error),
    cancelRequestedUtc: epochDate(r.cancel_requested_utc),
    progress: numOrNull(r.progress),
    progressNote: str(r.progress_note),
    traceContext: parseTraceContext(r.trace_context),
    payloadVersion: r.payload_version === undefined ? 1 : num(r.payload_version),
    batchId: str(r.batch_id),
    waitingOn: numOrNull(r.waiting_on),
  };
}

/**
 * Maps a row of any pillar. Archive rows have status Succeeded; DLQ rows take their status from
 * the stored `Status` column (Failed, Cancelled or Zombie).
 */
export function mapJobView(raw: Row, pillar: Pillar): JobView {
  const r = fold(raw);
  const status = pillar === 'archive' ? JobStatus.Succeeded : (num(r.status) as JobStatus);
  return {
    pillar,
    id: String(r.id),
    queue: String(r.queue),
    type: String(r.type),
    payload: parsePayload(r.payload),
    tags: decodeTags(str(r.tags)),
    idempotencyKey: str(r.idempotencykey),
    group: groupOf(r.groupkey),
    priority: num(r.priority),
    status,
    attemptCount: num(r.attemptcount),
    workerId: str(r.workerid),
    leaseId: str(r.leaseid),
    heartbeatUtc: toDate(r.heartbeatutc),
    scheduledAtUtc: toDate(r.scheduledatutc),
    createdAtUtc: toDate(r.createdatutc)!,
    enqueuedAtUtc: toDate(r.enqueuedatutc)!,
    startedAtUtc: toDate(r.startedatutc),
    lastUpdatedUtc: toDate(r.lastupdatedutc),
    createdBy: str(r.createdby),
    lastModifiedBy: str(r.lastmodifiedby),
    lastError: str(r.lasterror),
    cancelRequestedUtc: toDate(r.cancelrequestedutc),
    progress: numOrNull(r.progress),
    progressNote: str(r.progressnote),
    traceContext: parseTraceContext(r.tracecontext),
    payloadVersion: r.payloadversion == null ? 1 : num(r.payloadversion),
    batchId: str(r.batchid),
    waitingOn: numOrNull(r.waitingon),
    finishedAtUtc: toDate(r.finishedatutc),
    durationMs: numOrNull(r.durationms),
    result: pillar === 'archive' ? parsePayload(r.result) : null,
    failureReason: numOrNull(r.failurereason) as FailureReason | null,
    errorDetails: str(r.errordetails),
    failedAtUtc: toDate(r.failedatutc),
    heldSinceUtc: pillar === 'hot' ? toDate(r.heldsinceutc) : null,
  };
}

/** The error prefix a list item carries: at most 200 UTF-16 units, never half a surrogate pair. */
function errorPrefix(value: unknown): string | null {
  const text = str(value);
  // The SQL cut counts characters (code points) on PostgreSQL and SQLite: up to 400 units here.
  if (text === null || text.length <= 200) return text;
  const cut = text.slice(0, 200);
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** The sort key of the item's list, to continue after it. */
const LIST_KEY = { hot: 'enqueuedAtUtc', archive: 'finishedAtUtc', dlq: 'failedAtUtc' } as const;

/**
 * Maps a row of a list statement: the item (no payload, no full error text), the text of its sort
 * key for the next cursor, and, for a bounded scan, its rank in the scan and whether it matched.
 *
 * The sort key comes from a `sort_at` column when the statement has one: PostgreSQL stores
 * microseconds, which a `Date` would cut to milliseconds, so it selects the key as text (a number
 * is epoch milliseconds). Otherwise it is the item's own date, exact where the database keeps
 * milliseconds (SQLite, SQL Server).
 */
export function mapListRow(
  raw: Row,
  pillar: Pillar,
): { item: JobListItem; sortAt: string; rn: number | null; hit: boolean } {
  const r = fold(raw);
  const item: JobListItem = {
    id: String(r.id),
    queue: String(r.queue),
    type: String(r.type),
    pillar,
    status: pillar === 'archive' ? JobStatus.Succeeded : (num(r.status) as JobStatus),
    failureReason: numOrNull(r.failurereason) as FailureReason | null,
    attemptCount: num(r.attemptcount),
    priority: num(r.priority),
    tags: decodeTags(str(r.tags)),
    createdAtUtc: toDate(r.createdatutc)!,
    enqueuedAtUtc: toDate(r.enqueuedatutc)!,
    scheduledAtUtc: toDate(r.scheduledatutc),
    startedAtUtc: toDate(r.startedatutc),
    finishedAtUtc: toDate(r.finishedatutc),
    failedAtUtc: toDate(r.failedatutc),
    durationMs: numOrNull(r.durationms),
    workerId: str(r.workerid),
    progress: numOrNull(r.progress),
    heldSinceUtc: toDate(r.heldsinceutc),
    errorPrefix: errorPrefix(r.errorprefix),
    payloadBytes: num(r.payloadbytes),
  };
  const sortAt =
    typeof r.sortat === 'string'
      ? r.sortat
      : (toDate(r.sortat) ?? item[LIST_KEY[pillar]]!).toISOString();
  return { item, sortAt, rn: numOrNull(r.rn), hit: bool(r.hit) };
}

/** A rate limit from its two columns, or null when either is unset. */
function rateLimitOf(max: unknown, perMs: unknown): RateLimit | null {
  return max == null || perMs == null ? null : { max: Number(max), perMs: Number(perMs) };
}

/** Maps a `Queues` row. */
export function mapQueueRow(raw: Row): QueueInfo {
  const r = fold(raw);
  return {
    name: String(r.name),
    isPaused: bool(r.ispaused),
    isActive: bool(r.isactive),
    maxWorkers: numOrNull(r.maxworkers),
    zombieTimeoutSeconds: numOrNull(r.zombietimeoutseconds),
    executionTimeoutMs: numOrNull(r.executiontimeoutms),
    retryZombies: bool(r.retryzombies),
    rateLimit: rateLimitOf(r.ratelimitmax, r.ratelimitperms),
    groupConcurrency: numOrNull(r.groupconcurrency),
    groupRateLimit: rateLimitOf(r.groupratemax, r.grouprateperms),
    lastUpdatedUtc: toDate(r.lastupdatedutc)!,
  };
}

/**
 * The state of a Workers row: a recorded stop wins, then `lost` (not seen within the threshold,
 * which the read computed with the database clock as `IsLost`), then the draining flag.
 */
function workerState(stopped: boolean, lost: boolean, draining: boolean): WorkerState {
  if (stopped) return 'stopped';
  if (lost) return 'lost';
  return draining ? 'draining' : 'running';
}

/** Maps a row of the Workers table read with its `is_lost` flag. */
export function mapWorkerRow(raw: Row): WorkerInfo {
  const r = fold(raw);
  const handled = JSON.parse(String(r.handled)) as HandledJobs;
  const stoppedAtUtc = toDate(r.stoppedatutc);
  const draining = bool(r.isdraining);
  return {
    workerId: String(r.workerid),
    host: String(r.host),
    pid: num(r.pid),
    libraryVersion: String(r.libraryversion),
    startedAtUtc: toDate(r.startedatutc)!,
    lastSeenUtc: toDate(r.lastseenutc)!,
    stoppedAtUtc,
    concurrency: num(r.concurrency),
    running: num(r.running),
    handled: { queues: handled.queues ?? [], types: handled.types ?? [] },
    circuits: JSON.parse(String(r.circuits)) as Record<string, CircuitState>,
    draining,
    state: workerState(stoppedAtUtc !== null, bool(r.islost), draining),
  };
}

/** A row of the audit log; its `at_utc` also as the ISO text a cursor carries (milliseconds). */
export function mapAuditRow(raw: Row): AuditEntry {
  const r = fold(raw);
  const details = str(r.details);
  return {
    id: String(r.id),
    atUtc: toDate(r.atutc)!,
    actor: String(r.actor),
    action: String(r.action) as AuditAction,
    target: str(r.target),
    rowsAffected: num(r.rowsaffected),
    details: details === null ? null : (JSON.parse(details) as Record<string, unknown>),
  };
}

/**
 * A row of `getQueueOutcomes`: the queue, the window's start and the sums per outcome (numeric
 * text on PostgreSQL, whose `sum(bigint)` is numeric), for the window of `minutes`.
 */
export function mapOutcomesRow(raw: Row, minutes: number): QueueOutcomes {
  const r = fold(raw);
  return {
    queue: String(r.queue),
    minutes,
    fromUtc: toDate(r.fromutc)!,
    succeeded: num(r.succeeded),
    failed: num(r.failed),
    cancelled: num(r.cancelled),
    retried: num(r.retried),
  };
}
