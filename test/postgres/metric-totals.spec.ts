import { Client } from 'pg';
import type { ThroughputPoint } from '../../libs/chokaq/src/interfaces/job-view.interface';
import type { RetentionPolicy } from '../../libs/chokaq/src/interfaces/job.interface';
import type { JobStorage } from '../../libs/chokaq/src/storage';
import * as SQL from '../../libs/chokaq/src/storage/postgres/sql';
import { PG_URL } from '../support/env';
import { type PlanNode, planNodes, planOf } from '../support/pg-plan';
import { createTestSchema, describePostgres } from '../support/test-database';

const MINUTE = 60_000;
/** The `settings` row of the seal's mark (a stored name: it never changes). */
const SEAL = 'metric_totals.sealed_to';
/** Minutes of buckets seeded before now, per queue and outcome. */
const MINUTES = 180;
const QUEUES = ['totals.a', 'totals.b', 'totals.c'];
/** Retention that removes nothing this suite writes, but seals. */
const KEEP_ALL: RetentionPolicy = {
  archiveMs: 86_400_000,
  dlqMs: 86_400_000,
  metricsMs: 86_400_000,
};

/**
 * The totals of every queue per minute (schema version 21): retention's pass seals the minutes no
 * transaction can still write into `metric_totals`, and a throughput series of all queues reads
 * those instead of the buckets, with the same answer. The horizon is tested on rows of its own
 * (`metricSealHorizon`), since a test cannot make a transaction that started minutes ago.
 */
describePostgres('PostgreSQL metric totals', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
  let storage: JobStorage;
  let client: Client;
  let s: string;

  beforeAll(async () => {
    storage = await db.openStorage();
    s = SQL.quoteSchema(db.schema);
    client = new Client({ connectionString: PG_URL });
    await client.connect();
    // Every value differs with the minute, the queue and the outcome, so a sum taken over the
    // wrong rows shows. Outcome 1 is split by two failure reasons, as real failures are.
    await db.sql(`
      INSERT INTO ${db.table('buckets')} (bucket_utc, queue, outcome, failure_reason,
        completed_count, duration_count, total_duration_ms, max_duration_ms,
        lag_count, lag_sum_ms, lag_max_ms)
      SELECT date_trunc('minute', now()) - (m || ' minutes')::interval, 'totals.' || x.name, o, r,
             m + q * 7 + o + r + 2, m + 1, (m + 1) * (q + 3), m + q,
             CASE WHEN o = 4 THEN m + q ELSE 0 END, CASE WHEN o = 4 THEN m * q + 5 ELSE 0 END,
             CASE WHEN o = 4 THEN (m * 13 + q) % 97 ELSE 0 END
      FROM generate_series(0, ${MINUTES - 1}) m, unnest(ARRAY['a', 'b', 'c']) WITH ORDINALITY AS x(name, q),
           (VALUES (0, -1), (1, 0), (1, 3), (3, -1), (4, -1)) AS v(o, r)`);
  });

  afterAll(async () => {
    await client?.end();
    await db.close();
  });

  const range = async () => {
    const now = (await storage.now()).getTime();
    return { from: new Date(now - (MINUTES + 5) * MINUTE), to: new Date(now + MINUTE) };
  };

  /** The series of every queue, and the sum of the series of each queue, over the same steps. */
  async function bothWays(stepMs: number): Promise<[ThroughputPoint[], ThroughputPoint[]]> {
    const { from, to } = await range();
    const all = await storage.getThroughputSeries({ from, to, stepMs });
    const each = await Promise.all(
      QUEUES.map((queue) => storage.getThroughputSeries({ queue, from, to, stepMs })),
    );
    const summed = all.map((point, i) => {
      const parts = each.map((series) => series[i]);
      const total = (key: 'succeeded' | 'failed' | 'retried' | 'cancelled' | 'started') =>
        parts.reduce((n, p) => n + p[key], 0);
      const maxLag = parts.reduce<number | null>(
        (m, p) => (p.maxStartLagMs === null ? m : Math.max(m ?? 0, p.maxStartLagMs)),
        null,
      );
      return {
        ...point,
        succeeded: total('succeeded'),
        failed: total('failed'),
        retried: total('retried'),
        cancelled: total('cancelled'),
        started: total('started'),
        maxStartLagMs: maxLag,
      };
    });
    return [all, summed];
  }

  const mark = async (): Promise<number | null> => {
    const { rows } = await client.query(`SELECT value FROM ${s}.settings WHERE name = '${SEAL}'`);
    return rows.length ? Number(rows[0].value) * 1000 : null;
  };

  it('seals every minute before the one before the oldest open transaction, and the series of all queues reads the totals with the same answer', async () => {
    const before = await bothWays(MINUTE);
    expect(before[0].reduce((n, p) => n + p.succeeded, 0)).toBeGreaterThan(0);
    expect(await mark()).toBeNull();

    await storage.applyRetention(KEEP_ALL);
    const sealed = await mark();
    // No other session of this database was in a transaction older than this test's minute for
    // long (other suites' transactions are short): the mark is one or two minutes back.
    const minute = Math.floor((await storage.now()).getTime() / MINUTE) * MINUTE;
    expect(sealed).not.toBeNull();
    expect(sealed! % MINUTE).toBe(0);
    expect(sealed!).toBeLessThanOrEqual(minute - MINUTE);
    expect(sealed!).toBeGreaterThanOrEqual(minute - 3 * MINUTE);
    // One row per sealed minute and outcome (the two failure reasons summed into one).
    const { rows: totals } = await client.query(
      `SELECT count(*)::int AS n, max(bucket_utc) AS newest FROM ${s}.metric_totals`,
    );
    const { rows: buckets } = await client.query(
      `SELECT count(DISTINCT (bucket_utc, outcome))::int AS n FROM ${s}.metric_buckets
       WHERE bucket_utc < to_timestamp($1::float8 / 1000)`,
      [sealed],
    );
    expect(totals[0].n).toBe(buckets[0].n);
    expect(totals[0].n).toBeGreaterThanOrEqual((MINUTES - 4) * 4);
    expect(new Date(totals[0].newest).getTime()).toBe(sealed! - MINUTE);

    for (const stepMs of [MINUTE, 15 * MINUTE]) {
      const [all, summed] = await bothWays(stepMs);
      expect(all).toEqual(summed);
    }
    expect((await bothWays(MINUTE))[0]).toEqual(before[0]);
  });

  it('reads the buckets only for the minutes past the mark', async () => {
    await storage.applyRetention(KEEP_ALL);
    const sealed = (await mark())!;
    const { from, to } = await range();
    const { rows } = await client.query(
      `EXPLAIN (ANALYZE true, COSTS false, TIMING false, FORMAT JSON) ${SQL.getThroughputSeries(s, false, true)}`,
      [from, to, MINUTE],
    );
    const nodes = planNodes(planOf(rows));
    const read = (table: string) =>
      nodes
        .filter((n: PlanNode) => n['Relation Name'] === table)
        .reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
    const open = (await storage.now()).getTime() - sealed;
    // Per open minute at most: 3 queues × 5 (outcome, reason) rows; every sealed one from totals.
    expect(read('metric_buckets')).toBeLessThanOrEqual(Math.ceil(open / MINUTE) * 15);
    expect(read('metric_totals')).toBeGreaterThanOrEqual((MINUTES - 3) * 4);
  });

  it('a minute sealed again is replaced, not added to: two processes sealing at once agree with the buckets', async () => {
    const [a, b] = await db.openStorages(2);
    // Unseal everything; both passes then sum every minute again, concurrently.
    await client.query(`DELETE FROM ${s}.settings WHERE name = '${SEAL}'`);
    await Promise.all([a.applyRetention(KEEP_ALL), b.applyRetention(KEEP_ALL)]);
    const [all, summed] = await bothWays(MINUTE);
    expect(all).toEqual(summed);
    const { rows } = await client.query(`
      SELECT count(*)::int AS wrong FROM ${s}.metric_totals t
      WHERE t.completed_count <> (SELECT sum(b.completed_count) FROM ${s}.metric_buckets b
                                  WHERE b.bucket_utc = t.bucket_utc AND b.outcome = t.outcome)`);
    expect(rows[0].wrong).toBe(0);
    await Promise.all([a.close(), b.close()]);
  });

  it('retention removes the totals past the buckets’ window, batch after batch', async () => {
    const { rows: before } = await client.query(
      `SELECT count(*)::int AS old FROM ${s}.metric_totals
       WHERE bucket_utc < now() - interval '60 minutes'`,
    );
    // More than three batches' worth.
    expect(before[0].old).toBeGreaterThan(3 * 50);
    await storage.applyRetention({ ...KEEP_ALL, metricsMs: 60 * MINUTE, batchSize: 50 });
    const { rows } = await client.query(
      `SELECT count(*)::int AS old FROM ${s}.metric_totals
       WHERE bucket_utc < now() - interval '60 minutes'`,
    );
    expect(rows[0].old).toBe(0);
    const { rows: kept } = await client.query(`SELECT count(*)::int AS n FROM ${s}.metric_totals`);
    expect(kept[0].n).toBeGreaterThan(0);
  });

  describe('the horizon', () => {
    /** The horizon over rows shaped as pg_stat_activity's, as epoch ms (null: unknown). */
    async function horizon(
      rows: Array<{
        db?: 'this' | 'other';
        role: 'owner' | 'reader' | null;
        state: string | null;
        startedMinAgo: number | null;
      }>,
    ): Promise<number | null> {
      const values = rows
        .map(
          (r) =>
            `(${r.db === 'other' ? "'elsewhere'" : 'current_database()'}, ` +
            `${r.role === null ? 'NULL::oid' : r.role === 'owner' ? '(SELECT oid FROM pg_roles WHERE rolname = session_user)' : "(SELECT oid FROM pg_roles WHERE rolname = 'chokaq_totals_reader')"}, ` +
            `${r.state === null ? 'NULL::text' : `'${r.state}'`}, ` +
            `${r.startedMinAgo === null ? 'NULL::timestamptz' : `now() - interval '${r.startedMinAgo} minutes'`})`,
        )
        .join(', ');
      const activity = `(SELECT * FROM (VALUES ${values}) AS v(datname, usesysid, state, xact_start))`;
      const { rows: out } = await client.query(
        `SELECT upto FROM (${SQL.metricSealHorizon(s, activity)}) h`,
      );
      return out[0].upto === null ? null : new Date(out[0].upto).getTime();
    }

    const minuteAgo = async (minutes: number) => {
      const { rows } = await client.query(
        `SELECT date_trunc('minute', now() - $1::int * interval '1 minute') AS m`,
        [minutes],
      );
      return new Date(rows[0].m).getTime();
    };

    beforeAll(async () => {
      await client.query(`DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'chokaq_totals_reader') THEN
          CREATE ROLE chokaq_totals_reader NOLOGIN;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'chokaq_totals_viewer') THEN
          CREATE ROLE chokaq_totals_viewer NOLOGIN;
        END IF; END $$`);
    });

    it('is the minute before the oldest transaction start of a session that may write buckets', async () => {
      expect(
        await horizon([
          { role: 'owner', state: 'active', startedMinAgo: 0 },
          { role: 'owner', state: 'idle in transaction', startedMinAgo: 7 },
          { role: 'owner', state: 'idle', startedMinAgo: null },
        ]),
      ).toBe(await minuteAgo(8));
      // Without an open transaction: the minute before now's.
      expect(await horizon([{ role: 'owner', state: 'idle', startedMinAgo: null }])).toBe(
        await minuteAgo(1),
      );
    });

    it('ignores sessions that cannot write buckets: other databases, roles without INSERT, background processes', async () => {
      expect(
        await horizon([
          { role: 'owner', state: 'active', startedMinAgo: 0 },
          { db: 'other', role: 'owner', state: 'active', startedMinAgo: 30 },
          { role: 'reader', state: 'idle in transaction', startedMinAgo: 30 },
          { role: null, state: null, startedMinAgo: 30 },
        ]),
      ).toBe(await minuteAgo(1));
    });

    it('is unknown while a session that may write buckets is hidden from this role', async () => {
      // Read as a role that may see neither the owner's sessions nor all statistics.
      await client.query(`GRANT USAGE ON SCHEMA ${s} TO chokaq_totals_viewer`);
      await client.query('SET ROLE chokaq_totals_viewer');
      try {
        expect(
          await horizon([
            { role: 'owner', state: 'active', startedMinAgo: 0 },
            { role: 'owner', state: null, startedMinAgo: null },
          ]),
        ).toBeNull();
        // Hidden, but unable to write buckets: known.
        expect(
          await horizon([
            { role: 'owner', state: 'active', startedMinAgo: 0 },
            { role: 'reader', state: null, startedMinAgo: null },
          ]),
        ).toBe(await minuteAgo(1));
      } finally {
        await client.query('RESET ROLE');
      }
    });

    it('is known while a session this role may see has no state yet (a connection starting)', async () => {
      expect(
        await horizon([
          { role: 'owner', state: 'idle in transaction', startedMinAgo: 4 },
          { role: 'owner', state: null, startedMinAgo: null },
        ]),
      ).toBe(await minuteAgo(5));
    });
  });
});
