import { JobStatus } from '../../../libs/chokaq/src/interfaces/job-status.enum';
import type { HotJob } from '../../../libs/chokaq/src/interfaces/job.interface';

/**
 * A claimed hot row for unit tests of the runtime: job `job-1` of `q`/`t`, Fetched on its third
 * attempt by worker `w` under lease `l`, times `now`; `overrides` replace any field.
 */
export function hotJob(overrides: Partial<HotJob> = {}, now = new Date()): HotJob {
  return {
    id: 'job-1',
    queue: 'q',
    type: 't',
    payload: {},
    tags: [],
    idempotencyKey: null,
    group: null,
    priority: 10,
    status: JobStatus.Fetched,
    attemptCount: 2,
    workerId: 'w',
    leaseId: 'l',
    heartbeatUtc: null,
    scheduledAtUtc: null,
    createdAtUtc: now,
    enqueuedAtUtc: now,
    startedAtUtc: null,
    lastUpdatedUtc: now,
    createdBy: null,
    lastModifiedBy: null,
    lastError: null,
    cancelRequestedUtc: null,
    progress: null,
    progressNote: null,
    traceContext: null,
    payloadVersion: 1,
    batchId: null,
    waitingOn: null,
    ...overrides,
  };
}
