// @ts-check
// Small pieces every panel shares: loading a read, errors, the job table, filters and pages.
import { html, useCallback, useEffect, useState } from './vendor/preact-htm.js';
import { REASONS, ago, bytes, jobState, num, reason, shortJobState } from './format.js';
import { href, navigate } from './router.js';

/**
 * @typedef {import('./api.js').JobListItem} JobListItem
 * @typedef {import('./api.js').JobPage} JobPage
 * @typedef {import('../../interfaces/job-view.interface').Pillar} Pillar
 */

/**
 * What every panel gets from the shell: the route, the configuration, and the last snapshot that
 * succeeded (null until the first).
 * @typedef {{
 *   route: import('./router.js').Route,
 *   config: import('./api.js').DeckConfig,
 *   snapshot: import('./api.js').Snapshot | null,
 * }} PanelProps
 */

/**
 * A `useState` pair (the vendored Preact carries no types): the value and its setter, which takes
 * a value or a function of the previous one.
 * @template S
 * @typedef {[S, (next: S | ((previous: S) => S)) => void]} State
 */

/**
 * A DOM event whose `currentTarget` is the element the handler is on.
 * @template {EventTarget} T
 * @typedef {Event & { currentTarget: T }} TargetedEvent
 */

/**
 * What a read or an action failed with: an ApiError (with the server's body), an AuthRequired,
 * or the TypeError of a failed fetch.
 * @typedef {Error & { body?: import('./api.js').ErrorBody | null }} Failure
 */

/**
 * Runs `load` when `key` changes (and on `reload()`); `{ data, error, loading, reload }`.
 * @template T
 * @param {() => Promise<T>} load
 * @param {unknown} key
 * @returns {{ data: T | null, error: Failure | null, loading: boolean, reload: () => void }}
 */
export function useLoad(load, key) {
  /** @type {State<{ data: T | null, error: Failure | null, loading: boolean }>} */
  const [state, setState] = useState({ data: null, error: null, loading: true });
  /** @type {State<number>} */
  const [round, setRound] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error) => live && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [key, round]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return { ...state, reload };
}

/** @param {{ error: Failure | null }} props */
export function ErrorNote({ error }) {
  if (!error) return null;
  const issues = error.body && Array.isArray(error.body.issues) ? error.body.issues : [];
  return html`<div class="note error" role="alert">
    <strong>${error.message}</strong>
    ${
      issues.length > 0 &&
      html`<ul>
        ${issues.map((i) => html`<li>${`${i.path}: ${i.message}`}</li>`)}
      </ul>`
    }
  </div>`;
}

/**
 * An operator action's outcome, and `act` to run one.
 * @typedef {{
 *   note: string | null,
 *   error: Failure | null,
 *   act: <R>(label: string | ((result: R) => string), call: () => Promise<R>) => Promise<void>,
 * }} Action
 */

/**
 * An operator action and its outcome: `act(label, call)` runs `call`, then shows `label` (text, or
 * a function of the result) or the error, and runs `then` after a success.
 * @param {(result: unknown) => void} [then]
 * @returns {Action}
 */
export function useAction(then) {
  /** @type {State<{ note: string | null, error: Failure | null }>} */
  const [outcome, setOutcome] = useState({ note: null, error: null });
  /** @type {Action['act']} */
  const act = async (label, call) => {
    setOutcome({ note: null, error: null });
    try {
      const result = await call();
      setOutcome({ note: typeof label === 'function' ? label(result) : label, error: null });
      if (then) then(result);
    } catch (error) {
      // What the API's calls reject with (see Failure).
      setOutcome({ note: null, error: /** @type {Failure} */ (error) });
    }
  };
  return { ...outcome, act };
}

/**
 * What the last action of a {@link useAction} said.
 * @param {{ action: Pick<Action, 'note' | 'error'> }} props
 */
export function Outcome({ action }) {
  return html`<${Notice} text=${action.note} /><${ErrorNote} error=${action.error} />`;
}

/** @param {{ text: string | null }} props */
export function Notice({ text }) {
  return text ? html`<div class="note ok" role="status">${text}</div>` : null;
}

/**
 * The form of a page that shows one thing by its id (a job, a batch) when the URL names none:
 * `label` names the field, `panel` is where the id leads.
 * @param {{ label: string, name: string, button: string, panel: string }} props
 */
export function FindById({ label, name, button, panel }) {
  /** @type {State<string>} */
  const [id, setId] = useState('');
  return html`<form
    class="inline"
    onSubmit=${(/** @type {Event} */ e) => {
      e.preventDefault();
      if (id.trim()) navigate(panel, null, id.trim());
    }}
  >
    <label
      >${label}
      <input
        name=${name}
        value=${id}
        onInput=${(/** @type {TargetedEvent<HTMLInputElement>} */ e) => setId(e.currentTarget.value)}
        required
    /></label>
    <button type="submit">${button}</button>
  </form>`;
}

/** @param {{ text: string }} props */
export function Empty({ text }) {
  return html`<p class="empty">${text}</p>`;
}

/**
 * A list page of jobs; each id links to the inspector.
 * @param {{
 *   page: JobPage | null,
 *   pillar: Pillar,
 *   now?: number,
 *   onCancel?: (id: string) => void,
 * }} props
 */
export function JobTable({ page, pillar, now, onCancel }) {
  if (!page) return null;
  if (page.items.length === 0) return html`<${Empty} text="No jobs match." />`;
  /** The time the pillar's list sorts by. @param {JobListItem} j */
  const when = (j) =>
    pillar === 'dlq' ? j.failedAtUtc : pillar === 'archive' ? j.finishedAtUtc : j.enqueuedAtUtc;
  return html`<table class="jobs">
    <thead>
      <tr>
        <th scope="col">Job</th>
        <th scope="col">Queue</th>
        <th scope="col">Type</th>
        <th scope="col">${pillar === 'dlq' ? 'Reason' : 'Status'}</th>
        <th scope="col">Attempts</th>
        <th scope="col">
          ${pillar === 'dlq' ? 'Failed' : pillar === 'archive' ? 'Finished' : 'Enqueued'}
        </th>
        ${pillar === 'hot' && html`<th scope="col">Progress</th>`}
        <th scope="col">${pillar === 'archive' ? 'Duration' : 'Error'}</th>
        <th scope="col">Payload</th>
        ${onCancel && html`<th scope="col"><span class="sr-only">Actions</span></th>`}
      </tr>
    </thead>
    <tbody>
      ${page.items.map(
        (j) =>
          html`<tr key=${j.id}>
            <td><a class="mono id" href=${href('jobs', null, j.id)}>${j.id}</a></td>
            <td>${j.queue}</td>
            <td>${j.type}</td>
            ${
              pillar === 'dlq'
                ? html`<td>${reason(j.failureReason)}</td>`
                : html`<td title=${jobState(j)}>${shortJobState(j)}</td>`
            }
            <td class="num">${j.attemptCount}</td>
            <td title=${when(j) || ''}>${ago(when(j), now)}</td>
            ${pillar === 'hot' && html`<td><${Progress} value=${j.progress} /></td>`}
            <td class="error-prefix">
              ${pillar === 'archive' ? (j.durationMs === null ? '–' : `${num(j.durationMs)} ms`) : (j.errorPrefix || '').split('\n')[0]}
            </td>
            <td class="num">${bytes(j.payloadBytes)}</td>
            ${
              onCancel &&
              html`<td>
                <button
                  type="button"
                  class="small"
                  aria-label=${`Cancel job ${j.id}`}
                  onClick=${() => onCancel(j.id)}
                >
                  Cancel
                </button>
              </td>`
            }
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** @param {{ value: number | null | undefined, label?: string }} props */
export function Progress({ value, label = 'Progress' }) {
  if (value === null || value === undefined) return html`<span class="muted">–</span>`;
  const v = Math.max(0, Math.min(100, Math.round(value)));
  return html`<div
    class="progress"
    role="progressbar"
    aria-label=${label}
    aria-valuemin="0"
    aria-valuemax="100"
    aria-valuenow=${v}
  >
    <div class="bar" style=${{ width: `${v}%` }}></div>
    <span>${`${v}%`}</span>
  </div>`;
}

/**
 * Filter fields shared by the lists: queue, type, (reason | status), from, to, text.
 * @param {{
 *   params: Record<string, string>,
 *   onApply: (params: Record<string, string>) => void,
 *   kind: Pillar,
 * }} props
 */
export function FilterForm({ params, onApply, kind }) {
  /** @type {State<Record<string, string>>} */
  const [draft, setDraft] = useState(params);
  useEffect(() => setDraft(params), [JSON.stringify(params)]);
  /** @param {string} name */
  const field = (name) => (/** @type {TargetedEvent<HTMLInputElement | HTMLSelectElement>} */ e) =>
    setDraft({ ...draft, [name]: e.currentTarget.value });
  /** @param {Event} e */
  const submit = (e) => {
    e.preventDefault();
    onApply(Object.fromEntries(Object.entries(draft).filter(([, v]) => v !== '' && v != null)));
  };
  return html`<form class="filters" onSubmit=${submit}>
    <label>Queue <input name="queue" value=${draft.queue || ''} onInput=${field('queue')} /></label>
    <label>Type <input name="type" value=${draft.type || ''} onInput=${field('type')} /></label>
    ${
      kind === 'dlq' &&
      html`<label
        >Reason
        <select name="reason" value=${draft.reason ?? ''} onChange=${field('reason')}>
          <option value="">any</option>
          ${Object.entries(REASONS).map(([v, t]) => html`<option value=${v}>${t}</option>`)}
        </select></label
      >`
    }
    ${
      kind === 'hot' &&
      html`<label
        >Status
        <select name="status" value=${draft.status ?? ''} onChange=${field('status')}>
          <option value="">any</option>
          <option value="0">Pending</option>
          <option value="1">Fetched</option>
          <option value="2">Processing</option>
          <option value="7">Waiting</option>
        </select></label
      >`
    }
    <label
      >From
      <input
        name="from"
        type="datetime-local"
        value=${local(draft.from)}
        onInput=${dateField(draft, setDraft, 'from')}
    /></label>
    <label
      >To
      <input
        name="to"
        type="datetime-local"
        value=${local(draft.to)}
        onInput=${dateField(draft, setDraft, 'to')}
    /></label>
    <label
      >Text
      <input name="search" type="search" value=${draft.search || ''} onInput=${field('search')}
    /></label>
    <button type="submit">Apply</button>
  </form>`;
}

/**
 * An ISO instant as a datetime-local field's value (local time, to the minute).
 * @param {string | undefined} iso
 */
function local(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const off = d.getTimezoneOffset() * 60_000;
  return new Date(d.getTime() - off).toISOString().slice(0, 16);
}

/**
 * @param {Record<string, string>} draft
 * @param {State<Record<string, string>>[1]} setDraft
 * @param {string} name
 */
function dateField(draft, setDraft, name) {
  return (/** @type {TargetedEvent<HTMLInputElement>} */ e) => {
    const v = e.currentTarget.value;
    setDraft({ ...draft, [name]: v ? new Date(v).toISOString() : '' });
  };
}

/**
 * Keyset pages: "Newer" goes back to the first page, "Older" follows the cursor.
 * @param {{
 *   page: Pick<JobPage, 'nextCursor' | 'scanLimited'> | null,
 *   cursor: string | null,
 *   onFirst: () => void,
 *   onNext: (cursor: string | null) => void,
 * }} props
 */
export function Pager({ page, cursor, onFirst, onNext }) {
  if (!page) return null;
  return html`<nav class="pager" aria-label="Pages">
    <button type="button" disabled=${!cursor} onClick=${onFirst}>First page</button>
    <button type="button" disabled=${!page.nextCursor} onClick=${() => onNext(page.nextCursor)}>
      Next page
    </button>
    ${page.scanLimited && html`<span class="muted">The text search stopped at its scan bound; the next page continues it.</span>`}
  </nav>`;
}
