import { dlqStatusFor } from '../common/dlq-status';
import type { JobEvent, JobEventName } from '../interfaces/job-event.interface';
import type { JobOutcome } from '../interfaces/job-outcome.interface';
import { FailureReason, JobStatus } from '../interfaces/job-status.enum';
import type { JobView, Pillar } from '../interfaces/job-view.interface';
import type { HotJob, RescuedZombie } from '../interfaces/job.interface';
import type { JobEventSink } from './job-events';

/*
 * What the worker tells `JobEvents`: pure functions from a claimed row and what happened to it to
 * the lifecycle events of `job-event.interface.ts`. The processor calls them only after the move
 * they describe committed (an outcome with `applied: true`, a start the storage confirmed), and the
 * rescue loop only after its sweep returned.
 */

type ViewPatch = Partial<JobView>;

/** The claimed row as a {@link JobView} of `pillar`, with the fields of the move applied. */
export function eventView(job: HotJob, pillar: Pillar, patch: ViewPatch = {}): JobView {
  return {
    ...job,
    tags: [...job.tags],
    pillar,
    finishedAtUtc: null,
    durationMs: null,
    // An event carries no stored result: `getJob` reads it from the archive row.
    result: null,
    failureReason: null,
    errorDetails: null,
    failedAtUtc: null,
    // A claimed row does not carry it: an event says what happened, `getJob` what holds the job.
    heldSinceUtc: null,
    ...patch,
  };
}

function event(
  name: JobEventName,
  job: JobView,
  attempt: number,
  extra: Partial<JobEvent> = {},
): JobEvent {
  const result: JobEvent = { name, job, pillar: job.pillar, attempt, at: new Date() };
  for (const [key, value] of Object.entries(extra)) {
    if (value !== undefined) (result as unknown as Record<string, unknown>)[key] = value;
  }
  return Object.freeze(result);
}

/** `started`: the run's start committed (by its claim or by `markAsProcessing`). */
export function startedEvent(job: HotJob, attempt: number, now: Date): JobEvent {
  const view = eventView(job, 'hot', {
    status: JobStatus.Processing,
    attemptCount: attempt,
    startedAtUtc: now,
  });
  return event('started', view, attempt);
}

/**
 * `cancelled` of jobs a caller moved to the DLQ before they ran (`cancel` of a Pending or Fetched
 * job), emitted by the caller's process. The move has committed when this runs; each job is read
 * back (`read`, one at a time, in the background) for its view, and a job that has moved on since
 * (resurrected, purged) is skipped. Only when something listens for `cancelled`.
 */
export function announceCancelled(
  sink: JobEventSink | undefined,
  ids: readonly string[],
  read: (id: string) => Promise<JobView | null>,
  onError: (error: unknown) => void,
): void {
  if (!sink?.hasListeners('cancelled') || ids.length === 0) return;
  void (async () => {
    for (const id of ids) {
      const view = await read(id);
      if (view?.pillar !== 'dlq' || view.failureReason !== FailureReason.Cancelled) continue;
      sink.emit(
        event('cancelled', view, Math.max(1, view.attemptCount), {
          reason: FailureReason.Cancelled,
          error: view.errorDetails ?? undefined,
        }),
      );
    }
  })().catch(onError);
}

/** `progress`: the handler reported `percent` (already clamped to 0–100). */
export function progressEvent(
  job: HotJob,
  attempt: number,
  percent: number,
  note: string | undefined,
): JobEvent {
  const view = eventView(job, 'hot', { status: JobStatus.Processing, progress: percent });
  return event('progress', view, attempt, { progress: percent, note });
}

/**
 * The events of one run's outcome, in order; none when the storage did not apply the move
 * (`applied` false or unknown) or when the worker handed the job back (`released`).
 *
 * A run that reached its handler and failed (it carries `durationMs`) is `failed`, followed by
 * `retried` or `dead`; a job that went to the DLQ without running (no handler, its circuit open
 * past `maxJobAgeMs`) is only `dead`.
 */
export function outcomeEvents(outcome: JobOutcome, job: HotJob, now: Date): JobEvent[] {
  if (outcome.applied !== true) return [];
  const { attempt, durationMs, error, reason } = outcome;
  const ran = durationMs !== undefined;
  switch (outcome.outcome) {
    case 'succeeded': {
      const view = eventView(job, 'archive', {
        status: JobStatus.Succeeded,
        finishedAtUtc: now,
        durationMs: durationMs ?? null,
      });
      return [event('succeeded', view, attempt, { durationMs })];
    }
    case 'retried': {
      const view = eventView(job, 'hot', {
        status: JobStatus.Pending,
        lastError: error ?? null,
        workerId: null,
        leaseId: null,
      });
      const retried = event('retried', view, attempt, {
        error,
        retryDelayMs: outcome.retryDelayMs,
      });
      return ran
        ? [event('failed', view, attempt, { durationMs, error, willRetry: true }), retried]
        : [retried];
    }
    case 'failed':
    case 'cancelled': {
      const failureReason = reason ?? FailureReason.MaxRetriesExceeded;
      const cancelled = failureReason === FailureReason.Cancelled;
      const view = eventView(job, 'dlq', {
        status: dlqStatusFor(failureReason),
        failureReason,
        errorDetails: error ?? null,
        failedAtUtc: now,
        durationMs: durationMs ?? null,
      });
      const extra = { durationMs, error, reason: failureReason };
      if (cancelled) return [event('cancelled', view, attempt, extra)];
      const dead = event('dead', view, attempt, extra);
      return ran ? [event('failed', view, attempt, { ...extra, willRetry: false }), dead] : [dead];
    }
    case 'released':
      return [];
  }
}

/**
 * `stalled`: the rescue moved a zombie (its worker's heartbeat expired while it was Processing),
 * as `archiveZombies` reported it: the row it found, moved to the DLQ as Zombie (`dlq`) or back to
 * Pending with its attempt kept (`hot`). `error` is the text the rescue stored with it.
 */
export function stalledEvent(rescued: RescuedZombie, error: string, now: Date): JobEvent {
  const { job, pillar } = rescued;
  const lostWorkerId = job.workerId ?? undefined;
  if (pillar === 'dlq') {
    const view = eventView(job, 'dlq', {
      status: JobStatus.Zombie,
      failureReason: FailureReason.Zombie,
      errorDetails: error,
      failedAtUtc: now,
      lastUpdatedUtc: now,
    });
    return event('stalled', view, job.attemptCount, {
      error,
      reason: FailureReason.Zombie,
      lostWorkerId,
    });
  }
  const view = eventView(job, 'hot', {
    status: JobStatus.Pending,
    workerId: null,
    leaseId: null,
    heartbeatUtc: null,
    lastError: error,
    lastUpdatedUtc: now,
  });
  return event('stalled', view, job.attemptCount, { error, lostWorkerId });
}
