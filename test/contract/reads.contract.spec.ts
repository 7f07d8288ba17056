import { FailureReason, JobStatus } from '../../libs/chokaq/src/interfaces/job-status.enum';
import {
  JobView,
  Page,
  PageQuery,
  SortKey,
} from '../../libs/chokaq/src/interfaces/job-view.interface';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { claim, expectValidationError, uniqueQueue } from './helpers';

/**
 * Reads (SPEC §3): whitelisted sorting with an id tie-breaker, literal LIKE search, exact tag
 * match, bounded page sizes, and filters.
 */
describeEachDialect('storage contract: reads and pages', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  /** Walks every page; returns the ids in page order. */
  async function walk<F>(
    read: (q: PageQuery<F>) => Promise<Page<JobView>>,
    query: PageQuery<F>,
    expectedTotal: number,
  ): Promise<string[]> {
    const ids: string[] = [];
    const pageSize = query.pageSize ?? 50;
    const pages = Math.ceil(expectedTotal / pageSize) + 1; // one past the end must be empty
    for (let page = 1; page <= pages; page++) {
      const result = await read({ ...query, page });
      expect(result.total).toBe(expectedTotal);
      expect(result.page).toBe(page);
      expect(result.pageSize).toBe(pageSize);
      ids.push(...result.items.map((j) => j.id));
    }
    return ids;
  }

  function expectEachOnce(ids: string[], all: string[]): void {
    expect(ids.length).toBe(new Set(ids).size);
    expect([...ids].sort()).toEqual([...all].sort());
  }

  it('pages: sortBy outside the whitelist of the pillar is rejected with a validation error', async () => {
    const bad = (key: string) => key as SortKey;
    await expectValidationError(db.storage.listActive({ sortBy: bad('bogus') }), 'sortBy');
    await expectValidationError(
      db.storage.listActive({ sortBy: bad('priority; DROP TABLE x') }),
      'sortBy',
    );
    await expectValidationError(db.storage.listActive({ sortBy: 'finishedAt' }), 'sortBy');
    await expectValidationError(db.storage.getArchivePage({ sortBy: 'failedAt' }), 'sortBy');
    await expectValidationError(db.storage.getDlqPage({ sortBy: 'duration' }), 'sortBy');
    await expectValidationError(db.storage.getDlqPage({ sortDir: 'sideways' as 'asc' }), 'sortDir');
  });

  it('pages: pageSize above 1,000 (or below 1) and page below 1 are rejected; 1,000 is accepted', async () => {
    await expectValidationError(db.storage.listActive({ pageSize: 1_001 }), 'pageSize');
    await expectValidationError(db.storage.getArchivePage({ pageSize: 1_001 }), 'pageSize');
    await expectValidationError(db.storage.getDlqPage({ pageSize: 5_000 }), 'pageSize');
    await expectValidationError(db.storage.listActive({ pageSize: 0 }), 'pageSize');
    await expectValidationError(db.storage.listActive({ page: 0 }), 'page');
    expect((await db.storage.listActive({ pageSize: 1_000 })).pageSize).toBe(1_000);
  });

  it('pages: the id tie-breaker keeps paging stable when sort keys are equal (hot, archive, DLQ)', async () => {
    const hotQueue = uniqueQueue('ties.hot');
    const hot = (
      await db.storage.enqueueMany(Array.from({ length: 23 }, () => ({ queue: hotQueue })))
    ).map((r) => r.id);
    for (const sortBy of ['priority', 'createdAt', 'queue', 'type', 'attempts'] as const) {
      for (const sortDir of ['asc', 'desc'] as const) {
        const ids = await walk(
          (q) => db.storage.listActive(q),
          { filter: { queue: hotQueue }, pageSize: 5, sortBy, sortDir },
          23,
        );
        expectEachOnce(ids, hot);
      }
    }

    const archiveQueue = uniqueQueue('ties.archive');
    await db.storage.enqueueMany(Array.from({ length: 12 }, () => ({ queue: archiveQueue })));
    const c = await claim(db.storage, archiveQueue, 12);
    await db.storage.markAsProcessing(c.leases);
    const archived = (
      await db.storage.archiveSucceeded(c.leases.map((l) => ({ ...l, durationMs: 7 })))
    ).map((r) => r.id);
    expect(archived).toHaveLength(12);
    for (const sortBy of ['finishedAt', 'duration', 'priority', 'createdAt'] as const) {
      const ids = await walk(
        (q) => db.storage.getArchivePage(q),
        { filter: { queue: archiveQueue }, pageSize: 5, sortBy, sortDir: 'desc' },
        12,
      );
      expectEachOnce(ids, archived);
    }

    const dlqQueue = uniqueQueue('ties.dlq');
    const dead = (
      await db.storage.enqueueMany(Array.from({ length: 12 }, () => ({ queue: dlqQueue })))
    ).map((r) => r.id);
    expect((await db.storage.cancel(dead)).cancelled).toHaveLength(12);
    for (const sortBy of ['failedAt', 'priority', 'queue'] as const) {
      for (const sortDir of ['asc', 'desc'] as const) {
        const ids = await walk(
          (q) => db.storage.getDlqPage(q),
          { filter: { queue: dlqQueue }, pageSize: 5, sortBy, sortDir },
          12,
        );
        expectEachOnce(ids, dead);
      }
    }
  });

  it('pages: sorting by a key orders the items', async () => {
    const queue = uniqueQueue('order');
    await db.storage.enqueueMany([3, -1, 7, 0, 5].map((priority) => ({ queue, priority })));
    const asc = await db.storage.listActive({
      filter: { queue },
      sortBy: 'priority',
      sortDir: 'asc',
    });
    expect(asc.items.map((j) => j.priority)).toEqual([-1, 0, 3, 5, 7]);
    const desc = await db.storage.listActive({
      filter: { queue },
      sortBy: 'priority',
      sortDir: 'desc',
    });
    expect(desc.items.map((j) => j.priority)).toEqual([7, 5, 3, 0, -1]);
  });

  /** Types that a search must tell apart; the first of each pair is the literal match. */
  const SEARCH_CASES: Array<[string, string, string]> = [
    ['100%', 'pct.100%', 'pct.1000'],
    ['a_b', 'und.a_b', 'und.axb'],
    ['[x]', 'br.[x]', 'br.x'],
    ['it\'s "ok"', 'quote.it\'s "ok"', 'quote.its ok'],
    ['a\\b', 'bs.a\\b', 'bs.ab'],
  ];

  it('pages: search terms containing %, _, [, quotes and backslash are matched literally (hot, archive, DLQ)', async () => {
    const types = SEARCH_CASES.flatMap(([, hit, miss]) => [hit, miss]);
    const searchIn = async (
      read: (q: PageQuery<{ queue: string; search: string }>) => Promise<Page<JobView>>,
      queue: string,
    ) => {
      for (const [term, hit] of SEARCH_CASES) {
        const page = await read({ filter: { queue, search: term } });
        expect({ term, types: page.items.map((j) => j.type) }).toEqual({ term, types: [hit] });
        expect(page.total).toBe(1);
      }
    };

    const hotQueue = uniqueQueue('search.hot');
    const hot = await db.storage.enqueueMany(types.map((type) => ({ queue: hotQueue, type })));
    await searchIn((q) => db.storage.listActive(q), hotQueue);
    // A substring of the id finds that job.
    const byId = await db.storage.listActive({
      filter: { queue: hotQueue, search: hot[3].id.slice(-12) },
    });
    expect(byId.items.map((j) => j.id)).toEqual([hot[3].id]);

    const archiveQueue = uniqueQueue('search.archive');
    await db.storage.enqueueMany(types.map((type) => ({ queue: archiveQueue, type })));
    const c = await claim(db.storage, archiveQueue, 100);
    await db.storage.markAsProcessing(c.leases);
    await db.storage.archiveSucceeded(c.leases.map((l) => ({ ...l, durationMs: 1 })));
    await searchIn((q) => db.storage.getArchivePage(q), archiveQueue);

    const dlqQueue = uniqueQueue('search.dlq');
    const dlq = await db.storage.enqueueMany(types.map((type) => ({ queue: dlqQueue, type })));
    await db.storage.cancel(dlq.map((r) => r.id));
    await searchIn((q) => db.storage.getDlqPage(q), dlqQueue);
  });

  it('pages: the tag filter is an exact match (a does not match ab; _ and % are literal)', async () => {
    const queue = uniqueQueue('tags');
    const tagSets = [['ab'], ['a'], ['xa', 'b'], ['a', 'c'], ['a_'], ['%'], []];
    const ids = (await db.storage.enqueueMany(tagSets.map((tags) => ({ queue, tags })))).map(
      (r) => r.id,
    );
    const expectTag = async (tag: string, expected: number[]) => {
      const hot = await db.storage.listActive({ filter: { queue, tag } });
      expect({ tag, ids: hot.items.map((j) => j.id).sort() }).toEqual({
        tag,
        ids: expected.map((i) => ids[i]).sort(),
      });
    };
    await expectTag('a', [1, 3]);
    await expectTag('b', [2]);
    await expectTag('ab', [0]);
    await expectTag('a_', [4]);
    await expectTag('%', [5]);
    await expectTag('x', []);
    expect((await db.storage.getJob(ids[3]))?.tags).toEqual(['a', 'c']);

    await db.storage.cancel(ids);
    const dlq = await db.storage.getDlqPage({ filter: { queue, tag: 'a' } });
    expect(dlq.items.map((j) => j.id).sort()).toEqual([ids[1], ids[3]].sort());
    expect(
      (await db.storage.getDlqPage({ filter: { queue, tag: 'a_' } })).items.map((j) => j.id),
    ).toEqual([ids[4]]);
  });

  it('pages: filters by queue, type, status, reason and date range; total counts every match', async () => {
    const queue = uniqueQueue('filters');
    await db.storage.enqueueMany([
      { queue, type: 'a' },
      { queue, type: 'a' },
      { queue, type: 'b' },
      { queue, type: 'b' },
      { queue, type: 'b' },
    ]);
    const c = await claim(db.storage, { queues: [], types: [{ queue, type: 'b' }] }, 2);
    expect((await db.storage.listActive({ filter: { queue, type: 'b' } })).total).toBe(3);
    expect(
      (await db.storage.listActive({ filter: { queue, status: JobStatus.Fetched } })).total,
    ).toBe(2);
    expect(
      (await db.storage.listActive({ filter: { queue, status: JobStatus.Pending } })).total,
    ).toBe(3);
    const small = await db.storage.listActive({ filter: { queue }, pageSize: 2 });
    expect(small.items).toHaveLength(2);
    expect(small.total).toBe(5);

    await db.storage.moveToDlq(c.leases[0], { reason: FailureReason.FatalError, error: 'x' });
    await db.storage.moveToDlq(c.leases[1], { reason: FailureReason.Timeout, error: 'y' });
    expect(
      (await db.storage.getDlqPage({ filter: { queue, reason: FailureReason.Timeout } })).items.map(
        (j) => j.id,
      ),
    ).toEqual([c.leases[1].id]);
    const now = await db.storage.now();
    const hourAgo = new Date(now.getTime() - 3_600_000);
    const inHour = new Date(now.getTime() + 3_600_000);
    expect(
      (await db.storage.getDlqPage({ filter: { queue, from: hourAgo, to: inHour } })).total,
    ).toBe(2);
    expect((await db.storage.getDlqPage({ filter: { queue, from: inHour } })).total).toBe(0);
    expect((await db.storage.getDlqPage({ filter: { queue, to: hourAgo } })).total).toBe(0);
    expect((await db.storage.getDlqPage({ filter: { queue: uniqueQueue('none') } })).total).toBe(0);
    expect(await db.storage.getJob('0190a000-0000-7000-8000-00000000beef')).toBeNull();
  });
});
