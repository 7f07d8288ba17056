// @ts-check
// Top errors: the DLQ's error families (one per cause, whatever ids the messages carry), each a
// link to the DLQ pre-filtered on it.
import { html } from './vendor/preact-htm.js';
import { get } from './api.js';
import { ago, num } from './format.js';
import { Empty, ErrorNote, useLoad } from './ui.js';
import { href } from './router.js';

/** @param {Pick<import('./ui.js').PanelProps, 'snapshot'>} props */
export function TopErrors({ snapshot }) {
  const refresh = snapshot ? Math.floor(new Date(snapshot.at).getTime() / 30_000) : 0;
  const { data, error } = useLoad(() => get('errors'), refresh);
  if (error && !data) return html`<${ErrorNote} error=${error} />`;
  if (!data) return html`<p class="muted">Loading…</p>`;
  if (data.length === 0)
    return html`<${Empty} text="The DLQ holds no errors in its recent window." />`;
  return html`<p class="muted">
      The newest 10,000 DLQ jobs or the last 24 hours, whichever is fewer.
    </p>
    <table class="errors">
      <thead>
        <tr>
          <th scope="col">Error family</th>
          <th scope="col">Jobs</th>
          <th scope="col">Last</th>
          <th scope="col">Example</th>
        </tr>
      </thead>
      <tbody>
        ${data.map(
          (f) =>
            html`<tr key=${f.error}>
              <td><a href=${href('dlq', { search: searchOf(f.sample) })}>${f.error}</a></td>
              <td class="num">${num(f.count)}</td>
              <td>${ago(f.lastFailedAtUtc)}</td>
              <td class="error-prefix">${f.sample}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

/**
 * The DLQ text filter of a family: the start of its sample's first line (a literal substring).
 * @param {string} sample
 */
function searchOf(sample) {
  return String(sample || '')
    .split('\n')[0]
    .slice(0, 80);
}
