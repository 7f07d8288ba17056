// @ts-check
// Hash routing: `#/panel`, `#/panel?filter=…` (a DLQ view can be shared by its URL), `#/jobs/<id>`.

/**
 * Where the page is: its panel, a job's id (the inspector's), and the panel's filter.
 * @typedef {{ panel: string, id: string | null, params: Record<string, string> }} Route
 */

/**
 * A view's filter; empty values are left out of the URL.
 * @typedef {Record<string, string | number | null | undefined>} Params
 */

/**
 * @param {string} [hash]
 * @returns {Route}
 */
export function parseRoute(hash = location.hash) {
  const text = hash.replace(/^#\/?/, '');
  const [path, query = ''] = text.split('?');
  const [panel = '', ...rest] = path.split('/');
  return {
    panel: panel || 'overview',
    id: rest.length ? decodeURIComponent(rest.join('/')) : null,
    params: Object.fromEntries(new URLSearchParams(query)),
  };
}

/**
 * @param {string} panel
 * @param {Params | null} [params]
 * @param {string | null} [id]
 */
function hash(panel, params, id) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const qs = q.toString();
  return `#/${panel}${id ? `/${encodeURIComponent(id)}` : ''}${qs ? `?${qs}` : ''}`;
}

/**
 * A link to a view, on this very document. A bare `#/…` would resolve against `<base href>` (the
 * Deck's path with a trailing slash, which the relative asset URLs need): on a page opened without
 * that slash (`/chokaq`, as apps print it) the first click would load the whole page again, assets,
 * configuration, stream and all.
 * @param {string} panel
 * @param {Params | null} [params]
 * @param {string | null} [id]
 */
export function href(panel, params, id) {
  return `${location.pathname}${location.search}${hash(panel, params, id)}`;
}

/**
 * @param {string} panel
 * @param {Params | null} [params]
 * @param {string | null} [id]
 */
export function navigate(panel, params, id) {
  location.hash = hash(panel, params, id);
}
