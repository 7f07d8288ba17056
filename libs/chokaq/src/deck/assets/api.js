// @ts-check
// The Deck's only way to the server: JSON over fetch, and the stream read from a fetch body.
// With a bearer-token app the token lives in this tab's sessionStorage and travels as the
// Authorization header, never in a URL; with a cookie-session app no token is needed.

const TOKEN_KEY = 'chokaq-deck-token';
const CSRF_HEADER = 'x-chokaq-deck';

/**
 * The server answered 401: the page asks for a token. `hint` is the app's own 401 message (its
 * guard's text, such as where the token comes from), at most 200 characters, or null.
 */
export class AuthRequired extends Error {
  constructor(hint) {
    super('Sign-in needed');
    this.hint = hint;
  }
}

/** An API error with the server's body (`error`, `message`, and for 400 `issues`). */
export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `The server answered ${status}.`);
    this.status = status;
    this.body = body;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(extra) {
  const out = { Accept: 'application/json', ...extra };
  const t = token();
  if (t) out.Authorization = `Bearer ${t}`;
  return out;
}

function url(path, params) {
  const u = new URL(`api/${path}`, document.baseURI);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, String(v));
  }
  return u;
}

/** The `message` of a 401's JSON body, when it is a short string. */
async function hintOf(res) {
  try {
    const body = JSON.parse(await res.text());
    const message = body && typeof body.message === 'string' ? body.message.trim() : '';
    return message !== '' && message.length <= 200 ? message : null;
  } catch {
    return null;
  }
}

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

export async function get(path, params) {
  return parse(await fetch(url(path, params), { headers: headers(), credentials: 'same-origin' }));
}

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
 */
export function openStream({ heartbeatMs, onEvent, onState }) {
  let stopped = false;
  let controller = null;
  let watchdog = null;
  let retry = null;

  const arm = () => {
    clearTimeout(watchdog);
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
    clearTimeout(watchdog);
    if (!stopped) {
      onState('offline');
      retry = setTimeout(connect, 2000);
    }
  };

  connect();
  return () => {
    stopped = true;
    clearTimeout(watchdog);
    clearTimeout(retry);
    if (controller) controller.abort();
  };
}

function dispatch(block, onEvent) {
  let type = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) type = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length === 0) return;
  try {
    onEvent(type, JSON.parse(data.join('\n')));
  } catch {
    // not JSON: ignore
  }
}
