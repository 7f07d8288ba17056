import { ChokaQValidationError } from '../../libs/chokaq/src/errors';
import { RecurringJobDefinition } from '../../libs/chokaq/src/interfaces/recurring-job.interface';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { TestDatabase, describeEachDialect } from '../support/test-database';
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
});
