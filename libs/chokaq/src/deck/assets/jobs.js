// @ts-check
// Live jobs (the hot table, refreshed with every snapshot) and the Archive (keyset pages).
import { html, useState } from './vendor/preact-htm.js';
import { get, send } from './api.js';
import { ErrorNote, FilterForm, JobTable, Outcome, Pager, useAction, useLoad } from './ui.js';
import { navigate } from './router.js';

/**
 * @typedef {import('./ui.js').PanelProps} PanelProps
 * @typedef {import('../../interfaces/job-view.interface').Pillar} Pillar
 */

/**
 * A filtered, paged list of one pillar; the filter lives in the URL.
 * @param {{
 *   route: import('./router.js').Route,
 *   panel: 'live' | 'archive' | 'dlq',
 *   path: 'active' | 'archive' | 'dlq',
 *   pillar: Pillar,
 *   refreshKey?: string | null,
 *   kind: Pillar,
 *   onCancel?: (id: string) => void,
 *   children?: unknown,
 * }} props
 */
export function JobList({ route, panel, path, pillar, refreshKey, kind, onCancel, children }) {
  /** @type {import('./ui.js').State<string | null>} */
  const [cursor, setCursor] = useState(null);
  const params = route.params;
  const key = `${JSON.stringify(params)}|${cursor}|${cursor ? '' : refreshKey || ''}`;
  const { data, error } = useLoad(() => get(path, { ...params, cursor, limit: 50 }), key);
  return html`<section>
    <${FilterForm}
      params=${params}
      kind=${kind}
      onApply=${(/** @type {Record<string, string>} */ p) => {
        setCursor(null);
        navigate(panel, p);
      }}
    />
    <${ErrorNote} error=${error} />
    ${children}
    <${JobTable} page=${data} pillar=${pillar} onCancel=${onCancel} />
    <${Pager} page=${data} cursor=${cursor} onFirst=${() => setCursor(null)} onNext=${setCursor} />
  </section>`;
}

/** @param {PanelProps} props */
export function LiveJobs({ route, snapshot, config }) {
  const action = useAction();
  /** @param {string} id */
  const cancel = (id) =>
    action.act(
      (r) =>
        r.cancelled.length
          ? `Cancelled ${id}`
          : r.cancelRequested.length
            ? `Asked ${id} to stop`
            : `${id} was no longer active`,
      () => send('POST', `jobs/${encodeURIComponent(id)}/cancel`),
    );
  return html`<${JobList}
    route=${route}
    panel="live"
    path="active"
    pillar="hot"
    kind="hot"
    refreshKey=${snapshot && snapshot.at}
    onCancel=${config.readOnly ? undefined : cancel}
  >
    <${Outcome} action=${action} />
  <//>`;
}

/** @param {PanelProps} props */
export function Archive({ route }) {
  return html`<${JobList}
    route=${route}
    panel="archive"
    path="archive"
    pillar="archive"
    kind="archive"
  />`;
}
