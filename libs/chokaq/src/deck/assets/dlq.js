// @ts-check
// DLQ: the filtered list (filters in the URL, so a view can be shared), and the bulk actions:
// filter → preview (matched, will affect, sample ids) → typed confirmation → resurrect or purge.
import { html, useState } from './vendor/preact-htm.js';
import { send } from './api.js';
import { num } from './format.js';
import { ErrorNote, Notice } from './ui.js';
import { JobList } from './jobs.js';
import { href } from './router.js';

const FILTER_KEYS = ['queue', 'type', 'reason', 'from', 'to', 'search', 'tag'];

export function Dlq({ route, config, snapshot }) {
  const [done, setDone] = useState(null);
  return html`<${JobList}
    route=${route}
    panel="dlq"
    path="dlq"
    pillar="dlq"
    kind="dlq"
    refreshKey=${done}
  >
    ${
      !config.readOnly &&
      html`<${BulkAction}
        key=${JSON.stringify(route.params)}
        filter=${filterOf(route.params)}
        onDone=${setDone}
      />`
    }
    ${snapshot && html`<p class="muted">${`${num(snapshot.summary.dlq)} job(s) in the DLQ${snapshot.summary.estimated.dlq ? ' (estimate)' : ''}.`}</p>`}
  <//>`;
}

function filterOf(params) {
  const out = {};
  for (const k of FILTER_KEYS) if (params[k] !== undefined && params[k] !== '') out[k] = params[k];
  return out;
}

function BulkAction({ filter, onDone }) {
  const [preview, setPreview] = useState(null);
  const [typed, setTyped] = useState('');
  const [error, setError] = useState(null);
  const [note, setNote] = useState(null);
  const [busy, setBusy] = useState(false);

  const ask = async (action) => {
    setError(null);
    setNote(null);
    setTyped('');
    try {
      setPreview(await send('POST', 'dlq/preview', { action, filter }));
    } catch (e) {
      setError(e);
    }
  };

  const expected = preview ? `${preview.action} ${preview.willAffect}` : '';
  const confirm = async (e) => {
    e.preventDefault();
    if (typed.trim() !== expected) return;
    setBusy(true);
    setError(null);
    try {
      const r = await send('POST', `dlq/${preview.action}`, { filter, token: preview.token });
      const n = preview.action === 'resurrect' ? r.ids.length : r.purged;
      setNote(`${preview.action === 'resurrect' ? 'Resurrected' : 'Purged'} ${n} job(s).`);
      setPreview(null);
      onDone(`${Date.now()}`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return html`<section class="bulk" aria-label="Bulk action">
    <div class="inline">
      <span
        >${Object.keys(filter).length ? 'On the jobs this filter matches:' : 'On every DLQ job:'}</span
      >
      <button type="button" onClick=${() => ask('resurrect')}>Preview resurrect</button>
      <button type="button" class="danger" onClick=${() => ask('purge')}>Preview purge</button>
    </div>
    <${Notice} text=${note} />
    <${ErrorNote} error=${error} />
    ${
      preview &&
      html`<form class="confirm" onSubmit=${confirm}>
        <p data-preview="counts">
          ${`${num(preview.matched)} matched; ${preview.action} will affect ${num(preview.willAffect)}.`}
        </p>
        ${
          preview.sampleIds.length > 0 &&
          html`<p class="samples">
            Sample:${' '}
            ${preview.sampleIds.map((id) => html`<a class="mono id" href=${href('jobs', null, id)}>${id}</a> `)}
          </p>`
        }
        <label
          >${`Type "${expected}" to confirm`}
          <input
            name="confirmation"
            autocomplete="off"
            value=${typed}
            onInput=${(e) => setTyped(e.currentTarget.value)}
          />
        </label>
        <button
          type="submit"
          class=${preview.action === 'purge' ? 'danger' : ''}
          disabled=${busy || typed.trim() !== expected || preview.willAffect === 0}
        >
          ${preview.action === 'resurrect' ? 'Resurrect' : 'Purge'}
        </button>
        <button type="button" onClick=${() => setPreview(null)}>Cancel</button>
      </form>`
    }
  </section>`;
}
