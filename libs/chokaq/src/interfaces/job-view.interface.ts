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

/** Filter of hot-table lists. @publicApi */
export interface ActiveFilter {
  queue?: string;
  type?: string;
  status?: JobStatus.Pending | JobStatus.Fetched | JobStatus.Processing;
  /** Exact tag match. */
  tag?: string;
  /** Substring of id, type or payload; `%`, `_` and `[` are matched literally. */
  search?: string;
}

/** Filter of archive pages. @publicApi */
export interface HistoryFilter {
  queue?: string;
  type?: string;
  tag?: string;
  search?: string;
  /** Finished (archive) or failed (DLQ) at or after this instant. */
  from?: Date;
  /** Finished (archive) or failed (DLQ) before this instant. */
  to?: Date;
}

/** Filter of DLQ pages and bulk DLQ actions. @publicApi */
export interface DlqFilter extends HistoryFilter {
  reason?: FailureReason;
  /** Explicit ids (bulk actions on a selection). */
  ids?: readonly string[];
}

/** Sort keys a page may be ordered by (whitelisted; an id tie-breaker is always added). @publicApi */
export type SortKey =
  | 'createdAt'
  | 'enqueuedAt'
  | 'scheduledAt'
  | 'finishedAt'
  | 'failedAt'
  | 'priority'
  | 'queue'
  | 'type'
  | 'attempts'
  | 'duration';

/** A page request. `page` is 1-based; `pageSize` 1–1,000 (default 50). @publicApi */
export interface PageQuery<F> {
  filter?: F;
  page?: number;
  pageSize?: number;
  sortBy?: SortKey;
  sortDir?: 'asc' | 'desc';
}

/** A page of results with the total matching count. @publicApi */
export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  pageSize: number;
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
