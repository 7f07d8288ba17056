// @ts-check
// Job inspector: one job whole (payload, and the stored result of an archived job, through the
// app's redact), its attempts that did not end in the archive, its audit entries, and the
// actions that fit its pillar: cancel, and for a Pending job run-now and edit (active),
// edit-and-retry or resurrect, purge (DLQ).
import { html, useState } from './vendor/preact-htm.js';
import { get, send } from './api.js';
import { ago, bytes, jobState, ms, reason, time } from './format.js';
import { Empty, ErrorNote, FindById, Outcome, useAction, useLoad } from './ui.js';
import { href } from './router.js';

/**
 * @template S
 * @typedef {import('./ui.js').State<S>} State
 */
/** @typedef {import('./ui.js').TargetedEvent<HTMLInputElement | HTMLTextAreaElement>} FieldEvent */

/** @param {import('./ui.js').PanelProps} props */
export function JobInspector({ route, config }) {
  if (!route.id) {
    return html`<${FindById} label="Job id" name="job-id" button="Inspect" panel="jobs" />`;
  }
  return html`<${Job} key=${route.id} id=${route.id} readOnly=${config.readOnly} />`;
}

/** @param {{ id: string, readOnly: boolean }} props */
function Job({ id, readOnly }) {
  const { data, error, reload } = useLoad(() => get(`jobs/${encodeURIComponent(id)}`), id);
  const action = useAction(() => reload());
  if (error && !data) return html`<${ErrorNote} error=${error} />`;
  if (!data) return html`<p class="muted">Loading…</p>`;
  const { job, audit, dependencies } = data;

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
        <dd data-field="priority">${job.priority}</dd>
      </div>
      <div>
        <dt>Tags</dt>
        <dd>${(job.tags || []).join(', ') || '–'}</dd>
      </div>
      ${
        job.dedupe &&
        html`<div>
          <dt>Dedupe key</dt>
          <dd data-field="dedupe">${dedupeText(job.dedupe)}</dd>
        </div>`
      }
      ${
        job.group &&
        html`<div>
          <dt>Group</dt>
          <dd class="mono" data-field="group">${job.group}</dd>
        </div>`
      }
      ${
        job.batchId &&
        html`<div>
          <dt>Batch</dt>
          <dd class="mono" data-field="batch">
            <a href=${href('batches', null, job.batchId)}>${job.batchId}</a>
          </dd>
        </div>`
      }
      ${
        job.waitingOn !== null &&
        job.waitingOn !== undefined &&
        html`<div>
          <dt>Waiting on</dt>
          <dd data-field="waiting-on">${job.waitingOn}</dd>
        </div>`
      }
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
    ${
      dependencies &&
      dependencies.dependsOn.length > 0 &&
      html`<h2>Waits on</h2>
        <${Edges} edges=${dependencies.dependsOn} waitsOn=${true} />`
    }
    ${
      dependencies &&
      dependencies.dependents.length > 0 &&
      html`<h2>Waited on by</h2>
        <${Edges} edges=${dependencies.dependents} waitsOn=${false} />
        ${dependencies.truncated && html`<p class="muted">The first 1,000 dependents.</p>`}`
    }
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
 * A job's edges of one direction (`waitsOn`: the jobs it waits on; else the jobs waiting on it):
 * the other job (linked), the edge's policy and state; a waiting edge on a dependency in the DLQ
 * reads "blocked".
 * @param {{ edges: import('./api.js').DependencyView[], waitsOn: boolean }} props
 */
function Edges({ edges, waitsOn }) {
  /** @param {import('./api.js').DependencyView} e */
  const other = (e) => (waitsOn ? e.dependsOn : e.jobId);
  const label = waitsOn ? 'Dependency' : 'Dependent';
  return html`<table class="edges" data-field=${waitsOn ? 'depends-on' : 'dependents'}>
    <thead>
      <tr>
        <th scope="col">${label}</th>
        <th scope="col">On failure</th>
        <th scope="col">State</th>
      </tr>
    </thead>
    <tbody>
      ${edges.map(
        (e) =>
          html`<tr key=${other(e)}>
            <td class="mono"><a href=${href('jobs', null, other(e))}>${other(e)}</a></td>
            <td>${e.onFailure}</td>
            <td>${e.blocked ? 'blocked (dependency in the DLQ)' : e.state}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
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
 * What an action of the inspector gets: the job, and `act` to run a call and show its outcome.
 * @typedef {{
 *   job: import('./api.js').JobView,
 *   act: (label: string, run: () => Promise<unknown>) => void,
 * }} ActionProps
 */

/**
 * The edit forms' shared fields as the operator typed them: the payload as JSON, the priority,
 * and the tags comma-separated.
 * @typedef {{ payload: string, priority: string, tags: string }} Draft
 */

/** @param {ActionProps} props */
function Actions({ job, act }) {
  if (job.pillar === 'dlq') return html`<${DlqEdit} job=${job} act=${act} />`;
  if (job.pillar !== 'hot') return null;
  const id = encodeURIComponent(job.id);
  return html`<div class="controls">
      <button
        type="button"
        onClick=${() => act('Cancel requested.', () => send('POST', `jobs/${id}/cancel`))}
      >
        Cancel job
      </button>
      ${
        waiting(job) &&
        html`<button
          type="button"
          onClick=${() =>
            act('Run now: the job is due, in its enqueue order.', () =>
              send('POST', `jobs/${id}/update`, { runAt: 'now' }),
            )}
        >
          Run now
        </button>`
      }
    </div>
    ${
      // Keyed by the row's last change: after an edit the reloaded job fills the form again.
      job.status === 0 && html`<${PendingEdit} key=${job.lastUpdatedUtc} job=${job} act=${act} />`
    }`;
}

/**
 * The dedupe key a job holds and its window: `key · throttle until <time>`, `key · unique while
 * pending, running`.
 * @param {NonNullable<import('./api.js').JobView['dedupe']>} d
 */
function dedupeText(d) {
  const rule =
    d.mode === 'unique'
      ? `unique while ${(d.states || []).join(', ')}${d.windowMs ? ` (finished: ${ms(d.windowMs)})` : ''}`
      : `${d.mode} until ${time(d.windowEndsUtc)}`;
  return `${d.key} · ${rule}`;
}

/**
 * Whether a Pending job is not due yet: its scheduled time (a delay, a retry's backoff, or an open
 * circuit's hold) is still ahead on this page's clock, the clock `ago` reads. The panel renders
 * again with every snapshot, so the answer changes once that time has passed.
 * @param {import('./api.js').JobView} job
 * @param {number} [now]
 */
function waiting(job, now = Date.now()) {
  return (
    job.status === 0 && job.scheduledAtUtc !== null && new Date(job.scheduledAtUtc).getTime() > now
  );
}

/**
 * A DLQ job's form: moves it back to Pending with the payload, priority and tags as edited, or
 * purges it after a second click.
 * @param {ActionProps} props
 */
function DlqEdit({ job, act }) {
  const id = encodeURIComponent(job.id);
  /** @type {State<Draft>} */
  const [draft, setDraft] = useState(draftOf(job));
  /** @type {State<string | null>} */
  const [problem, setProblem] = useState(null);
  /** @type {State<boolean>} */
  const [purging, setPurging] = useState(false);

  /** @param {Event} e */
  const retry = (e) => {
    e.preventDefault();
    const parsed = parsePayload(draft.payload);
    if ('problem' in parsed) {
      setProblem(parsed.problem);
      return;
    }
    setProblem(null);
    act('Resurrected: the job is pending again.', () =>
      send('POST', `jobs/${id}/resurrect`, {
        payload: parsed.value,
        priority: Number(draft.priority),
        tags: tagList(draft.tags),
      }),
    );
  };

  return html`<form class="edit" onSubmit=${retry}>
    <h2>Edit and retry</h2>
    <${DraftFields} draft=${draft} setDraft=${setDraft} problem=${problem} />
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
 * A Pending job's form: its payload, priority and tags, and when it runs. Only the fields the
 * operator changed are sent, so a payload the app's `redact` masked is written back only when it
 * was edited; a job a worker claimed meanwhile is refused with 409, and nothing changes.
 * @param {ActionProps} props
 */
function PendingEdit({ job, act }) {
  const id = encodeURIComponent(job.id);
  /** @type {State<Draft>} */
  const [draft, setDraft] = useState(draftOf(job));
  /** @type {State<string>} */
  const [runAt, setRunAt] = useState('');
  /** @type {State<string | null>} */
  const [problem, setProblem] = useState(null);

  /** @param {Event} e */
  const save = (e) => {
    e.preventDefault();
    const start = draftOf(job);
    /** @type {import('./api.js').PendingEditsBody} */
    const edits = {};
    if (draft.payload !== start.payload) {
      const parsed = parsePayload(draft.payload);
      if ('problem' in parsed) {
        setProblem(parsed.problem);
        return;
      }
      // Reformatted but the same JSON: not an edit.
      if (JSON.stringify(parsed.value) !== JSON.stringify(job.payload)) {
        edits.payload = parsed.value;
      }
    }
    if (draft.priority.trim() !== start.priority) {
      if (draft.priority.trim() === '') {
        setProblem('The priority is empty.');
        return;
      }
      edits.priority = Number(draft.priority);
    }
    const tags = tagList(draft.tags);
    if (JSON.stringify(tags) !== JSON.stringify(job.tags || [])) edits.tags = tags;
    // A datetime-local value is the page's local time; the server takes the instant.
    if (runAt !== '') edits.runAt = new Date(runAt).toISOString();
    if (Object.keys(edits).length === 0) {
      setProblem('Nothing to save: no field differs from the job.');
      return;
    }
    setProblem(null);
    act('Saved: the job is still pending, with the edits.', () =>
      send('POST', `jobs/${id}/update`, edits),
    );
  };

  return html`<form class="edit" onSubmit=${save}>
    <h2>Edit</h2>
    <${DraftFields} draft=${draft} setDraft=${setDraft} problem=${problem} />
    <label
      >Run at (empty: keep the schedule)
      <input
        type="datetime-local"
        name="run-at"
        value=${runAt}
        onInput=${(/** @type {FieldEvent} */ e) => setRunAt(e.currentTarget.value)}
    /></label>
    <div class="controls">
      <button type="submit">Save</button>
    </div>
  </form>`;
}

/**
 * The payload, priority and tags fields of an edit form, and the form's problem.
 * @param {{ draft: Draft, setDraft: State<Draft>[1], problem: string | null }} props
 */
function DraftFields({ draft, setDraft, problem }) {
  /** @param {keyof Draft} name */
  const field = (name) => (/** @type {FieldEvent} */ e) => {
    const { value } = e.currentTarget;
    setDraft((d) => ({ ...d, [name]: value }));
  };
  return html`<label
      >Payload (JSON)
      <textarea
        name="payload"
        rows="8"
        value=${draft.payload}
        onInput=${field('payload')}
      ></textarea>
    </label>
    ${problem && html`<p class="note error" role="alert">${problem}</p>`}
    <label
      >Priority
      <input type="number" name="priority" value=${draft.priority} onInput=${field('priority')}
    /></label>
    <label>Tags <input name="tags" value=${draft.tags} onInput=${field('tags')} /></label>`;
}

/**
 * The fields as the job has them.
 * @param {import('./api.js').JobView} job
 * @returns {Draft}
 */
function draftOf(job) {
  return {
    payload: pretty(job.payload),
    priority: String(job.priority),
    tags: (job.tags || []).join(', '),
  };
}

/**
 * The payload a draft holds, or why it is not JSON.
 * @param {string} text
 * @returns {{ value: unknown } | { problem: string }}
 */
function parsePayload(text) {
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    return {
      problem: `The payload is not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
}

/** @param {string} text */
function tagList(text) {
  return text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
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
