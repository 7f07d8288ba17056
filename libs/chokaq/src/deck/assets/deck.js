// @ts-check
// The Deck's shell: configuration, sign-in for bearer-token apps, the live snapshot, navigation.
import { html, render, useEffect, useState } from './vendor/preact-htm.js';
import { AuthRequired, get, openStream, setToken, token } from './api.js';
import { href, parseRoute } from './router.js';
import { Overview } from './overview.js';
import { Queues } from './queues.js';
import { LiveJobs, Archive } from './jobs.js';
import { JobInspector } from './job.js';
import { BatchPanel } from './batch.js';
import { Dlq } from './dlq.js';
import { TopErrors } from './errors.js';
import { Recurring } from './recurring.js';
import { Workers } from './workers.js';
import { AuditLog } from './audit.js';

/** @typedef {import('./api.js').DeckConfig} DeckConfig */
/**
 * @template S
 * @typedef {import('./ui.js').State<S>} State
 */

/**
 * The panels, in the navigation's order: each takes the props the shell passes it.
 * @type {[string, string, (props: import('./ui.js').PanelProps) => unknown][]}
 */
const PANELS = [
  ['overview', 'Overview', Overview],
  ['queues', 'Queues', Queues],
  ['live', 'Live jobs', LiveJobs],
  ['jobs', 'Job inspector', JobInspector],
  ['batches', 'Batches', BatchPanel],
  ['dlq', 'DLQ', Dlq],
  ['archive', 'Archive', Archive],
  ['errors', 'Top errors', TopErrors],
  ['recurring', 'Recurring', Recurring],
  ['workers', 'Workers', Workers],
  ['audit', 'Audit log', AuditLog],
];

function useRoute() {
  /** @type {State<import('./router.js').Route>} */
  const [route, setRoute] = useState(parseRoute());
  useEffect(() => {
    const on = () => setRoute(parseRoute());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** @param {{ onDone: () => void, failed: boolean, hint?: string | null }} props */
function SignIn({ onDone, failed, hint }) {
  /** @type {State<string>} */
  const [value, setValue] = useState('');
  /** @param {Event} e */
  const submit = (e) => {
    e.preventDefault();
    setToken(value.trim());
    onDone();
  };
  return html`<main class="signin">
    <h1>The Deck</h1>
    <form onSubmit=${submit}>
      <p>This app needs a bearer token for the Deck's API. It stays in this tab only.</p>
      ${hint && html`<p class="note">The app says: ${hint}</p>`}
      ${failed && html`<p class="note error" role="alert">That token was refused.</p>`}
      <label
        >Token
        <input
          type="password"
          autocomplete="off"
          required
          value=${value}
          onInput=${(/** @type {import('./ui.js').TargetedEvent<HTMLInputElement>} */ e) =>
            setValue(e.currentTarget.value)}
      /></label>
      <button type="submit">Sign in</button>
    </form>
  </main>`;
}

function App() {
  /**
   * The configuration, or why it could not be read. An error's text is never empty, so past a
   * truthy `error` check it is the configuration (which the checker cannot tell: hence the casts).
   * @type {State<(DeckConfig & { error?: undefined }) | { error: string } | null>}
   */
  const [config, setConfig] = useState(null);
  /** @type {State<{ needed: boolean, failed: boolean, hint?: string | null }>} */
  const [auth, setAuth] = useState({ needed: false, failed: false });
  /** @type {State<number>} */
  const [round, setRound] = useState(0);
  /** @type {State<import('./api.js').DeckSnapshot | null>} */
  const [snapshot, setSnapshot] = useState(null);
  /** @type {State<'connecting' | 'live' | 'offline' | 'auth'>} */
  const [live, setLive] = useState('connecting');
  const route = useRoute();

  useEffect(() => {
    get('config').then(
      (c) => {
        setConfig(c);
        setAuth({ needed: false, failed: false });
      },
      (e) => {
        if (e instanceof AuthRequired) {
          setAuth({ needed: true, failed: token() !== null, hint: e.hint });
        } else setConfig({ error: e.message });
      },
    );
  }, [round]);

  useEffect(() => {
    if (!config || config.error) return undefined;
    return openStream({
      heartbeatMs: /** @type {DeckConfig} */ (config).heartbeatMs,
      onState: (s) => {
        if (s === 'auth') setAuth({ needed: true, failed: true });
        setLive(s);
      },
      onEvent: (type, data) => {
        if (type === 'snapshot') setSnapshot(data);
      },
    });
  }, [config]);

  if (auth.needed) {
    return html`<${SignIn}
      failed=${auth.failed}
      hint=${auth.hint}
      onDone=${() => setRound((r) => r + 1)}
    />`;
  }
  if (!config) return html`<p class="boot">Loading The Deck…</p>`;
  if (config.error) return html`<p class="note error" role="alert">${config.error}</p>`;

  const active = PANELS.find(([id]) => id === route.panel) || PANELS[0];
  const Panel = active[2];
  const online = live === 'live' && snapshot && snapshot.ok;
  return html`<div class="shell">
    <header class="top">
      <span class="brand">ChokaQ · The Deck</span>
      <span class=${`badge ${online ? 'live' : 'offline'}`} role="status"
        >${online ? 'Live' : 'Offline'}</span
      >
      ${/** @type {DeckConfig} */ (config).readOnly && html`<span class="badge readonly">Read-only</span>`}
      <span class="muted version">${`v${/** @type {DeckConfig} */ (config).version}`}</span>
    </header>
    <nav class="panels" aria-label="Panels">
      <ul>
        ${PANELS.map(
          ([id, title]) =>
            html`<li>
              <a href=${href(id)} aria-current=${id === active[0] ? 'page' : undefined}>${title}</a>
            </li>`,
        )}
      </ul>
    </nav>
    <main class="panel" id="panel">
      <h1>${active[1]}</h1>
      ${snapshot && !snapshot.ok && html`<p class="note error" role="alert">${`The last read failed: ${snapshot.error}`}</p>`}
      <${Panel}
        config=${config}
        snapshot=${snapshot && snapshot.ok ? snapshot : null}
        route=${route}
      />
    </main>
  </div>`;
}

render(html`<${App} />`, document.getElementById('deck'));
