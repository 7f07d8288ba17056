// @ts-check
// A batch (`enqueueBatch`): its counts and progress, when it settled, its callbacks (each a link
// to its job once fired), and a cancel of the jobs it still has in the hot table.
import { html } from './vendor/preact-htm.js';
import { get, send } from './api.js';
import { time } from './format.js';
import { ErrorNote, FindById, Outcome, Progress, useAction, useLoad } from './ui.js';
import { href } from './router.js';

/** @param {import('./ui.js').PanelProps} props */
export function BatchPanel({ route, config }) {
  if (!route.id) {
    return html`<${FindById} label="Batch id" name="batch-id" button="Show" panel="batches" />`;
  }
  return html`<${Batch} key=${route.id} id=${route.id} readOnly=${config.readOnly} />`;
}

/** What a callback kind is called on the page. */
const KIND = { complete: 'On complete', success: 'On success', failure: 'On failure' };

/** @param {{ id: string, readOnly: boolean }} props */
function Batch({ id, readOnly }) {
  const { data, error, reload } = useLoad(() => get(`batches/${encodeURIComponent(id)}`), id);
  const action = useAction(() => reload());
  if (error && !data) return html`<${ErrorNote} error=${error} />`;
  if (!data) return html`<p class="muted">Loading…</p>`;
  const batch = data;
  const done = batch.succeeded + batch.failed;
  const percent = batch.total === 0 ? 100 : Math.round((done / batch.total) * 100);

  return html`<article class="job" aria-label=${`Batch ${batch.id}`}>
    <${Outcome} action=${action} />
    <dl class="fields">
      <div>
        <dt>Id</dt>
        <dd class="mono">${batch.id}</dd>
      </div>
      <div>
        <dt>Jobs</dt>
        <dd data-figure="total">${batch.total}</dd>
      </div>
      <div>
        <dt>Succeeded</dt>
        <dd data-figure="succeeded">${batch.succeeded}</dd>
      </div>
      <div>
        <dt>Failed</dt>
        <dd data-figure="failed">${batch.failed}</dd>
      </div>
      <div>
        <dt>Still hot</dt>
        <dd data-figure="pending">${batch.pending}</dd>
      </div>
      <div>
        <dt>Finished</dt>
        <dd>
          <${Progress} value=${percent} label="Jobs finished" />
        </dd>
      </div>
      <div>
        <dt>Settled</dt>
        <dd data-figure="settled">${batch.settledAtUtc ? time(batch.settledAtUtc) : 'not yet'}</dd>
      </div>
      <div>
        <dt>Created</dt>
        <dd>${time(batch.createdAtUtc)}${batch.createdBy ? ` by ${batch.createdBy}` : ''}</dd>
      </div>
    </dl>
    <h2>Callbacks</h2>
    ${
      batch.callbacks.length === 0
        ? html`<p class="empty">This batch has no callbacks.</p>`
        : html`<table data-figure="callbacks">
            <thead>
              <tr>
                <th scope="col">Callback</th>
                <th scope="col">Job</th>
                <th scope="col">Fired</th>
              </tr>
            </thead>
            <tbody>
              ${batch.callbacks.map(
                (c) =>
                  html`<tr key=${c.kind} data-kind=${c.kind}>
                    <td>${KIND[c.kind]}</td>
                    <td class="mono">
                      ${
                        c.fired
                          ? html`<a href=${href('jobs', null, c.jobId)}
                              >${`${c.queue}/${c.type}`}</a
                            >`
                          : `${c.queue}/${c.type}`
                      }
                    </td>
                    <td>${c.fired ? 'yes' : 'no'}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    ${
      !readOnly &&
      batch.pending > 0 &&
      html`<div class="controls">
        <button
          type="button"
          onClick=${() =>
            action.act(
              (/** @type {import('./api.js').CancelResult} */ r) =>
                `Cancelled ${r.cancelled.length} job(s); ${r.cancelRequested.length} running asked to stop.`,
              () => send('POST', `batches/${encodeURIComponent(id)}/cancel`),
            )}
        >
          Cancel batch
        </button>
      </div>`
    }
  </article>`;
}
