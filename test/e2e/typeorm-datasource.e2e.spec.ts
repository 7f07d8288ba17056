import { Injectable, OnApplicationShutdown, OnModuleDestroy } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ChokaQModule, JobClient, JobContext, JobHandler, defineJob } from '../../libs/chokaq/src';
import { ChokaQOrchestrator } from '../../libs/chokaq/src/chokaq.orchestrator';
import { FAST_OPTIONS, mergeOptions, quietLogger, e2eDatabase } from './support/e2e-app';
import { TestSchema, describeEachDialect } from '../support/test-database';
import { waitFor } from '../support/wait-for';

const Write = defineJob<{ tag: string }>('orders', 'write.v1');

/** Released in onApplicationShutdown, like TypeORM's DataSource: usable for the whole drain. */
@Injectable()
class LateResource implements OnApplicationShutdown {
  open = true;
  onApplicationShutdown(): void {
    this.open = false;
  }
}

/** Released in onModuleDestroy: may already be gone while ChokaQ drains (documented hazard). */
@Injectable()
class EarlyResource implements OnModuleDestroy {
  open = true;
  onModuleDestroy(): void {
    this.open = false;
  }
}

@Injectable()
class Recorder {
  readonly notes: string[] = [];
  started = false;
  table = 'e2e_orders';
}

@Injectable()
class OrderHandlers {
  constructor(
    private readonly ds: DataSource,
    private readonly late: LateResource,
    private readonly early: EarlyResource,
    private readonly recorder: Recorder,
  ) {}

  /** Runs until shutdown aborts its signal, then finishes its write (cooperative and quick). */
  @JobHandler(Write)
  async write(p: { tag: string }, ctx: JobContext): Promise<void> {
    this.recorder.started = true;
    await new Promise<void>((resolve) => {
      if (ctx.signal.aborted) resolve();
      else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    this.recorder.notes.push(
      `late:${this.late.open}`,
      `early:${this.early.open}`,
      `ds:${this.ds.isInitialized}`,
    );
    await this.ds.query(`INSERT INTO ${this.recorder.table} (tag) VALUES ('${p.tag}')`);
    this.recorder.notes.push('written');
  }
}

describeEachDialect(
  'forRootAsync with the app’s TypeORM DataSource',
  ({ name: dialect }) => {
    let db: TestSchema;
    beforeEach(() => (db = e2eDatabase(dialect)));
    afterEach(async () => db.close());

    async function boot() {
      const typeorm =
        db.dialect === 'sqlite'
          ? TypeOrmModule.forRoot({
              type: 'better-sqlite3',
              database: db.file,
            })
          : TypeOrmModule.forRoot({
              type: 'postgres',
              url: (db.options as { url: string }).url,
              poolSize: 4,
            });
      // SQLite keeps the default table prefix, as the app would.
      const schema = db.dialect === 'sqlite' ? undefined : db.schema;
      const moduleRef = await Test.createTestingModule({
        imports: [
          typeorm,
          ChokaQModule.forRootAsync({
            inject: [DataSource],
            useFactory: (ds: DataSource) =>
              mergeOptions(FAST_OPTIONS, {
                storage: { dataSource: ds, ...(schema ? { schema } : {}) },
                worker: { shutdownGracePeriodMs: 5_000 },
              }),
          }),
        ],
        providers: [LateResource, EarlyResource, Recorder, OrderHandlers],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: quietLogger() });
      await app.init();
      const recorder = app.get(Recorder);
      recorder.table = db.dialect === 'sqlite' ? 'e2e_orders' : `${schema}.e2e_orders`;
      await app.get(DataSource).query(`CREATE TABLE ${recorder.table} (tag varchar(50))`);
      return { app, recorder, ds: app.get(DataSource) };
    }

    it('drains before TypeORM destroys the DataSource, and never destroys it itself', async () => {
      const { app, recorder, ds } = await boot();
      const id = await app.get(JobClient).enqueue(Write, { tag: 'first' });
      await waitFor('the handler to start', () => recorder.started);

      await app.close();

      // The handler finished its write on the borrowed DataSource during the drain, and ChokaQ
      // archived the job with it; TypeORM destroyed the DataSource only afterwards.
      // EarlyResource released itself in onModuleDestroy, which Nest may run before or after the
      // handler's abort: its state during the drain is not guaranteed (the README says so).
      expect(recorder.notes).toEqual([
        'late:true',
        expect.stringMatching(/^early:(true|false)$/),
        'ds:true',
        'written',
      ]);
      expect(ds.isInitialized).toBe(false);
      expect(await db.count('archive', 'id = ?', [id])).toBe(1);
      expect(await db.count('hot')).toBe(0);
    });

    it('enqueues inside the caller’s transaction: rolled back with it, or committed with it', async () => {
      const { app, ds } = await boot();
      const jobs = app.get(JobClient);
      const rolledBack = ds.createQueryRunner();
      await rolledBack.startTransaction();
      const lost = await jobs.enqueue('outbox', { n: 1 }, { transaction: rolledBack });
      await rolledBack.rollbackTransaction();
      await rolledBack.release();
      expect(await jobs.getJob(lost)).toBeNull();

      const committed = ds.createQueryRunner();
      await committed.startTransaction();
      const kept = await jobs.enqueue('outbox', { n: 2 }, { transaction: committed });
      await committed.commitTransaction();
      await committed.release();
      expect(await jobs.getJob(kept)).toMatchObject({ pillar: 'hot', queue: 'outbox' });
      await app.close();
    });

    it('leaves a borrowed DataSource open when ChokaQ alone stops', async () => {
      const { app, ds } = await boot();
      await app.get(ChokaQOrchestrator).stop();
      expect(ds.isInitialized).toBe(true);
      expect(await ds.query('SELECT 1 AS one')).toHaveLength(1);
      await app.close();
      expect(ds.isInitialized).toBe(false);
    });
    // The app's own DataSource and its orders table are built for SQLite and PostgreSQL here.
  },
  { only: ['sqlite', 'postgres'] },
);
