import { ChokaQValidationError } from '../../libs/chokaq/src/errors';
import { RecurringJobDefinition } from '../../libs/chokaq/src/interfaces/recurring-job.interface';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { POSTGRES_MIGRATIONS } from '../../libs/chokaq/src/storage/postgres/postgres.schema';
import { SQLITE_MIGRATIONS } from '../../libs/chokaq/src/storage/sqlite/sqlite.schema';
import { createSchemaBefore } from '../support/schema-history';
import { TestDatabase, createTestSchema, describeEachDialect } from '../support/test-database';
import { countRows, expectRejects, uniqueQueue } from './helpers';

/**
 * Recurring jobs (SPEC §4): each slot is enqueued once across all processes, through a
 * compare-and-set on `NextSlotUtc` in the same transaction as the enqueue.
 */
describeEachDialect('storage contract: recurring slots', (fixture) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await fixture.create();
  });
  afterAll(async () => {
    await db?.close();
  });

  const MINUTE = 60_000;

  async function define(
    overrides: Partial<RecurringJobDefinition> = {},
  ): Promise<RecurringJobDefinition> {
    const now = (await db.storage.now()).getTime();
    const slot = new Date(Math.floor(now / MINUTE) * MINUTE - 10 * MINUTE);
    const queue = uniqueQueue('recurring');
    const definition: RecurringJobDefinition = {
      name: `report.${queue}`,
      cron: '*/5 * * * *',
      timeZone: 'UTC',
      queue,
      type: 'report.v1',
      payload: { kind: 'daily' },
      misfirePolicy: 'skip',
      nextSlotUtc: slot,
      ...overrides,
    };
    await db.storage.upsertRecurringJob(definition);
    return definition;
  }

  async function record(name: string) {
    return (await db.storage.getRecurringJobs()).find((r) => r.name === name);
  }

  it('upsertRecurringJob round-trips; an upsert keeps LastSlotUtc and resets NextSlotUtc only when the cron or zone changes', async () => {
    const def = await define();
    expect(await record(def.name)).toMatchObject({ ...def, lastSlotUtc: null, isPaused: false });

    const next = new Date(def.nextSlotUtc.getTime() + 5 * MINUTE);
    await db.storage.claimRecurringSlot(def.name, def.nextSlotUtc, next, {
      queue: def.queue,
      type: def.type,
    });
    // Same cron and zone (e.g. another process starting up): the slot pointer is kept.
    await db.storage.upsertRecurringJob({ ...def, payload: { kind: 'changed' } });
    expect(await record(def.name)).toMatchObject({
      payload: { kind: 'changed' },
      nextSlotUtc: next,
      lastSlotUtc: def.nextSlotUtc,
    });
    // A new cron resets NextSlotUtc to the definition's first slot; LastSlotUtc stays.
    const reset = new Date(next.getTime() + 60 * MINUTE);
    await db.storage.upsertRecurringJob({ ...def, cron: '0 * * * *', nextSlotUtc: reset });
    expect(await record(def.name)).toMatchObject({
      cron: '0 * * * *',
      nextSlotUtc: reset,
      lastSlotUtc: def.nextSlotUtc,
    });
  });

  it('upsertRecurringJob refuses a cron expression or time zone the recurring loop could not schedule, storing nothing', async () => {
    const def = await define();
    const cases: Array<[Partial<RecurringJobDefinition>, string[]]> = [
      [{ cron: '61 * * * *' }, ['cron']],
      [{ cron: 'nope' }, ['cron']],
      // Valid fields, but no slot ever comes (there is no 30 February).
      [{ cron: '0 0 30 2 *' }, ['cron']],
      [{ timeZone: 'Mars/Olympus' }, ['timeZone']],
      [{ cron: '* * * * * * *', timeZone: 'Nowhere/Else' }, ['cron', 'timeZone']],
    ];
    for (const [overrides, paths] of cases) {
      const error = await expectRejects(db.storage.upsertRecurringJob({ ...def, ...overrides }));
      expect(error).toBeInstanceOf(ChokaQValidationError);
      expect((error as ChokaQValidationError).issues.map((i) => i.path)).toEqual(paths);
    }
    const fresh = { ...def, name: `${def.name}.never`, cron: '61 * * * *' };
    await expectRejects(db.storage.upsertRecurringJob(fresh));
    expect(await record(fresh.name)).toBeUndefined();
    // The stored row is the one written before the refused upserts.
    expect(await record(def.name)).toMatchObject({ cron: def.cron, timeZone: def.timeZone });
  });

  it('claimRecurringSlot CAS: concurrent claims of one slot → exactly one enqueue', async () => {
    const count = db.dialect === 'sqlite' ? 4 : 6;
    const storages: JobStorage[] = [
      db.storage,
      ...(await Promise.all(
        Array.from({ length: count - 1 }, () => db.openAnother({ poolSize: 2 })),
      )),
    ];
    try {
      const def = await define();
      let slot = def.nextSlotUtc;
      for (let round = 0; round < 3; round++) {
        const next = new Date(slot.getTime() + 5 * MINUTE);
        const results = await Promise.all(
          storages.map((s) =>
            s.claimRecurringSlot(def.name, slot, next, {
              queue: def.queue,
              type: def.type,
              payload: { slot: slot.toISOString() },
            }),
          ),
        );
        const winners = results.filter((r) => r !== null);
        expect(winners).toHaveLength(1);
        expect(winners[0]!.created).toBe(true);
        expect(await countRows(db, 'hot', { queue: def.queue })).toBe(round + 1);
        expect((await db.storage.getJob(winners[0]!.id))?.payload).toEqual({
          slot: slot.toISOString(),
        });
        expect(await record(def.name)).toMatchObject({ nextSlotUtc: next, lastSlotUtc: slot });
        // The slot is taken: a late claimer gets null and enqueues nothing.
        expect(
          await db.storage.claimRecurringSlot(def.name, slot, next, { queue: def.queue }),
        ).toBeNull();
        slot = next;
      }
      expect(await countRows(db, 'hot', { queue: def.queue })).toBe(3);
    } finally {
      await Promise.all(storages.filter((s) => s !== db.storage).map((s) => s.close()));
    }
  });

  it('invariant 2: claimRecurringSlot rolls back the slot advance when the enqueue fails', async () => {
    const def = await define();
    const next = new Date(def.nextSlotUtc.getTime() + 5 * MINUTE);
    const job = { queue: def.queue, type: def.type };
    const before = await record(def.name);

    await db.failInserts('hot');
    try {
      await expectRejects(db.storage.claimRecurringSlot(def.name, def.nextSlotUtc, next, job));
    } finally {
      await db.clearFailure('hot');
    }
    expect(await record(def.name)).toEqual(before);
    expect(await countRows(db, 'hot', { queue: def.queue })).toBe(0);

    // And the other way round: the slot advance fails, so the enqueue rolls back.
    await db.failWrites('recurring');
    try {
      await expectRejects(db.storage.claimRecurringSlot(def.name, def.nextSlotUtc, next, job));
    } finally {
      await db.clearFailure('recurring');
    }
    expect(await record(def.name)).toEqual(before);
    expect(await countRows(db, 'hot', { queue: def.queue })).toBe(0);

    const won = await db.storage.claimRecurringSlot(def.name, def.nextSlotUtc, next, job);
    expect(won?.created).toBe(true);
    expect(await countRows(db, 'hot', { queue: def.queue })).toBe(1);
    expect(await record(def.name)).toMatchObject({
      nextSlotUtc: next,
      lastSlotUtc: def.nextSlotUtc,
    });
  });

  it('claimRecurringSlot with a slot that is not the current NextSlotUtc returns null', async () => {
    const def = await define();
    const wrong = new Date(def.nextSlotUtc.getTime() - 5 * MINUTE);
    expect(
      await db.storage.claimRecurringSlot(def.name, wrong, def.nextSlotUtc, { queue: def.queue }),
    ).toBeNull();
    expect(
      await db.storage.claimRecurringSlot('no-such-recurring-job', def.nextSlotUtc, wrong, {
        queue: def.queue,
      }),
    ).toBeNull();
    expect(await countRows(db, 'hot', { queue: def.queue })).toBe(0);
    expect((await record(def.name))?.nextSlotUtc).toEqual(def.nextSlotUtc);
  });

  it('a claimed slot records its job as LastJobId; a slot advanced without a job keeps it', async () => {
    const def = await define();
    const next = new Date(def.nextSlotUtc.getTime() + 5 * MINUTE);
    const won = await db.storage.claimRecurringSlot(def.name, def.nextSlotUtc, next, {
      queue: def.queue,
      type: def.type,
    });
    expect(await record(def.name)).toMatchObject({ lastJobId: won!.id, source: 'decorator' });
    const after = new Date(next.getTime() + 5 * MINUTE);
    expect(await db.storage.claimRecurringSlot(def.name, next, after, null)).toBeNull();
    expect(await record(def.name)).toMatchObject({
      lastJobId: won!.id,
      lastSlotUtc: next,
      nextSlotUtc: after,
    });
  });

  it('upsertRecurringJob stores the source; an upsert keeps LastJobId and the paused state', async () => {
    const def = await define({ source: 'runtime' });
    expect(await record(def.name)).toMatchObject({ source: 'runtime', lastJobId: null });
    const run = await db.storage.triggerRecurringJob(def.name, { queue: def.queue });
    expect(await db.storage.setRecurringJobPaused(def.name, true)).toBe(true);
    // A process that declares the job re-asserts it at start: the decorator's definition wins.
    await db.storage.upsertRecurringJob({ ...def, source: 'decorator', payload: { v: 2 } });
    expect(await record(def.name)).toMatchObject({
      source: 'decorator',
      payload: { v: 2 },
      isPaused: true,
      lastJobId: run!.id,
    });
    const error = await expectRejects(
      db.storage.upsertRecurringJob({ ...def, source: 'yaml' as never }),
    );
    expect((error as ChokaQValidationError).issues.map((i) => i.path)).toEqual(['source']);
  });

  it('setRecurringJobPaused and removeRecurringJob report whether the job exists', async () => {
    const def = await define();
    expect(await db.storage.setRecurringJobPaused(def.name, true)).toBe(true);
    expect((await record(def.name))?.isPaused).toBe(true);
    // Idempotent: pausing a paused job still finds it.
    expect(await db.storage.setRecurringJobPaused(def.name, true)).toBe(true);
    expect(await db.storage.setRecurringJobPaused(def.name, false)).toBe(true);
    expect(await record(def.name)).toMatchObject({
      isPaused: false,
      nextSlotUtc: def.nextSlotUtc,
      lastSlotUtc: null,
    });
    expect(await db.storage.setRecurringJobPaused(`${def.name}.missing`, true)).toBe(false);

    const run = await db.storage.triggerRecurringJob(def.name, { queue: def.queue });
    expect(await db.storage.removeRecurringJob(def.name)).toBe(true);
    expect(await record(def.name)).toBeUndefined();
    // The jobs it enqueued stay.
    expect((await db.storage.getJob(run!.id))?.queue).toBe(def.queue);
    expect(await db.storage.removeRecurringJob(def.name)).toBe(false);

    const bad = await expectRejects(db.storage.setRecurringJobPaused(def.name, 'yes' as never));
    expect((bad as ChokaQValidationError).issues.map((i) => i.path)).toEqual(['paused']);
    const noName = await expectRejects(db.storage.removeRecurringJob(''));
    expect((noName as ChokaQValidationError).issues.map((i) => i.path)).toEqual(['name']);
  });

  it('triggerRecurringJob enqueues one run without moving the slots, and records it as LastJobId', async () => {
    const def = await define();
    const first = await db.storage.triggerRecurringJob(def.name, {
      queue: def.queue,
      type: def.type,
      payload: def.payload,
      createdBy: 'ops@example.com',
    });
    const second = await db.storage.triggerRecurringJob(def.name, {
      queue: def.queue,
      type: def.type,
    });
    expect(first?.created).toBe(true);
    expect(second?.created).toBe(true);
    expect(second!.id).not.toBe(first!.id);
    expect(await countRows(db, 'hot', { queue: def.queue })).toBe(2);
    expect(await db.storage.getJob(first!.id)).toMatchObject({
      type: def.type,
      payload: def.payload,
      createdBy: 'ops@example.com',
    });
    expect(await record(def.name)).toMatchObject({
      nextSlotUtc: def.nextSlotUtc,
      lastSlotUtc: null,
      lastJobId: second!.id,
    });

    // No such job: nothing enqueued.
    expect(
      await db.storage.triggerRecurringJob(`${def.name}.missing`, { queue: def.queue }),
    ).toBeNull();
    expect(await countRows(db, 'hot', { queue: def.queue })).toBe(2);

    // One transaction: a failed enqueue leaves LastJobId as it was.
    await db.failInserts('hot');
    try {
      await expectRejects(db.storage.triggerRecurringJob(def.name, { queue: def.queue }));
    } finally {
      await db.clearFailure('hot');
    }
    expect((await record(def.name))?.lastJobId).toBe(second!.id);
    expect(await countRows(db, 'hot', { queue: def.queue })).toBe(2);
  });
});

/**
 * A database of the schema version before recurring jobs had a source and a last job id is
 * migrated in place at startup: its rows become decorator-declared jobs with no last run, and they
 * keep running.
 */
describeEachDialect('schema upgrade: recurring source and last job id', (fixture) => {
  const run = fixture.name === 'mssql' ? it.skip : it;

  run(
    'a row written at the previous version reads as a decorator job and is claimed as before',
    async () => {
      const schema = createTestSchema(fixture.name);
      try {
        const migrations = fixture.name === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
        const upgrade = migrations.find((m) => m.description.startsWith('Recurring jobs: source'))!;
        const ledger = schema.table('migrations');
        await createSchemaBefore(schema, upgrade.version);
        const slot = new Date(Date.UTC(2026, 0, 1, 3, 0, 0));
        await schema.query(
          `INSERT INTO ${schema.table('recurring')} (name, cron, time_zone, queue, type, payload, next_slot_utc, misfire_policy, is_paused)
         VALUES ('old.nightly', '0 3 * * *', 'UTC', 'old', 'old', '{}', ?, 'skip', ?)`,
          [
            fixture.name === 'sqlite' ? slot.getTime() : slot,
            fixture.name === 'sqlite' ? 0 : false,
          ],
        );

        const storage = await schema.openStorage();
        const versions = await schema.sql<{ version: number }>(
          `SELECT version FROM ${ledger} ORDER BY version`,
        );
        expect(versions.map((v) => Number(v.version))).toContain(upgrade.version);
        const [row] = await storage.getRecurringJobs();
        expect(row).toMatchObject({
          name: 'old.nightly',
          source: 'decorator',
          lastJobId: null,
          nextSlotUtc: slot,
        });
        const next = new Date(slot.getTime() + 86_400_000);
        const won = await storage.claimRecurringSlot('old.nightly', slot, next, { queue: 'old' });
        expect((await storage.getRecurringJobs())[0].lastJobId).toBe(won!.id);
      } finally {
        await schema.close();
      }
    },
  );
});
