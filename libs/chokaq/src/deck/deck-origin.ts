/**
 * The Deck's cross-site defence, whatever CORS the host app enables. A host that calls
 * `app.enableCors({ origin: true, credentials: true })` has its CORS middleware answer every
 * preflight before any Deck code runs, so a page on any origin may send the Deck's custom header
 * with an operator's cookie. What the Deck decides is whether the actual request is its own: it
 * refuses (403, no data) any API request that a browser marks as coming from another origin.
 *
 * - `Sec-Fetch-Site` (set by the browser, never by page script: a forbidden header name) of
 *   `same-origin` or `none` (typed into the address bar) is the Deck's own page: allowed.
 * - `cross-site` or `same-site` (another port or subdomain of the same site, whose cookies are
 *   sent too) is refused, unless its `Origin` is in `allowedOrigins` (a deliberate setup).
 * - A browser that sends no `Sec-Fetch-Site` is judged by `Origin`: allowed when it is the Deck's
 *   own origin (the request's protocol and host, or the forwarded ones when the app trusts its
 *   proxy) or in `allowedOrigins`; refused otherwise, `null` included.
 * - A request with neither header is not a browser's cross-site request (a script, a health
 *   probe, a same-origin GET of an older browser): allowed, and left to the guards.
 *
 * See https://www.w3.org/TR/fetch-metadata/ and the Fetch standard's forbidden header names.
 */

/** What the check reads of a request: its headers, and its own origin as the framework sees it. */
export interface OriginRequest {
  headers: Record<string, string | string[] | undefined>;
  /** `http://host:port` as this request reached the app (forwarded when the proxy is trusted). */
  ownOrigin(): string | undefined;
}

/** Why a request was refused, or null when it may go on. */
export function crossSiteRefusal(
  request: OriginRequest,
  allowedOrigins: readonly string[],
): string | null {
  const site = header(request.headers['sec-fetch-site'])?.toLowerCase();
  const origin = header(request.headers.origin);
  if (site === 'same-origin' || site === 'none') return null;
  if (isAllowedOrigin(request.headers, allowedOrigins)) return null;
  if (site === 'cross-site' || site === 'same-site') {
    return `The Deck refuses requests from another origin (Sec-Fetch-Site: ${site}${origin ? `, Origin: ${origin}` : ''}).`;
  }
  if (origin === undefined) return null;
  if (origin !== 'null' && origin === request.ownOrigin()) return null;
  return `The Deck refuses requests from another origin (Origin: ${origin}).`;
}

/** True when the request's `Origin` is one of `allowedOrigins`. */
export function isAllowedOrigin(
  headers: OriginRequest['headers'],
  allowedOrigins: readonly string[],
): boolean {
  const origin = header(headers.origin);
  return origin !== undefined && allowedOrigins.includes(origin);
}

/**
 * Normalises an origin of `allowedOrigins`: `scheme://host[:port]` with no path, lower-case, the
 * default port dropped (as browsers serialise `Origin`). Throws on anything else.
 */
export function normaliseOrigin(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`not an origin: ${JSON.stringify(value)}`);
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.href !== `${url.origin}/`) {
    throw new TypeError(`not an origin (scheme://host[:port]): ${JSON.stringify(value)}`);
  }
  return url.origin;
}

/**
 * The request's own origin as Express or Fastify sees it: each applies the app's own proxy trust
 * to the protocol and the host (`X-Forwarded-Proto` and `X-Forwarded-Host` count only when the
 * app trusts its proxy), so an attacker's forwarded headers count no more than the app lets them.
 */
export function frameworkOrigin(req: unknown): string | undefined {
  const r = req as {
    protocol?: unknown;
    headers?: Record<string, string | string[] | undefined>;
    host?: unknown;
    hostname?: unknown;
    app?: { get?: (name: string) => unknown };
    socket?: { remoteAddress?: string };
  };
  const protocol = typeof r.protocol === 'string' ? r.protocol.replace(/:$/, '') : undefined;
  if (protocol === undefined) return undefined;
  let host: string | undefined;
  if (typeof r.app?.get === 'function') {
    // Express: `req.hostname` drops the port, so the forwarded host is read under the app's trust.
    const trust = r.app.get('trust proxy fn') as
      ((addr: string | undefined, i: number) => boolean) | undefined;
    const forwarded = header(r.headers?.['x-forwarded-host'])?.split(',')[0]?.trim();
    host = forwarded && trust?.(r.socket?.remoteAddress, 0) ? forwarded : header(r.headers?.host);
  } else {
    // Fastify 5: `host` keeps the port and honours `trustProxy`; Fastify 4: `hostname` does.
    host =
      typeof r.host === 'string' ? r.host : typeof r.hostname === 'string' ? r.hostname : undefined;
  }
  if (!host) return undefined;
  try {
    // As a browser serialises `Origin`: lower-case, no default port.
    return new URL(`${protocol}://${host}`).origin;
  } catch {
    return undefined;
  }
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
