import { defineCommand } from '../args/command-definition';
import { formatDuration, formatPercent, formatRate } from '../format/format-values';
import { fields, table, text } from '../format/view';

/**
 * `chokaq stats`: the summary and one row per queue, from the reads a dashboard polls
 * (`getSummary`, `getThroughput`, `getQueueStats`, `getQueueHealth`), none of which counts the
 * archive or the DLQ, so it costs the same on a database of any size.
 */
export const statsCommand = defineCommand({
  name: 'stats',
  summary: 'Summary counts, throughput, and one row per queue with its lag',
  synopsis: '',
  details: [
    'The archive and DLQ sizes are estimates on PostgreSQL and SQL Server (marked ~).',
    'JSON: { summary, throughput, queues, health } as ChokaQAdmin returns them.',
  ],
  options: {},
  positionals: { min: 0, max: 0 },
  database: 'current',
  parse: () => ({}),
  async run(_args, { admin }) {
    const [summary, throughput, queues, health] = await Promise.all([
      admin.getSummary(),
      admin.getThroughput(),
      admin.getQueueStats(),
      admin.getQueueHealth(),
    ]);
    const lag = new Map(health.map((h) => [h.queue, h]));
    const estimate = (n: number, estimated: boolean) => `${estimated ? '~' : ''}${n}`;
    return {
      data: { summary, throughput, queues, health },
      view: [
        fields('Jobs', [
          ['pending', summary.pending],
          ['fetched', summary.fetched],
          ['processing', summary.processing],
          ['waiting', summary.waiting],
          ['archive', estimate(summary.archived, summary.estimated.archived)],
          ['dlq', estimate(summary.dlq, summary.estimated.dlq)],
        ]),
        fields('Since the start (lifetime counters)', [
          ['succeeded', summary.succeededTotal],
          ['failed', summary.failedTotal],
          ['cancelled', summary.cancelledTotal],
          ['retried', summary.retriedTotal],
          ['deferred (open circuit)', summary.deferredTotal],
          ['resurrected', summary.resurrectedTotal],
        ]),
        fields('Throughput (completions)', [
          ['last minute', formatRate(throughput.perSecond1m)],
          ['last 5 minutes', formatRate(throughput.perSecond5m)],
        ]),
        text('Queues'),
        table(
          [
            { header: 'QUEUE' },
            { header: 'PENDING', align: 'right' },
            { header: 'DUE', align: 'right' },
            { header: 'OLDEST DUE', align: 'right' },
            { header: 'RUNNING', align: 'right' },
            { header: 'MAX', align: 'right' },
            { header: 'BUSY', align: 'right' },
            { header: 'SUCCEEDED', align: 'right' },
            { header: 'FAILED', align: 'right' },
            { header: 'PAUSED' },
            { header: 'LAST ACTIVITY' },
          ],
          queues.map((q) => {
            const h = lag.get(q.queue);
            return [
              q.queue,
              q.pending,
              h?.duePending,
              h && h.duePending > 0 ? formatDuration(h.maxLagMs) : undefined,
              q.fetched + q.processing,
              q.maxWorkers,
              h ? formatPercent(h.saturation) : undefined,
              q.succeededTotal,
              q.failedTotal,
              q.isPaused,
              q.lastActivityUtc,
            ];
          }),
        ),
      ],
    };
  },
});
