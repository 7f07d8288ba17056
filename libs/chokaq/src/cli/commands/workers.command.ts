import { DEFAULT_WORKER_LIST } from '../../validation/limits';
import { defineCommand } from '../args/command-definition';
import { readDuration, readInteger } from '../args/option-values';
import { stringValue } from '../args/shared-options';
import { table } from '../format/view';

/**
 * `chokaq workers`: every worker process of the cluster from the Workers table, the most recently
 * seen first. Whether a silent worker is `lost` depends on the zombie timeout, an option of the
 * app's module the CLI cannot know: `--lost-after` says it (the library's default otherwise).
 */
export const workersCommand = defineCommand({
  name: 'workers',
  summary: 'Every worker process of the cluster: state, host, version, load, last seen',
  synopsis: '',
  details: [
    'A worker not seen for longer than --lost-after (your rescue.zombieTimeoutMs; default 10m)',
    'and not stopped is lost: its running jobs become zombies.',
  ],
  options: {
    limit: {
      type: 'string',
      value: 'N',
      description: `at most N workers (default ${DEFAULT_WORKER_LIST})`,
    },
    'lost-after': {
      type: 'string',
      value: 'DURATION',
      description: 'silence after which a worker is lost (default 10m)',
    },
  },
  positionals: { min: 0, max: 0 },
  database: 'current',
  parse(line) {
    const limit = stringValue(line, 'limit');
    const lostAfter = stringValue(line, 'lost-after');
    return {
      limit: limit === undefined ? undefined : readInteger('--limit', limit, 1),
      lostAfterMs: lostAfter === undefined ? undefined : readDuration('--lost-after', lostAfter),
    };
  },
  moduleOptions: ({ lostAfterMs }) =>
    lostAfterMs === undefined ? {} : { rescue: { zombieTimeoutMs: lostAfterMs } },
  async run({ limit }, { admin }) {
    const workers = await admin.listWorkers(limit === undefined ? {} : { limit });
    return {
      data: { workers },
      view: [
        table(
          [
            { header: 'WORKER' },
            { header: 'STATE' },
            { header: 'HOST' },
            { header: 'PID', align: 'right' },
            { header: 'VERSION' },
            { header: 'RUNNING', align: 'right' },
            { header: 'STARTED' },
            { header: 'LAST SEEN' },
            { header: 'QUEUES', maxWidth: 40 },
            { header: 'OPEN CIRCUITS', maxWidth: 40 },
          ],
          workers.map((w) => [
            w.workerId,
            w.state,
            w.host,
            w.pid,
            w.libraryVersion,
            `${w.running}/${w.concurrency}`,
            w.startedAtUtc,
            w.lastSeenUtc,
            [...w.handled.queues, ...w.handled.types.map((t) => `${t.queue}/${t.type}`)].join(', '),
            Object.entries(w.circuits)
              .map(([key, state]) => `${key} ${state}`)
              .join(', '),
          ]),
        ),
      ],
      nothingMatched: workers.length === 0 ? 'No worker has reported.' : undefined,
    };
  },
});
