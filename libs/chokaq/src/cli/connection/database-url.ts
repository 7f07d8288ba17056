import { resolve } from 'node:path';
import type { StorageOptions } from '../../interfaces/storage-options.interface';
import { SCHEMA_NAME } from '../../validation/limits';
import type { CliStorageOptions } from '../args/command-definition';
import { CliUsageError } from '../errors/cli-usage.error';

/** Where a command connects, from `--url` (or `$CHOKAQ_DATABASE_URL`) and `--schema`. */
export interface DatabaseTarget {
  /** What `createJobStorage` opens; the schema is never created or migrated on open. */
  readonly storage: StorageOptions;
  /** The SQLite file, absolute; undefined for a server. */
  readonly sqliteFile?: string;
  /** How the target is named in messages: never the URL itself, which may hold a password. */
  readonly label: string;
}

/**
 * Pool size of the CLI's connection: a command runs its reads one after the other, and a bulk
 * action's batches run in sequence, so two connections are plenty.
 */
const CLI_POOL_SIZE = 2;

/** SQL Server settings a URL may carry as query parameters (`?trustServerCertificate=true`). */
const MSSQL_FLAGS = ['encrypt', 'trustServerCertificate'] as const;

function mssqlOptions(url: URL): Record<string, boolean> {
  const options: Record<string, boolean> = {};
  for (const [name, value] of url.searchParams) {
    if (!(MSSQL_FLAGS as readonly string[]).includes(name) || !/^(true|false)$/.test(value)) {
      throw new CliUsageError(
        `--url: a SQL Server URL takes only ${MSSQL_FLAGS.map((f) => `${f}=true|false`).join(', ')} as parameters (got '${name}')`,
      );
    }
    options[name] = value === 'true';
  }
  return options;
}

/**
 * Reads the database's address:
 * - `postgres://…` or `postgresql://…`: PostgreSQL, the URL as `pg` takes it;
 * - `mssql://user:password@host:port/database`: SQL Server, with `encrypt` and
 *   `trustServerCertificate` as optional query parameters;
 * - `sqlite:FILE` (also `sqlite://FILE`, so `sqlite:///abs/path`), or a plain file path: SQLite.
 *
 * Any other `scheme://` is refused rather than taken for a file name. `schema` is the schema name
 * or, on SQLite, the table prefix, checked by the rule `createJobStorage` applies.
 */
export function databaseTarget(
  url: string | undefined,
  schema: string | undefined,
): DatabaseTarget {
  if (url === undefined || url.trim() === '') {
    throw new CliUsageError(
      'no database: pass --url (postgres://…, mssql://…, a SQLite file) or set CHOKAQ_DATABASE_URL',
    );
  }
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new CliUsageError(`--schema must match ${SCHEMA_NAME.source} (got '${schema}')`);
  }
  const scheme = schemeOf(url);
  if (scheme === 'postgres' || scheme === 'postgresql') {
    const host = parseUrl(url).hostname;
    return {
      storage: {
        type: 'postgres',
        url,
        schema,
        poolSize: CLI_POOL_SIZE,
        notify: false,
        autoCreateSchema: false,
      },
      label: `PostgreSQL at ${host}`,
    };
  }
  if (scheme === 'mssql') {
    const parsed = parseUrl(url);
    const options = mssqlOptions(parsed);
    parsed.search = '';
    return {
      storage: {
        type: 'mssql',
        url: parsed.toString(),
        schema,
        poolSize: CLI_POOL_SIZE,
        autoCreateSchema: false,
        ...(Object.keys(options).length > 0 ? { options } : {}),
      },
      label: `SQL Server at ${parsed.hostname}`,
    };
  }
  let file = url;
  if (scheme === 'sqlite') {
    file = url.slice('sqlite:'.length);
    if (file.startsWith('//')) file = file.slice(2);
  } else if (scheme !== undefined && /^[A-Za-z][A-Za-z0-9+.-]+:\/\//.test(url)) {
    throw new CliUsageError(
      `--url: unsupported database '${scheme}:'; use postgres://, postgresql://, mssql://, sqlite: or a file path`,
    );
  }
  if (file === '') throw new CliUsageError('--url: sqlite: needs a file path (sqlite:./jobs.db)');
  const absolute = resolve(file);
  return {
    storage: { type: 'sqlite', database: absolute, schema, autoCreateSchema: false },
    sqliteFile: absolute,
    label: `SQLite file ${absolute}`,
  };
}

/**
 * `target` with the hot standby at `replicaUrl` (`--read-replica`) for its lists, counts and
 * statistics (`storage.readReplica`); `target` itself without one. PostgreSQL only.
 */
export function withReadReplica(
  target: DatabaseTarget,
  replicaUrl: string | undefined,
): DatabaseTarget {
  if (replicaUrl === undefined || replicaUrl.trim() === '') return target;
  if (!('type' in target.storage) || target.storage.type !== 'postgres') {
    throw new CliUsageError('--read-replica: a read replica is for a PostgreSQL --url only');
  }
  const scheme = schemeOf(replicaUrl);
  if (scheme !== 'postgres' && scheme !== 'postgresql') {
    throw new CliUsageError('--read-replica: must be a postgres:// or postgresql:// URL');
  }
  const host = parseUrl(replicaUrl, '--read-replica').hostname;
  return {
    ...target,
    storage: { ...target.storage, readReplica: { url: replicaUrl, poolSize: CLI_POOL_SIZE } },
    label: `${target.label} (reads from the replica at ${host})`,
  };
}

/**
 * `target` with a command's own storage options (`migrate --partitioning`); `target` itself
 * without any. Partitioning is for PostgreSQL and SQL Server: a SQLite target refuses it.
 */
export function withStorageOptions(
  target: DatabaseTarget,
  options: CliStorageOptions | undefined,
): DatabaseTarget {
  if (options?.partitioning === undefined) return target;
  if (!('type' in target.storage) || target.storage.type === 'sqlite') {
    throw new CliUsageError(
      '--partitioning: a partitioned Archive is for PostgreSQL and SQL Server; SQLite keeps one Archive table',
      'migrate',
    );
  }
  return { ...target, storage: { ...target.storage, partitioning: options.partitioning } };
}

/** The scheme a URL starts with, lower case (`postgres` of `POSTGRES://…`), or undefined. */
function schemeOf(url: string): string | undefined {
  return /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url)?.[1]?.toLowerCase();
}

function parseUrl(url: string, option = '--url'): URL {
  try {
    return new URL(url);
  } catch {
    // The URL may hold a password: the message names the problem, not the text.
    throw new CliUsageError(`${option} is not a valid URL`);
  }
}
