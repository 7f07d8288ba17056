/**
 * The Deck over HTTP, without a browser: the auth model (deny by default, the app's guards, the
 * destructive guards, read-only, CSRF), the headers, the fixed asset map, the API's errors, the
 * stream, the one shared snapshot per process, and a grouped queue's limits and busiest groups.
 * Express and Fastify, with and without a global prefix and URI versioning.
 */
import { randomUUID } from 'node:crypto';
import { Test } from '@nestjs/testing';
import pg from 'pg';
import { ChokaQModule, JobStatus } from '../../../libs/chokaq/src';
import { ChokaQDeckConfigError, ChokaQDeckModule, DECK_CSP } from '../../../libs/chokaq/src/deck';
import { DeckSnapshotService } from '../../../libs/chokaq/src/deck/deck-snapshot.service';
import { describePostgres } from '../../support/test-database';
import { FAST_OPTIONS, e2eDatabase, mergeOptions } from '../support/e2e-app';
import {
  BlockingGlobalGuard,
  DeckApp,
  DenyGuard,
  bearer,
  startAsWorker,
  startDeckApp,
} from './deck-app';
import { openSse } from './sse-reader';

async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

describe('The Deck: mounting', () => {
  it('refuses to mount without guards, naming what to add', () => {
    expect(() => ChokaQDeckModule.forRoot({})).toThrow(ChokaQDeckConfigError);
    expect(() => ChokaQDeckModule.forRoot({ guards: [] })).toThrow(/guards: \[YourAuthGuard\]/);
    expect(() => ChokaQDeckModule.forRoot({ allowAnonymous: true })).not.toThrow();
  });

  it('refuses bad options with a typed error', () => {
    const guard = { canActivate: () => true };
    expect(() => ChokaQDeckModule.forRoot({ guards: [guard], path: '../x' })).toThrow(
      ChokaQDeckConfigError,
    );
    expect(() => ChokaQDeckModule.forRoot({ guards: [guard], refreshMs: 10 })).toThrow(/refreshMs/);
    expect(() => ChokaQDeckModule.forRoot({ guards: ['nope' as never] })).toThrow(
      /guard classes or guard instances/,
    );
  });

  it('forRootAsync fails the start when its factory gives no guards', async () => {
    const db = e2eDatabase('sqlite');
    try {
      const compiling = Test.createTestingModule({
        imports: [
          ChokaQModule.forRoot(
            mergeOptions(FAST_OPTIONS, { storage: db.options }, { worker: { enabled: false } }),
          ),
          ChokaQDeckModule.forRootAsync({ useFactory: () => ({}) }),
        ],
      }).compile();
      await expect(compiling).rejects.toThrow(ChokaQDeckConfigError);
    } finally {
      await db.close();
    }
  });
});

const PLATFORMS = [
  { platform: 'express', globalPrefix: undefined, versioning: false },
  { platform: 'express', globalPrefix: 'admin', versioning: true },
  { platform: 'fastify', globalPrefix: undefined, versioning: false },
  { platform: 'fastify', globalPrefix: 'admin', versioning: true },
] as const;

describe.each(PLATFORMS)(
  'The Deck over HTTP on $platform (prefix $globalPrefix, versioning $versioning)',
  (setup) => {
    const db = e2eDatabase('sqlite');
    let deck: DeckApp;

    beforeAll(async () => {
      deck = await startDeckApp({ db, ...setup });
      await deck.client.enqueue('deck', { n: 1 }, { type: 'ok' });
    });
    afterAll(async () => {
      await deck?.close();
      await db.close();
    });

    it('serves the page shell and the assets without the guards, under the exact CSP', async () => {
      const page = await fetch(deck.url);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toBe(DECK_CSP);
      expect(DECK_CSP).toContain("base-uri 'self'");
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const base = new URL(deck.url).pathname;
      expect(await page.text()).toContain(`<base href="${base}/" />`);
      // The base is where the Deck is mounted, not what the client wrote: a request target that
      // reaches the page another way (percent-encoded, a trailing slash) gets the same base.
      // (Fastify matches the percent-encoded path, Express the trailing slash.)
      let served = 0;
      for (const other of [deck.url.replace(/chokaq$/, '%63hokaq'), `${deck.url}/?x=//evil`]) {
        const res = await fetch(other);
        if (res.status !== 200) continue;
        served++;
        expect(await res.text()).toContain(`<base href="${base}/" />`);
      }
      expect(served).toBeGreaterThan(0);

      const script = await fetch(`${deck.url}/assets/deck.js`);
      expect(script.status).toBe(200);
      expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect(script.headers.get('content-security-policy')).toBe(DECK_CSP);
      expect(script.headers.get('x-content-type-options')).toBe('nosniff');
      const etag = script.headers.get('etag')!;
      const again = await fetch(`${deck.url}/assets/deck.js`, {
        headers: { 'if-none-match': etag },
      });
      expect(again.status).toBe(304);

      const vendor = await fetch(`${deck.url}/assets/vendor/preact-htm.js`);
      expect(vendor.status).toBe(200);
    });

    it('serves nothing outside its asset map', async () => {
      for (const path of [
        'assets/..%2Fdeck.module.ts',
        'assets/..%2F..%2F..%2Fpackage.json',
        'assets/%2E%2E%2Findex.ts',
        'assets/vendor/..%2F..%2Fdeck-assets.ts',
        'assets/nope.js',
        'assets/index.html',
        'assets/vendor/LICENSE',
      ]) {
        const res = await fetch(`${deck.url}/${path}`);
        expect({ path, status: res.status }).toEqual({ path, status: 404 });
        expect(res.headers.get('content-security-policy')).toBe(DECK_CSP);
      }
    });

    it('runs the guards on every API route: anonymous is refused, the token is let in', async () => {
      for (const path of ['config', 'snapshot', 'dlq', 'active', 'workers', 'audit', 'stream']) {
        const res = await fetch(`${deck.url}/api/${path}`);
        expect({ path, status: res.status }).toEqual({ path, status: 401 });
      }
      const res = await fetch(`${deck.url}/api/config`, { headers: bearer() });
      expect(res.status).toBe(200);
      expect(await json(res)).toMatchObject({ readOnly: false, csrfHeader: 'x-chokaq-deck' });
    });

    it('streams snapshots as server-sent events to an authorised reader', async () => {
      const stream = await openSse(`${deck.url}/api/stream`, bearer());
      try {
        expect(stream.status).toBe(200);
        expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
        await stream.until((events) =>
          events.some(
            (e) =>
              e.type === 'snapshot' &&
              (e.data as { queues?: Array<{ name: string; pending: number }> }).queues?.some(
                (q) => q.name === 'deck' && q.pending >= 1,
              ),
          ),
        );
        await stream.until((events) => events.some((e) => e.type === 'heartbeat'), 5_000);
      } finally {
        stream.close();
      }
    });

    it('refuses a mutation without the CSRF header, and applies one with it', async () => {
      const refused = await fetch(`${deck.url}/api/queues/deck/pause`, {
        method: 'POST',
        headers: bearer(),
      });
      expect(refused.status).toBe(403);
      expect((await deck.admin.listQueues()).find((q) => q.name === 'deck')?.isPaused).toBe(false);

      const paused = await fetch(`${deck.url}/api/queues/deck/pause`, {
        method: 'POST',
        headers: bearer(true),
        body: '{}',
      });
      expect(paused.status).toBe(200);
      expect((await deck.admin.listQueues()).find((q) => q.name === 'deck')?.isPaused).toBe(true);
      const audit = await deck.admin.getAuditLog({ action: 'queue.pause' });
      expect(audit.items[0]).toMatchObject({ actor: 'bearer-operator', target: 'deck' });

      const resumed = await fetch(`${deck.url}/api/queues/deck/resume`, {
        method: 'POST',
        headers: bearer(true),
        body: '{}',
      });
      expect(resumed.status).toBe(200);
      expect((await deck.admin.listQueues()).find((q) => q.name === 'deck')?.isPaused).toBe(false);
    });

    it("edits a queue's rate limit where it edits its other limits: set, refused when half given, cleared", async () => {
      const patch = (body: unknown) =>
        fetch(`${deck.url}/api/queues/deck`, {
          method: 'PATCH',
          headers: { ...bearer(true), 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const set = await patch({ rateLimit: { max: 5, perMs: 1_000 } });
      expect(set.status).toBe(200);
      expect(await json(set)).toMatchObject({ name: 'deck', rateLimit: { max: 5, perMs: 1_000 } });
      const snapshot = await deck.app.get(DeckSnapshotService).read();
      expect(snapshot.ok && snapshot.queues.find((q) => q.name === 'deck')?.rateLimit).toEqual({
        max: 5,
        perMs: 1_000,
      });
      const half = await patch({ rateLimit: { max: 5, perMs: null } });
      expect(half.status).toBe(400);
      expect(await json(half)).toMatchObject({
        issues: [expect.objectContaining({ path: 'patch.rateLimit.perMs' })],
      });
      const cleared = await patch({ rateLimit: null });
      expect(cleared.status).toBe(200);
      expect((await deck.admin.listQueues()).find((q) => q.name === 'deck')?.rateLimit).toBeNull();
    });

    it('answers bad input with 400 and its issues, a stale confirmation with 409', async () => {
      const bad = await fetch(`${deck.url}/api/dlq?limit=0`, { headers: bearer() });
      expect(bad.status).toBe(400);
      expect(await json(bad)).toMatchObject({
        error: 'validation',
        issues: [expect.objectContaining({ path: expect.stringContaining('limit') })],
      });

      const notNumber = await fetch(`${deck.url}/api/dlq?reason=abc`, { headers: bearer() });
      expect(notNumber.status).toBe(400);

      // A payload nested 10,000 deep is refused with 400: the issue echoes it abbreviated.
      const deep = `{"payload":${'{"next":'.repeat(10_000)}{}${'}'.repeat(10_000)}}`;
      const tooDeep = await fetch(
        `${deck.url}/api/jobs/00000000-0000-0000-0000-000000000000/resurrect`,
        { method: 'POST', headers: bearer(true), body: deep },
      );
      expect(tooDeep.status).toBe(400);
      expect(await json(tooDeep)).toMatchObject({
        error: 'validation',
        issues: [expect.objectContaining({ path: 'edits.payload' })],
      });

      const forged = await fetch(`${deck.url}/api/dlq/resurrect`, {
        method: 'POST',
        headers: bearer(true),
        body: JSON.stringify({ filter: { queue: 'deck' }, token: 'forged' }),
      });
      expect(forged.status).toBe(409);
      expect(await json(forged)).toMatchObject({ error: 'confirmation', reason: 'invalid' });

      const missing = await fetch(`${deck.url}/api/jobs/00000000-0000-0000-0000-000000000000`, {
        headers: bearer(),
      });
      expect(missing.status).toBe(404);
    });

    it('edits a Pending job: 200 and stored, 400 with issues, 409 once claimed, 404 for no job, 403 without the CSRF header', async () => {
      const update = (id: string, edits: unknown, headers = bearer(true)) =>
        fetch(`${deck.url}/api/jobs/${id}/update`, {
          method: 'POST',
          headers,
          body: JSON.stringify(edits),
        });
      // A queue no test here claims from, and an hour's delay: Pending and not due.
      const id = await deck.client.enqueue(
        'edits',
        { n: 1 },
        { type: 'edit', priority: 1, delayMs: 3_600_000 },
      );

      const refused = await update(id, { priority: 9 }, bearer());
      expect(refused.status).toBe(403);
      expect((await deck.admin.getJob(id))?.priority).toBe(1);

      const updated = await update(id, { priority: 7, tags: ['edited'], runAt: 'now' });
      expect(updated.status).toBe(200);
      expect(await json(updated)).toEqual({ updated: true });
      expect(await deck.admin.getJob(id)).toMatchObject({
        status: JobStatus.Pending,
        payload: { n: 1 },
        priority: 7,
        tags: ['edited'],
        scheduledAtUtc: null,
      });

      const bad = await update(id, { priority: 'high' });
      expect(bad.status).toBe(400);
      expect(await json(bad)).toMatchObject({
        error: 'validation',
        issues: [expect.objectContaining({ path: 'edits.priority' })],
      });

      // Claimed and started, as a worker would: refused with its status, and left as it was.
      expect(await startAsWorker(deck.app, 'edits', 'edit')).toEqual([id]);
      const conflict = await update(id, { priority: 3 });
      expect(conflict.status).toBe(409);
      expect(await json(conflict)).toEqual({
        error: 'not-pending',
        message: `Job ${id} cannot be edited: it is Processing, and only a Pending job can be`,
        status: JobStatus.Processing,
      });
      expect((await deck.admin.getJob(id))?.priority).toBe(7);

      const missing = await update(randomUUID(), { priority: 3 });
      expect(missing.status).toBe(404);
      expect(await json(missing)).toMatchObject({ error: 'not-found', status: null });
      expect((await deck.admin.getAuditLog({ action: 'job.update' })).items).toHaveLength(1);
    });
  },
);

describe('The Deck: destructive guards, read-only, global guards', () => {
  const db = e2eDatabase('sqlite');
  const apps: DeckApp[] = [];
  afterAll(async () => {
    for (const app of apps) await app.close();
    await db.close();
  });

  it('destructiveGuards deny the mutations while the reads work', async () => {
    const deck = await startDeckApp({ db, deck: { destructiveGuards: [new DenyGuard()] } });
    apps.push(deck);
    expect((await fetch(`${deck.url}/api/snapshot`, { headers: bearer() })).status).toBe(200);
    expect((await fetch(`${deck.url}/api/dlq`, { headers: bearer() })).status).toBe(200);
    const preview = await fetch(`${deck.url}/api/dlq/preview`, {
      method: 'POST',
      headers: bearer(true),
      body: JSON.stringify({ action: 'purge', filter: {} }),
    });
    expect(preview.status).toBe(200);
    for (const path of [
      'queues/deck/pause',
      'dlq/purge',
      'jobs/x/cancel',
      'jobs/x/update',
      'batches/x/cancel',
      'recurring/x/trigger',
    ]) {
      const res = await fetch(`${deck.url}/api/${path}`, {
        method: 'POST',
        headers: bearer(true),
        body: '{}',
      });
      expect({ path, status: res.status }).toEqual({ path, status: 403 });
    }
    expect((await deck.admin.getAuditLog()).items).toHaveLength(0);
  });

  it('readOnly refuses every mutation and says so in its config', async () => {
    const deck = await startDeckApp({ db, deck: { readOnly: true } });
    apps.push(deck);
    const config = await json(await fetch(`${deck.url}/api/config`, { headers: bearer() }));
    expect(config.readOnly).toBe(true);
    const res = await fetch(`${deck.url}/api/queues/deck/pause`, {
      method: 'POST',
      headers: bearer(true),
    });
    expect(res.status).toBe(403);
    expect(await json(res)).toMatchObject({ message: expect.stringMatching(/read-only/) });
  });

  it("applies the app's global guards in addition to its own", async () => {
    const deck = await startDeckApp({ db, globalGuard: BlockingGlobalGuard });
    apps.push(deck);
    expect((await fetch(`${deck.url}/api/config`, { headers: bearer() })).status).toBe(200);
    const blocked = await fetch(`${deck.url}/api/config`, {
      headers: { ...bearer(), 'x-blocked': '1' },
    });
    expect(blocked.status).toBe(403);
    // and the global guard alone does not let anyone in
    expect((await fetch(`${deck.url}/api/config`)).status).toBe(401);
  });
});

describePostgres('The Deck: one shared snapshot per process [postgres]', () => {
  const db = e2eDatabase('postgres');
  let deck: DeckApp;
  const query = pg.Client.prototype.query;
  let statements = 0;

  beforeAll(async () => {
    deck = await startDeckApp({ db, deck: { refreshMs: 300 } });
    await deck.client.enqueue('deck', { n: 1 }, { type: 'ok' });
    pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
      statements++;
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
  });
  afterAll(async () => {
    pg.Client.prototype.query = query;
    await deck?.close();
    await db.close();
  });

  it('twenty open streams cost one set of reads per tick', async () => {
    const snapshots = deck.app.get(DeckSnapshotService);
    // What one set of reads costs, alone.
    const before = statements;
    await snapshots.read();
    const perRead = statements - before;
    expect(perRead).toBeGreaterThan(0);

    const readsBefore = snapshots.reads;
    const statementsBefore = statements;
    const streams = await Promise.all(
      Array.from({ length: 20 }, () => openSse(`${deck.url}/api/stream`, bearer())),
    );
    try {
      const ticks = (s: { events: Array<{ type: string }> }): number =>
        s.events.filter((e) => e.type === 'snapshot').length;
      await Promise.all(streams.map((s) => s.until(() => ticks(s) >= 4, 15_000)));
    } finally {
      streams.forEach((s) => s.close());
    }
    const reads = snapshots.reads - readsBefore;
    const spent = statements - statementsBefore;
    // Every stream saw at least four snapshots; all of them together cost one read per tick.
    const distinct = new Set(
      streams.flatMap((s) =>
        s.events.filter((e) => e.type === 'snapshot').map((e) => (e.data as { at: string }).at),
      ),
    );
    expect(reads).toBeGreaterThanOrEqual(4);
    expect(reads).toBeLessThan(20);
    expect(distinct.size).toBeLessThanOrEqual(reads);
    expect(spent).toBeLessThanOrEqual((reads + 1) * perRead);
  });

  it("sets a queue's group limits through the API, and its snapshot carries them and its busiest groups", async () => {
    const patch = (body: unknown) =>
      fetch(`${deck.url}/api/queues/tenants`, {
        method: 'PATCH',
        headers: bearer(true),
        body: JSON.stringify(body),
      });
    const half = await patch({ groupRateLimit: { max: 10, perMs: null } });
    expect(half.status).toBe(400);
    expect(await json(half)).toMatchObject({
      issues: [expect.objectContaining({ path: 'patch.groupRateLimit.perMs' })],
    });
    const set = await patch({ groupConcurrency: 2, groupRateLimit: { max: 10, perMs: 60_000 } });
    expect(set.status).toBe(200);
    expect(await json(set)).toMatchObject({
      name: 'tenants',
      groupConcurrency: 2,
      groupRateLimit: { max: 10, perMs: 60_000 },
    });
    for (const group of ['acme', 'acme', 'globex', 'globex', 'globex', undefined]) {
      await deck.client.enqueue('tenants', {}, { type: 'ok', group });
    }
    // A worker of another process starts one job: the grouped claim takes `acme` first.
    expect(await startAsWorker(deck.app, 'tenants', 'ok')).toHaveLength(1);

    const snapshot = await json(await fetch(`${deck.url}/api/snapshot`, { headers: bearer() }));
    const queues = snapshot.queues as Array<Record<string, unknown>>;
    expect(queues.find((q) => q.name === 'tenants')).toMatchObject({
      groupConcurrency: 2,
      groupRateLimit: { max: 10, perMs: 60_000 },
      pending: 5,
      groups: [
        { group: 'acme', pending: 1, running: 1 },
        { group: 'globex', pending: 3, running: 0 },
        // the queue's jobs without a group
        { group: '', pending: 1, running: 0 },
      ],
    });
    expect(queues.find((q) => q.name === 'deck')).toMatchObject({
      groupConcurrency: null,
      groupRateLimit: null,
      groups: [],
    });

    const cleared = await patch({ groupConcurrency: null, groupRateLimit: null });
    expect(cleared.status).toBe(200);
    const after = await deck.app.get(DeckSnapshotService).read();
    expect(after.ok && after.queues.find((q) => q.name === 'tenants')).toMatchObject({
      groupConcurrency: null,
      groupRateLimit: null,
      groups: [],
    });
  });
});
