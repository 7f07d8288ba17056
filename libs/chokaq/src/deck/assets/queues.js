// @ts-check
// Queues: a card per queue with its counts, lag and recent outcomes, its group limits and busiest
// groups, and its controls.
import { html, useState } from './vendor/preact-htm.js';
import { send } from './api.js';
import { clock, ms, num } from './format.js';
import { Empty, Outcome, useAction } from './ui.js';
import { href } from './router.js';

/**
 * @typedef {import('./api.js').DeckQueue} DeckQueue
 * @typedef {import('./api.js').QueuePatchBody} QueuePatchBody
 */

/** @param {import('./ui.js').PanelProps} props */
export function Queues({ config, snapshot }) {
  /** @type {import('./ui.js').State<boolean>} */
  const [showHidden, setShowHidden] = useState(false);
  const action = useAction();
  if (!snapshot) return html`<p class="muted">Waiting for the first snapshot…</p>`;
  const queues = snapshot.queues.filter((q) => showHidden || q.isActive);
  const hidden = snapshot.queues.length - snapshot.queues.filter((q) => q.isActive).length;

  return html`<section>
    <${Outcome} action=${action} />
    ${
      hidden > 0 &&
      html`<label class="toggle"
        ><input
          type="checkbox"
          checked=${showHidden}
          onChange=${(/** @type {import('./ui.js').TargetedEvent<HTMLInputElement>} */ e) =>
            setShowHidden(e.currentTarget.checked)}
        />
        ${`Show ${hidden} hidden queue(s)`}</label
      >`
    }
    ${queues.length === 0 && html`<${Empty} text="No queues yet: they appear with their first job." />`}
    <div class="cards">
      ${queues.map((q) => html`<${QueueCard} key=${q.name} queue=${q} readOnly=${config.readOnly} act=${action.act} />`)}
    </div>
  </section>`;
}

/** @param {{ queue: DeckQueue, readOnly: boolean, act: (label: string, run: () => Promise<unknown>) => void }} props */
function QueueCard({ queue: q, readOnly, act }) {
  const name = encodeURIComponent(q.name);
  /**
   * @param {QueuePatchBody} body
   * @param {string} label
   */
  const patch = (body, label) => act(label, () => send('PATCH', `queues/${name}`, body));
  return html`<article
    class=${`card ${q.isPaused ? 'paused' : ''} ${q.isActive ? '' : 'hidden'}`}
    aria-label=${`Queue ${q.name}`}
  >
    <header>
      <h2>${q.name}</h2>
      ${q.isPaused && html`<span class="badge paused">Paused</span>`}
      ${!q.isActive && html`<span class="badge">Hidden</span>`}
      ${q.circuits.length > 0 && html`<span class="badge circuit">Circuit ${circuitWord(q.circuits)}</span>`}
    </header>
    ${q.circuits.length > 0 && html`<${Circuits} queue=${q} />`}
    <dl class="figures">
      <div>
        <dt>Pending</dt>
        <dd data-figure="pending">${num(q.pending)}</dd>
      </div>
      <div>
        <dt>Running</dt>
        <dd data-figure="running">${num(q.fetched + q.processing)}</dd>
      </div>
      <div>
        <dt>Waiting</dt>
        <dd data-figure="waiting">${num(q.waiting)}</dd>
      </div>
      <div>
        <dt>Lag</dt>
        <dd data-figure="lag">${ms(q.maxLagMs)}</dd>
      </div>
      <div>
        <dt>Held</dt>
        <dd data-figure="held">${num(q.heldPending)}</dd>
      </div>
      <div>
        <dt>Succeeded 5 min</dt>
        <dd data-figure="succeeded5m">${num(q.succeeded5m)}</dd>
      </div>
      <div>
        <dt>Failed 5 min</dt>
        <dd data-figure="failed5m">${num(q.failed5m)}</dd>
      </div>
      <div>
        <dt>Deferred (lifetime)</dt>
        <dd data-figure="deferred">${num(q.deferredTotal)}</dd>
      </div>
      <div>
        <dt>Max workers</dt>
        <dd>${q.maxWorkers === null ? 'unlimited' : num(q.maxWorkers)}</dd>
      </div>
      <div>
        <dt>Rate limit</dt>
        <dd data-figure="rateLimit">
          ${q.rateLimit ? `${num(q.rateLimit.max)} per ${num(q.rateLimit.perMs)} ms` : 'unlimited'}
        </dd>
      </div>
      <div>
        <dt>Group limits</dt>
        <dd data-figure="groupLimits">${groupLimitsText(q)}</dd>
      </div>
    </dl>
    ${isGrouped(q) && html`<${Groups} queue=${q} />`}
    <p class="links">
      <a href=${href('live', { queue: q.name })}>Live jobs</a>
      <a href=${href('dlq', { queue: q.name })}>DLQ</a>
    </p>
    ${
      !readOnly &&
      html`<div class="controls">
        ${
          q.isPaused
            ? html`<button
                type="button"
                onClick=${() => act(`Resumed ${q.name}`, () => send('POST', `queues/${name}/resume`))}
              >
                Resume
              </button>`
            : html`<button
                type="button"
                onClick=${() => act(`Paused ${q.name}`, () => send('POST', `queues/${name}/pause`))}
              >
                Pause
              </button>`
        }
        <button
          type="button"
          onClick=${() => patch({ isActive: !q.isActive }, `${q.isActive ? 'Hid' : 'Showed'} ${q.name}`)}
        >
          ${q.isActive ? 'Hide' : 'Show'}
        </button>
        <${Limits} queue=${q} patch=${patch} />
      </div>`
    }
  </article>`;
}

/** A queue with a group limit: its claim takes turns across its groups (`NewJob.group`). */
/** @param {DeckQueue} q */
function isGrouped(q) {
  return q.groupConcurrency !== null || q.groupRateLimit !== null;
}

/**
 * A queue's group limits in words: `2 running per group, 10 per 60,000 ms`, `2 running per group`,
 * `10 per 60,000 ms per group`, or `none`.
 * @param {DeckQueue} q
 */
function groupLimitsText(q) {
  const rate =
    q.groupRateLimit && `${num(q.groupRateLimit.max)} per ${num(q.groupRateLimit.perMs)} ms`;
  if (q.groupConcurrency === null) return rate ? `${rate} per group` : 'none';
  const running = `${num(q.groupConcurrency)} running per group`;
  return rate ? `${running}, ${rate}` : running;
}

/**
 * A grouped queue's busiest groups (the snapshot reads at most five), most running first. Group ''
 * holds its jobs without a group: shown as "(none)".
 * @param {{ queue: DeckQueue }} props
 */
function Groups({ queue: q }) {
  if (q.groups.length === 0) {
    return html`<p class="muted" data-figure="groups">No Pending or running job in any group.</p>`;
  }
  return html`<table class="groups" data-figure="groups">
    <caption>
      Busiest groups
    </caption>
    <thead>
      <tr>
        <th scope="col">Group</th>
        <th scope="col" class="num">Running</th>
        <th scope="col" class="num">Pending</th>
      </tr>
    </thead>
    <tbody>
      ${q.groups.map(
        (g) =>
          html`<tr key=${g.group}>
            <td class=${g.group === '' ? 'muted' : 'mono'}>
              ${g.group === '' ? '(none)' : g.group}
            </td>
            <td class="num">${num(g.running)}</td>
            <td class="num">${num(g.pending)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** `open` when any of the queue's circuits is open, else `half-open`. */
/** @param {DeckQueue['circuits']} circuits */
function circuitWord(circuits) {
  return circuits.some((c) => c.state === 'open') ? 'open' : 'half-open';
}

/**
 * The queue's job types whose circuit is not closed on some live worker, and the jobs it holds:
 * they wait Pending, unrun, until the circuit lets a probe through.
 */
/** @param {{ queue: DeckQueue }} props */
function Circuits({ queue: q }) {
  const types = q.circuits
    .map((c) => `${c.type} ${c.state} on ${num(c.workers)} worker${c.workers === 1 ? '' : 's'}`)
    .join(', ');
  return html`<p class="note warn" data-figure="circuits">
    Circuit: ${types}.
    ${
      q.heldPending > 0
        ? ` ${num(q.heldPending)} job${q.heldPending === 1 ? '' : 's'} held until ${clock(q.heldUntilUtc)} or later.`
        : ''
    }
  </p>`;
}

/**
 * A queue's limits as the form holds them: a number, or the field's text once edited ('' for none).
 * @typedef {{
 *   maxWorkers: number | string,
 *   zombieTimeoutSeconds: number | string,
 *   executionTimeoutMs: number | string,
 *   retryZombies: boolean,
 *   rateMax: number | string,
 *   ratePerMs: number | string,
 *   groupConcurrency: number | string,
 *   groupRateMax: number | string,
 *   groupRatePerMs: number | string,
 * }} LimitsDraft
 */

/**
 * The number fields of a queue: empty clears the limit (null). A rate limit (the queue's, and each
 * group's) is two fields, the starts and the window; both empty remove it, one alone is refused by
 * the core (a 400 shown).
 * @param {{ queue: DeckQueue, patch: (body: QueuePatchBody, label: string) => void }} props
 */
function Limits({ queue: q, patch }) {
  /** @type {import('./ui.js').State<LimitsDraft>} */
  const [draft, setDraft] = useState({
    maxWorkers: q.maxWorkers ?? '',
    zombieTimeoutSeconds: q.zombieTimeoutSeconds ?? '',
    executionTimeoutMs: q.executionTimeoutMs ?? '',
    retryZombies: q.retryZombies,
    rateMax: q.rateLimit?.max ?? '',
    ratePerMs: q.rateLimit?.perMs ?? '',
    groupConcurrency: q.groupConcurrency ?? '',
    groupRateMax: q.groupRateLimit?.max ?? '',
    groupRatePerMs: q.groupRateLimit?.perMs ?? '',
  });
  /** @param {Exclude<keyof LimitsDraft, 'retryZombies'>} name */
  const field = (name) => (/** @type {import('./ui.js').TargetedEvent<HTMLInputElement>} */ e) =>
    setDraft({ ...draft, [name]: e.currentTarget.value });
  /** @param {number | string | null} v */
  const value = (v) => (v === '' || v === null ? null : Number(v));
  /**
   * A rate limit from its two fields: null when both are empty, else both halves as they are.
   * @param {number | string} max
   * @param {number | string} perMs
   */
  const rate = (max, perMs) =>
    value(max) === null && value(perMs) === null ? null : { max: value(max), perMs: value(perMs) };
  /** @param {Event} e */
  const submit = (e) => {
    e.preventDefault();
    patch(
      {
        maxWorkers: value(draft.maxWorkers),
        zombieTimeoutSeconds: value(draft.zombieTimeoutSeconds),
        executionTimeoutMs: value(draft.executionTimeoutMs),
        retryZombies: draft.retryZombies,
        rateLimit: rate(draft.rateMax, draft.ratePerMs),
        groupConcurrency: value(draft.groupConcurrency),
        groupRateLimit: rate(draft.groupRateMax, draft.groupRatePerMs),
      },
      `Saved the limits of ${q.name}`,
    );
  };
  /**
   * @param {string} label
   * @param {Exclude<keyof LimitsDraft, 'retryZombies'>} name
   * @param {number} min
   */
  const number = (label, name, min) =>
    html`<label
      >${label}
      <input type="number" min=${min} name=${name} value=${draft[name]} onInput=${field(name)}
    /></label>`;
  return html`<form class="limits" onSubmit=${submit}>
    ${number('Max workers', 'maxWorkers', 0)}
    ${number('Zombie timeout (s)', 'zombieTimeoutSeconds', 1)}
    ${number('Execution timeout (ms)', 'executionTimeoutMs', 1)}
    ${number('Rate limit: starts', 'rateMax', 1)} ${number('per window (ms)', 'ratePerMs', 1)}
    ${number('Group concurrency', 'groupConcurrency', 1)}
    ${number('Group rate: starts', 'groupRateMax', 1)}
    ${number('per window (ms)', 'groupRatePerMs', 1)}
    <label class="check"
      ><input
        type="checkbox"
        name="retryZombies"
        checked=${draft.retryZombies}
        onChange=${(/** @type {import('./ui.js').TargetedEvent<HTMLInputElement>} */ e) =>
          setDraft({ ...draft, retryZombies: e.currentTarget.checked })}
      />
      Retry zombies</label
    >
    <button type="submit">Save limits</button>
  </form>`;
}
