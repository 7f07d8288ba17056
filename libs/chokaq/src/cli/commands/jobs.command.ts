import { JobStatus } from '../../interfaces/job-status.enum';
import type { JobAttempt, JobView } from '../../interfaces/job-view.interface';
import { CLI_UNCONFIRMED_ROWS } from '../../validation/limits';
import { CommandGroup, defineCommand } from '../args/command-definition';
import { failureReasonName } from '../args/option-values';
import { ACTOR_OPTIONS, flag, readActor } from '../args/shared-options';
import { CliConfirmationRequiredError } from '../errors/cli-confirmation-required.error';
import { CliNothingMatchedError } from '../errors/cli-nothing-matched.error';
import { formatDuration } from '../format/format-values';
import { Field, fields, table, text } from '../format/view';

/** A job status as the CLI prints it (`processing`, `failed`). */
export function statusName(status: JobStatus): string {
  return (JobStatus[status] as string | undefined)?.toLowerCase() ?? String(status);
}

function jobFields(job: JobView): Field[] {
  return [
    ['id', job.id],
    ['queue', job.queue],
    ['type', job.type],
    ['where', job.pillar],
    ['status', statusName(job.status)],
    ['failure reason', job.failureReason === null ? null : failureReasonName(job.failureReason)],
    ['attempts', job.attemptCount],
    ['priority', job.priority],
    ['tags', job.tags.join(', ')],
    ['idempotency key', job.idempotencyKey],
    ['created', job.createdAtUtc],
    ['created by', job.createdBy],
    ['enqueued', job.enqueuedAtUtc],
    ['scheduled', job.scheduledAtUtc],
    ['started', job.startedAtUtc],
    ['heartbeat', job.heartbeatUtc],
    ['worker', job.workerId],
    ['progress', job.progress === null ? null : `${job.progress}%`],
    ['progress note', job.progressNote],
    ['cancel requested', job.cancelRequestedUtc],
    ['finished', job.finishedAtUtc],
    ['duration', job.durationMs === null ? null : formatDuration(job.durationMs)],
    ['failed', job.failedAtUtc],
    ['last modified by', job.lastModifiedBy],
  ];
}

/**
 * Whether the job has a stored result to print: an archived run of a handler that records its
 * result (`recordResult`) and returned something other than null.
 */
function hasResult(job: JobView): boolean {
  return job.pillar === 'archive' && job.result !== null && job.result !== undefined;
}

/** The runs that did not end in the archive, oldest first (the first line of each error). */
function attemptsTable(attempts: JobAttempt[]) {
  return table(
    [
      { header: '#' },
      { header: 'OUTCOME' },
      { header: 'STARTED' },
      { header: 'TOOK' },
      { header: 'WORKER' },
      { header: 'ERROR' },
    ],
    attempts.map((a) => [
      a.seq,
      a.outcome,
      a.startedAtUtc,
      a.durationMs === null ? null : formatDuration(a.durationMs),
      a.workerId,
      a.error === null ? null : a.error.split('\n')[0],
    ]),
  );
}

const get = defineCommand({
  name: 'jobs get',
  summary:
    'One job wherever it is (active, archive or DLQ), with its payload, stored result, error and attempt history',
  synopsis: '<id>',
  options: {},
  positionals: { min: 1, max: 1 },
  database: 'current',
  parse: (line) => ({ id: line.positionals[0] }),
  async run({ id }, { admin }) {
    const job = await admin.getJob(id, { attempts: true });
    if (!job) throw new CliNothingMatchedError(`No job has the id '${id}'.`);
    const error = job.errorDetails ?? job.lastError;
    const attempts = job.attempts ?? [];
    return {
      data: { job },
      view: [
        fields(undefined, jobFields(job)),
        text('Payload:', JSON.stringify(job.payload, null, 2)),
        ...(hasResult(job) ? [text('Result:', JSON.stringify(job.result, null, 2))] : []),
        ...(error ? [text(job.errorDetails ? 'Error:' : 'Last error:', error)] : []),
        ...(attempts.length > 0 ? [attemptsTable(attempts)] : []),
      ],
    };
  },
});

const cancel = defineCommand({
  name: 'jobs cancel',
  summary: 'Cancel jobs: pending ones move to the DLQ, running ones are asked to stop (audited)',
  synopsis: '<id>...',
  details: [`More than ${CLI_UNCONFIRMED_ROWS} ids need --yes.`],
  options: {
    ...ACTOR_OPTIONS,
    yes: { type: 'boolean', description: `confirm more than ${CLI_UNCONFIRMED_ROWS} jobs` },
  },
  positionals: { min: 1, max: Number.MAX_SAFE_INTEGER },
  database: 'current',
  parse(line, io) {
    const ids = [...new Set(line.positionals)];
    if (ids.length > CLI_UNCONFIRMED_ROWS && !flag(line, 'yes')) {
      throw new CliConfirmationRequiredError('cancel', ids.length, CLI_UNCONFIRMED_ROWS);
    }
    return { ids, actor: readActor(line, io) };
  },
  async run({ ids, actor }, { admin }) {
    const result = await admin.cancel(ids, actor);
    const acted = new Set([...result.cancelled, ...result.cancelRequested]);
    const notCancelled = ids.filter((id) => !acted.has(id));
    const row = (id: string) => [
      id,
      result.cancelled.includes(id)
        ? 'cancelled (in the DLQ)'
        : result.cancelRequested.includes(id)
          ? 'running: asked to stop'
          : 'not found, or already finished',
    ];
    return {
      data: { ...result, notCancelled },
      view: [table([{ header: 'JOB' }, { header: 'RESULT' }], ids.map(row))],
      nothingMatched:
        acted.size === 0 ? 'No job was cancelled: none is pending or running.' : undefined,
    };
  },
});

/** `chokaq jobs get|cancel`. */
export const jobsCommands: CommandGroup = {
  name: 'jobs',
  summary: 'Read one job, or cancel jobs',
  commands: [get, cancel],
};
