import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHOKAQ_METER_NAME, CHOKAQ_METRICS } from './metric-instruments';

/**
 * The published instruments: name, kind, unit and attributes. Dashboards and alerts key on them,
 * so a change here must be a deliberate edit of this list (and of the README's table, which the
 * last test compares with the code). The first eleven names and units are those of the .NET ChokaQ.
 */
const PINNED: ReadonlyArray<[name: string, kind: string, unit: string, attributes: string[]]> = [
  ['chokaq.jobs.enqueued', 'counter', '', ['queue', 'type']],
  ['chokaq.jobs.completed', 'counter', '', ['queue', 'type']],
  ['chokaq.jobs.failed', 'counter', '', ['queue', 'type']],
  ['chokaq.jobs.retried', 'counter', '', ['queue', 'type']],
  ['chokaq.jobs.dlq', 'counter', '', ['queue', 'type', 'reason']],
  ['chokaq.jobs.processing_duration', 'histogram', 'ms', ['queue', 'type', 'outcome']],
  ['chokaq.jobs.queue_lag', 'histogram', 'ms', ['queue', 'type']],
  ['chokaq.workers.active', 'upDownCounter', '', ['queue']],
  ['chokaq.jobs.heartbeat_failures', 'counter', '', []],
  ['chokaq.jobs.state_transition_conflicts', 'counter', '', ['queue', 'type', 'outcome']],
  ['chokaq.circuits.events', 'counter', '', ['queue', 'type', 'outcome']],
  ['chokaq.queue.pending', 'observableGauge', '', ['queue']],
  ['chokaq.queue.oldest_due_age', 'observableGauge', 'ms', ['queue']],
  ['chokaq.queue.dlq_size', 'observableGauge', '', ['queue']],
];

/** The table in the code, as rows like {@link PINNED}, in declaration order. */
function table(): Array<[string, string, string, string[]]> {
  return Object.entries(CHOKAQ_METRICS).map(([name, spec]) => [
    name,
    spec.kind,
    spec.unit,
    [...spec.attributes],
  ]);
}

describe('CHOKAQ_METRICS', () => {
  it('pins the meter name and every instrument: name, kind, unit, attributes', () => {
    expect(CHOKAQ_METER_NAME).toBe('chokaq');
    expect(table()).toEqual(PINNED);
  });

  it('is the table of the README section "Metrics"', () => {
    const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
    const section = readme.split(/^## Metrics$/m)[1]?.split(/^## /m)[0] ?? '';
    const kinds: Record<string, string> = {
      counter: 'counter',
      'up-down counter': 'upDownCounter',
      histogram: 'histogram',
      gauge: 'observableGauge',
    };
    const rows = section
      .split('\n')
      .filter((line) => /^\| `chokaq\./.test(line))
      .map((line) => line.split('|').map((cell) => cell.trim()))
      .map(([, name, kind, unit, attributes]): [string, string, string, string[]] => [
        name.replace(/`/g, ''),
        kinds[kind] ?? kind,
        unit.replace(/`/g, '').replace('—', ''),
        attributes === '—' ? [] : attributes.replace(/`/g, '').split(/,\s*/),
      ]);
    expect(rows).toEqual(table());
  });
});
