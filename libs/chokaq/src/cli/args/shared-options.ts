import type { DlqFilter } from '../../interfaces/job-view.interface';
import { DEFAULT_SCHEMA, DEFAULT_SQLITE_PREFIX } from '../../config/storage-defaults';
import type { CliIo } from '../cli-io';
import type { OptionTable, ParsedCommandLine } from './command-definition';
import { FAILURE_REASON_NAMES, readFailureReason, readInteger, readTime } from './option-values';

/** The environment variable `--url` defaults to. */
export const DATABASE_URL_ENV = 'CHOKAQ_DATABASE_URL';

/** The environment variable `--read-replica` defaults to. */
export const READ_REPLICA_URL_ENV = 'CHOKAQ_READ_REPLICA_URL';

/** `--help`, which every command takes. */
export const HELP_OPTIONS = {
  help: { type: 'boolean', short: 'h', description: 'print this help' },
} as const satisfies OptionTable;

/** Where the database is: every command that reads or writes it takes these. */
export const CONNECTION_OPTIONS = {
  url: {
    type: 'string',
    value: 'URL',
    description: `postgres://…, mssql://…, a SQLite file or sqlite:FILE (default $${DATABASE_URL_ENV})`,
  },
  schema: {
    type: 'string',
    value: 'NAME',
    description: `schema (PostgreSQL, SQL Server; default ${DEFAULT_SCHEMA}) or table prefix (SQLite; default ${DEFAULT_SQLITE_PREFIX})`,
  },
  'read-replica': {
    type: 'string',
    value: 'URL',
    description: `PostgreSQL: a hot standby that lists, counts and stats read (default $${READ_REPLICA_URL_ENV})`,
  },
} as const satisfies OptionTable;

/** `--json`: every command that reads or writes the database takes it. */
export const OUTPUT_OPTIONS = {
  json: { type: 'boolean', description: 'print one JSON document on stdout instead of tables' },
} as const satisfies OptionTable;

/** Who acts, for the audit log: every audited command takes it. */
export const ACTOR_OPTIONS = {
  actor: {
    type: 'string',
    value: 'NAME',
    description: 'who acts, as the audit log records it (default cli:<os user>)',
  },
} as const satisfies OptionTable;

/** The DLQ filter of `ChokaQAdmin` (list, preview, bulk actions). */
export const DLQ_FILTER_OPTIONS = {
  queue: { type: 'string', value: 'NAME', description: 'jobs of this queue' },
  type: { type: 'string', value: 'TYPE', description: 'jobs of this type' },
  reason: {
    type: 'string',
    value: 'REASON',
    description: `why they failed: ${FAILURE_REASON_NAMES.join(', ')}`,
  },
  since: {
    type: 'string',
    value: 'TIME',
    description: 'failed at or after: an ISO time, or a duration ago (2h, 7d)',
  },
  until: { type: 'string', value: 'TIME', description: 'failed before: as --since' },
  search: {
    type: 'string',
    value: 'TEXT',
    description: 'substring of id, type, payload or error (matched literally)',
  },
  tag: { type: 'string', value: 'TAG', description: 'jobs with this tag' },
} as const satisfies OptionTable;

/** Keyset paging of a list. */
export const PAGE_OPTIONS = {
  limit: { type: 'string', value: 'N', description: 'rows per page, 1-1000 (default 50)' },
  cursor: {
    type: 'string',
    value: 'CURSOR',
    description: 'continue from the cursor a previous page printed',
  },
} as const satisfies OptionTable;

/** A string option's value, if given. */
export function stringValue(line: ParsedCommandLine, name: string): string | undefined {
  const value = line.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A boolean option: given or not. */
export function flag(line: ParsedCommandLine, name: string): boolean {
  return line.values[name] === true;
}

/** `--actor`, else the operating system's user (`cli:<user>`). */
export function readActor(line: ParsedCommandLine, io: CliIo): string {
  return stringValue(line, 'actor') ?? io.defaultActor();
}

/** The DLQ filter given by {@link DLQ_FILTER_OPTIONS}; empty when none was. */
export function readDlqFilter(line: ParsedCommandLine, io: CliIo): DlqFilter {
  const filter: DlqFilter = {};
  for (const key of ['queue', 'type', 'search', 'tag'] as const) {
    const value = stringValue(line, key);
    if (value !== undefined) filter[key] = value;
  }
  const reason = stringValue(line, 'reason');
  if (reason !== undefined) filter.reason = readFailureReason('--reason', reason);
  const since = stringValue(line, 'since');
  if (since !== undefined) filter.from = readTime('--since', since, io.now());
  const until = stringValue(line, 'until');
  if (until !== undefined) filter.to = readTime('--until', until, io.now());
  return filter;
}

/** `--limit` and `--cursor` as a list query takes them. */
export function readPage(line: ParsedCommandLine): { limit?: number; cursor?: string } {
  const limit = stringValue(line, 'limit');
  const cursor = stringValue(line, 'cursor');
  return {
    ...(limit !== undefined ? { limit: readInteger('--limit', limit, 1) } : {}),
    ...(cursor !== undefined ? { cursor } : {}),
  };
}
