// @ts-check
// Audit log: every operator action, newest first, with its actor and what it touched.
import { html, useState } from './vendor/preact-htm.js';
import { get } from './api.js';
import { num, time } from './format.js';
import { Empty, ErrorNote, useLoad } from './ui.js';
import { navigate } from './router.js';

/** @param {import('./ui.js').PanelProps} props */
export function AuditLog({ route }) {
  /** @type {import('./ui.js').State<string | null>} */
  const [cursor, setCursor] = useState(null);
  /** @type {import('./ui.js').State<string>} */
  const [actor, setActor] = useState(route.params.actor || '');
  const key = `${JSON.stringify(route.params)}|${cursor}`;
  const { data, error } = useLoad(() => get('audit', { ...route.params, cursor, limit: 50 }), key);
  return html`<section>
    <form
      class="filters"
      onSubmit=${(/** @type {Event} */ e) => {
        e.preventDefault();
        setCursor(null);
        navigate('audit', { actor });
      }}
    >
      <label
        >Actor
        <input
          name="actor"
          value=${actor}
          onInput=${(/** @type {import('./ui.js').TargetedEvent<HTMLInputElement>} */ e) =>
            setActor(e.currentTarget.value)}
      /></label>
      <button type="submit">Apply</button>
    </form>
    <${ErrorNote} error=${error} />
    ${data && data.items.length === 0 && html`<${Empty} text="No audit entries." />`}
    ${
      data &&
      data.items.length > 0 &&
      html`<table class="audit">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Actor</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col">Rows</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          ${data.items.map(
            (a) =>
              html`<tr key=${a.id}>
                <td>${time(a.atUtc)}</td>
                <td>${a.actor}</td>
                <td>${a.action}</td>
                <td class="mono">${a.target || '–'}</td>
                <td class="num">${num(a.rowsAffected)}</td>
                <td class="details">${a.details ? JSON.stringify(a.details) : ''}</td>
              </tr>`,
          )}
        </tbody>
      </table>`
    }
    ${
      data &&
      html`<nav class="pager" aria-label="Pages">
        <button type="button" disabled=${!cursor} onClick=${() => setCursor(null)}>
          First page
        </button>
        <button
          type="button"
          disabled=${!data.nextCursor}
          onClick=${() => setCursor(data.nextCursor)}
        >
          Next page
        </button>
      </nav>`
    }
  </section>`;
}
