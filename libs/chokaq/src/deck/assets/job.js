// @ts-check
// Job inspector: one job whole (payload, and the stored result of an archived job, through the
// app's redact), its attempts that did not end in the archive, its audit entries, and the
// actions that fit its pillar: cancel (active), edit-and-retry or resurrect, purge (DLQ).
import { html, useState } from './vendor/preact-htm.js';
import { get, send } from './api.js';
import { ago, bytes, jobState, ms, reason, time } from './format.js';
import { Empty, ErrorNote, Outcome, useAction, useLoad } from './ui.js';
import { navigate } from './router.js';

/**
 * @template S
 * @typedef {import('./ui.js').State<S>} State
 */
/** @typedef {import('./ui.js').TargetedEvent<HTMLInputElement | HTMLTextAreaElement>} FieldEvent */

/** @param {import('./ui.js').PanelProps} props */
export function JobInspector({ route, config }) {
  if (!route.id) return html`<${FindJob} />`;
  return html`<${Job} key=${route.id} id=${route.id} readOnly=${config.readOnly} />`;
}

function FindJob() {
  /** @type {State<string>} */
  const [id, setId] = useState('');
  return html`<form
    class="inline"
    onSubmit=${(/** @type {Event} */ e) => {
      e.preventDefault();
      if (id.trim()) navigate('jobs', null, id.trim());
    }}
  >
    <label
      >Job id
      <input
        name="job-id"
        value=${id}
        onInput=${(/** @type {FieldEvent} */ e) => setId(e.currentTarget.value)}
        required
    /></label>
    <button type="submit">Inspect</button>
  </form>`;
}

/** @param {{ id: string, readOnly: boolean }} props */
function Job({ id, readOnly }) {
  const { data, error, reload } = useLoad(() => get(`jobs/${encodeURIComponent(id)}`), id);
  const action = useAction(() => reload());
  if (error && !data) return html`<${ErrorNote} error=${error} />`;
  if (!data) return html`<p class="muted">Loading…</p>`;
  const { job, audit } = data;

  return html`<article class="job" aria-label=${`Job ${job.id}`}>
    <${Outcome} action=${action} />
    <dl class="fields">
      <div>
        <dt>Id</dt>
        <dd class="mono">${job.id}</dd>
      </div>
      <div>
        <dt>Where</dt>
        <dd>${job.pillar}</dd>
      </div>
      <div>
        <dt>Status</dt>
        <dd data-field="status">${jobState(job)}</dd>
      </div>
      ${
        job.pillar === 'dlq' &&
        html`<div>
          <dt>Reason</dt>
          <dd>${reason(job.failureReason)}</dd>
        </div>`
      }
      <div>
        <dt>Queue</dt>
        <dd>${job.queue}</dd>
      </div>
      <div>
        <dt>Type</dt>
        <dd>${job.type}</dd>
      </div>
      <div>
        <dt>Priority</dt>
        <dd>${job.priority}</dd>
      </div>
      <div>
        <dt>Tags</dt>
        <dd>${(job.tags || []).join(', ') || '–'}</dd>
      </div>
      <div>
        <dt>Attempts</dt>
        <dd>${job.attemptCount}</dd>
      </div>
      <div>
        <dt>Created</dt>
        <dd>${time(job.createdAtUtc)}</dd>
      </div>
      <div>
        <dt>Scheduled</dt>
        <dd>${time(job.scheduledAtUtc)}</dd>
      </div>
      <div>
        <dt>Started</dt>
        <dd>${time(job.startedAtUtc)}</dd>
      </div>
      <div>
        <dt>Finished</dt>
        <dd>${time(job.finishedAtUtc || job.failedAtUtc)}</dd>
      </div>
      <div>
        <dt>Duration</dt>
        <dd>${ms(job.durationMs)}</dd>
      </div>
      <div>
        <dt>Worker</dt>
        <dd>${job.workerId || '–'}</dd>
      </div>
      <div>
        <dt>Heartbeat</dt>
        <dd>${ago(job.heartbeatUtc)}</dd>
      </div>
      <div>
        <dt>Progress</dt>
        <dd>${job.progress === null || job.progress === undefined ? '–' : `${job.progress}%`}</dd>
      </div>
    </dl>
    <h2>Payload</h2>
    <pre class="payload" data-field="payload">${pretty(job.payload)}</pre>
    ${
      hasResult(job) &&
      html`<h2>Result</h2>
        <pre class="result" data-field="result">${pretty(job.result)}</pre>`
    }
    ${
      (job.errorDetails || job.lastError) &&
      html`<h2>Error</h2>
        <pre class="error-text" data-field="error">${job.errorDetails || job.lastError}</pre>`
    }
    ${!readOnly && html`<${Actions} job=${job} act=${action.act} />`}
    <h2>Attempts</h2>
    <${Attempts} attempts=${job.attempts ?? []} />
    <h2>Audit</h2>
    ${
      audit.length === 0
        ? html`<${Empty} text="No operator action on this job." />`
        : html`<table class="audit">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Actor</th>
                <th scope="col">Action</th>
                <th scope="col">Rows</th>
              </tr>
            </thead>
            <tbody>
              ${audit.map(
                (a) =>
                  html`<tr key=${a.id}>
                    <td>${time(a.atUtc)}</td>
                    <td>${a.actor}</td>
                    <td>${a.action}</td>
                    <td class="num">${a.rowsAffected}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    <p class="muted">
      ${`Payload ${bytes(new Blob([JSON.stringify(job.payload ?? null)]).size)} as JSON.`}
    </p>
  </article>`;
}

/**
 * Whether the job has a stored result to show: an archived run of a handler that records its
 * result (`recordResult`) and returned something other than null. Absent is treated as null, for a
 * `redact` that builds a job without it.
 * @param {import('./api.js').JobView} job
 */
function hasResult(job) {
  return job.pillar === 'archive' && job.result !== null && job.result !== undefined;
}

/** @param {unknown} value */
function pretty(value) {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/**
 * @param {{ job: import('./api.js').JobView, act: (label: string, run: () => Promise<unknown>) => void }} props
 */
function Actions({ job, act }) {
  const id = encodeURIComponent(job.id);
  /** @type {State<string>} */
  const [payload, setPayload] = useState(pretty(job.payload));
  /** @type {State<string>} */
  const [priority, setPriority] = useState(String(job.priority));
  /** @type {State<string>} */
  const [tags, setTags] = useState((job.tags || []).join(', '));
  /** @type {State<string | null>} */
  const [parseError, setParseError] = useState(null);
  /** @type {State<boolean>} */
  const [purging, setPurging] = useState(false);

  if (job.pillar === 'hot') {
    return html`<div class="controls">
      <button
        type="button"
        onClick=${() => act('Cancel requested.', () => send('POST', `jobs/${id}/cancel`))}
      >
        Cancel job
      </button>
    </div>`;
  }
  if (job.pillar !== 'dlq') return null;

  /** @param {Event} e */
  const retry = (e) => {
    e.preventDefault();
    /** @type {unknown} */
    let parsed;
    try {
      parsed = JSON.parse(payload);
    } catch (err) {
      setParseError(
        `The payload is not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
      );
      return;
    }
    setParseError(null);
    const list = tags
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    act('Resurrected: the job is pending again.', () =>
      send('POST', `jobs/${id}/resurrect`, {
        payload: parsed,
        priority: Number(priority),
        tags: list,
      }),
    );
  };

  return html`<form class="edit" onSubmit=${retry}>
    <h2>Edit and retry</h2>
    <label
      >Payload (JSON)
      <textarea
        name="payload"
        rows="8"
        value=${payload}
        onInput=${(/** @type {FieldEvent} */ e) => setPayload(e.currentTarget.value)}
      ></textarea>
    </label>
    ${parseError && html`<p class="note error" role="alert">${parseError}</p>`}
    <label
      >Priority
      <input
        type="number"
        name="priority"
        value=${priority}
        onInput=${(/** @type {FieldEvent} */ e) => setPriority(e.currentTarget.value)}
    /></label>
    <label
      >Tags
      <input
        name="tags"
        value=${tags}
        onInput=${(/** @type {FieldEvent} */ e) => setTags(e.currentTarget.value)}
    /></label>
    <div class="controls">
      <button type="submit">Resurrect</button>
      ${
        purging
          ? html`<button
                type="button"
                class="danger"
                onClick=${() => act('Purged.', () => send('POST', `jobs/${id}/purge`))}
              >
                Confirm purge
              </button>
              <button type="button" onClick=${() => setPurging(false)}>Keep it</button>`
          : html`<button type="button" class="danger" onClick=${() => setPurging(true)}>
              Purge
            </button>`
      }
    </div>
  </form>`;
}

/**
 * The attempts' outcomes as the table names them.
 * @type {Record<import('../../interfaces/job-view.interface').JobAttemptOutcome, string>}
 */
const OUTCOMES = {
  retried: 'Retried',
  timeout: 'Timed out',
  zombie: 'Zombie',
  cancelled: 'Cancelled',
  failed: 'Failed',
};

/**
 * The runs that did not end in the archive, oldest first; a successful last run is the archive
 * row itself, so a job that succeeded first time shows none.
 */
/** @param {{ attempts: import('./api.js').JobAttempt[] }} props */
function Attempts({ attempts }) {
  if (attempts.length === 0) {
    return html`<${Empty} text="No failed or interrupted attempt recorded." />`;
  }
  return html`<table class="attempts">
    <thead>
      <tr>
        <th scope="col">#</th>
        <th scope="col">Outcome</th>
        <th scope="col">Started</th>
        <th scope="col" class="num">Took</th>
        <th scope="col">Worker</th>
        <th scope="col">Error</th>
      </tr>
    </thead>
    <tbody>
      ${attempts.map(
        (a) =>
          html`<tr key=${a.seq}>
            <td class="num" title=${`Attempt ${a.attempt} of this run of the job`}>${a.seq}</td>
            <td data-field="outcome">${OUTCOMES[a.outcome] ?? a.outcome}</td>
            <td>${a.startedAtUtc ? time(a.startedAtUtc) : '–'}</td>
            <td class="num">
              ${a.durationMs === null || a.durationMs === undefined ? '–' : ms(a.durationMs)}
            </td>
            <td class="mono">${a.workerId ?? '–'}</td>
            <td class="error-text">${a.error ? a.error.split('\n')[0] : '–'}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}
