import { randomBytes, randomUUID } from 'node:crypto';
import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import {
  JobListItem,
  ListOrder,
  ListPage,
  ListQuery,
} from '../../libs/chokaq/src/interfaces/job-view.interface';
import { MAX_LIST_SCAN } from '../../libs/chokaq/src/validation/limits';
import { encodeListCursor } from '../../libs/chokaq/src/validation/list-cursor';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { backdate, claim, expectValidationError, uniqueQueue } from './helpers';

/**
 * Lists (SPEC §3, issue 13): keyset pages newest or oldest first on each pillar's sort key with
 * the id as tie-breaker, walked with an opaque cursor; list items without the payload or the full
 * error text; filters; the scan bound of a search; and the cursor refused the same way on every
 * dialect.
 */
describeEachDialect('storage contract: lists', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  type Read<F> = (q: ListQuery<F>) => Promise<ListPage>;

  /** Walks a list to its end with `nextCursor`; returns the items in page order. */
  async function walk<F>(read: Read<F>, query: ListQuery<F>): Promise<JobListItem[]> {
    const items: JobListItem[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 1_000; pages++) {
      const page = await read({ ...query, cursor });
      expect(page.items.length).toBeLessThanOrEqual(query.limit ?? 50);
      expect(page.scanLimited).toBe(false);
      items.push(...page.items);
      if (page.nextCursor === null) return items;
      cursor = page.nextCursor;
    }
    throw new Error('walk: no end after 1,000 pages');
  }

  const ids = (items: readonly { id: string }[]): string[] => items.map((i) => i.id);

  /** `ids` in list order: by `key`, ties by id (byte order), newest or oldest first. */
  function inListOrder(
    items: readonly JobListItem[],
    key: 'enqueuedAtUtc' | 'finishedAtUtc' | 'failedAtUtc',
    order: ListOrder,
  ): string[] {
    const sorted = [...items].sort(
      (a, b) => a[key]!.getTime() - b[key]!.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
    return ids(order === 'newest' ? sorted.reverse() : sorted);
  }

  /** `count` archived jobs of `queue` (one batch: they share one finish time). */
  async function archived(queue: string, count: number): Promise<string[]> {
    await db.storage.enqueueMany(Array.from({ length: count }, () => ({ queue })));
    const c = await claim(db.storage, queue, count);
    await db.storage.markAsProcessing(c.leases);
    const runs = await db.storage.archiveSucceeded(c.leases.map((l) => ({ ...l, durationMs: 7 })));
    expect(runs).toHaveLength(count);
    return runs.map((r) => r.id);
  }

  /** `count` cancelled (DLQ) jobs of `queue` (one call: they share one failure time). */
  async function dead(queue: string, count: number): Promise<string[]> {
    const jobs = await db.storage.enqueueMany(Array.from({ length: count }, () => ({ queue })));
    const dlq = jobs.map((r) => r.id);
    expect((await db.storage.cancel(dlq)).cancelled).toHaveLength(count);
    return dlq;
  }

  it('orders the active list by enqueue time, newest first by default, or oldest first', async () => {
    const queue = uniqueQueue('order');
    const jobs = [];
    for (let i = 0; i < 5; i++) jobs.push((await db.storage.enqueue({ queue })).id);
    // Distinct enqueue times, the first job the oldest: one hour apart.
    for (let i = 0; i < jobs.length; i++) {
      await backdate(db, 'hot', 'enqueued_at_utc', [jobs[i]], (jobs.length - i) * 3_600_000);
    }
    expect(ids((await db.storage.listActive({ filter: { queue } })).items)).toEqual(
      [...jobs].reverse(),
    );
    expect(
      ids((await db.storage.listActive({ filter: { queue }, order: 'oldest' })).items),
    ).toEqual(jobs);
    const newestTwo = await db.storage.listActive({ filter: { queue }, limit: 2 });
    expect(ids(newestTwo.items)).toEqual([jobs[4], jobs[3]]);
    expect(newestTwo.nextCursor).toEqual(expect.any(String));
  });

  it.each<ListOrder>(['newest', 'oldest'])(
    'walking every page (%s first) returns each row exactly once, in order, also with ties in the sort key',
    async (order) => {
      // Each batch shares one time: an enqueueMany one enqueue time, an archive batch one finish
      // time, a cancel one failure time, so the id alone orders the rows within it.
      const hotQueue = uniqueQueue('walk.hot');
      await db.storage.enqueueMany(Array.from({ length: 23 }, () => ({ queue: hotQueue })));
      await db.storage.enqueueMany(Array.from({ length: 4 }, () => ({ queue: hotQueue })));
      const hot = await walk((q) => db.storage.listActive(q), {
        filter: { queue: hotQueue },
        limit: 5,
        order,
      });
      expect(new Set(ids(hot)).size).toBe(27);
      expect(ids(hot)).toEqual(inListOrder(hot, 'enqueuedAtUtc', order));

      const archiveQueue = uniqueQueue('walk.archive');
      const done = await archived(archiveQueue, 12);
      const archive = await walk((q) => db.storage.listArchive(q), {
        filter: { queue: archiveQueue },
        limit: 5,
        order,
      });
      expect([...ids(archive)].sort()).toEqual([...done].sort());
      expect(ids(archive)).toEqual(inListOrder(archive, 'finishedAtUtc', order));

      const dlqQueue = uniqueQueue('walk.dlq');
      const failed = await dead(dlqQueue, 12);
      const dlq = await walk((q) => db.storage.listDlq(q), {
        filter: { queue: dlqQueue },
        limit: 1,
        order,
      });
      expect([...ids(dlq)].sort()).toEqual([...failed].sort());
      expect(ids(dlq)).toEqual(inListOrder(dlq, 'failedAtUtc', order));
    },
  );

  it('a walk newest first neither repeats nor skips a row while new jobs arrive', async () => {
    const queue = uniqueQueue('walk.arrivals');
    const before = (
      await db.storage.enqueueMany(Array.from({ length: 20 }, () => ({ queue })))
    ).map((r) => r.id);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await db.storage.listActive({ filter: { queue }, limit: 3, cursor });
      seen.push(...ids(page.items));
      cursor = page.nextCursor ?? undefined;
      // Newer than every row of the walk: they belong before its first page.
      await db.storage.enqueue({ queue });
    } while (cursor);
    expect(seen).toEqual([...before].reverse());
  });

  it('list items carry no payload and no full error text: the payload size and a 200-character error prefix', async () => {
    const queue = uniqueQueue('items');
    // About 1 MB of incompressible text: stored out of line (PostgreSQL TOAST, SQLite overflow
    // pages, SQL Server LOB pages).
    const payload = { blob: randomBytes(740_000).toString('base64') };
    const bytes = Buffer.byteLength(JSON.stringify(payload), 'utf8');
    expect(bytes).toBeGreaterThan(980_000);
    const [big, small] = await db.storage.enqueueMany([
      { queue, type: 'big', payload, tags: ['vip', 'eu'], priority: 3 },
      { queue, type: 'small', payload: { n: 1 } },
    ]);

    const hot = (await db.storage.listActive({ filter: { queue }, order: 'oldest' })).items;
    expect(hot.map((i) => i.id)).toEqual([big.id, small.id]);
    const item = hot[0];
    expect(item).not.toHaveProperty('payload');
    expect(item).not.toHaveProperty('errorDetails');
    expect(item).not.toHaveProperty('lastError');
    // Stored as UTF-8 text on PostgreSQL and SQLite, UTF-16 (nvarchar) on SQL Server.
    const stored = db.dialect === 'mssql' ? JSON.stringify(payload).length * 2 : bytes;
    expect(item).toEqual({
      id: big.id,
      queue,
      type: 'big',
      pillar: 'hot',
      status: JobStatus.Pending,
      failureReason: null,
      attemptCount: 0,
      priority: 3,
      tags: ['vip', 'eu'],
      createdAtUtc: expect.any(Date),
      enqueuedAtUtc: expect.any(Date),
      scheduledAtUtc: null,
      startedAtUtc: null,
      finishedAtUtc: null,
      failedAtUtc: null,
      durationMs: null,
      workerId: null,
      progress: null,
      heldSinceUtc: null,
      errorPrefix: null,
      payloadBytes: stored,
    });
    expect(hot[1].payloadBytes).toBe(db.dialect === 'mssql' ? 14 : 7);

    // In the DLQ, with an error text of 8,000 characters: the item carries its first 200.
    const c = await claim(db.storage, queue, 2);
    await db.storage.markAsProcessing(c.leases);
    const error = `Error: ${'é'.repeat(3_000)}\n${'x'.repeat(4_990)}`;
    const bigLease = c.leases.find((l) => l.id === big.id)!;
    await db.storage.moveToDlq(bigLease, { reason: FailureReason.FatalError, error });
    const smallLease = c.leases.find((l) => l.id === small.id)!;
    await db.storage.archiveSucceeded([{ ...smallLease, durationMs: 42 }]);

    const [inDlq] = (await db.storage.listDlq({ filter: { queue } })).items;
    expect(inDlq).toMatchObject({
      id: big.id,
      pillar: 'dlq',
      status: JobStatus.Failed,
      failureReason: FailureReason.FatalError,
      attemptCount: 1,
      failedAtUtc: expect.any(Date),
      workerId: expect.any(String),
      payloadBytes: stored,
    });
    expect(inDlq.errorPrefix).toBe(error.slice(0, 200));
    expect(inDlq).not.toHaveProperty('payload');
    const [inArchive] = (await db.storage.listArchive({ filter: { queue } })).items;
    expect(inArchive).toMatchObject({
      id: small.id,
      pillar: 'archive',
      status: JobStatus.Succeeded,
      failureReason: null,
      durationMs: 42,
      finishedAtUtc: expect.any(Date),
      failedAtUtc: null,
    });
    // The full row, payload and error included, only through getJob.
    const full = await db.storage.getJob(big.id);
    expect(full?.payload).toEqual(payload);
    expect(full?.errorDetails).toBe(error);
  }, 60_000);

  /** Types that a search must tell apart; the first of each pair is the literal match. */
  const SEARCH_CASES: Array<[string, string, string]> = [
    ['100%', 'pct.100%', 'pct.1000'],
    ['a_b', 'und.a_b', 'und.axb'],
    ['[x]', 'br.[x]', 'br.x'],
    ['it\'s "ok"', 'quote.it\'s "ok"', 'quote.its ok'],
    ['a\\b', 'bs.a\\b', 'bs.ab'],
  ];

  it('search matches %, _, [, quotes and backslash literally, in id, type, payload or error text (hot, archive, DLQ)', async () => {
    const types = SEARCH_CASES.flatMap(([, hit, miss]) => [hit, miss]);
    const searchIn = async <F>(
      read: Read<F & { queue: string; search: string }>,
      queue: string,
    ) => {
      for (const [term, hit] of SEARCH_CASES) {
        const page = await read({ filter: { queue, search: term } as never });
        expect({ term, types: page.items.map((j) => j.type) }).toEqual({ term, types: [hit] });
        expect(page).toMatchObject({ nextCursor: null, scanLimited: false });
      }
    };

    const hotQueue = uniqueQueue('search.hot');
    const hot = await db.storage.enqueueMany(
      types.map((type, i) => ({ queue: hotQueue, type, payload: { n: `needle-${i}-end` } })),
    );
    await searchIn((q) => db.storage.listActive(q), hotQueue);
    // A substring of the id, or of the payload, finds that job.
    const byId = await db.storage.listActive({
      filter: { queue: hotQueue, search: hot[3].id.slice(-12) },
    });
    expect(ids(byId.items)).toEqual([hot[3].id]);
    const byPayload = await db.storage.listActive({
      filter: { queue: hotQueue, search: 'NEEDLE-4-' },
    });
    expect(ids(byPayload.items)).toEqual([hot[4].id]);

    const archiveQueue = uniqueQueue('search.archive');
    await db.storage.enqueueMany(types.map((type) => ({ queue: archiveQueue, type })));
    const c = await claim(db.storage, archiveQueue, 100);
    await db.storage.markAsProcessing(c.leases);
    await db.storage.archiveSucceeded(c.leases.map((l) => ({ ...l, durationMs: 1 })));
    await searchIn((q) => db.storage.listArchive(q), archiveQueue);

    const dlqQueue = uniqueQueue('search.dlq');
    const dlq = await db.storage.enqueueMany(types.map((type) => ({ queue: dlqQueue, type })));
    await db.storage.cancel(
      dlq.map((r) => r.id),
      'operator-7',
    );
    await searchIn((q) => db.storage.listDlq(q), dlqQueue);
    // The error text: "Cancelled by operator-7" for each of them.
    const byError = await walk((q) => db.storage.listDlq(q), {
      filter: { queue: dlqQueue, search: 'by OPERATOR-7' },
      limit: 3,
    });
    expect([...ids(byError)].sort()).toEqual(dlq.map((r) => r.id).sort());
  });

  it('the tag filter is an exact match (a does not match ab; _ and % are literal)', async () => {
    const queue = uniqueQueue('tags');
    const tagSets = [['ab'], ['a'], ['xa', 'b'], ['a', 'c'], ['a_'], ['%'], []];
    const jobs = (await db.storage.enqueueMany(tagSets.map((tags) => ({ queue, tags })))).map(
      (r) => r.id,
    );
    const expectTag = async (tag: string, expected: number[]) => {
      const hot = await db.storage.listActive({ filter: { queue, tag } });
      expect({ tag, ids: ids(hot.items).sort() }).toEqual({
        tag,
        ids: expected.map((i) => jobs[i]).sort(),
      });
    };
    await expectTag('a', [1, 3]);
    await expectTag('b', [2]);
    await expectTag('ab', [0]);
    await expectTag('a_', [4]);
    await expectTag('%', [5]);
    await expectTag('x', []);
    expect((await db.storage.getJob(jobs[3]))?.tags).toEqual(['a', 'c']);

    await db.storage.cancel(jobs);
    const dlq = await db.storage.listDlq({ filter: { queue, tag: 'a' } });
    expect(ids(dlq.items).sort()).toEqual([jobs[1], jobs[3]].sort());
    expect(ids((await db.storage.listDlq({ filter: { queue, tag: 'a_' } })).items)).toEqual([
      jobs[4],
    ]);
  });

  it('filters by queue, type, status, failure reason and time range on the sort key', async () => {
    const queue = uniqueQueue('filters');
    await db.storage.enqueueMany([
      { queue, type: 'a' },
      { queue, type: 'a' },
      { queue, type: 'b' },
      { queue, type: 'b' },
      { queue, type: 'b' },
    ]);
    const c = await claim(db.storage, { queues: [], types: [{ queue, type: 'b' }] }, 2);
    const count = async (page: Promise<ListPage>) => (await page).items.length;
    expect(await count(db.storage.listActive({ filter: { queue, type: 'b' } }))).toBe(3);
    expect(
      await count(db.storage.listActive({ filter: { queue, status: JobStatus.Fetched } })),
    ).toBe(2);
    expect(
      await count(db.storage.listActive({ filter: { queue, status: JobStatus.Pending } })),
    ).toBe(3);
    expect(
      await count(db.storage.listActive({ filter: { type: 'b', queue: uniqueQueue() } })),
    ).toBe(0);

    await db.storage.moveToDlq(c.leases[0], { reason: FailureReason.FatalError, error: 'x' });
    await db.storage.moveToDlq(c.leases[1], { reason: FailureReason.Timeout, error: 'y' });
    expect(
      ids((await db.storage.listDlq({ filter: { queue, reason: FailureReason.Timeout } })).items),
    ).toEqual([c.leases[1].id]);
    expect(ids((await db.storage.listDlq({ filter: { queue, type: 'b' } })).items).sort()).toEqual(
      c.leases.map((l) => l.id).sort(),
    );

    // The time range is on the list's sort key: from inclusive, to exclusive.
    const now = await db.storage.now();
    const hourAgo = new Date(now.getTime() - 3_600_000);
    const inHour = new Date(now.getTime() + 3_600_000);
    expect(await count(db.storage.listDlq({ filter: { queue, from: hourAgo, to: inHour } }))).toBe(
      2,
    );
    expect(await count(db.storage.listDlq({ filter: { queue, from: inHour } }))).toBe(0);
    expect(await count(db.storage.listDlq({ filter: { queue, to: hourAgo } }))).toBe(0);
    const [x] = (await db.storage.listDlq({ filter: { queue, reason: FailureReason.FatalError } }))
      .items;
    expect(
      ids((await db.storage.listDlq({ filter: { queue, from: x.failedAtUtc! } })).items),
    ).toContain(x.id);
    expect(
      ids((await db.storage.listDlq({ filter: { queue, to: x.failedAtUtc! } })).items),
    ).not.toContain(x.id);
    const pending = (await db.storage.listActive({ filter: { queue } })).items;
    await backdate(db, 'hot', 'enqueued_at_utc', [pending[0].id], 2 * 3_600_000);
    expect(ids((await db.storage.listActive({ filter: { queue, to: hourAgo } })).items)).toEqual([
      pending[0].id,
    ]);
    expect(await count(db.storage.listActive({ filter: { queue, from: hourAgo } }))).toBe(
      pending.length - 1,
    );
    const archiveQueue = uniqueQueue('filters.archive');
    await archived(archiveQueue, 2);
    expect(
      await count(db.storage.listArchive({ filter: { queue: archiveQueue, from: hourAgo } })),
    ).toBe(2);
    expect(
      await count(db.storage.listArchive({ filter: { queue: archiveQueue, to: hourAgo } })),
    ).toBe(0);
    expect(await count(db.storage.listDlq({ filter: { queue: uniqueQueue('none') } }))).toBe(0);
    expect(await db.storage.getJob('0190a000-0000-7000-8000-00000000beef')).toBeNull();
  });

  it(`a search reads at most MAX_LIST_SCAN (${MAX_LIST_SCAN}) rows per page, says so, and its cursor continues the scan`, async () => {
    const queue = uniqueQueue('bound');
    // The match is the oldest job; MAX_LIST_SCAN + 4 newer ones hide it from the first page.
    const [needle] = await db.storage.enqueueMany([
      { queue, type: 'needle.v1' },
      { queue, type: 'hay.old' },
    ]);
    await db.storage.enqueueMany(Array.from({ length: 10_000 }, () => ({ queue, type: 'hay.v1' })));
    await db.storage.enqueueMany(
      Array.from({ length: MAX_LIST_SCAN - 10_000 + 2 }, () => ({ queue, type: 'hay.v1' })),
    );
    const first = await db.storage.listActive({ filter: { queue, search: 'NEEDLE' } });
    expect(first).toEqual({ items: [], nextCursor: expect.any(String), scanLimited: true });
    const second = await db.storage.listActive({
      filter: { queue, search: 'NEEDLE' },
      cursor: first.nextCursor!,
    });
    expect(ids(second.items)).toEqual([needle.id]);
    expect(second).toMatchObject({ nextCursor: null, scanLimited: false });

    // Oldest first, the match is on the first page, and the page fills before the bound.
    const oldest = await db.storage.listActive({
      filter: { queue, search: 'hay.' },
      order: 'oldest',
      limit: 3,
    });
    expect(oldest.items.map((i) => i.type)).toEqual(['hay.old', 'hay.v1', 'hay.v1']);
    expect(oldest).toMatchObject({ nextCursor: expect.any(String), scanLimited: false });
    // Without a search term the same list is a plain index read: no bound.
    const plain = await db.storage.listActive({ filter: { queue }, order: 'oldest', limit: 2 });
    expect(ids(plain.items)[0]).toBe(needle.id);
    expect(plain.scanLimited).toBe(false);
  }, 120_000);

  it('refuses a cursor of another list or order, or an altered one, with the same issue on every dialect', async () => {
    const queue = uniqueQueue('cursor');
    await dead(queue, 3);
    await db.storage.enqueueMany([{ queue }, { queue }, { queue }]);
    const hotCursor = (await db.storage.listActive({ filter: { queue }, limit: 1 })).nextCursor!;
    const dlqCursor = (await db.storage.listDlq({ filter: { queue }, limit: 1 })).nextCursor!;
    expect(hotCursor).toMatch(/^[A-Za-z0-9_-]+$/);
    // Each cursor continues its own list.
    expect(
      (await db.storage.listActive({ filter: { queue }, cursor: hotCursor })).items,
    ).toHaveLength(2);

    const refused = [
      db.storage.listDlq({ cursor: hotCursor }),
      db.storage.listArchive({ cursor: dlqCursor }),
      db.storage.listActive({ cursor: hotCursor, order: 'oldest' }),
      db.storage.listActive({ cursor: `${hotCursor.slice(0, -2)}x` }),
      db.storage.listActive({
        cursor: encodeListCursor('hot', 'newest', { at: '2026-13-01T00:00:00Z', id: randomUUID() }),
      }),
      db.storage.listActive({ cursor: "'; DROP TABLE jobs_hot; --" }),
    ];
    const messages = [];
    for (const call of refused) {
      const error = await expectValidationError(call, 'cursor');
      messages.push(error.issues[0].message);
    }
    const why = (reason: string) => `must be a nextCursor of this list and order (${reason})`;
    expect(messages).toEqual([
      why('a cursor of another list'),
      why('a cursor of another list'),
      why('a cursor of the other order'),
      why('not a cursor'),
      why('altered'),
      why('not a cursor'),
    ]);
    await expectValidationError(db.storage.listActive({ limit: 1_001 }), 'limit');
    await expectValidationError(db.storage.listArchive({ limit: 0 }), 'limit');
    await expectValidationError(db.storage.listDlq({ order: 'desc' as never }), 'order');
    await expectValidationError(db.storage.listDlq({ page: 2 } as never), 'page');
    expect((await db.storage.listActive({ limit: 1_000 })).items.length).toBeLessThanOrEqual(1_000);
  });
});
