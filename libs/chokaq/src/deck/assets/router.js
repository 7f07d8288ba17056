// Hash routing: `#/panel`, `#/panel?filter=…` (a DLQ view can be shared by its URL), `#/jobs/<id>`.

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

export function href(panel, params, id) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const qs = q.toString();
  return `#/${panel}${id ? `/${encodeURIComponent(id)}` : ''}${qs ? `?${qs}` : ''}`;
}

export function navigate(panel, params, id) {
  location.hash = href(panel, params, id);
}
