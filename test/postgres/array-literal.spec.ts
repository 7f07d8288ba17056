import { randomUUID } from 'node:crypto';
import { arrayLiteral } from '../../libs/chokaq/src/storage/postgres/sql/fragments';
import { createTestSchema, describePostgres } from '../support/test-database';

/**
 * The lease arrays of the worker's statements (archive, heartbeat, release) travel as array
 * literals the storage builds itself (`arrayLiteral`): what PostgreSQL reads back must be exactly
 * what was sent, whatever a worker id holds.
 */
describePostgres('PostgreSQL array literals of lease parameters', () => {
  const db = createTestSchema('postgres');
  afterAll(() => db.close());

  const awkward = [
    'host-1:4242',
    'two words',
    'a "quoted" one',
    'back\\slash',
    '{braces}',
    'comma,inside',
    'NULL',
    'null',
    ' leading and trailing ',
    'tab\there',
    'naïve ünïcode ✓',
    '',
  ];

  it('reads back every text element as sent, bare or quoted', async () => {
    const alone = [['NULL'], ['a', 'null'], ['Null-ish', 'nullable'], [randomUUID(), randomUUID()]];
    for (const values of [awkward, ...alone]) {
      const [row] = await db.sql<{ a: string[] }>('SELECT $1::text[] AS a', [arrayLiteral(values)]);
      expect(row.a).toEqual(values);
    }
  });

  it('joins ids and numbers as they are', async () => {
    const ids = [randomUUID(), randomUUID()];
    expect(arrayLiteral(ids)).toBe(`{${ids[0]},${ids[1]}}`);
    expect(arrayLiteral([0, 12, 3_600_000])).toBe('{0,12,3600000}');
    expect(arrayLiteral([])).toBe('{}');
    const [row] = await db.sql<{ a: string[] }>('SELECT $1::bigint[]::text[] AS a', [
      arrayLiteral([0, 12, 3_600_000]),
    ]);
    expect(row.a).toEqual(['0', '12', '3600000']);
  });

  it('archives, heartbeats and releases the runs of a worker whose id needs quoting', async () => {
    const storage = await db.openStorage();
    const queue = `awkward-${randomUUID()}`;
    await storage.enqueueMany([{ queue }, { queue }, { queue }]);
    const workerId = 'host "a", {b} \\ c NULL';
    const leaseId = randomUUID();
    const rows = await storage.fetchNextBatch({
      workerId,
      leaseId,
      limit: 3,
      start: 2,
      budgetedQueues: [],
      handled: { queues: [queue], types: [] },
    });
    expect(rows).toHaveLength(3);
    const leases = rows.map((r) => ({ id: r.id, workerId, leaseId }));
    // The first two started, the third only Fetched: a heartbeat covers all three, and the Fetched
    // one is handed back.
    expect((await storage.keepAlive(workerId, leases)).touched).toBe(3);
    expect(await storage.release([leases[2]], 0)).toBe(1);
    const archived = await storage.archiveSucceeded(
      leases.slice(0, 2).map((l) => ({ ...l, durationMs: 5 })),
    );
    expect(archived.map((r) => r.id).sort()).toEqual(
      leases
        .slice(0, 2)
        .map((l) => l.id)
        .sort(),
    );
  });
});
