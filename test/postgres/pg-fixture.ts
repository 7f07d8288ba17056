import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { PostgresStorageOptions } from '../../libs/chokaq/src/interfaces/storage-options.interface';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';
import { JobStorage } from '../../libs/chokaq/src/storage/job-storage';
import { PG_URL, pgAvailable } from '../support/env';

/** `describe` when the global setup found PostgreSQL, else `describe.skip`. */
export const describePg = pgAvailable() ? describe : describe.skip;

/**
 * An isolated schema for one PostgreSQL-only suite: a uniquely named schema, storages opened on it
 * (each its own DataSource, i.e. its own connections), a raw DataSource for assertions, and a
 * `close()` that closes everything and drops the schema.
 */
export class PgSchema {
  readonly schema = `chokaq_pg_${process.pid}_${randomBytes(4).toString('hex')}`;
  private readonly raw = new DataSource({ type: 'postgres', url: PG_URL, poolSize: 4 });
  private readonly storages: JobStorage[] = [];

  /** Options of a storage on this schema. */
  options(overrides: Partial<PostgresStorageOptions> = {}): PostgresStorageOptions {
    return { type: 'postgres', url: PG_URL, schema: this.schema, poolSize: 4, ...overrides };
  }

  /** Opens a storage (own DataSource) on this schema. */
  async open(overrides: Partial<PostgresStorageOptions> = {}): Promise<JobStorage> {
    const storage = await createJobStorage(this.options(overrides));
    this.storages.push(storage);
    return storage;
  }

  /** Opens `n` independent storages in parallel. */
  openMany(n: number, overrides: Partial<PostgresStorageOptions> = {}): Promise<JobStorage[]> {
    return Promise.all(Array.from({ length: n }, () => this.open(overrides)));
  }

  /** Raw SQL on a separate connection. */
  async sql<T = Record<string, unknown>>(query: string, params: unknown[] = []): Promise<T[]> {
    if (!this.raw.isInitialized) await this.raw.initialize();
    return this.raw.query(query, params);
  }

  /** Qualified table name. */
  table(name: string): string {
    return `"${this.schema}".${name}`;
  }

  async close(): Promise<void> {
    for (const storage of this.storages) await storage.close().catch(() => undefined);
    await this.sql(`DROP SCHEMA IF EXISTS "${this.schema}" CASCADE`);
    await this.raw.destroy();
  }
}
