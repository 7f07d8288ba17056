// @ts-check
// Workers: every worker of the cluster, alive and lost, with what it runs.
import { html } from './vendor/preact-htm.js';
import { get } from './api.js';
import { ago, num } from './format.js';
import { Empty, ErrorNote, useLoad } from './ui.js';

/** @param {Pick<import('./ui.js').PanelProps, 'snapshot'>} props */
export function Workers({ snapshot }) {
  const refresh = snapshot ? snapshot.at : 0;
  const { data, error } = useLoad(() => get('workers'), refresh);
  if (error && !data) return html`<${ErrorNote} error=${error} />`;
  if (!data) return html`<p class="muted">Loading…</p>`;
  if (data.length === 0) return html`<${Empty} text="No worker has reported yet." />`;
  return html`<table class="workers">
    <thead>
      <tr>
        <th scope="col">Worker</th>
        <th scope="col">Host / pid</th>
        <th scope="col">State</th>
        <th scope="col">Running</th>
        <th scope="col">Concurrency</th>
        <th scope="col">Last seen</th>
        <th scope="col">Circuits</th>
        <th scope="col">Version</th>
      </tr>
    </thead>
    <tbody>
      ${data.map((w) => {
        const circuits = Object.entries(w.circuits || {});
        return html`<tr key=${w.workerId}>
          <td class="mono">${w.workerId}</td>
          <td>${`${w.host} / ${w.pid}`}</td>
          <td><span class=${`badge ${w.state}`}>${w.state}</span></td>
          <td class="num">${num(w.running)}</td>
          <td class="num">${num(w.concurrency)}</td>
          <td>${ago(w.lastSeenUtc)}</td>
          <td>
            ${circuits.length === 0 ? 'all closed' : circuits.map(([k, v]) => `${k}: ${v}`).join(', ')}
          </td>
          <td>${w.libraryVersion}</td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}
