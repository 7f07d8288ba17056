import type { FailureReason, JobStatus } from './job-status.enum';
import type { HotJob } from './job.interface';

/*
 * What the read operations of `JobStorage` return: a job in any pillar, pages and their filters,
 * and the counters and rates operators watch. Types only.
 */

/** Where a job is. @publicApi */
export type Pillar = 'hot' | 'archive' | 'dlq';

/**
 * A job in any pillar: the fields of a hot row, with any status and a nullable `lastUpdatedUtc`,
 * plus those of the archive and the DLQ. Fields that do not apply to a pillar are null. @publicApi
 */
export interface JobView extends Omit<HotJob, 'status' | 'lastUpdatedUtc'> {
  pillar: Pillar;
  status: JobStatus;
  lastUpdatedUtc: Date | null;
  /** Archive only. */
  finishedAtUtc: Date | null;
  /** Archive only. */
  durationMs: number | null;
  /** DLQ only. */
  failureReason: FailureReason | null;
  /** DLQ only. */
  errorDetails: string | null;
  /** DLQ only. */
  failedAtUtc: Date | null;
}

/** Filter of the active (hot) list. @publicApi */
export interface ActiveFilter {
  queue?: string;
  type?: string;
  status?: JobStatus.Pending | JobStatus.Fetched | JobStatus.Processing;
  /** Exact tag match. No index serves it: a list scans at most `MAX_LIST_SCAN` rows per call. */
  tag?: string;
  /**
   * Substring of id, type, payload or error text; `%`, `_` and `[` are matched literally. No
   * index serves it: a list scans at most `MAX_LIST_SCAN` rows per call (see {@link ListPage.scanLimited}).
   */
  search?: string;
  /** Enqueued (hot), finished (archive) or failed (DLQ) at or after this instant. */
  from?: Date;
  /** Enqueued (hot), finished (archive) or failed (DLQ) before this instant. */
  to?: Date;
}

/** Filter of the archive list. @publicApi */
export interface HistoryFilter {
  queue?: string;
  type?: string;
  /** Exact tag match (bounded scan, as {@link ActiveFilter.tag}). */
  tag?: string;
  /** Substring of id, type, payload or error text (bounded scan, as {@link ActiveFilter.search}). */
  search?: string;
  /** Finished (archive) or failed (DLQ) at or after this instant. */
  from?: Date;
  /** Finished (archive) or failed (DLQ) before this instant. */
  to?: Date;
}

/** Filter of the DLQ list and of bulk DLQ actions. @publicApi */
export interface DlqFilter extends HistoryFilter {
  reason?: FailureReason;
  /** Explicit ids (bulk actions on a selection). */
  ids?: readonly string[];
}

/**
 * Which end of a list comes first: `'newest'` (the default) or `'oldest'`. Each list has one sort
 * key, with the id as tie-breaker: the active list `EnqueuedAtUtc` (when the job entered the hot
 * table: its enqueue, or its resurrection), the archive `FinishedAtUtc`, the DLQ `FailedAtUtc`.
 *
 * @publicApi
 */
export type ListOrder = 'newest' | 'oldest';

/**
 * A request for one page of a list (keyset pagination). Walk a list by passing each page's
 * `nextCursor` back as `cursor` with the same `order` (and, to walk one result set, the same
 * filter); every row is returned exactly once, however deep the page, and a page costs the same
 * at any depth. @publicApi
 */
export interface ListQuery<F> {
  filter?: F;
  /** Rows per page, 1–1,000 (`MAX_PAGE_SIZE`). Default 50. */
  limit?: number;
  /**
   * Where to continue: the `nextCursor` of the previous page of the same list and order, as given
   * (an opaque string). A cursor of another list or order, or an altered one, is refused with
   * `ChokaQValidationError` at `cursor`. Omitted: the first page.
   */
  cursor?: string;
  /** Default `'newest'`. */
  order?: ListOrder;
}

/**
 * One row of a list: what an operator's table shows, without the payload or the full error text
 * (read those with `getJob`). Fields that do not apply to the job's pillar are null. @publicApi
 */
export interface JobListItem {
  id: string;
  queue: string;
  type: string;
  pillar: Pillar;
  /** Pending, Fetched or Processing (hot); Succeeded (archive); Failed, Cancelled or Zombie (DLQ). */
  status: JobStatus;
  /** DLQ only. */
  failureReason: FailureReason | null;
  attemptCount: number;
  priority: number;
  tags: string[];
  createdAtUtc: Date;
  /** When the job entered the hot table (its enqueue, or its resurrection): the active list's sort key. */
  enqueuedAtUtc: Date;
  scheduledAtUtc: Date | null;
  startedAtUtc: Date | null;
  /** Archive only: the archive's sort key. */
  finishedAtUtc: Date | null;
  /** DLQ only: the DLQ's sort key. */
  failedAtUtc: Date | null;
  /** Archive (and, on SQL Server, DLQ) runs that recorded one. */
  durationMs: number | null;
  workerId: string | null;
  progress: number | null;
  /**
   * At most the first 200 characters of the DLQ error (`errorDetails`), else of the last retry
   * error (`lastError`); null when there is none.
   */
  errorPrefix: string | null;
  /**
   * Size of the stored payload in bytes, as the database keeps it (read from the value's length
   * header, never from the payload itself): UTF-8 bytes on PostgreSQL and SQLite, UTF-16 bytes on
   * SQL Server (`nvarchar`).
   */
  payloadBytes: number;
}

/** One page of a list. @publicApi */
export interface ListPage<T = JobListItem> {
  items: T[];
  /**
   * Pass it as `cursor` to read the next page; null when the list has no more rows. Opaque: its
   * content may change between versions.
   */
  nextCursor: string | null;
  /**
   * True when the page stopped at the scan bound of a filter no index serves (`search`, `tag`):
   * one call reads at most `MAX_LIST_SCAN` rows from where it starts, newest (or oldest) first, so
   * a rare term costs the same as a common one. More matches may lie further on: `nextCursor`
   * continues the scan from where this page stopped (it is not null). The page may be short, or
   * empty, without being the last.
   */
  scanLimited: boolean;
}

/** Lifetime counters (never decremented) and current row counts. @publicApi */
export interface SummaryStats {
  succeededTotal: number;
  failedTotal: number;
  cancelledTotal: number;
  retriedTotal: number;
  resurrectedTotal: number;
  pending: number;
  fetched: number;
  processing: number;
  /**
   * Rows in the archive. On SQL Server an estimate: the row count the server keeps for the table
   * (`sys.partitions`), which equals the count on a quiet table, instead of a scan on every read.
   */
  archived: number;
  /** Rows in the DLQ; on SQL Server an estimate, as {@link SummaryStats.archived}. */
  dlq: number;
}

/** Per-queue counters, counts and controls. @publicApi */
export interface QueueStats {
  queue: string;
  pending: number;
  fetched: number;
  processing: number;
  archived: number;
  dlq: number;
  succeededTotal: number;
  failedTotal: number;
  cancelledTotal: number;
  retriedTotal: number;
  resurrectedTotal: number;
  lastActivityUtc: Date | null;
  isPaused: boolean;
  isActive: boolean;
  maxWorkers: number | null;
}

/** Lag and saturation of one queue. @publicApi */
export interface QueueHealth {
  queue: string;
  /** Pending rows that are due now. */
  duePending: number;
  /** Average wait of due pending rows, from `ScheduledAtUtc` or `EnqueuedAtUtc`, in ms. */
  avgLagMs: number;
  /** Longest wait of a due pending row, in ms. */
  maxLagMs: number;
  /** Fetched + Processing rows. */
  active: number;
  maxWorkers: number | null;
  /** active / maxWorkers, or null when unlimited. */
  saturation: number | null;
}

/** Completion rates from metric buckets. @publicApi */
export interface ThroughputStats {
  /** Completions (succeeded + failed + cancelled) per second over the last minute. */
  perSecond1m: number;
  /** … over the last five minutes. */
  perSecond5m: number;
  succeeded1m: number;
  failed1m: number;
  succeeded5m: number;
  failed5m: number;
}

/** One error family of the DLQ. @publicApi */
export interface DlqErrorFamily {
  /** The first line of the error text (at most 200 chars). */
  error: string;
  count: number;
  lastFailedAtUtc: Date;
}

/** What a bulk action would touch. @publicApi */
export interface BulkPreview {
  matched: number;
  willAffect: number;
  sampleIds: string[];
}
