// @ts-check
// Recurring: each schedule's last and next slot, its last run, pause/resume and trigger now.
import { html, useState } from './vendor/preact-htm.js';
import { get, send } from './api.js';
import { status, time } from './format.js';
import { Empty, ErrorNote, Outcome, useAction, useLoad } from './ui.js';
import { href } from './router.js';

/** @param {import('./ui.js').PanelProps} props */
export function Recurring({ config, snapshot }) {
  /** @type {import('./ui.js').State<number>} */
  const [round, setRound] = useState(0);
  const action = useAction(() => setRound((r) => r + 1));
  const act = action.act;
  const refresh = snapshot ? Math.floor(new Date(snapshot.at).getTime() / 10_000) : 0;
  const { data, error } = useLoad(() => get('recurring'), `${refresh}|${round}`);
  if (error && !data) return html`<${ErrorNote} error=${error} />`;
  if (!data) return html`<p class="muted">Loading…</p>`;
  if (data.length === 0) return html`<${Empty} text="No recurring jobs." />`;
  return html`<${Outcome} action=${action} />
    <table class="recurring">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Schedule</th>
          <th scope="col">Queue</th>
          <th scope="col">Last slot</th>
          <th scope="col">Next slot</th>
          <th scope="col">Last run</th>
          <th scope="col">State</th>
          ${!config.readOnly && html`<th scope="col"><span class="sr-only">Actions</span></th>`}
        </tr>
      </thead>
      <tbody>
        ${data.map((r) => {
          const name = encodeURIComponent(r.name);
          return html`<tr key=${r.name}>
            <td>${r.name}</td>
            <td class="mono">${`${r.cron} (${r.timeZone})`}</td>
            <td>${r.queue}</td>
            <td>${time(r.lastSlotUtc)}</td>
            <td>${time(r.nextSlotUtc)}</td>
            <td>
              ${r.lastRun ? html`<a href=${href('jobs', null, r.lastRun.id)}>${status(r.lastRun.status)}</a>` : '–'}
            </td>
            <td>${r.isPaused ? 'Paused' : 'Active'}</td>
            ${
              !config.readOnly &&
              html`<td class="controls">
                ${
                  r.isPaused
                    ? html`<button
                        type="button"
                        class="small"
                        onClick=${() => act(`Resumed ${r.name}`, () => send('POST', `recurring/${name}/resume`))}
                      >
                        Resume
                      </button>`
                    : html`<button
                        type="button"
                        class="small"
                        onClick=${() => act(`Paused ${r.name}`, () => send('POST', `recurring/${name}/pause`))}
                      >
                        Pause
                      </button>`
                }
                <button
                  type="button"
                  class="small"
                  onClick=${() => act(`Triggered ${r.name}`, () => send('POST', `recurring/${name}/trigger`))}
                >
                  Trigger now
                </button>
              </td>`
            }
          </tr>`;
        })}
      </tbody>
    </table>`;
}
