import { randomUUID } from 'node:crypto';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { POSTGRES_MIGRATIONS } from '../../libs/chokaq/src/storage/postgres/postgres.schema';
import { TestSchema, createTestSchema, describePostgres } from '../support/test-database';

jest.setTimeout(120_000);

/** Claims with a fresh lease until two consecutive claims come back empty. */
async function drain(storage: JobStorage, queues: string[], workerId: string, limit: number) {
  const claimed: Array<{ id: string; leaseId: string }> = [];
  for (let empty = 0; empty < 2;) {
    const leaseId = randomUUID();
    const rows = await storage.fetchNextBatch({
      workerId,
      leaseId,
      limit,
      handled: { queues, types: [] },
    });
    if (rows.length === 0) empty++;
    else empty = 0;
    for (const row of rows) claimed.push({ id: row.id, leaseId });
  }
  return claimed;
}

describePostgres(
  'PostgreSQL concurrency proofs (separate DataSources = real parallel connections)',
  () => {
    let db: TestSchema;
    beforeEach(() => {
      db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
    });
    afterEach(async () => {
      await db.close();
    });

    it('(2) 8 concurrent claimers over 3,000 jobs: every job claimed exactly once', async () => {
      const [seed] = await db.openStorages(1);
      const queues = ['a', 'b', 'c'];
      const jobs = Array.from({ length: 3_000 }, (_, i) => ({
        queue: queues[i % 3],
        priority: i % 4,
      }));
      const ids = (await seed.enqueueMany(jobs)).map((r) => r.id);
      const claimers = await db.openStorages(8, { autoCreateSchema: false, poolSize: 2 });
      const results = await Promise.all(
        claimers.map((storage, i) => drain(storage, queues, `worker-${i}`, 7 + i)),
      );
      const all = results.flat().map((c) => c.id);
      expect(all.length).toBe(ids.length);
      expect(new Set(all).size).toBe(ids.length);
      expect(new Set(all)).toEqual(new Set(ids));
      // Every claimer got a share (SKIP LOCKED, not serialisation behind one winner).
      for (const r of results) expect(r.length).toBeGreaterThan(0);
      // The stored owner of each row is the claimer that returned it, under the lease it returned.
      const owners = await db.sql<{
        id: string;
        worker_id: string;
        lease_id: string;
        status: number;
      }>(`SELECT id, worker_id, lease_id, status FROM ${db.table('hot')}`);
      const byId = new Map(owners.map((o) => [o.id, o]));
      results.forEach((claims, i) => {
        for (const c of claims) {
          expect(byId.get(c.id)).toMatchObject({
            worker_id: `worker-${i}`,
            lease_id: c.leaseId,
            status: 1,
          });
        }
      });
    });

    it('(3) 24 concurrent same-key enqueues from 24 connections: one id, one row, no error', async () => {
      const producers = await db.openStorages(6, { poolSize: 4 });
      for (let round = 0; round < 5; round++) {
        const key = `key-${round}`;
        const results = await Promise.all(
          Array.from({ length: 24 }, (_, i) =>
            producers[i % producers.length].enqueue({
              queue: 'idem',
              payload: { i },
              idempotencyKey: key,
            }),
          ),
        );
        expect(new Set(results.map((r) => r.id)).size).toBe(1);
        expect(results.filter((r) => r.created)).toHaveLength(1);
        const rows = await db.sql(`SELECT id FROM ${db.table('hot')} WHERE idempotency_key = $1`, [
          key,
        ]);
        expect(rows).toEqual([{ id: results[0].id }]);
      }
    });

    it('(3b) concurrent enqueueMany batches sharing keys in opposite orders: one row per key, no error', async () => {
      const producers = await db.openStorages(4, { poolSize: 4 });
      const keys = Array.from({ length: 50 }, (_, i) => `k${i}`);
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => {
          const order = i % 2 === 0 ? keys : [...keys].reverse();
          return producers[i % 4].enqueueMany(
            order.map((k) => ({ queue: 'idem.many', idempotencyKey: k })),
          );
        }),
      );
      const holder = new Map<string, string>();
      results.forEach((batch, i) => {
        const order = i % 2 === 0 ? keys : [...keys].reverse();
        batch.forEach((r, j) => {
          const seen = holder.get(order[j]);
          if (seen) expect(r.id).toBe(seen);
          else holder.set(order[j], r.id);
        });
      });
      const [{ n }] = await db.sql<{ n: string }>(
        `SELECT count(*) AS n FROM ${db.table('hot')} WHERE queue = 'idem.many'`,
      );
      expect(Number(n)).toBe(keys.length);
    });

    it('(4) MaxWorkers holds across 8 concurrent claimers, while jobs finish and free budget', async () => {
      const [admin] = await db.openStorages(1);
      const queue = 'budgeted';
      await admin.enqueueMany(Array.from({ length: 400 }, () => ({ queue })));
      await admin.updateQueue(queue, { maxWorkers: 5 });
      const claimers = await db.openStorages(8, { autoCreateSchema: false, poolSize: 2 });

      // First wave: nobody finishes, so exactly 5 can be claimed in all.
      const wave = await Promise.all(
        claimers.map((s, i) =>
          s.fetchNextBatch({
            workerId: `w${i}`,
            leaseId: randomUUID(),
            limit: 4,
            handled: { queues: [queue], types: [] },
          }),
        ),
      );
      expect(wave.flat()).toHaveLength(5);
      for (const [i, rows] of wave.entries()) {
        if (rows.length > 0) {
          await claimers[i].archiveSucceeded(
            rows.map((r) => ({ id: r.id, workerId: `w${i}`, leaseId: r.leaseId!, durationMs: 1 })),
          );
        }
      }

      // Then claim, start and finish concurrently while an observer samples the active count.
      let maxSeen = 0;
      let running = true;
      const observer = (async () => {
        while (running) {
          const [{ n }] = await db.sql<{ n: string }>(
            `SELECT count(*) AS n FROM ${db.table('hot')} WHERE queue = $1 AND status IN (1, 2)`,
            [queue],
          );
          maxSeen = Math.max(maxSeen, Number(n));
        }
      })();
      let done = 0;
      await Promise.all(
        claimers.map(async (s, i) => {
          const workerId = `w${i}`;
          const deadline = Date.now() + 60_000;
          while (done < 395 && Date.now() < deadline) {
            const rows = await s.fetchNextBatch({
              workerId,
              leaseId: randomUUID(),
              limit: 3,
              handled: { queues: [queue], types: [] },
            });
            if (rows.length === 0) {
              await new Promise((r) => setTimeout(r, 5));
              continue;
            }
            const leases = rows.map((r) => ({ id: r.id, workerId, leaseId: r.leaseId! }));
            await s.markAsProcessing(leases);
            await new Promise((r) => setTimeout(r, 2));
            const archived = await s.archiveSucceeded(leases.map((l) => ({ ...l, durationMs: 2 })));
            done += archived.length;
          }
        }),
      );
      running = false;
      await observer;
      expect(maxSeen).toBeLessThanOrEqual(5);
      expect(maxSeen).toBeGreaterThan(0);
      expect(done + 5).toBe(400);
      const [{ n }] = await db.sql<{ n: string }>(
        `SELECT count(*) AS n FROM ${db.table('archive')}`,
      );
      expect(Number(n)).toBe(400);
    });

    it('(5) four concurrent ensureSchema calls from four DataSources: one ledger row per version, usable schema, idempotent', async () => {
      const first = await db.openStorages(4);
      const again = await db.openStorages(4);
      const ledger = await db.sql(
        `SELECT version, description FROM ${db.table('migrations')} ORDER BY version`,
      );
      expect(ledger).toEqual(
        POSTGRES_MIGRATIONS.map((m) => ({ version: m.version, description: m.description })),
      );
      const tables = await db.sql<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
        [db.schema],
      );
      expect(tables.map((t) => t.table_name)).toEqual([
        'audit_log',
        'batch_callbacks',
        'batches',
        'dedupe_keys',
        'job_attempts',
        'job_dependencies',
        'job_groups',
        'jobs_archive',
        'jobs_dlq',
        'jobs_hot',
        'metric_buckets',
        'metric_totals',
        'queues',
        'recurring_jobs',
        'schema_migrations',
        'settings',
        'stats_summary',
        'workers',
      ]);
      await Promise.all([...first, ...again].map((s) => s.ensureSchema()));
      expect(
        await db.sql(`SELECT version FROM ${db.table('migrations')} ORDER BY version`),
      ).toEqual(POSTGRES_MIGRATIONS.map((m) => ({ version: m.version })));
      expect((await first[3].enqueue({ queue: 'x' })).created).toBe(true);
    });
  },
);
