// @ts-check
// DLQ: the filtered list (filters in the URL, so a view can be shared), and the bulk actions:
// filter → preview (matched, will affect, sample ids) → typed confirmation → resurrect or purge.
import { html, useState } from './vendor/preact-htm.js';
import { send } from './api.js';
import { num } from './format.js';
import { ErrorNote, Notice } from './ui.js';
import { JobList } from './jobs.js';
import { href } from './router.js';

/**
 * @typedef {import('./api.js').DlqBodyFilter} DlqBodyFilter
 * @typedef {import('./api.js').DlqActionPreview} DlqActionPreview
 * @typedef {import('./api.js').BulkResult} BulkResult
 */

/**
 * The fields of the DLQ's filter that a bulk action carries (the server's DlqFilter, but `ids`).
 * @type {(keyof DlqBodyFilter)[]}
 */
const FILTER_KEYS = ['queue', 'type', 'reason', 'from', 'to', 'search', 'tag'];

/** @param {import('./ui.js').PanelProps} props */
export function Dlq({ route, config, snapshot }) {
  /** @type {import('./ui.js').State<string | null>} */
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

/**
 * @param {Record<string, string>} params
 * @returns {DlqBodyFilter}
 */
function filterOf(params) {
  /** @type {DlqBodyFilter} */
  const out = {};
  for (const k of FILTER_KEYS) if (params[k] !== undefined && params[k] !== '') out[k] = params[k];
  return out;
}

/** @param {{ filter: DlqBodyFilter, onDone: (done: string) => void }} props */
function BulkAction({ filter, onDone }) {
  /** @type {import('./ui.js').State<DlqActionPreview | null>} */
  const [preview, setPreview] = useState(null);
  /** @type {import('./ui.js').State<string>} */
  const [typed, setTyped] = useState('');
  /** @type {import('./ui.js').State<import('./ui.js').Failure | null>} */
  const [error, setError] = useState(null);
  /** @type {import('./ui.js').State<string | null>} */
  const [note, setNote] = useState(null);
  /** @type {import('./ui.js').State<boolean>} */
  const [busy, setBusy] = useState(false);

  /** @param {import('./api.js').BulkDlqAction} action */
  const ask = async (action) => {
    setError(null);
    setNote(null);
    setTyped('');
    try {
      setPreview(await send('POST', 'dlq/preview', { action, filter }));
    } catch (e) {
      setError(/** @type {import('./ui.js').Failure} */ (e));
    }
  };

  const expected = preview ? `${preview.action} ${preview.willAffect}` : '';
  // Its form is drawn only with a preview, so `preview` is never null here.
  /** @param {Event} e */
  const confirm = async (e) => {
    e.preventDefault();
    if (typed.trim() !== expected) return;
    setBusy(true);
    setError(null);
    try {
      const r = await send('POST', `dlq/${/** @type {DlqActionPreview} */ (preview).action}`, {
        filter,
        token: /** @type {DlqActionPreview} */ (preview).token,
      });
      const n =
        /** @type {DlqActionPreview} */ (preview).action === 'resurrect'
          ? /** @type {BulkResult['resurrect']} */ (r).ids.length
          : /** @type {BulkResult['purge']} */ (r).purged;
      setNote(
        `${/** @type {DlqActionPreview} */ (preview).action === 'resurrect' ? 'Resurrected' : 'Purged'} ${n} job(s).`,
      );
      setPreview(null);
      onDone(`${Date.now()}`);
    } catch (err) {
      setError(/** @type {import('./ui.js').Failure} */ (err));
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
            onInput=${(/** @type {import('./ui.js').TargetedEvent<HTMLInputElement>} */ e) =>
              setTyped(e.currentTarget.value)}
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
