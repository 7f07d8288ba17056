import { ConsoleLogger, Logger } from '@nestjs/common';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { RecordingLogger } from '../runtime/support/silent-logger';
import { dataSourceOf } from '../support/storage-internals';
import { waitFor } from '../support/wait-for';
import { createTestSchema, describePostgres } from '../support/test-database';

describePostgres('PostgreSQL LISTEN/NOTIFY and caller transactions', () => {
  const db = createTestSchema('postgres', { overrides: { poolSize: 4 } });
  let producer: JobStorage;
  let worker: JobStorage;

  beforeAll(async () => {
    await db.openStorage();
    // The producer borrows a DataSource, so a caller's transaction can hold its enqueues.
    const dataSource = await db.openDataSource();
    producer = await createJobStorage({ dataSource, schema: db.schema, autoCreateSchema: false });
    worker = await db.openStorage({ autoCreateSchema: false });
  });
  afterAll(async () => {
    await producer.close();
    await db.close();
  });

  const listeners = () =>
    db.sql<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE query = $1`, [
      `LISTEN "${db.schema}"`,
    ]);

  it('wakes a subscriber in another process with the queue name, and leaves no session after unsubscribe', async () => {
    const heard: Array<string | undefined> = [];
    const unsubscribe = await worker.subscribe((queue) => heard.push(queue));
    expect(unsubscribe).not.toBeNull();
    expect(await listeners()).toHaveLength(1);
    await producer.enqueue({ queue: 'mail' });
    await producer.enqueueMany([{ queue: 'sms' }, { queue: 'sms' }, { queue: 'mail' }]);
    await waitFor(
      'the notification state',
      () => heard.includes('sms') && heard.filter((q) => q === 'mail').length >= 2,
    );
    await unsubscribe!();
    await unsubscribe!(); // idempotent
    await waitFor('the notification state', async () => (await listeners()).length === 0);
  });

  it('notifies only when the caller commits its transaction', async () => {
    const heard: Array<string | undefined> = [];
    const unsubscribe = await worker.subscribe((queue) => heard.push(queue));
    const runner = dataSourceOf(producer).createQueryRunner();
    await runner.startTransaction();
    const { id } = await producer.enqueue({ queue: 'tx.rolled' }, { transaction: runner });
    await new Promise((r) => setTimeout(r, 200));
    expect(heard).toEqual([]);
    await runner.rollbackTransaction();
    expect(await producer.getJob(id)).toBeNull();
    await runner.startTransaction();
    const committed = await producer.enqueue({ queue: 'tx.committed' }, { transaction: runner });
    await runner.commitTransaction();
    await runner.release();
    await waitFor('the notification state', () => heard.includes('tx.committed'));
    expect(heard).not.toContain('tx.rolled');
    expect((await producer.getJob(committed.id))?.pillar).toBe('hot');
    await unsubscribe!();
  });

  it('close() ends subscriptions that were never unsubscribed', async () => {
    const extra = await db.openStorage({ autoCreateSchema: false });
    await extra.subscribe(() => undefined);
    expect(await listeners()).toHaveLength(1);
    await extra.close();
    await waitFor('the notification state', async () => (await listeners()).length === 0);
  });

  it('re-establishes a LISTEN session the server terminated, and asks for one look at every queue', async () => {
    const logger = new RecordingLogger();
    Logger.overrideLogger(logger);
    const resilient = await db.openStorage({ autoCreateSchema: false, notifyReconnectMs: 50 });
    const heard: Array<string | undefined> = [];
    const unsubscribe = await resilient.subscribe((queue) => heard.push(queue));
    try {
      const [before] = await listeners();
      await db.sql('SELECT pg_terminate_backend($1)', [before.pid]);
      await waitFor('a new LISTEN session', async () => {
        const now = await listeners();
        return now.length === 1 && now[0].pid !== before.pid;
      });
      await waitFor('the catch-up call', () => heard.includes(undefined));
      expect(logger.count('warn', 'lost')).toBe(1);
      expect(logger.count('log', 're-established after')).toBe(1);
      await producer.enqueue({ queue: 'after.reconnect' });
      await waitFor('the notification state', () => heard.includes('after.reconnect'));
    } finally {
      await unsubscribe!();
      Logger.overrideLogger(new ConsoleLogger());
    }
    await waitFor('the notification state', async () => (await listeners()).length === 0);
  });

  it('returns null with notify: false and sends no notification', async () => {
    const quiet = await db.openStorage({ autoCreateSchema: false, notify: false });
    expect(await quiet.subscribe(() => undefined)).toBeNull();
    const heard: Array<string | undefined> = [];
    const unsubscribe = await worker.subscribe((queue) => heard.push(queue));
    await quiet.enqueue({ queue: 'silent' });
    await producer.enqueue({ queue: 'loud' });
    await waitFor('the notification state', () => heard.includes('loud'));
    expect(heard).not.toContain('silent');
    await unsubscribe!();
  });
});
