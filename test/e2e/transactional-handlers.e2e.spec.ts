import { INestApplication, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import {
  ChokaQModule,
  ChokaQTransactionalHandlerError,
  FailureReason,
  JobClient,
  JobContext,
  JobHandler,
  defineJob,
} from '../../libs/chokaq/src';
import type { JobOutcome } from '../../libs/chokaq/src/interfaces/job-outcome.interface';
import { WorkerRegistry } from '../../libs/chokaq/src/worker.registry';
import { TestSchema, createTestSchema, describePostgres } from '../support/test-database';
import { deferred, waitFor } from '../support/wait-for';
import {
  FAST_OPTIONS,
  closeAndCheck,
  e2eDatabase,
  mergeOptions,
  quietLogger,
} from './support/e2e-app';

const Write = defineJob<{ tag: string }, { followUp: string }>('ledger', 'write.v1');
const Stuck = defineJob<{ tag: string }>('ledger', 'stuck.v1');
const Gated = defineJob<{ tag: string }>('ledger', 'gated.v1');

@Injectable()
class Ledger {
  table = 'ledger';
  /** `txid_current()` as the EntityManager and the QueryRunner saw it, per run. */
  readonly txids: Array<[manager: string, runner: string]> = [];
  sameRunner = false;
  readonly followUps: string[] = [];
  gate = deferred();
  gatedStarted = false;
}

@Injectable()
class LedgerHandlers {
  constructor(
    private readonly ledger: Ledger,
    private readonly jobs: JobClient,
  ) {}

  /** Records its result, which the archive move stores inside the run's transaction. */
  @JobHandler(Write, { transactional: true, recordResult: true })
  async write(p: { tag: string }, ctx: JobContext): Promise<{ followUp: string }> {
    const manager = ctx.transaction!;
    const runner = ctx.queryRunner!;
    this.ledger.sameRunner = manager.queryRunner === runner;
    const txid = 'SELECT txid_current() AS txid';
    const [m] = (await manager.query(txid)) as Array<{ txid: string }>;
    const [r] = (await runner.query(txid)) as Array<{ txid: string }>;
    this.ledger.txids.push([m.txid, r.txid]);
    await manager.query(`INSERT INTO ${this.ledger.table} (tag) VALUES ($1)`, [p.tag]);
    // A transaction of the handler's own nests as a savepoint of the run's transaction.
    await manager.transaction((inner) =>
      inner.query(`INSERT INTO ${this.ledger.table} (tag) VALUES ($1)`, [`${p.tag}:nested`]),
    );
    // An outbox: a follow-up job that exists only if this run commits.
    const followUp = await this.jobs.enqueue(
      'ledger.outbox',
      { tag: p.tag },
      { transaction: runner },
    );
    this.ledger.followUps.push(followUp);
    return { followUp };
  }

  /** Writes, then sits in a statement that ignores the signal: the execution timeout must end it. */
  @JobHandler(Stuck, { transactional: true, timeoutMs: 500, maxAttempts: 1 })
  async stuck(p: { tag: string }, ctx: JobContext): Promise<void> {
    await ctx.queryRunner!.query(`INSERT INTO ${this.ledger.table} (tag) VALUES ($1)`, [p.tag]);
    await ctx.queryRunner!.query('SELECT pg_sleep(30) AS chokaq_stuck');
  }

  @JobHandler(Gated, { transactional: true })
  async gated(p: { tag: string }, ctx: JobContext): Promise<void> {
    await ctx.transaction!.query(`INSERT INTO ${this.ledger.table} (tag) VALUES ($1)`, [p.tag]);
    this.ledger.gatedStarted = true;
    await this.ledger.gate.promise;
  }
}

@Injectable()
class OneTransactionalHandler {
  @JobHandler('refused', { transactional: true })
  async run(): Promise<void> {}
}

describePostgres('transactional handlers on the app’s own DataSource [postgres]', () => {
  let db: TestSchema;
  let app: INestApplication | undefined;
  beforeEach(() => (db = e2eDatabase('postgres')));
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await db.close();
  });

  async function boot() {
    const moduleRef = await Test.createTestingModule({
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: (db.options as { url: string }).url }),
        ChokaQModule.forRootAsync({
          inject: [DataSource],
          useFactory: (ds: DataSource) =>
            mergeOptions(FAST_OPTIONS, { storage: { dataSource: ds, schema: db.schema } }),
        }),
      ],
      providers: [Ledger, LedgerHandlers],
    }).compile();
    const started = moduleRef.createNestApplication({ logger: quietLogger() });
    app = started;
    await started.init();
    const ledger = started.get(Ledger);
    ledger.table = `"${db.schema}".ledger`;
    await db.sql(`CREATE TABLE ${ledger.table} (tag text NOT NULL)`);
    const outcomes: JobOutcome[] = [];
    started.get(WorkerRegistry).localWorker!.onOutcome((o) => outcomes.push(o));
    return { app: started, ledger, jobs: started.get(JobClient), outcomes };
  }

  const tags = async (table: string) =>
    (await db.sql<{ tag: string }>(`SELECT tag FROM ${table} ORDER BY tag`)).map((r) => r.tag);

  it('ctx.transaction and ctx.queryRunner are one transaction, committed with the archive', async () => {
    const { app: started, ledger, jobs } = await boot();
    const id = await jobs.enqueue(Write, { tag: 'a' });
    await waitFor(
      'the job to be archived',
      async () => (await db.count('archive', 'id = ?', [id])) === 1,
    );
    expect(await tags(ledger.table)).toEqual(['a', 'a:nested']);
    expect(ledger.txids).toHaveLength(1);
    expect(ledger.txids[0][0]).toBe(ledger.txids[0][1]);
    expect(ledger.sameRunner).toBe(true);
    expect(ledger.followUps).toHaveLength(1);
    expect(await jobs.getJob(ledger.followUps[0])).toMatchObject({ queue: 'ledger.outbox' });
    // The result went into the archive row in the same transaction.
    expect(await jobs.getResult(Write, id)).toEqual({ followUp: ledger.followUps[0] });
    await closeAndCheck(started, db);
    app = undefined;
  });

  it('a run past its timeout commits nothing and its connection is given up', async () => {
    const { ledger, jobs } = await boot();
    const id = await jobs.enqueue(Stuck, { tag: 'stuck' });
    await waitFor('the job to be dead-lettered as timed out', async () => {
      const job = await jobs.getJob(id);
      return job?.pillar === 'dlq' && job.failureReason === FailureReason.Timeout;
    });
    // statement_timeout (the run's 500 ms) cancels the sleep, and the dropped connection ends it.
    await waitFor(
      'no session left in the stuck statement',
      async () =>
        (
          await db.sql(
            `SELECT 1 FROM pg_stat_activity WHERE query LIKE '%chokaq_stuck%' AND pid <> pg_backend_pid()`,
          )
        ).length === 0,
      { timeoutMs: 10_000 },
    );
    expect(await tags(ledger.table)).toEqual([]);
  });

  it('a run whose lease was taken over rolls back its writes at the archive', async () => {
    const { ledger, jobs, outcomes } = await boot();
    const id = await jobs.enqueue(Gated, { tag: 'gated' });
    await waitFor('the handler to write', () => ledger.gatedStarted);
    // Another owner took the row meanwhile (what a rescue and a new claim leave behind).
    const takeover = '00000000-0000-7000-8000-000000000001';
    await db.sql(`UPDATE ${db.table('hot')} SET lease_id = $1 WHERE id = $2`, [takeover, id]);
    ledger.gate.resolve();
    await waitFor('the run to settle', () => outcomes.find((o) => o.id === id));
    expect(outcomes.find((o) => o.id === id)).toMatchObject({ applied: false });
    expect(await tags(ledger.table)).toEqual([]);
    const [row] = await db.sql<{ lease_id: string }>(
      `SELECT lease_id FROM ${db.table('hot')} WHERE id = $1`,
      [id],
    );
    expect(row.lease_id).toBe(takeover);
    // Hand the row back to nobody: delete it, so the close check finds no foreign claim.
    await db.sql(`DELETE FROM ${db.table('hot')} WHERE id = $1`, [id]);
  });

  it('refuses transactional: true at startup on a DataSource ChokaQ opened itself', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [ChokaQModule.forRoot(mergeOptions(FAST_OPTIONS, { storage: db.options }))],
      providers: [OneTransactionalHandler],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    const failure = await app.init().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ChokaQTransactionalHandlerError);
    expect(failure).toMatchObject({
      handlers: ['OneTransactionalHandler.run'],
      reason: expect.stringMatching(/opened its DataSource itself/),
    });
  });
});

describe('transactional handlers on SQLite', () => {
  let db: TestSchema;
  let app: INestApplication | undefined;
  beforeEach(() => (db = createTestSchema('sqlite')));
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await db.close();
  });

  it('are refused at startup with the reason, even on the app’s own DataSource', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        TypeOrmModule.forRoot({ type: 'better-sqlite3', database: db.file }),
        ChokaQModule.forRootAsync({
          inject: [DataSource],
          useFactory: (ds: DataSource) =>
            mergeOptions(FAST_OPTIONS, { storage: { dataSource: ds } }),
        }),
      ],
      providers: [OneTransactionalHandler],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    const failure = await app.init().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ChokaQTransactionalHandlerError);
    expect((failure as Error).message).toMatch(/SQLite has one connection and one writer/);
    expect((failure as Error).message).toMatch(/heartbeats included/);
  });
});
