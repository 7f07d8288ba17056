import type { ChokaQAdmin } from '../../admin/chokaq-admin.service';
import type { QueueInfo, QueuePatch, RateLimit } from '../../interfaces/job.interface';
import {
  CommandGroup,
  CommandResult,
  ParsedCommandLine,
  defineCommand,
} from '../args/command-definition';
import { readDurationOrNone, readInteger, readIntegerOrNone } from '../args/option-values';
import { ACTOR_OPTIONS, flag, readActor, stringValue } from '../args/shared-options';
import { CliNothingMatchedError } from '../errors/cli-nothing-matched.error';
import { CliUsageError } from '../errors/cli-usage.error';
import { formatDuration } from '../format/format-values';
import { Cell, table, text } from '../format/view';

const QUEUE_COLUMNS = [
  { header: 'QUEUE' },
  { header: 'PAUSED' },
  { header: 'ACTIVE' },
  { header: 'MAX WORKERS', align: 'right' },
  { header: 'RATE LIMIT', align: 'right' },
  { header: 'GROUP LIMITS', align: 'right' },
  { header: 'EXECUTION TIMEOUT', align: 'right' },
  { header: 'ZOMBIE TIMEOUT', align: 'right' },
  { header: 'RETRY ZOMBIES' },
  { header: 'UPDATED' },
] as const;

/** `10/1000ms`: at most 10 starts in any window of 1,000 ms (exact, as set). */
function formatRateLimit(rate: RateLimit): string {
  return `${rate.max}/${rate.perMs}ms`;
}

/** `2 running, 10/60000ms`: a queue's group limits, or undefined when it has none. */
function formatGroupLimits(q: QueueInfo): string | undefined {
  const parts = [
    q.groupConcurrency === null ? undefined : `${q.groupConcurrency} running`,
    q.groupRateLimit === null ? undefined : formatRateLimit(q.groupRateLimit),
  ].filter((p): p is string => p !== undefined);
  return parts.length === 0 ? undefined : parts.join(', ');
}

function queueRow(q: QueueInfo): Cell[] {
  return [
    q.name,
    q.isPaused,
    q.isActive,
    q.maxWorkers,
    q.rateLimit === null ? undefined : formatRateLimit(q.rateLimit),
    formatGroupLimits(q),
    q.executionTimeoutMs === null ? undefined : formatDuration(q.executionTimeoutMs),
    q.zombieTimeoutSeconds === null ? undefined : formatDuration(q.zombieTimeoutSeconds * 1_000),
    q.retryZombies,
    q.lastUpdatedUtc,
  ];
}

/**
 * A rate limit from `--max` and `--per-ms` (both or neither), or null with the flag `clear` (not
 * with them); undefined when none of the three is given.
 */
function readRateLimit(
  line: ParsedCommandLine,
  command: string,
  clear: 'clear' | 'clear-rate',
): RateLimit | null | undefined {
  const max = stringValue(line, 'max');
  const perMs = stringValue(line, 'per-ms');
  if (flag(line, clear)) {
    if (max !== undefined || perMs !== undefined) {
      throw new CliUsageError(`give either --${clear} or --max with --per-ms, not both`, command);
    }
    return null;
  }
  if (max === undefined && perMs === undefined) return undefined;
  if (max === undefined || perMs === undefined) {
    throw new CliUsageError(`give --max and --per-ms together, or --${clear}`, command);
  }
  return { max: readInteger('--max', max, 1), perMs: readInteger('--per-ms', perMs, 1) };
}

/**
 * The operator API creates a queue it is told to change (`updateQueue` upserts); from a shell a
 * misspelt name would create a new paused queue and leave the real one running, so the CLI acts
 * only on queues ChokaQ knows.
 */
async function changeKnownQueue(
  admin: ChokaQAdmin,
  name: string,
  change: () => Promise<QueueInfo>,
  done: string,
): Promise<CommandResult> {
  if (!(await admin.listQueues({ fresh: true })).some((q) => q.name === name)) {
    throw new CliNothingMatchedError(
      `No queue is named '${name}'. 'chokaq queues list' shows the queues ChokaQ knows.`,
    );
  }
  const queue = await change();
  return { data: { queue }, view: [text(done), table(QUEUE_COLUMNS, [queueRow(queue)])] };
}

const list = defineCommand({
  name: 'queues list',
  summary: 'Every queue with its controls',
  synopsis: '',
  options: {},
  positionals: { min: 0, max: 0 },
  database: 'current',
  parse: () => ({}),
  async run(_args, { admin }) {
    const queues = await admin.listQueues();
    return {
      data: { queues },
      view: [table(QUEUE_COLUMNS, queues.map(queueRow))],
      nothingMatched: queues.length === 0 ? 'No queue yet.' : undefined,
    };
  },
});

/** `queues pause` and `queues resume`. */
function pauseCommand(paused: boolean) {
  const verb = paused ? 'pause' : 'resume';
  return defineCommand({
    name: `queues ${verb}`,
    summary: paused
      ? 'Stop claiming from a queue (running jobs finish; buffered ones are released)'
      : 'Claim from a paused queue again',
    synopsis: '<queue>',
    options: ACTOR_OPTIONS,
    positionals: { min: 1, max: 1 },
    database: 'current',
    parse: (line, io) => ({ queue: line.positionals[0], actor: readActor(line, io) }),
    run: ({ queue, actor }, { admin }) =>
      changeKnownQueue(
        admin,
        queue,
        () => (paused ? admin.pauseQueue(queue, actor) : admin.resumeQueue(queue, actor)),
        `Queue '${queue}' ${paused ? 'paused' : 'resumed'}.`,
      ),
  });
}

const setMaxWorkers = defineCommand({
  name: 'queues set-max-workers',
  summary: 'Cap the jobs of a queue running at once across the cluster (none: no cap)',
  synopsis: '<queue> <n|none>',
  options: ACTOR_OPTIONS,
  positionals: { min: 2, max: 2 },
  database: 'current',
  parse: (line, io) => ({
    queue: line.positionals[0],
    maxWorkers: readIntegerOrNone('max workers', line.positionals[1]),
    actor: readActor(line, io),
  }),
  run: ({ queue, maxWorkers, actor }, { admin }) =>
    changeKnownQueue(
      admin,
      queue,
      () => admin.setMaxWorkers(queue, maxWorkers, actor),
      `Queue '${queue}': max workers ${maxWorkers ?? 'none (no cap)'}.`,
    ),
});

const setTimeouts = defineCommand({
  name: 'queues set-timeout',
  summary: "Set a queue's execution timeout and/or zombie timeout (none: the global setting)",
  synopsis: '<queue> [--execution DURATION|none] [--zombie DURATION|none]',
  details: [
    'Durations take a unit: 500ms, 30s, 5m, 2h, 1d. The zombie timeout is whole seconds.',
    "A handler's own timeout still wins over the queue's execution timeout.",
  ],
  options: {
    execution: {
      type: 'string',
      value: 'DURATION',
      description: 'longest run of a job of this queue, or none',
    },
    zombie: {
      type: 'string',
      value: 'DURATION',
      description: 'a running job whose heartbeat is this old is a zombie, or none',
    },
    ...ACTOR_OPTIONS,
  },
  positionals: { min: 1, max: 1 },
  database: 'current',
  parse(line, io) {
    const patch: QueuePatch = {};
    const execution = stringValue(line, 'execution');
    if (execution !== undefined) {
      patch.executionTimeoutMs = readDurationOrNone('--execution', execution);
    }
    const zombie = stringValue(line, 'zombie');
    if (zombie !== undefined) {
      const ms = readDurationOrNone('--zombie', zombie);
      if (ms !== null && ms % 1_000 !== 0) {
        throw new CliUsageError(
          `--zombie must be whole seconds (got '${zombie}')`,
          'queues set-timeout',
        );
      }
      patch.zombieTimeoutSeconds = ms === null ? null : ms / 1_000;
    }
    if (execution === undefined && zombie === undefined) {
      throw new CliUsageError('give --execution, --zombie or both', 'queues set-timeout');
    }
    return { queue: line.positionals[0], patch, actor: readActor(line, io) };
  },
  run: ({ queue, patch, actor }, { admin }) =>
    changeKnownQueue(
      admin,
      queue,
      () => admin.updateQueue(queue, patch, actor),
      `Queue '${queue}': timeouts set.`,
    ),
});

const setRateLimit = defineCommand({
  name: 'queues set-rate-limit',
  summary:
    'Limit how many jobs of a queue start per window, across the cluster (--clear: no limit)',
  synopsis: '<queue> (--max N --per-ms MS | --clear)',
  details: [
    'At most N jobs of the queue start in any window of MS milliseconds (database clock), however',
    'many processes run it; it holds together with max workers. Jobs held back stay Pending.',
  ],
  options: {
    max: { type: 'string', value: 'N', description: 'most starts per window (1 or more)' },
    'per-ms': {
      type: 'string',
      value: 'MS',
      description: 'the window in milliseconds (1 or more)',
    },
    clear: { type: 'boolean', description: 'remove the limit' },
    ...ACTOR_OPTIONS,
  },
  positionals: { min: 1, max: 1 },
  database: 'current',
  parse(line, io) {
    const command = 'queues set-rate-limit';
    const rateLimit = readRateLimit(line, command, 'clear');
    if (rateLimit === undefined) {
      throw new CliUsageError('give --max and --per-ms together, or --clear', command);
    }
    return { queue: line.positionals[0], rateLimit, actor: readActor(line, io) };
  },
  run: ({ queue, rateLimit, actor }, { admin }) =>
    changeKnownQueue(
      admin,
      queue,
      () => admin.setRateLimit(queue, rateLimit, actor),
      `Queue '${queue}': rate limit ${
        rateLimit === null ? 'removed' : `at most ${rateLimit.max} starts per ${rateLimit.perMs} ms`
      }.`,
    ),
});

const setGroupLimits = defineCommand({
  name: 'queues set-group-limits',
  summary: 'Limit each group (tenant) of a queue: jobs running at once, starts per window',
  synopsis: '<queue> [--concurrency N|none] [--max N --per-ms MS | --clear-rate]',
  details: [
    'Jobs enqueued with a group (a tenant, a customer) are limited per group, across the cluster:',
    'at most N of one group running at once, and at most --max starts of one group per window of',
    '--per-ms milliseconds. The claim takes turns across the groups. With neither limit the queue',
    'is claimed as any other.',
  ],
  options: {
    concurrency: {
      type: 'string',
      value: 'N|none',
      description: "most jobs of one group running at once ('none': no limit)",
    },
    max: { type: 'string', value: 'N', description: 'most starts of one group per window' },
    'per-ms': { type: 'string', value: 'MS', description: 'the window in milliseconds' },
    'clear-rate': { type: 'boolean', description: 'remove the per-group rate limit' },
    ...ACTOR_OPTIONS,
  },
  positionals: { min: 1, max: 1 },
  database: 'current',
  parse(line, io) {
    const command = 'queues set-group-limits';
    const concurrency = stringValue(line, 'concurrency');
    const rateLimit = readRateLimit(line, command, 'clear-rate');
    if (concurrency === undefined && rateLimit === undefined) {
      throw new CliUsageError('give --concurrency, --max with --per-ms, or --clear-rate', command);
    }
    return {
      queue: line.positionals[0],
      limits: {
        ...(concurrency === undefined
          ? {}
          : {
              concurrency:
                concurrency === 'none' ? null : readInteger('--concurrency', concurrency, 1),
            }),
        ...(rateLimit === undefined ? {} : { rateLimit }),
      },
      actor: readActor(line, io),
    };
  },
  run: ({ queue, limits, actor }, { admin }) =>
    changeKnownQueue(
      admin,
      queue,
      () => admin.setGroupLimits(queue, limits, actor),
      `Queue '${queue}': group limits set.`,
    ),
});

const GROUP_COLUMNS = [
  { header: 'GROUP' },
  { header: 'RUNNING', align: 'right' },
  { header: 'PENDING', align: 'right' },
] as const;

const groups = defineCommand({
  name: 'queues groups',
  summary: 'The busiest groups (tenants) of a queue: jobs running and pending per group',
  synopsis: '<queue> [--limit N]',
  details: [
    'Most running first, then most pending. Jobs without a group in a queue with group limits',
    "share one group, shown as '(none)'.",
  ],
  options: {
    limit: { type: 'string', value: 'N', description: 'how many groups (default 10, at most 100)' },
  },
  positionals: { min: 1, max: 1 },
  database: 'current',
  parse: (line) => {
    const limit = stringValue(line, 'limit');
    return {
      queue: line.positionals[0],
      limit: limit === undefined ? 10 : readInteger('--limit', limit, 1),
    };
  },
  run: async ({ queue, limit }, { admin }) => {
    const loads = await admin.getQueueGroups(queue, limit);
    const rows: Cell[][] = loads.map((g) => [
      g.group === '' ? '(none)' : g.group,
      g.running,
      g.pending,
    ]);
    return {
      data: { queue, groups: loads },
      view:
        loads.length === 0
          ? [text(`Queue '${queue}' has no jobs in a group.`)]
          : [table(GROUP_COLUMNS, rows)],
    };
  },
});

/** `chokaq queues list|groups|pause|resume|set-max-workers|set-rate-limit|set-group-limits|set-timeout`. */
export const queuesCommands: CommandGroup = {
  name: 'queues',
  summary: 'List queues and change their controls (audited)',
  commands: [
    list,
    groups,
    pauseCommand(true),
    pauseCommand(false),
    setMaxWorkers,
    setRateLimit,
    setGroupLimits,
    setTimeouts,
  ],
};
