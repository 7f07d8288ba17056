import type { FailureReason, JobStatus } from './job-status.enum';
import type { HotJob, JobDedupe } from './job.interface';

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
  /**
   * Archive only: the parsed return value of a handler that records its result (`@JobHandler(…,
   * { recordResult: true })`); null for a handler that does not (or that returned null or nothing)
   * and in the other pillars.
   */
  result: unknown;
  /** DLQ only. */
  failureReason: FailureReason | null;
  /** DLQ only. */
  errorDetails: string | null;
  /** DLQ only. */
  failedAtUtc: Date | null;
  /**
   * Hot only: set while an open circuit breaker holds the job back (Pending, due again at
   * `scheduledAtUtc`), to when it was first due; null otherwise (and in the views of lifecycle
   * events). The lag counts from here.
   */
  heldSinceUtc: Date | null;
  /**
   * The job's attempts that did not end in the archive, oldest first: present only when
   * `getJob` was asked for them (`{ attempts: true }`), else absent. A job that succeeded at its
   * first attempt has none (its archive row is that attempt).
   */
  attempts?: JobAttempt[];
  /**
   * The dedupe key the job holds now (`NewJob.dedupe`), or null: present in `getJob`'s answer
   * only (lists and lifecycle events leave it out). A job whose key moved to a newer holder, or
   * whose key retention removed, holds none.
   */
  dedupe?: JobDedupe | null;
}

/**
 * How an attempt that did not end in the archive ended. @publicApi
 * - `retried`: the run failed (or was stopped by its worker's shutdown) and the job went back to
 *   Pending for another attempt.
 * - `timeout`: the execution timeout fired.
 * - `zombie`: its heartbeat expired and the rescue found it (the job then went to the DLQ, or
 *   back to Pending where zombies are retried).
 * - `cancelled`: an operator cancelled it while it ran.
 * - `failed`: it failed for good (retries exhausted, a fatal error, lost heartbeats, …): the job
 *   went to the DLQ.
 */
export type JobAttemptOutcome = 'retried' | 'timeout' | 'zombie' | 'cancelled' | 'failed';

/**
 * One attempt of a job that did not end in the archive: a run that started (the job was
 * Processing) and ended otherwise, written in the transaction of the move that ended it. Times
 * are the database clock's. @publicApi
 */
export interface JobAttempt {
  /**
   * Position among the job's recorded attempts, from 1, oldest first. It keeps counting across
   * resurrects, so `(job id, seq)` names one attempt however often the job came back.
   */
  seq: number;
  /** The job's attempt number during that run (`attemptCount`; it restarts at 1 after a resurrect). */
  attempt: number;
  /** The worker that ran it: for a zombie, the worker that lost it. */
  workerId: string | null;
  /** The lease it ran under. */
  leaseId: string | null;
  /** When the run started. */
  startedAtUtc: Date | null;
  /** When the move that ended it committed (for a zombie: when the rescue found it). */
  finishedAtUtc: Date;
  outcome: JobAttemptOutcome;
  /** The error the run ended with, its first 4,000 characters (`MAX_ATTEMPT_ERROR`). */
  error: string | null;
  /** `finishedAtUtc − startedAtUtc` in ms, on the database clock. */
  durationMs: number | null;
}

/** Options of `getJob`. @publicApi */
export interface GetJobOptions {
  /** Also read the job's attempts that did not end in the archive (`JobView.attempts`). Default false. */
  attempts?: boolean;
}

/** Filter of the active (hot) list. @publicApi */
export interface ActiveFilter {
  queue?: string;
  type?: string;
  status?: JobStatus.Pending | JobStatus.Fetched | JobStatus.Processing | JobStatus.Waiting;
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
  /** Hot only: as {@link JobView.heldSinceUtc} (an open circuit holds the job back). */
  heldSinceUtc: Date | null;
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

/**
 * Where `ChokaQAdmin` reads its lists, counts and statistics: the primary, or the read replica of
 * `storage.readReplica` with how far it trails the primary in ms (`lagMs`; null when the server it
 * names is not a hot standby). @publicApi
 */
export type ReadSource = { from: 'primary' } | { from: 'replica'; lagMs: number | null };

/**
 * Lifetime counters (never decremented), the hot table's row counts, and the retained rows of the
 * archive and the DLQ. Built without counting the archive or the DLQ, so it stays cheap at any size:
 * the counters and the hot counts are exact; `archived` and `dlq` are exact or estimates as
 * {@link SummaryStats.estimated} says. For an exact figure on demand, see `countExactly`.
 * @publicApi
 */
export interface SummaryStats {
  /** Exact: lifetime counter, summed over queues. */
  succeededTotal: number;
  /** Exact: lifetime counter (every failure reason but `Cancelled`, zombies included). */
  failedTotal: number;
  /** Exact: lifetime counter. */
  cancelledTotal: number;
  /** Exact: lifetime counter (failed runs rescheduled, retried zombies). */
  retriedTotal: number;
  /**
   * Exact: lifetime counter of the jobs an open circuit breaker handed back to Pending unrun, no
   * attempt spent (each time it held one; {@link QueueStats.deferredTotal}).
   */
  deferredTotal: number;
  /** Exact: lifetime counter. */
  resurrectedTotal: number;
  /** Exact: Pending rows of the hot table. */
  pending: number;
  /** Exact: Fetched rows of the hot table. */
  fetched: number;
  /** Exact: Processing rows of the hot table. */
  processing: number;
  /** Exact: Waiting rows of the hot table (jobs waiting on their dependencies). */
  waiting: number;
  /**
   * Rows the archive retains now. SQLite: exact (a count kept in the same transaction as every
   * insert and delete). PostgreSQL: an estimate from the planner's statistics (`pg_class`), or from
   * the statistics system's live-row count while the table has never been analysed. SQL Server: an
   * estimate, the row count the server keeps per partition (`sys.partitions`).
   */
  archived: number;
  /** Rows the DLQ retains now; exact or an estimate as {@link SummaryStats.archived}. */
  dlq: number;
  /** Which of `archived` and `dlq` are estimates on this dialect (every other figure is exact). */
  estimated: { archived: boolean; dlq: boolean };
}

/**
 * Per-queue counters, hot-table counts and controls. It has no per-queue archive or DLQ count: those
 * would scan the history tables on every refresh (use `countExactly` with a queue filter). @publicApi
 */
export interface QueueStats {
  queue: string;
  /** Exact: Pending rows of the queue. */
  pending: number;
  /** Exact: Fetched rows of the queue. */
  fetched: number;
  /** Exact: Processing rows of the queue. */
  processing: number;
  /** Exact: Waiting rows of the queue (jobs waiting on their dependencies). */
  waiting: number;
  succeededTotal: number;
  failedTotal: number;
  cancelledTotal: number;
  /** Failed runs rescheduled and zombies returned to Pending (lifetime). */
  retriedTotal: number;
  /**
   * Jobs an open circuit breaker handed back to Pending unrun, no attempt spent (lifetime): one
   * job held three times counts three. Not counted in `retriedTotal`.
   */
  deferredTotal: number;
  resurrectedTotal: number;
  lastActivityUtc: Date | null;
  isPaused: boolean;
  isActive: boolean;
  maxWorkers: number | null;
}

/** What `countExactly` counts: one pillar, optionally filtered as its list is. @publicApi */
export type CountQuery =
  | { pillar: 'hot'; filter?: ActiveFilter }
  | { pillar: 'archive'; filter?: HistoryFilter }
  | { pillar: 'dlq'; filter?: DlqFilter };

/** Start lag of the runs that started recently (from metric buckets). @publicApi */
export interface StartLag {
  /** Runs started (by a claim or by `markAsProcessing`) in the window. */
  started: number;
  /** Mean time from due to start of those runs, in ms; null when none started. */
  meanMs: number | null;
  /** Longest time from due to start of those runs, in ms; null when none started. */
  maxMs: number | null;
}

/** Lag and saturation of one queue. @publicApi */
export interface QueueHealth {
  queue: string;
  /** Pending rows that are due now (live, from the hot table). */
  duePending: number;
  /**
   * Pending rows an open circuit breaker holds back: handed back unrun and not yet due again
   * (live, from the hot table). They wait as much as due rows do, so the lag counts them.
   */
  heldPending: number;
  /** When the first of the held rows is due again (the next look at its circuit); null when none. */
  heldUntilUtc: Date | null;
  /**
   * Average wait, in ms, of the due pending rows since they became due (`ScheduledAtUtc` or
   * `EnqueuedAtUtc`) and of the held rows since they were first due (`heldSinceUtc`).
   */
  avgLagMs: number;
  /** The longest of those waits, in ms (live, from the hot table). */
  maxLagMs: number;
  /** Fetched + Processing rows. */
  active: number;
  maxWorkers: number | null;
  /** active / maxWorkers, or null when unlimited. */
  saturation: number | null;
  /**
   * How long runs waited from due to start, over the current minute and the five before it (metric
   * buckets, written by the statement that starts the runs).
   */
  startLag: StartLag;
}

/**
 * Arguments of `getQueueOutcomes`. @publicApi
 */
export interface QueueOutcomesQuery {
  /**
   * How far back the window reaches: the current minute so far plus this many whole minutes before
   * it (metric buckets are one minute wide), so the window covers at least `minutes` minutes and at
   * most one more. An integer from 1 to 1,440 (a day); default 5.
   */
  minutes?: number;
}

/**
 * How the runs of one queue ended over a recent window, from metric buckets (written by the moves
 * themselves, so exact per bucket until retention removes it). Counts of runs, not of jobs: a job
 * retried twice and then succeeded counts 2 retried and 1 succeeded. @publicApi
 */
export interface QueueOutcomes {
  queue: string;
  /** The window's `minutes`, as asked (default 5). */
  minutes: number;
  /**
   * Start of the window (database clock): the start of the current minute minus `minutes`
   * minutes. The window runs from here to now.
   */
  fromUtc: Date;
  /** Runs archived as succeeded. */
  succeeded: number;
  /** Runs that ended in the DLQ for any reason but cancellation (zombies included). */
  failed: number;
  /** Jobs cancelled: moved to the DLQ as cancelled, before or while they ran. */
  cancelled: number;
  /** Retries: a failed run rescheduled, a zombie returned to Pending (not an open circuit's deferral). */
  retried: number;
}

/**
 * Completion rates from metric buckets. Buckets are one minute wide, so "the last minute" is the
 * current minute so far plus the whole previous one (60 to 120 s), and "the last five minutes" the
 * current minute plus the five before it; rates divide by exactly that span. @publicApi
 */
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

/**
 * A request for a throughput series. `from` is rounded down to its minute (the bucket size); the
 * points then start there, one per `stepMs`, the last ending at `to`. @publicApi
 */
export interface ThroughputSeriesQuery {
  /** One queue; all queues when absent. */
  queue?: string;
  /** Start of the series (inclusive). */
  from: Date;
  /** End of the series (exclusive); after `from`. */
  to: Date;
  /** Width of one point in ms: a whole number of minutes (metric buckets are one minute wide). */
  stepMs: number;
}

/** One step of a throughput series; every count is over `[at, at + stepMs)`. @publicApi */
export interface ThroughputPoint {
  /** Start of the step. */
  at: Date;
  succeeded: number;
  /** Runs that ended in the DLQ for any reason but cancellation (zombies included). */
  failed: number;
  /** Retries: a failed run rescheduled, a zombie returned to Pending (not an open circuit's deferral). */
  retried: number;
  cancelled: number;
  /** Mean run time of the succeeded and failed runs that reported one, in ms; null when none. */
  meanDurationMs: number | null;
  /** Runs started (by a claim or by `markAsProcessing`). */
  started: number;
  /** Mean time from due to start of those runs, in ms; null when none started. */
  meanStartLagMs: number | null;
  /** Longest time from due to start of those runs, in ms; null when none started. */
  maxStartLagMs: number | null;
}

/**
 * One error family of the DLQ: the messages that differ only in ids, numbers, UUIDs, hex values,
 * quoted values or timestamps. @publicApi
 */
export interface DlqErrorFamily {
  /**
   * The family: the first line of the error text with such values replaced by placeholders
   * (`<uuid>`, `<time>`, `<hex>`, `<n>`, `'…'`), at most 200 characters.
   */
  error: string;
  /** The first line of the newest error of the family, as stored (at most 200 characters). */
  sample: string;
  count: number;
  lastFailedAtUtc: Date;
}

/** What a bulk action would touch. @publicApi */
export interface BulkPreview {
  matched: number;
  willAffect: number;
  sampleIds: string[];
}
