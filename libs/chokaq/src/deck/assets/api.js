// @ts-check
// The Deck's only way to the server: JSON over fetch, and the stream read from a fetch body.
// With a bearer-token app the token lives in this tab's sessionStorage and travels as the
// Authorization header, never in a URL; with a cookie-session app no token is needed.

const TOKEN_KEY = 'chokaq-deck-token';
const CSRF_HEADER = 'x-chokaq-deck';

/*
 * What the server answers, named by the server's own types, so that a renamed field of its read
 * model is a type error in the panel that reads it. Each is the JSON form of the type (see Json):
 * the panels import them from here as `import('./api.js').JobListItem` and so on.
 */

/**
 * A server type as its JSON body arrives: JSON.stringify writes every Date as its ISO string.
 * @template T
 * @typedef {T extends Date
 *   ? string
 *   : T extends readonly (infer U)[]
 *     ? Json<U>[]
 *     : T extends object
 *       ? { [K in keyof T]: Json<T[K]> }
 *       : T} Json
 */

/**
 * The answer of a Deck route whose controller declares it inline rather than by a named type.
 * @template {(...args: never) => Promise<unknown>} F
 * @typedef {Json<Awaited<ReturnType<F>>>} Reply
 */

/**
 * @typedef {import('../deck-api.controller').DeckApiController} ApiController
 * @typedef {import('../deck-jobs.controller').DeckJobsController} JobsController
 * @typedef {Json<import('../deck-api.controller').DeckConfig>} DeckConfig
 * @typedef {Json<import('../deck-snapshot.service').DeckSnapshot>} DeckSnapshot
 * @typedef {Extract<DeckSnapshot, { ok: true }>} Snapshot
 * @typedef {Json<import('../deck-snapshot.service').DeckQueue>} DeckQueue
 * @typedef {Json<import('../deck-jobs.controller').DeckJob>} DeckJob
 * @typedef {Json<import('../../interfaces/job-view.interface').JobView>} JobView
 * @typedef {Json<import('../../interfaces/job-view.interface').JobAttempt>} JobAttempt
 * @typedef {Json<import('../../interfaces/job-view.interface').JobListItem>} JobListItem
 * @typedef {Json<import('../../interfaces/job-view.interface').ListPage<import('../../interfaces/job-view.interface').JobListItem>>} JobPage
 * @typedef {Json<import('../../interfaces/job-view.interface').ThroughputPoint>} ThroughputPoint
 * @typedef {Json<import('../../interfaces/job-view.interface').DlqErrorFamily>} DlqErrorFamily
 * @typedef {Json<import('../../interfaces/audit.interface').AuditEntry>} AuditEntry
 * @typedef {Json<import('../../interfaces/audit.interface').AuditLogPage>} AuditLogPage
 * @typedef {Json<import('../../interfaces/audit.interface').DlqActionPreview>} DlqActionPreview
 * @typedef {import('../../interfaces/audit.interface').BulkDlqAction} BulkDlqAction
 * @typedef {Json<import('../../interfaces/recurring-job.interface').RecurringJobView>} RecurringJobView
 * @typedef {Json<import('../../interfaces/job.interface').QueueInfo>} QueueInfo
 * @typedef {Json<import('../../interfaces/job.interface').CancelResult>} CancelResult
 * @typedef {Json<import('../../interfaces/batch.interface').BatchView>} BatchView
 * @typedef {Json<import('../../interfaces/job.interface').DependencyView>} DependencyView
 * @typedef {Json<import('../../interfaces/worker.interface').WorkerInfo>} WorkerInfo
 */

/*
 * The answers of the routes that declare them inline. (Compound types stay out of the @overload
 * tags below: the checker resolves those tags' names but does not report a bad key in them.)
 */

/**
 * @typedef {Reply<ApiController['pauseRecurring']>} RecurringPaused also the answer of `resume`
 * @typedef {Reply<ApiController['triggerRecurring']>} RecurringTriggered
 * @typedef {Reply<JobsController['update']>} JobUpdated
 * @typedef {Reply<JobsController['resurrect']>} JobResurrected
 * @typedef {Reply<JobsController['purge']>} JobPurged
 */

/**
 * What a bulk DLQ action by filter answers, by action.
 * @typedef {{
 *   resurrect: Reply<JobsController['resurrectByFilter']>,
 *   purge: Reply<JobsController['purgeByFilter']>,
 * }} BulkResult
 */

/**
 * The body of a bulk DLQ action by filter: the previewed filter and the preview's token.
 * @typedef {{ filter: DlqBodyFilter } & Pick<import('../../interfaces/audit.interface').BulkConfirmation, 'token'>} BulkActionBody
 */

/**
 * A DLQ filter as a JSON body carries it (`dlqFilterFromBody`): the DLQ list's query fields, each a
 * string (dates as ISO strings).
 * @typedef {{ [K in Exclude<keyof import('../../interfaces/job-view.interface').DlqFilter, 'ids'>]?: string }} DlqBodyFilter
 */

/**
 * The body of a Pending job's edit (`pendingEditsFromBody`): PendingEdits as JSON, so `runAt` is an
 * ISO 8601 string or `'now'`.
 * @typedef {Json<import('../../interfaces/job.interface').PendingEdits>} PendingEditsBody
 */

/** @typedef {import('../../interfaces/job.interface').QueuePatch} QueuePatch */

/**
 * The rate limits of a QueuePatch: the queue's own and each group's.
 * @typedef {Extract<keyof QueuePatch, 'rateLimit' | 'groupRateLimit'>} RateLimitKey
 */

/**
 * The body of a queue's PATCH: a QueuePatch, except that a rate limit (`rateLimit`,
 * `groupRateLimit`) with one half left empty is sent as it is (its null half), for the core to
 * refuse with its 400. (Written with Pick and Extract, so that a renamed rate limit is an error here
 * rather than a key nobody checks.)
 * @typedef {Pick<QueuePatch, Exclude<keyof QueuePatch, RateLimitKey>> & {
 *   [K in RateLimitKey]?: { max: number | null, perMs: number | null } | null
 * }} QueuePatchBody
 */

/**
 * The body of a Deck API error (DeckErrorFilter): `error` and `message`, and for a 400 the issues.
 * @typedef {{
 *   error?: string,
 *   message?: string,
 *   issues?: Json<import('../../errors/validation.error').ValidationIssue>[]
 * }} ErrorBody
 */

/**
 * A query string's values; empty ones are left out.
 * @typedef {Record<string, string | number | null | undefined>} Params
 */

/** @typedef {ReturnType<typeof setTimeout>} Timer */

/**
 * The events of `api/stream`, as `[type, data]`: the shared snapshot, and a heartbeat while
 * nothing changes.
 * @typedef {['snapshot', DeckSnapshot] | ['heartbeat', { at: string }]} StreamEvent
 */

/**
 * The server answered 401: the page asks for a token. `hint` is the app's own 401 message (its
 * guard's text, such as where the token comes from), at most 200 characters, or null.
 */
export class AuthRequired extends Error {
  /** @param {string | null} hint */
  constructor(hint) {
    super('Sign-in needed');
    this.hint = hint;
  }
}

/** An API error with the server's body (`error`, `message`, and for 400 `issues`). */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {ErrorBody | null} body
   */
  constructor(status, body) {
    super((body && body.message) || `The server answered ${status}.`);
    this.status = status;
    this.body = body;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** @param {string} value */
export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/**
 * @param {Record<string, string>} [extra]
 * @returns {Record<string, string>}
 */
function headers(extra) {
  /** @type {Record<string, string>} */
  const out = { Accept: 'application/json', ...extra };
  const t = token();
  if (t) out.Authorization = `Bearer ${t}`;
  return out;
}

/**
 * @param {string} path
 * @param {Params} [params]
 */
function url(path, params) {
  const u = new URL(`api/${path}`, document.baseURI);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, String(v));
  }
  return u;
}

/**
 * The `message` of a 401's JSON body, when it is a short string.
 * @param {Response} res
 */
async function hintOf(res) {
  try {
    const body = JSON.parse(await res.text());
    const message = body && typeof body.message === 'string' ? body.message.trim() : '';
    return message !== '' && message.length <= 200 ? message : null;
  } catch {
    return null;
  }
}

/**
 * The JSON body of an answer (the caller's overload names its type), or the error it carries.
 * @param {Response} res
 * @returns {Promise<unknown>}
 */
async function parse(res) {
  if (res.status === 401) throw new AuthRequired(await hintOf(res));
  const text = await res.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = { message: text };
  }
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

/**
 * @overload
 * @param {'config'} path
 * @returns {Promise<DeckConfig>}
 */
/**
 * @overload
 * @param {'series'} path
 * @param {{ range: 'hour' | 'day', queue?: string }} params
 * @returns {Promise<ThroughputPoint[]>}
 */
/**
 * @overload
 * @param {'errors'} path
 * @returns {Promise<DlqErrorFamily[]>}
 */
/**
 * @overload
 * @param {'workers'} path
 * @returns {Promise<WorkerInfo[]>}
 */
/**
 * @overload
 * @param {'audit'} path
 * @param {Params} params
 * @returns {Promise<AuditLogPage>}
 */
/**
 * @overload
 * @param {'recurring'} path
 * @returns {Promise<RecurringJobView[]>}
 */
/**
 * @overload
 * @param {'active' | 'archive' | 'dlq'} path
 * @param {Params} params
 * @returns {Promise<JobPage>}
 */
/**
 * @overload
 * @param {`jobs/${string}`} path
 * @returns {Promise<DeckJob>}
 */
/**
 * @overload
 * @param {`batches/${string}`} path
 * @returns {Promise<BatchView>}
 */
/**
 * @param {string} path
 * @param {Params} [params]
 * @returns {Promise<unknown>}
 */
export async function get(path, params) {
  return parse(await fetch(url(path, params), { headers: headers(), credentials: 'same-origin' }));
}

/**
 * @overload
 * @param {'POST'} method
 * @param {`queues/${string}/pause` | `queues/${string}/resume`} path
 * @returns {Promise<QueueInfo>}
 */
/**
 * @overload
 * @param {'PATCH'} method
 * @param {`queues/${string}`} path
 * @param {QueuePatchBody} body
 * @returns {Promise<QueueInfo>}
 */
/**
 * @overload
 * @param {'POST'} method
 * @param {`recurring/${string}/pause` | `recurring/${string}/resume`} path
 * @returns {Promise<RecurringPaused>}
 */
/**
 * @overload
 * @param {'POST'} method
 * @param {`recurring/${string}/trigger`} path
 * @returns {Promise<RecurringTriggered>}
 */
/**
 * @overload
 * @param {'POST'} method
 * @param {'dlq/preview'} path
 * @param {{ action: BulkDlqAction, filter: DlqBodyFilter, max?: number }} body
 * @returns {Promise<DlqActionPreview>}
 */
/**
 * @template {BulkDlqAction} A
 * @overload
 * @param {'POST'} method
 * @param {`dlq/${A}`} path
 * @param {BulkActionBody} body
 * @returns {Promise<BulkResult[A]>}
 */
/**
 * @overload
 * @param {'POST'} method
 * @param {`jobs/${string}/cancel` | `batches/${string}/cancel`} path
 * @returns {Promise<CancelResult>}
 */
/**
 * @overload
 * @param {'POST'} method
 * @param {`jobs/${string}/update`} path
 * @param {PendingEditsBody} body
 * @returns {Promise<JobUpdated>}
 */
/**
 * @overload
 * @param {'POST'} method
 * @param {`jobs/${string}/resurrect`} path
 * @param {import('../../interfaces/job.interface').ResurrectEdits} body
 * @returns {Promise<JobResurrected>}
 */
/**
 * @overload
 * @param {'POST'} method
 * @param {`jobs/${string}/purge`} path
 * @returns {Promise<JobPurged>}
 */
/**
 * @param {'POST' | 'PATCH'} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<unknown>}
 */
export async function send(method, path, body) {
  const res = await fetch(url(path), {
    method,
    credentials: 'same-origin',
    headers: headers({ 'Content-Type': 'application/json', [CSRF_HEADER]: '1' }),
    body: JSON.stringify(body === undefined ? {} : body),
  });
  return parse(res);
}

/**
 * Reads the server-sent events of `api/stream` from a fetch body (EventSource cannot send an
 * Authorization header). Reconnects after a drop or a silence of three heartbeats; calls
 * `onState('live' | 'offline' | 'auth')` and `onEvent(type, data)`. Returns a stop function.
 * @param {{
 *   heartbeatMs: number,
 *   onEvent: (...event: StreamEvent) => void,
 *   onState: (state: 'live' | 'offline' | 'auth') => void,
 * }} options
 * @returns {() => void}
 */
export function openStream({ heartbeatMs, onEvent, onState }) {
  let stopped = false;
  /** @type {AbortController | null} */
  let controller = null;
  // Timer handles, null before the first (clearTimeout ignores null, whatever its declared type).
  /** @type {Timer | null} */
  let watchdog = null;
  /** @type {Timer | null} */
  let retry = null;

  const arm = () => {
    clearTimeout(/** @type {Timer} */ (watchdog));
    watchdog = setTimeout(() => controller && controller.abort(), heartbeatMs * 3);
  };

  const connect = async () => {
    if (stopped) return;
    controller = new AbortController();
    try {
      const res = await fetch(url('stream'), {
        headers: headers({ Accept: 'text/event-stream' }),
        credentials: 'same-origin',
        signal: controller.signal,
      });
      if (res.status === 401) {
        onState('auth');
        return;
      }
      if (!res.ok || !res.body) throw new Error(`stream ${res.status}`);
      onState('live');
      arm();
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        arm();
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          dispatch(buffer.slice(0, end), onEvent);
          buffer = buffer.slice(end + 2);
        }
      }
    } catch {
      // dropped, aborted by the watchdog, or refused: reconnect below
    }
    clearTimeout(/** @type {Timer} */ (watchdog));
    if (!stopped) {
      onState('offline');
      retry = setTimeout(connect, 2000);
    }
  };

  connect();
  return () => {
    stopped = true;
    clearTimeout(/** @type {Timer} */ (watchdog));
    clearTimeout(/** @type {Timer} */ (retry));
    if (controller) controller.abort();
  };
}

/**
 * @param {string} block
 * @param {(...event: StreamEvent) => void} onEvent
 */
function dispatch(block, onEvent) {
  let type = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) type = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length === 0) return;
  try {
    // The stream's events are the controller's (`snapshot`, `heartbeat`), each with its data.
    onEvent(/** @type {StreamEvent[0]} */ (type), JSON.parse(data.join('\n')));
  } catch {
    // not JSON: ignore
  }
}
