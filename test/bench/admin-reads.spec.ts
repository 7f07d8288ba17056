import { readsTable, spliceSection, type AdminReadsRun } from '../../bench/lib/admin-reads-report';
import {
  ARCHIVE_SPAN_MS,
  BUCKET_MINUTES,
  SEED_ERROR_FAMILIES,
  SEED_QUEUES,
  seedStatements,
  type SeedSizes,
} from '../../bench/lib/admin-reads-seed';
import type { BenchDialect } from '../../bench/lib/args';
import { ADMIN_READS_HEADING, PROFILE_HEADING, mergeResults } from '../../bench/lib/report';
import { dlqStatusFor } from '../../libs/chokaq/src/common/dlq-status';
import { errorFamily } from '../../libs/chokaq/src/storage/shared/error-family';
import { quoteSchema } from '../../libs/chokaq/src/storage/postgres/sql';
import type { StorageDialect } from '../../libs/chokaq/src/interfaces/job.interface';
import {
  createTestSchema,
  describeEachDialect,
  describePostgres,
  type TestSchema,
} from '../support/test-database';

/** Small, with several statements per table. */
const SIZES: SeedSizes = { archived: 900, dead: 400, pending: 300, chunk: 250 };
const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const UUID_V7_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-8000-[0-9a-f]{12}$/;

/** A schema created by the storage, seeded by the admin-reads scenario's statements. */
async function seeded(dialect: BenchDialect): Promise<TestSchema> {
  const db = createTestSchema(dialect);
  await db.openStorage();
  const qualifier = dialect === 'postgres' ? quoteSchema(db.schema) : db.schema;
  for (const statement of seedStatements(dialect, qualifier, SIZES, NOW))
    await db.sql(statement.sql);
  return db;
}

/**
 * The admin-reads bench scenario's seed (bench/lib/admin-reads-seed.ts) against the schema the
 * storage creates: it must keep inserting valid rows as the schema grows, and give both dialects
 * the same data. No timing here: the scenario itself runs only under `npm run bench`.
 */
describeEachDialect(
  'admin-reads bench seed',
  (fixture) => {
    let db: TestSchema;
    beforeAll(async () => {
      db = await seeded(fixture.name as BenchDialect);
    }, 60_000);
    afterAll(async () => {
      await db?.close();
    });

    it('writes the rows asked for, and a day of one-minute buckets per queue', async () => {
      expect(await db.count('archive')).toBe(SIZES.archived);
      expect(await db.count('dlq')).toBe(SIZES.dead);
      expect(await db.count('hot', 'status = 0')).toBe(SIZES.pending);
      // Succeeded, failed, retried and started every minute; a cancellation every 30 minutes.
      const perQueue = 4 * BUCKET_MINUTES + Math.ceil(BUCKET_MINUTES / 30);
      expect(await db.count('buckets')).toBe(perQueue * SEED_QUEUES.length);
    });

    it('reads back through the storage: pages, summary, error families', async () => {
      const storage = await db.openStorage({ autoCreateSchema: false });
      const page = await storage.listArchive({ limit: 1_000 });
      expect(page.items).toHaveLength(SIZES.archived);
      expect(new Set(page.items.map((i) => i.id)).size).toBe(SIZES.archived);
      for (const item of page.items) {
        expect(item.id).toMatch(UUID_V7_SHAPE);
        expect(SEED_QUEUES).toContain(item.queue);
        expect(item.type.startsWith(`${item.queue}.`)).toBe(true);
        expect(item.finishedAtUtc!.getTime()).toBeLessThan(NOW);
        expect(item.finishedAtUtc!.getTime()).toBeGreaterThan(NOW - ARCHIVE_SPAN_MS - 2_000);
        expect(item.startedAtUtc!.getTime()).toBeLessThanOrEqual(item.finishedAtUtc!.getTime());
        expect(item.enqueuedAtUtc.getTime()).toBeLessThanOrEqual(item.startedAtUtc!.getTime());
      }
      expect(page.items.some((i) => i.tags.length > 0)).toBe(true);
      expect(Math.max(...page.items.map((i) => i.payloadBytes))).toBeGreaterThan(8_000);

      const dead = await storage.listDlq({ limit: 1_000 });
      for (const item of dead.items) expect(item.status).toBe(dlqStatusFor(item.failureReason!));
      const families = new Set<string>();
      for (const item of dead.items) {
        const job = await storage.getJob(item.id);
        families.add(errorFamily(job!.errorDetails));
      }
      // One family per template; an all-digit hex word (about 2 % of one family) adds one more.
      expect(families.size).toBeGreaterThan(10);
      expect(families.size).toBeLessThanOrEqual(SEED_ERROR_FAMILIES + 1);

      if (fixture.name === 'sqlite') {
        // The row-count triggers counted the seeded rows.
        const summary = await storage.getSummary();
        expect(summary).toMatchObject({ archived: SIZES.archived, dlq: SIZES.dead });
      }
    });
  },
  { only: ['sqlite', 'postgres'] },
);

describePostgres('admin-reads bench seed: the same rows on both dialects', () => {
  const dbs: TestSchema[] = [];
  afterAll(async () => {
    for (const db of dbs) await db.close();
  });

  it('writes identical rows on PostgreSQL and SQLite (large payloads aside)', async () => {
    const [sqlite, pg] = [await seeded('sqlite'), await seeded('postgres')];
    dbs.push(sqlite, pg);
    const ms = (dialect: StorageDialect, column: string) =>
      dialect === 'postgres' ? `(extract(epoch FROM ${column}) * 1000)::bigint` : column;
    const rows = async (db: TestSchema) =>
      (
        await db.sql<Record<string, unknown>>(
          `SELECT id, queue, type, tags, priority, status, attempt_count, failure_reason,
                  ${ms(db.dialect, 'failed_at_utc')} AS failed, ${ms(db.dialect, 'started_at_utc')} AS started,
                  error_details, last_error,
                  CASE WHEN length(payload) > 1000 THEN CAST(length(payload) AS TEXT) ELSE payload END AS payload
           FROM ${db.table('dlq')} ORDER BY id`,
        )
      ).map((r) =>
        Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === null ? null : String(v)])),
      );
    const [a, b] = [await rows(sqlite), await rows(pg)];
    expect(a).toHaveLength(SIZES.dead);
    expect(b).toEqual(a);
  }, 60_000);
});

describe('admin-reads section of RESULTS.md', () => {
  const suite = '# ChokaQ benchmark results\n\n_Generated…_\n\n## Results\n\n| a |\n';
  const profile = `${PROFILE_HEADING}\n\nHand-written.\n`;
  const section = (text: string) => `${ADMIN_READS_HEADING}\n\n${text}\n`;

  it('goes before the profile section, then replaces only itself', () => {
    const first = spliceSection(`${suite}\n${profile}`, section('one'));
    expect(first).toBe(`${suite}\n${section('one')}\n${profile}`);
    const second = spliceSection(first, section('two'));
    expect(second).toBe(`${suite}\n${section('two')}\n${profile}`);
  });

  it('is kept when the suite rewrites its own part', () => {
    const previous = spliceSection(`${suite}\n${profile}`, section('kept'));
    const text = mergeResults(previous, '# ChokaQ benchmark results\n\nnew tables');
    expect(text).toBe(`# ChokaQ benchmark results\n\nnew tables\n\n${section('kept')}\n${profile}`);
  });

  it('marks each read against its target', () => {
    const run = {
      dialect: 'postgres',
      timings: [
        { name: 'fast', kind: 'read', samplesMs: [1], p50: 1, p95: 2, max: 2 },
        { name: 'slow', kind: 'read', samplesMs: [60], p50: 55, p95: 60, max: 61 },
        { name: 'search', kind: 'search', samplesMs: [90], p50: 80, p95: 90, max: 95 },
      ],
    } as AdminReadsRun;
    const lines = readsTable(run).split('\n');
    expect(lines.find((l) => l.startsWith('| fast'))).toContain('| met |');
    expect(lines.find((l) => l.startsWith('| slow'))).toContain('**missed**');
    expect(lines.find((l) => l.startsWith('| search'))).toContain('< 500 ms (search) | met');
  });
});
