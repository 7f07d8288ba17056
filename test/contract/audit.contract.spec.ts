import { ChokaQAdmin } from '../../libs/chokaq/src/admin/chokaq-admin.service';
import { signConfirmation } from '../../libs/chokaq/src/admin/confirmation-token';
import { ChokaQConfirmationError, ChokaQValidationError } from '../../libs/chokaq/src/errors';
import type { AuditEntry } from '../../libs/chokaq/src/interfaces/audit.interface';
import { FailureReason } from '../../libs/chokaq/src/interfaces/job-status.enum';
import { canonicalFilter } from '../../libs/chokaq/src/validation/validate-audit';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import { testOptions } from '../runtime/support/options';
import { TestDatabase, describeEachDialect } from '../support/test-database';
import { backdate, expectRejects, expectValidationError, startJob, uniqueQueue } from './helpers';

/**
 * The audit log and the confirmation of bulk actions (issue "operator core", step 3): every
 * mutation of ChokaQAdmin leaves one row, written in the transaction of its change; bulk actions
 * by filter need a token that any process can verify.
 */
describeEachDialect('storage contract: audit log and confirmed bulk actions', (fixture) => {
  let db: TestDatabase;
  let admin: ChokaQAdmin;
  beforeAll(async () => {
    db = await fixture.create();
    admin = new ChokaQAdmin(db.storage, testOptions(), new WorkerRegistry());
  });
  afterAll(async () => {
    await db?.close();
  });

  /** `token` with one character of its claims changed (the signature no longer matches). */
  function altered(token: string): string {
    return (token[0] === 'e' ? 'f' : 'e') + token.slice(1);
  }

  /** The newest audit entries, newest first. */
  async function latest(n = 1): Promise<AuditEntry[]> {
    return (await admin.getAuditLog({ limit: n })).items;
  }

  /** `n` jobs of a fresh queue moved to the DLQ; their ids, oldest failure first. */
  async function dead(n: number, queue = uniqueQueue('audit')): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const { id } = await db.storage.enqueue({ queue, type: 'audit.v1', payload: { i } });
      await db.storage.moveToDlq({ id }, { reason: FailureReason.FatalError, error: `boom ${i}` });
      ids.push(id);
    }
    return ids;
  }

  it('each mutation of ChokaQAdmin writes one row: actor (default system), action, target, rows, edit', async () => {
    const queue = uniqueQueue('audited');
    await admin.pauseQueue(queue, 'ops@example.com');
    expect(await latest()).toEqual([
      expect.objectContaining({
        actor: 'ops@example.com',
        action: 'queue.pause',
        target: queue,
        rowsAffected: 1,
        details: { isPaused: true },
      }),
    ]);
    await admin.setMaxWorkers(queue, 3);
    expect((await latest())[0]).toMatchObject({
      actor: 'system',
      action: 'queue.update',
      details: { maxWorkers: 3 },
    });

    const [id] = await dead(1);
    expect(await admin.resurrect(id, { payload: { fixed: true }, priority: 5 }, 'alice')).toBe(
      true,
    );
    const [resurrect] = await latest();
    expect(resurrect).toMatchObject({
      actor: 'alice',
      action: 'dlq.resurrect',
      target: id,
      rowsAffected: 1,
      details: { payloadBytes: 14, priority: 5 },
    });
    // The edit is recorded as a hash and a size, never the payload itself.
    expect(resurrect.details?.payloadSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(resurrect)).not.toContain('fixed');

    await admin.cancel([id], 'bob');
    expect((await latest())[0]).toMatchObject({
      actor: 'bob',
      action: 'job.cancel',
      target: id,
      rowsAffected: 1,
    });
    // A cancel counts what it moved and what it asked to stop: one Pending job, one running.
    const cancelQueue = uniqueQueue('cancel-count');
    const { id: pending } = await db.storage.enqueue({ queue: cancelQueue });
    const running = await startJob(db.storage, cancelQueue);
    const result = await admin.cancel([pending, running.id], 'bob');
    expect(result).toMatchObject({ cancelled: [pending], cancelRequested: [running.id] });
    expect((await latest())[0]).toMatchObject({ action: 'job.cancel', rowsAffected: 2 });
    const ids = await dead(2);
    expect(await admin.purgeDlq(ids, 'carol')).toBe(2);
    expect((await latest())[0]).toMatchObject({
      action: 'dlq.purge',
      target: '2 ids',
      rowsAffected: 2,
      details: { ids },
    });
    // An id that is not in the DLQ (purged above): still recorded, with the nothing it did.
    expect(await admin.resurrect(ids[0], undefined, 'alice')).toBe(false);
    expect((await latest())[0]).toMatchObject({ action: 'dlq.resurrect', rowsAffected: 0 });
  });

  it('recurring-job changes are audited, a trigger with the job it enqueued', async () => {
    const name = `audit.${uniqueQueue('recurring')}`;
    const spec = { name, cron: '0 * * * *', queue: uniqueQueue('r'), type: 'r.v1', payload: {} };
    await admin.upsertRecurringJob(spec, 'dan');
    await admin.pauseRecurringJob(name, 'dan');
    await admin.resumeRecurringJob(name);
    const jobId = await admin.triggerRecurringJob(name, 'erin');
    await admin.removeRecurringJob(name, 'dan');
    const entries = await latest(5);
    expect(entries.map((e) => [e.action, e.actor, e.target, e.rowsAffected])).toEqual([
      ['recurring.remove', 'dan', name, 1],
      ['recurring.trigger', 'erin', name, 1],
      ['recurring.resume', 'system', name, 1],
      ['recurring.pause', 'dan', name, 1],
      ['recurring.upsert', 'dan', name, 1],
    ]);
    expect(entries[1].details).toEqual({ jobId });
    expect(entries[4].details).toMatchObject({ cron: '0 * * * *', payloadBytes: 2 });
  });

  it('the audit row is written in the transaction of its change: when it cannot be written, nothing changes', async () => {
    const queue = uniqueQueue('atomic');
    const [id] = await dead(1);
    const before = (await latest())[0];
    await db.failWrites('audit');
    try {
      await expectRejects(admin.pauseQueue(queue, 'ops'));
      await expectRejects(admin.resurrect(id, undefined, 'ops'));
    } finally {
      await db.clearFailure('audit');
    }
    // The queue was not paused (nor created), the job is still in the DLQ, no row was added.
    expect((await admin.listQueues()).find((q) => q.name === queue)?.isPaused ?? false).toBe(false);
    expect((await db.storage.getJob(id))?.pillar).toBe('dlq');
    expect((await latest())[0]).toEqual(before);
  });

  it('a retention run is one row with its windows and the rows removed per table, however many batches it took', async () => {
    const ids = await dead(5);
    await backdate(db, 'dlq', 'failed_at_utc', ids, 40 * 86_400_000);
    const removed = await admin.runRetention({ dlqMs: 30 * 86_400_000, batchSize: 2 }, 'cron');
    expect(removed.dlq).toBeGreaterThanOrEqual(5);
    const [entry] = await latest();
    expect(entry).toMatchObject({ actor: 'cron', action: 'retention.run', target: null });
    expect(entry.details).toMatchObject({ dlqMs: 30 * 86_400_000, removed });
    const total = Object.values(removed).reduce((a, b) => a + b, 0);
    expect(entry.rowsAffected).toBe(total);
  });

  it('retention removes audit entries older than auditMs (default 90 days)', async () => {
    await admin.pauseQueue(uniqueQueue('old'), 'old-timer');
    const [old] = await latest();
    await backdate(db, 'audit', 'at_utc', [old.id], 91 * 86_400_000);
    const removed = await admin.runRetention();
    expect(removed.audit).toBeGreaterThanOrEqual(1);
    expect((await admin.getAuditLog({ actor: 'old-timer' })).items).toEqual([]);
  });

  it('getAuditLog pages newest first by keyset, filtered by actor, action and time', async () => {
    const actor = `pager-${uniqueQueue('a')}`;
    const queue = uniqueQueue('paged');
    for (let i = 0; i < 5; i++) {
      await admin.pauseQueue(queue, actor);
      await admin.resumeQueue(queue, actor);
    }
    const seen: AuditEntry[] = [];
    let page = await admin.getAuditLog({ actor, limit: 3 });
    seen.push(...page.items);
    while (page.nextCursor) {
      page = await admin.getAuditLog({ actor, limit: 3, cursor: page.nextCursor });
      seen.push(...page.items);
    }
    expect(seen).toHaveLength(10);
    expect(new Set(seen.map((e) => e.id)).size).toBe(10);
    const keys = seen.map((e) => [e.atUtc.getTime(), e.id] as const);
    const sorted = [...keys].sort((a, b) => b[0] - a[0] || (a[1] < b[1] ? 1 : -1));
    expect(keys).toEqual(sorted);
    const pauses = await admin.getAuditLog({ actor, action: 'queue.pause', limit: 100 });
    expect(pauses.items).toHaveLength(5);
    const future = await admin.getAuditLog({ actor, from: new Date(Date.now() + 86_400_000) });
    expect(future.items).toEqual([]);
    await expect(admin.getAuditLog({ action: 'queue.explode' as never })).rejects.toThrow(
      ChokaQValidationError,
    );
    const listCursor = (await admin.listDlq({ limit: 1 })).nextCursor;
    if (listCursor) {
      await expect(admin.getAuditLog({ cursor: listCursor })).rejects.toThrow(
        ChokaQValidationError,
      );
    }
  });

  it("getAuditLog by target: a job's entries are those naming that job alone, newest first, matched exactly", async () => {
    const [id, other] = await dead(2);
    await admin.resurrect(id, undefined, 'alice');
    await admin.cancel(id, 'bob');
    await admin.resurrectMany([id], 'carol');
    // Several ids: the target is "2 ids" (the ids are in the details), so neither id finds it.
    await admin.purgeDlq([other, id], 'dan');
    // The same id twice is one id.
    await admin.cancel([id, id], 'erin');
    await admin.purgeDlq([id], 'frank');
    const { items, nextCursor } = await admin.getAuditLog({ target: id });
    expect(nextCursor).toBeNull();
    expect(items.map((e) => [e.action, e.actor, e.target])).toEqual([
      ['dlq.purge', 'frank', id],
      ['job.cancel', 'erin', id],
      ['dlq.resurrect-many', 'carol', id],
      ['job.cancel', 'bob', id],
      ['dlq.resurrect', 'alice', id],
    ]);
    const bulk = (await admin.getAuditLog({ actor: 'dan' })).items[0];
    expect(bulk).toMatchObject({ action: 'dlq.purge', target: '2 ids' });
    expect(bulk.details?.ids).toEqual([other, id]);
    expect((await admin.getAuditLog({ target: other })).items).toEqual([]);

    // Exactly the target: not a prefix of it, and combined with the other filters.
    expect((await admin.getAuditLog({ target: id.slice(0, 8) })).items).toEqual([]);
    expect((await admin.getAuditLog({ target: `${id} ` })).items).toEqual([]);
    const cancels = await admin.getAuditLog({ target: id, action: 'job.cancel' });
    expect(cancels.items.map((e) => e.actor)).toEqual(['erin', 'bob']);
    // Keyset pages of one target walk its entries once each, in the same order.
    const seen: string[] = [];
    let page = await admin.getAuditLog({ target: id, limit: 2 });
    seen.push(...page.items.map((e) => e.id));
    while (page.nextCursor) {
      page = await admin.getAuditLog({ target: id, limit: 2, cursor: page.nextCursor });
      seen.push(...page.items.map((e) => e.id));
    }
    expect(seen).toEqual(items.map((e) => e.id));
  });

  it('getAuditLog by target: targets longer than the indexed prefix compare whole; queues and recurring jobs are targets too', async () => {
    const queue = uniqueQueue('long');
    // Two filters whose canonical JSON shares its first 300 characters and differs after.
    const base = { queue, search: 's'.repeat(200), type: 't'.repeat(150) };
    const first = { ...base, type: `${base.type}1` };
    const second = { ...base, type: `${base.type}2` };
    expect(canonicalFilter(first).length).toBeGreaterThan(300);
    for (const filter of [first, second, first]) {
      await db.storage.purgeDlqByFilter(filter, 10, { action: 'dlq.purge-by-filter', actor: 'x' });
    }
    const found = await admin.getAuditLog({ target: canonicalFilter(first) });
    expect(found.items.map((e) => e.target)).toEqual([
      canonicalFilter(first),
      canonicalFilter(first),
    ]);
    expect((await admin.getAuditLog({ target: canonicalFilter(second) })).items).toHaveLength(1);

    await admin.pauseQueue(queue, 'ops');
    expect((await admin.getAuditLog({ target: queue })).items.map((e) => e.action)).toEqual([
      'queue.pause',
    ]);
  });

  it('getAuditLog refuses a target that is not 1–4,000 characters without NUL', async () => {
    for (const target of ['', 'a\u0000b', 'x'.repeat(4_001), 42, null]) {
      await expectValidationError(admin.getAuditLog({ target: target as never }), 'target');
    }
    // The longest target is accepted.
    expect((await admin.getAuditLog({ target: 'x'.repeat(4_000) })).items).toEqual([]);
  });

  describe('bulk actions by filter need the token of a preview', () => {
    it('preview, then act with its token: any instance verifies it, and the action is audited with its filter', async () => {
      const queue = uniqueQueue('bulk');
      await dead(3, queue);
      const filter = { queue };
      const preview = await admin.previewDlq(filter, { action: 'purge', max: 10 });
      expect(preview).toMatchObject({ action: 'purge', matched: 3, willAffect: 3 });
      expect(preview.sampleIds).toHaveLength(3);
      // Another instance (another process, as far as the secret goes) verifies it.
      const other = new ChokaQAdmin(db.storage, testOptions(), new WorkerRegistry());
      expect(await other.purgeDlqByFilter(filter, { token: preview.token }, 'ops')).toBe(3);
      expect((await latest())[0]).toMatchObject({
        actor: 'ops',
        action: 'dlq.purge-by-filter',
        target: canonicalFilter(filter),
        rowsAffected: 3,
        details: { max: 3 },
      });
    });

    it('refuses, changing nothing, a token of another action or filter, an altered one, or none', async () => {
      const queue = uniqueQueue('refused');
      const ids = await dead(2, queue);
      const { token } = await admin.previewDlq({ queue }, { action: 'resurrect' });
      const refusals = [
        () => admin.purgeDlqByFilter({ queue }, { token }),
        () => admin.resurrectByFilter({ queue, type: 'other' }, { token }),
        () => admin.resurrectByFilter({ queue }, { token: altered(token) }),
        () => admin.resurrectByFilter({ queue }, { token: 'not-a-token' }),
      ];
      // A signature spelled another way (base64url's unused low bits) is not the signature.
      const [body, mac] = token.split('.');
      // 32 bytes are 43 characters: the last one's two low bits are unused, so flipping its
      // lowest bit spells the same bytes differently.
      const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const flipped = ALPHABET[ALPHABET.indexOf(mac[mac.length - 1]) ^ 1];
      const respelled = `${body}.${mac.slice(0, -1)}${flipped}`;
      expect(Buffer.from(respelled.split('.')[1], 'base64url')).toEqual(
        Buffer.from(mac, 'base64url'),
      );
      refusals.push(() => admin.resurrectByFilter({ queue }, { token: respelled }));
      for (const refuse of refusals) {
        const error = await expectRejects(refuse());
        expect(error).toBeInstanceOf(ChokaQConfirmationError);
        expect((error as ChokaQConfirmationError).reason).toBe('invalid');
      }
      await expect(admin.resurrectByFilter({ queue }, undefined as never)).rejects.toThrow(
        ChokaQValidationError,
      );
      for (const id of ids) expect((await db.storage.getJob(id))?.pillar).toBe('dlq');
      // The same filter written differently (key order, an empty search) is the same filter.
      expect(await admin.resurrectByFilter({ search: '', queue }, { token })).toHaveLength(2);
    });

    it('refuses an expired token (5 minutes, by the database clock)', async () => {
      const queue = uniqueQueue('expired');
      const [id] = await dead(1, queue);
      const secret = await db.storage.confirmationSecret('0'.repeat(64));
      const now = (await db.storage.now()).getTime();
      const token = signConfirmation(secret, {
        action: 'purge',
        filter: canonicalFilter({ queue }),
        matched: 1,
        max: 10,
        expiresAtMs: now - 1,
      });
      const error = await expectRejects(admin.purgeDlqByFilter({ queue }, { token }));
      expect(error).toMatchObject({ reason: 'expired', previewed: 1 });
      expect((await db.storage.getJob(id))?.pillar).toBe('dlq');
      // The stored secret stays: a candidate never replaces it.
      expect(await db.storage.confirmationSecret('1'.repeat(64))).toBe(secret);
    });

    it('refuses when the count moved beyond the tolerance (default 0, at most 0.1)', async () => {
      const queue = uniqueQueue('moved');
      await dead(10, queue);
      const { token } = await admin.previewDlq({ queue }, { action: 'resurrect', max: 100 });
      await dead(1, queue);
      const error = await expectRejects(admin.resurrectByFilter({ queue }, { token }));
      expect(error).toMatchObject({ reason: 'count-changed', previewed: 10, current: 11 });
      expect(await db.count('dlq', 'queue = ?', [queue])).toBe(11);
      await expect(admin.resurrectByFilter({ queue }, { token, tolerance: 0.2 })).rejects.toThrow(
        ChokaQValidationError,
      );
      // 1 of 10 is within a tolerance of 0.1: the action runs on the rows that match now.
      expect(await admin.resurrectByFilter({ queue }, { token, tolerance: 0.1 })).toHaveLength(11);
      expect(await db.count('dlq', 'queue = ?', [queue])).toBe(0);
    });

    it('rounds the tolerance down (6 against 5 at 0.1 is refused) and refuses a token at its expiry instant', async () => {
      const queue = uniqueQueue('edges');
      await dead(5, queue);
      const { token } = await admin.previewDlq({ queue }, { action: 'purge', max: 100 });
      await dead(1, queue);
      // 10 % of 5 is half a row: no row of tolerance.
      const moved = await expectRejects(
        admin.purgeDlqByFilter({ queue }, { token, tolerance: 0.1 }),
      );
      expect(moved).toMatchObject({ reason: 'count-changed', previewed: 5, current: 6 });

      // The database clock reads exactly the expiry instant: the token is no longer valid.
      const secret = await db.storage.confirmationSecret('0'.repeat(64));
      const expiresAtMs = (await db.storage.now()).getTime() + 60_000;
      const exact = signConfirmation(secret, {
        action: 'purge',
        filter: canonicalFilter({ queue }),
        matched: 6,
        max: 100,
        expiresAtMs,
      });
      const frozen = new Proxy(db.storage, {
        get(target, key, receiver) {
          if (key === 'now') return async () => new Date(expiresAtMs);
          const value = Reflect.get(target, key, receiver) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const atExpiry = new ChokaQAdmin(frozen, testOptions(), new WorkerRegistry());
      const expired = await expectRejects(atExpiry.purgeDlqByFilter({ queue }, { token: exact }));
      expect(expired).toMatchObject({ reason: 'expired' });
      expect(await db.count('dlq', 'queue = ?', [queue])).toBe(6);
    });

    it('a token confirms one action: a replay is refused, even when the counts match again', async () => {
      const queue = uniqueQueue('replay');
      await dead(3, queue);
      const { token } = await admin.previewDlq({ queue }, { action: 'purge', max: 10 });
      expect(await admin.purgeDlqByFilter({ queue }, { token })).toBe(3);
      await dead(3, queue);
      const replay = await expectRejects(admin.purgeDlqByFilter({ queue }, { token }));
      expect(replay).toBeInstanceOf(ChokaQConfirmationError);
      expect((replay as ChokaQConfirmationError).reason).toBe('used');
      expect(await db.count('dlq', 'queue = ?', [queue])).toBe(3);
      // One audit row for the one action.
      const rows = await admin.getAuditLog({ action: 'dlq.purge-by-filter' });
      expect(rows.items.filter((e) => e.target === canonicalFilter({ queue }))).toHaveLength(1);

      const resurrect = await admin.previewDlq({ queue }, { action: 'resurrect' });
      expect(await admin.resurrectByFilter({ queue }, { token: resurrect.token })).toHaveLength(3);
      await dead(3, queue);
      const again = await expectRejects(
        admin.resurrectByFilter({ queue }, { token: resurrect.token }),
      );
      expect((again as ChokaQConfirmationError).reason).toBe('used');
    });

    it('an action of several batches uses its token once, in its first batch only', async () => {
      const queue = uniqueQueue('replay.batches');
      const ids = (
        await db.storage.enqueueMany(Array.from({ length: 1_001 }, () => ({ queue })))
      ).map((r) => r.id);
      expect((await db.storage.cancel(ids)).cancelled).toHaveLength(1_001);
      const { token } = await admin.previewDlq({ queue }, { action: 'purge', max: 2_000 });
      expect(await admin.purgeDlqByFilter({ queue }, { token })).toBe(1_001);
      const rows = await admin.getAuditLog({ action: 'dlq.purge-by-filter' });
      expect(rows.items.find((e) => e.target === canonicalFilter({ queue }))?.rowsAffected).toBe(
        1_001,
      );
    });

    it('two processes using one token at once: exactly one acts, on every row, and the other is refused', async () => {
      const storages = await db.openStorages(2);
      try {
        const admins = storages.map((s) => new ChokaQAdmin(s, testOptions(), new WorkerRegistry()));
        // Raced many times: the one that acts must never be one that skipped the rows the other
        // had locked, leaving them behind with the token spent.
        for (let race = 0; race < 25; race++) {
          const queue = uniqueQueue('replay.race');
          await dead(4, queue);
          const { token } = await admin.previewDlq({ queue }, { action: 'purge', max: 10 });
          const results = await Promise.allSettled(
            admins.map((a) => a.purgeDlqByFilter({ queue }, { token })),
          );
          const done = results.filter((r) => r.status === 'fulfilled');
          const refused = results.filter((r) => r.status === 'rejected');
          expect(done).toHaveLength(1);
          expect(refused).toHaveLength(1);
          // Refused as used when it ran alongside the first; one that starts after the first
          // committed finds the preview's count changed first. Either way it changed nothing.
          const { reason } = (refused[0] as PromiseRejectedResult).reason as { reason: string };
          expect(['used', 'count-changed']).toContain(reason);
          expect((done[0] as PromiseFulfilledResult<number>).value).toBe(4);
          expect(await db.count('dlq', 'queue = ?', [queue])).toBe(0);
        }
      } finally {
        await Promise.all(storages.map((s) => s.close()));
      }
    });

    it('first calls at once, from separate storages and connections, all get the one secret stored', async () => {
      // Operators' CLI processes preview at the same time; each must read the secret that won.
      const storages = await db.openStorages(4);
      const where = `${db.column('name')} = 'confirmation-secret'`;
      for (let round = 0; round < 5; round++) {
        await db.sql(`DELETE FROM ${db.table('settings')} WHERE ${where}`);
        const candidates = Array.from({ length: 16 }, (_, i) => i.toString(16).repeat(64));
        const secrets = await Promise.all(
          candidates.map((candidate, i) => storages[i % 4].confirmationSecret(candidate)),
        );
        expect(new Set(secrets).size).toBe(1);
        expect(candidates).toContain(secrets[0]);
        expect(await db.count('settings', where)).toBe(1);
      }
    });
  });
});
