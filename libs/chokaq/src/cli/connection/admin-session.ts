import { existsSync } from 'node:fs';
import { ChokaQAdmin } from '../../admin/chokaq-admin.service';
import { resolveChokaQOptions } from '../../config/resolve-options';
import type { ChokaQModuleOptions } from '../../interfaces/module-options.interface';
import { createJobStorage, openReadReplica } from '../../storage/create-storage';
import type { JobStorage } from '../../storage/job-storage';
import { WorkerRegistry } from '../../worker.registry';
import type { DatabaseUse } from '../args/command-definition';
import type { CliWriter } from '../cli-io';
import { CliDatabaseMissingError } from '../errors/cli-database-missing.error';
import { CliSchemaOutdatedError } from '../errors/cli-schema-outdated.error';
import type { CliSession } from './cli-session';
import type { DatabaseTarget } from './database-url';
import { StderrLogger } from './stderr-logger';

/** A session and the way to close it. */
export interface OpenSession extends CliSession {
  close(): Promise<void>;
}

/**
 * Opens the database for one command: the storage factory of the library (`createJobStorage`, with
 * `autoCreateSchema: false`: a command never migrates as a side effect) and the operator API over
 * it, `ChokaQAdmin`, exactly as an app's own admin endpoints call it. Its worker registry stays
 * empty: the CLI runs no worker, so the admin's local-worker calls have nothing to reach.
 *
 * This is the one file of the CLI that loads the storage (a driver, and TypeORM where the dialect
 * uses it): the CLI imports it only when a command needs the database, so `chokaq schema` and every
 * usage error load none of them. Nothing the CLI loads needs Nest: the library's lines go to stderr
 * through {@link StderrLogger}.
 *
 * Unless the command migrates, the schema must be current ({@link CliSchemaOutdatedError}) and a
 * SQLite file must exist ({@link CliDatabaseMissingError}): opening a missing one would create an
 * empty database.
 */
export async function openSession(
  target: DatabaseTarget,
  use: Exclude<DatabaseUse, 'none'>,
  moduleOptions: ChokaQModuleOptions | undefined,
  err: CliWriter,
): Promise<OpenSession> {
  // The library's lines go to stderr, each with where it comes from.
  const logger = (context: string) => new StderrLogger(err, context);
  if (use !== 'migrate' && target.sqliteFile !== undefined && !existsSync(target.sqliteFile)) {
    throw new CliDatabaseMissingError(target.label);
  }
  const storage = await createJobStorage(target.storage, { logger });
  let replica: JobStorage | undefined;
  const close = () => Promise.all([storage.close(), replica?.close()]).then(() => undefined);
  try {
    replica = await openReadReplica(target.storage, { logger });
    if (use === 'current') {
      const status = await storage.schemaStatus();
      if (status.pending.length > 0) {
        throw new CliSchemaOutdatedError(
          status.schema,
          status.currentVersion,
          status.latestVersion,
        );
      }
    }
    const admin = new ChokaQAdmin(
      storage,
      resolveChokaQOptions({ ...moduleOptions, storage: target.storage }),
      new WorkerRegistry(),
      undefined,
      undefined,
      undefined,
      logger('ChokaQAdmin'),
      replica ?? storage,
    );
    return { admin, schema: storage, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}
