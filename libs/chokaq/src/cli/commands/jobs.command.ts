import type { ChokaQAdmin } from '../../admin/chokaq-admin.service';
import { JobStatus } from '../../interfaces/job-status.enum';
import type { JobAttempt, JobView } from '../../interfaces/job-view.interface';
import type { JobDedupe, PendingEdits } from '../../interfaces/job.interface';
import { CLI_UNCONFIRMED_ROWS } from '../../validation/limits';
import { CommandGroup, CommandResult, defineCommand } from '../args/command-definition';
import {
  failureReasonName,
  readJson,
  readList,
  readRunAt,
  readSignedInteger,
} from '../args/option-values';
import {
  ACTOR_OPTIONS,
  PAGE_OPTIONS,
  flag,
  readActor,
  readPage,
  stringValue,
} from '../args/shared-options';
import { CliConfirmationRequiredError } from '../errors/cli-confirmation-required.error';
import { CliNothingMatchedError } from '../errors/cli-nothing-matched.error';
import { CliUsageError } from '../errors/cli-usage.error';
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
    ['group', job.group],
    ['batch', job.batchId],
    ['waiting on', job.waitingOn],
    ['dedupe key', job.dedupe ? dedupeText(job.dedupe) : null],
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

/** A held dedupe key and its window: `key (throttle until 2026-…)`, `key (unique: pending, running)`. */
function dedupeText(d: JobDedupe): string {
  if (d.mode !== 'unique') return `${d.key} (${d.mode} until ${d.windowEndsUtc?.toISOString()})`;
  const finished = d.windowMs === null ? '' : `; finished within ${formatDuration(d.windowMs)}`;
  return `${d.key} (unique: ${(d.states ?? []).join(', ')}${finished})`;
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
    const dependencies = await admin.getDependencies(id);
    const edges = [
      ...dependencies.dependsOn.map((e) => ({ dir: 'waits on', other: e.dependsOn, e })),
      ...dependencies.dependents.map((e) => ({ dir: 'waited on by', other: e.jobId, e })),
    ];
    return {
      data: { job, dependencies },
      view: [
        fields(undefined, jobFields(job)),
        ...(edges.length > 0
          ? [
              table(
                [
                  { header: 'DEPENDENCY' },
                  { header: 'JOB' },
                  { header: 'ON FAILURE' },
                  { header: 'STATE' },
                ],
                edges.map(({ dir, other, e }) => [
                  dir,
                  other,
                  e.onFailure,
                  e.blocked ? 'blocked (in the DLQ)' : e.state,
                ]),
              ),
            ]
          : []),
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

/**
 * Applies `edits` to a Pending job (`ChokaQAdmin.updatePending`) and says what changed. A job that
 * is no longer Pending is refused with `ChokaQJobNotPendingError`, nothing changed: exit 3 when no
 * job has the id, else exit 1 with the state the job is in.
 */
async function editPending(
  admin: ChokaQAdmin,
  id: string,
  edits: PendingEdits,
  actor: string,
  done: string,
): Promise<CommandResult> {
  await admin.updatePending(id, edits, actor);
  const changed: Field[] = [];
  if (edits.payload !== undefined) changed.push(['payload', JSON.stringify(edits.payload)]);
  if (edits.priority !== undefined) changed.push(['priority', edits.priority]);
  if (edits.tags !== undefined) {
    changed.push(['tags', edits.tags.length === 0 ? '(none)' : edits.tags.join(', ')]);
  }
  if (edits.runAt !== undefined) changed.push(['run at', edits.runAt]);
  return { data: { id, edits }, view: [text(done), fields(undefined, changed)] };
}

const NOT_PENDING_DETAILS = [
  'Only a Pending job can be changed. A job a worker has claimed or started, or one that has',
  'finished, is refused and left as it is (exit 1, the message says what it is now); an id no',
  'job has exits 3.',
];

const runNow = defineCommand({
  name: 'jobs run-now',
  summary: 'Make a delayed or retry-waiting pending job due at once (audited)',
  synopsis: '<id>',
  details: [
    "Its queue's workers then claim it as any due job: by priority, then by its enqueue time.",
    ...NOT_PENDING_DETAILS,
  ],
  options: ACTOR_OPTIONS,
  positionals: { min: 1, max: 1 },
  database: 'current',
  parse: (line, io) => ({ id: line.positionals[0], actor: readActor(line, io) }),
  run: ({ id, actor }, { admin }) =>
    editPending(admin, id, { runAt: 'now' }, actor, `Job ${id} is due now.`),
});

const edit = defineCommand({
  name: 'jobs edit',
  summary: "Change a pending job's payload, priority, tags or run time (audited)",
  synopsis: '<id> [--payload JSON] [--priority N] [--tags A,B] [--run-at TIME|now]',
  details: [
    'Give at least one of --payload, --priority, --tags and --run-at; what is not given is kept.',
    "A negative priority is written with =, as --priority=-5. --tags replaces the tags; --tags ''",
    "clears them. --run-at now is 'chokaq jobs run-now'. The payload is checked as an enqueue",
    'checks it (size, JSON).',
    ...NOT_PENDING_DETAILS,
  ],
  options: {
    payload: { type: 'string', value: 'JSON', description: 'the new payload, a JSON document' },
    priority: {
      type: 'string',
      value: 'N',
      description: 'the new priority, a whole number (higher runs first)',
    },
    tags: {
      type: 'string',
      value: 'A,B',
      description: "the new tags, separated by commas ('' for none)",
    },
    'run-at': {
      type: 'string',
      value: 'TIME',
      description: 'when it becomes due: an ISO time (2026-01-02T03:04:05Z), or now',
    },
    ...ACTOR_OPTIONS,
  },
  positionals: { min: 1, max: 1 },
  database: 'current',
  parse(line, io) {
    const payload = stringValue(line, 'payload');
    const priority = stringValue(line, 'priority');
    const tags = stringValue(line, 'tags');
    const runAt = stringValue(line, 'run-at');
    if ([payload, priority, tags, runAt].every((value) => value === undefined)) {
      throw new CliUsageError(
        'give at least one of --payload, --priority, --tags, --run-at',
        'jobs edit',
      );
    }
    const edits: PendingEdits = {
      ...(payload !== undefined ? { payload: readJson('--payload', payload) } : {}),
      ...(priority !== undefined ? { priority: readSignedInteger('--priority', priority) } : {}),
      ...(tags !== undefined ? { tags: readList('--tags', tags) } : {}),
      ...(runAt !== undefined ? { runAt: readRunAt('--run-at', runAt) } : {}),
    };
    return { id: line.positionals[0], edits, actor: readActor(line, io) };
  },
  run: ({ id, edits, actor }, { admin }) =>
    editPending(admin, id, edits, actor, `Job ${id} edited.`),
});

const waiting = defineCommand({
  name: 'jobs waiting',
  summary: 'A page of the jobs waiting on their dependencies, oldest enqueue first',
  synopsis: '',
  details: [
    "Prints the next page's --cursor when there is one. `jobs get <id>` shows a job's edges.",
  ],
  options: {
    queue: { type: 'string', value: 'QUEUE', description: 'only this queue' },
    ...PAGE_OPTIONS,
  },
  positionals: { min: 0, max: 0 },
  database: 'current',
  parse(line) {
    const queue = stringValue(line, 'queue');
    return {
      filter: { status: JobStatus.Waiting as const, ...(queue === undefined ? {} : { queue }) },
      order: 'oldest' as const,
      ...readPage(line),
    };
  },
  async run(query, { admin }) {
    const page = await admin.listActive(query);
    return {
      data: page,
      view: [
        table(
          [{ header: 'ID' }, { header: 'QUEUE' }, { header: 'TYPE' }, { header: 'ENQUEUED' }],
          page.items.map((job) => [job.id, job.queue, job.type, job.enqueuedAtUtc]),
        ),
        ...(page.nextCursor ? [text(`Next page: --cursor ${page.nextCursor}`)] : []),
      ],
      nothingMatched:
        page.items.length === 0 && page.nextCursor === null ? 'No job is waiting.' : undefined,
    };
  },
});

/** `chokaq jobs get|waiting|cancel|run-now|edit`. */
export const jobsCommands: CommandGroup = {
  name: 'jobs',
  summary: 'Read one job, list waiting jobs, cancel jobs, or change a pending one',
  commands: [get, waiting, cancel, runNow, edit],
};
