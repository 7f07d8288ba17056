import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { JobLease } from '../../libs/chokaq/src/interfaces/job.interface';
import {
  archiveSucceeded,
  archiveSucceededParams,
  keepAlive,
  keepAliveParams,
  markAsProcessing,
  markAsProcessingParams,
  quoteSchema,
  unstart,
  unstartParams,
} from '../../libs/chokaq/src/storage/postgres/sql';
import type { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { PG_URL } from '../support/env';
import { createTestSchema, describePostgres } from '../support/test-database';
import { planNodes, planOf } from '../support/pg-plan';

const BATCH = 100;
const STARTED = 1_200;
const FETCHED = 300;

/**
 * The statements a worker sends with its leases (archive, heartbeat, start, hand back) find their
 * rows by `id`, one primary-key probe per lease, whatever the statistics say. `jobs_hot`'s partial
 * indexes on `status` hold the claimed rows, and the planner knows how many only from the last
 * ANALYZE: taken while a backlog waited and nothing ran, it counts one claimed row, and a generic
 * plan that scans such an index for every lease of the batch (a nested loop) looked cheapest —
 * reading every claimed row once per lease. Found by the bench's `scale` scenario: an archive of
 * 500 took 117 ms beside 1,000 claimed rows, a heartbeat 444 ms.
 *
 * Here: the table analysed with 3,000 Pending rows and none claimed, then 1,200 rows started and
 * 300 Fetched; each statement's generic plan, executed for 100 leases (rolled back), reads at most
 * two rows of `jobs_hot` per lease.
 */
describePostgres('PostgreSQL lease statements: one primary-key probe per lease', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 2 } });
  let storage: JobStorage;
  let client: Client;
  const started: JobLease[] = [];
  const fetched: JobLease[] = [];
  const workerId = 'lease-plans';

  beforeAll(async () => {
    storage = await db.openStorage();
    for (let i = 0; i < 3; i++) {
      await storage.enqueueMany(Array.from({ length: 1_000 }, () => ({ queue: 'plans' })));
    }
    // Statistics of an idle moment: a backlog, nothing claimed.
    await db.sql(`VACUUM ANALYZE ${db.table('hot')}`);
    for (const [list, count, start] of [
      [started, STARTED, true],
      [fetched, FETCHED, false],
    ] as const) {
      for (let n = 0; n < count; n += BATCH) {
        const leaseId = randomUUID();
        const rows = await storage.fetchNextBatch({
          workerId,
          leaseId,
          limit: BATCH,
          start: start ? BATCH : 0,
          handled: { queues: ['plans'], types: [] },
        });
        list.push(...rows.map((r) => ({ id: r.id, workerId, leaseId })));
      }
    }
    expect([started.length, fetched.length]).toEqual([STARTED, FETCHED]);
    client = new Client({ connectionString: PG_URL });
    await client.connect();
    await client.query('SET plan_cache_mode = force_generic_plan');
  }, 120_000);

  afterAll(async () => {
    await client?.end();
    await db.close();
  });

  /** Rows of `jobs_hot` the statement's plan read (every scan node, every loop), executed once. */
  async function hotRowsRead(name: string, sql: string, params: unknown[]): Promise<number> {
    const types = params.map((p) =>
      Array.isArray(p)
        ? typeof p[0] === 'number'
          ? 'bigint[]'
          : 'text[]'
        : p === null
          ? 'float8'
          : 'text',
    );
    await client.query(`DEALLOCATE ALL`);
    await client.query(`PREPARE ${name}(${types.join(', ')}) AS ${sql}`);
    await client.query('BEGIN');
    try {
      // EXECUTE takes its arguments as SQL, not as bound values: literals.
      const literal = (v: unknown): string =>
        v === null ? 'NULL' : typeof v === 'number' ? String(v) : client.escapeLiteral(String(v));
      const args = params
        .map((p, i) =>
          Array.isArray(p) ? `ARRAY[${p.map(literal).join(', ')}]::${types[i]}` : literal(p),
        )
        .join(', ');
      const { rows } = await client.query(
        `EXPLAIN (ANALYZE true, COSTS false, TIMING false, FORMAT JSON) EXECUTE ${name}(${args})`,
      );
      const plan = planOf(rows);
      return planNodes(plan)
        .filter((n) => n['Relation Name'] === 'jobs_hot' && n['Node Type'] !== 'ModifyTable')
        .reduce((sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1), 0);
    } finally {
      await client.query('ROLLBACK');
    }
  }

  const s = () => quoteSchema(db.schema);
  const batchOf = (leases: JobLease[]) => leases.slice(0, BATCH);

  it('the archive of a batch', async () => {
    const completed = batchOf(started).map((l) => ({ ...l, durationMs: 1 }));
    const read = await hotRowsRead(
      'archive',
      archiveSucceeded(s()),
      archiveSucceededParams(completed),
    );
    expect(read).toBeLessThanOrEqual(2 * BATCH);
  });

  it('the heartbeat of a batch', async () => {
    const read = await hotRowsRead(
      'heartbeat',
      keepAlive(s()),
      keepAliveParams(workerId, batchOf(started)),
    );
    expect(read).toBeLessThanOrEqual(2 * BATCH);
  });

  it('the start of Fetched rows', async () => {
    const read = await hotRowsRead(
      'start',
      markAsProcessing(s()),
      markAsProcessingParams(batchOf(fetched)),
    );
    expect(read).toBeLessThanOrEqual(2 * 2 * BATCH); // its UPDATE, then its re-read of the same leases
  });

  it('the hand-back of started rows', async () => {
    const read = await hotRowsRead('handback', unstart(s()), unstartParams(batchOf(started), null));
    expect(read).toBeLessThanOrEqual(2 * BATCH);
  });
});
