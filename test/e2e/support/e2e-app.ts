import { INestApplication, Logger, ModuleMetadata, Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ChokaQForRootOptions, ChokaQModule, ChokaQModuleOptions } from '../../../libs/chokaq/src';
import { WorkerRegistry } from '../../../libs/chokaq/src/worker.registry';
import { TestSchema, createTestSchema } from '../../support/test-database';
import type { StorageDialect } from '../../../libs/chokaq/src/interfaces/job.interface';

/**
 * A fresh database for one e2e test: the one fixture, left empty for the app under test to create
 * (its `options` are what `ChokaQModule.forRoot` gets as `storage`). PostgreSQL apps get a pool of 5.
 */
export function e2eDatabase(dialect: StorageDialect): TestSchema {
  return createTestSchema(dialect, dialect === 'postgres' ? { overrides: { poolSize: 5 } } : {});
}

/** Intervals short enough that every lifecycle step happens within a second or two. */
export const FAST_OPTIONS: ChokaQModuleOptions = {
  retry: { maxAttempts: 3, baseDelayMs: 50, multiplier: 1, jitterMs: 0 },
  worker: { pollIntervalMs: 50, shutdownGracePeriodMs: 2_000 },
  heartbeat: { intervalMs: 200 },
  rescue: { intervalMs: 200, fetchedJobTimeoutMs: 5_000, zombieTimeoutMs: 5_000 },
};

/** Deep-merges option sections one level down (enough for ChokaQ's option shape). */
export function mergeOptions(...parts: ChokaQForRootOptions[]): ChokaQForRootOptions {
  const out: Record<string, unknown> = {};
  for (const part of parts) {
    for (const [key, value] of Object.entries(part)) {
      const prev = out[key];
      out[key] =
        key !== 'storage' && prev && typeof prev === 'object' && value && typeof value === 'object'
          ? { ...prev, ...value }
          : value;
    }
  }
  return out as ChokaQForRootOptions;
}

/** Boots a Nest app with ChokaQ on `db` and the given providers; `init()` runs the lifecycle. */
export async function bootApp(
  db: TestSchema,
  {
    providers = [],
    imports = [],
    options = {},
  }: {
    providers?: Provider[];
    imports?: ModuleMetadata['imports'];
    /** `forRoot`'s options, with its extras (`middleware`, `isGlobal`). */
    options?: ChokaQForRootOptions;
  } = {},
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ChokaQModule.forRoot(mergeOptions(FAST_OPTIONS, { storage: db.options }, options)),
      ...(imports ?? []),
    ],
    providers,
  }).compile();
  const app = moduleRef.createNestApplication({ logger: quietLogger() });
  await app.init();
  return app;
}

/** Errors and warnings only, unless CHOKAQ_E2E_VERBOSE=1. */
export function quietLogger(): false | Array<'error' | 'warn' | 'log'> {
  if (process.env.CHOKAQ_E2E_VERBOSE === '1') return ['error', 'warn', 'log'];
  Logger.overrideLogger(['error']);
  return ['error'];
}

/**
 * Closes the app and checks that nothing of ChokaQ is left running: no local worker, and no hot row
 * Fetched or Processing (every claim was finalised or handed back).
 */
export async function closeAndCheck(app: INestApplication, db: TestSchema): Promise<void> {
  const workers = app.get(WorkerRegistry);
  const worker = workers.localWorker;
  await app.close();
  expect(worker?.running ?? false).toBe(false);
  expect(workers.localWorker).toBeUndefined();
  expect(await db.count('hot', 'status IN (1, 2)')).toBe(0);
}
