// @ts-check
// Overview: live state, totals per pillar, throughput and failure rate, the chart, worst lag, workers.
import { html, useState } from './vendor/preact-htm.js';
import { get } from './api.js';
import { ms, num, pct } from './format.js';
import { ErrorNote, useLoad } from './ui.js';
import { ThroughputChart } from './chart.js';

/**
 * @param {number} failed
 * @param {number} succeeded
 */
function rate(failed, succeeded) {
  const total = failed + succeeded;
  return total === 0 ? null : failed / total;
}

/** @param {Pick<import('./ui.js').PanelProps, 'snapshot'>} props */
export function Overview({ snapshot }) {
  /** @type {import('./ui.js').State<'hour' | 'day'>} */
  const [range, setRange] = useState('hour');
  const minute = snapshot ? Math.floor(new Date(snapshot.at).getTime() / 60_000) : 0;
  const series = useLoad(() => get('series', { range }), `${range}|${minute}`);
  if (!snapshot) return html`<p class="muted">Waiting for the first snapshot…</p>`;
  const { summary: s, throughput: t, workers, worstLag, reads } = snapshot;
  return html`<section>
    <dl class="tiles">
      <div>
        <dt>Pending</dt>
        <dd data-figure="pending">${num(s.pending)}</dd>
      </div>
      <div>
        <dt>Running</dt>
        <dd data-figure="running">${num(s.fetched + s.processing)}</dd>
      </div>
      <div>
        <dt>Waiting</dt>
        <dd data-figure="waiting">${num(s.waiting)}</dd>
      </div>
      <div>
        <dt>${s.estimated.archived ? 'Archive (est.)' : 'Archive'}</dt>
        <dd data-figure="archived">${num(s.archived)}</dd>
      </div>
      <div>
        <dt>${s.estimated.dlq ? 'DLQ (est.)' : 'DLQ'}</dt>
        <dd data-figure="dlq">${num(s.dlq)}</dd>
      </div>
      <div>
        <dt>Succeeded (lifetime)</dt>
        <dd data-figure="succeeded">${num(s.succeededTotal)}</dd>
      </div>
      <div>
        <dt>Failed (lifetime)</dt>
        <dd data-figure="failed">${num(s.failedTotal)}</dd>
      </div>
      <div>
        <dt>Throughput 1 min</dt>
        <dd>${`${t.perSecond1m.toFixed(2)}/s`}</dd>
      </div>
      <div>
        <dt>Throughput 5 min</dt>
        <dd>${`${t.perSecond5m.toFixed(2)}/s`}</dd>
      </div>
      <div>
        <dt>Failure rate 1 min</dt>
        <dd>${pct(rate(t.failed1m, t.succeeded1m))}</dd>
      </div>
      <div>
        <dt>Failure rate 5 min</dt>
        <dd>${pct(rate(t.failed5m, t.succeeded5m))}</dd>
      </div>
      <div>
        <dt>Worst lag</dt>
        <dd>${worstLag ? `${ms(worstLag.lagMs)} (${worstLag.queue})` : 'none'}</dd>
      </div>
      <div>
        <dt>Workers</dt>
        <dd data-figure="workers">${`${num(workers.alive)} alive, ${num(workers.lost)} lost`}</dd>
      </div>
      ${
        reads.from === 'replica' &&
        html`<div>
          <dt>Read replica lag</dt>
          <dd data-figure="replica-lag">
            ${reads.lagMs === null ? 'not a standby' : ms(reads.lagMs)}
          </dd>
        </div>`
      }
    </dl>
    <div class="inline" role="group" aria-label="Chart range">
      <button type="button" aria-pressed=${range === 'hour'} onClick=${() => setRange('hour')}>
        Last hour
      </button>
      <button type="button" aria-pressed=${range === 'day'} onClick=${() => setRange('day')}>
        Last day
      </button>
    </div>
    <${ErrorNote} error=${series.error} />
    ${
      series.data &&
      html`<${ThroughputChart}
        points=${series.data}
        label=${range === 'hour' ? 'Jobs finished per minute, last hour' : 'Jobs finished per 15 minutes, last day'}
      />`
    }
  </section>`;
}
