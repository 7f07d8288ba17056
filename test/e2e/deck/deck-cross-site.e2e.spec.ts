/**
 * The Deck stays its own origin's whatever CORS the host app enables (issue 27): with
 * `enableCors({ origin: true, credentials: true })` the host's CORS layer grants every preflight,
 * so the Deck itself refuses the actual request of a page on another origin (403, no data, no CORS
 * header), reads as well as mutations, on Express and Fastify. Browsers' headers are sent by hand:
 * `Sec-Fetch-Site` and `Origin` as a browser sets them for each case.
 */
import { e2eDatabase } from '../support/e2e-app';
import { DeckApp, SESSION_COOKIE, startDeckApp } from './deck-app';

const cookie = { cookie: SESSION_COOKIE };

describe.each(['express', 'fastify'] as const)(
  'The Deck under permissive CORS on %s',
  (platform) => {
    const db = e2eDatabase('sqlite');
    let deck: DeckApp;
    let own: string;
    let proxied: DeckApp;

    beforeAll(async () => {
      deck = await startDeckApp({
        db,
        platform,
        auth: 'cookie',
        cors: true,
        deck: { allowedOrigins: ['https://ops.example.com'] },
      });
      own = new URL(deck.url).origin;
      proxied = await startDeckApp({ db, platform, auth: 'cookie', cors: true, trustProxy: true });
    });
    afterAll(async () => {
      await proxied?.close();
      await deck?.close();
      await db.close();
    });

    async function read(app: DeckApp, headers: Record<string, string>) {
      const res = await fetch(`${app.url}/api/snapshot`, { headers: { ...cookie, ...headers } });
      return {
        status: res.status,
        body: await res.text(),
        acao: res.headers.get('access-control-allow-origin'),
      };
    }

    it('refuses a page on another site: its reads and its mutations, with no data and no CORS grant', async () => {
      const evil = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };
      // The host's CORS layer grants the preflight; the Deck never sees it.
      const preflight = await fetch(`${deck.url}/api/queues/deck/pause`, {
        method: 'OPTIONS',
        headers: {
          ...evil,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'x-chokaq-deck,content-type',
        },
      });
      expect(preflight.headers.get('access-control-allow-origin')).toBe('https://evil.example');

      const snapshot = await read(deck, evil);
      expect(snapshot.status).toBe(403);
      expect(snapshot.acao).toBeNull();
      expect(snapshot.body).not.toContain('"queues"');
      for (const path of ['config', 'dlq', 'active', 'workers', 'audit', 'stream']) {
        const res = await fetch(`${deck.url}/api/${path}`, { headers: { ...cookie, ...evil } });
        expect({ path, status: res.status }).toEqual({ path, status: 403 });
      }
      const pause = await fetch(`${deck.url}/api/queues/deck/pause`, {
        method: 'POST',
        headers: { ...cookie, ...evil, 'x-chokaq-deck': '1', 'content-type': 'application/json' },
        body: '{}',
      });
      expect(pause.status).toBe(403);
      expect(pause.headers.get('access-control-allow-origin')).toBeNull();
      expect(
        (await deck.admin.listQueues()).find((q) => q.name === 'deck')?.isPaused ?? false,
      ).toBe(false);
    });

    it('refuses a page on another port of the same host (same site: its cookies are sent)', async () => {
      const port = Number(new URL(deck.url).port) + 1;
      const sameSite = { origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'same-site' };
      expect(await read(deck, sameSite)).toMatchObject({ status: 403, acao: null });
      // A browser without fetch metadata is judged by its Origin alone.
      expect(await read(deck, { origin: `http://127.0.0.1:${port}` })).toMatchObject({
        status: 403,
      });
      expect(await read(deck, { origin: 'null' })).toMatchObject({ status: 403 });
    });

    it("serves the Deck's own page, typed-in requests and scripts, never with a CORS grant", async () => {
      const samePage = await read(deck, { origin: own, 'sec-fetch-site': 'same-origin' });
      expect(samePage).toMatchObject({ status: 200, acao: null });
      expect(samePage.body).toContain('"queues"');
      expect(await read(deck, { 'sec-fetch-site': 'none' })).toMatchObject({ status: 200 });
      expect(await read(deck, { origin: own })).toMatchObject({ status: 200, acao: null });
      expect(await read(deck, {})).toMatchObject({ status: 200 });
    });

    it('lets in an origin of allowedOrigins, a deliberate setup', async () => {
      const ops = { origin: 'https://ops.example.com', 'sec-fetch-site': 'cross-site' };
      // The host's CORS grant stays on its responses: that page may read them.
      expect(await read(deck, ops)).toMatchObject({ status: 200, acao: 'https://ops.example.com' });
    });

    it('behind a trusted proxy, judges Origin against the forwarded host and protocol', async () => {
      const forwarded = { 'x-forwarded-host': 'deck.example.com', 'x-forwarded-proto': 'https' };
      expect(
        await read(proxied, { ...forwarded, origin: 'https://deck.example.com' }),
      ).toMatchObject({ status: 200 });
      expect(await read(proxied, { ...forwarded, origin: 'https://evil.example' })).toMatchObject({
        status: 403,
      });
      // Without trust, forwarded headers (which a page may send once CORS grants them) count for
      // nothing: only the request's own host does.
      expect(await read(deck, { ...forwarded, origin: 'https://deck.example.com' })).toMatchObject({
        status: 403,
      });
    });
  },
);
