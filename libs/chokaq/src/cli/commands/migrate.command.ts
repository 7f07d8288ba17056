import { PARTITION_PERIODS } from '../../config/storage-defaults';
import type { SchemaVersionInfo } from '../../interfaces/schema-status.interface';
import type { ArchivePartitioning } from '../../interfaces/storage-options.interface';
import { defineCommand } from '../args/command-definition';
import { flag, stringValue } from '../args/shared-options';
import { CliUsageError } from '../errors/cli-usage.error';
import { Block, fields, table, text } from '../format/view';

/** Schema versions, one row each. */
function versionTable(versions: readonly SchemaVersionInfo[]): Block {
  return table(
    [{ header: 'VERSION', align: 'right' }, { header: 'DESCRIPTION' }],
    versions.map((m) => [m.version, m.description]),
  );
}

/** What `--binary-keys` converts on a dialect: SQL Server's key columns, PostgreSQL's job ids. */
function keyColumns(dialect: string): string {
  return dialect === 'postgres' ? 'job-id columns' : 'key columns';
}

/**
 * `chokaq migrate [--dry-run] [--binary-keys] [--partitioning day|week|month]`: creates or
 * migrates the schema through the storage's own `ensureSchema()`, the call every starting worker
 * makes, under the same lock (PostgreSQL's advisory lock, SQL Server's `sp_getapplock`, SQLite's
 * `BEGIN IMMEDIATE`), so it is safe while workers start or run. `--dry-run` reads the ledger and
 * prints the versions and the SQL it would apply (`schemaStatus()`), changing nothing.
 * `--partitioning` opens the storage with `storage.partitioning`, so that `ensureSchema()` makes a
 * new Archive and DLQ partitioned, or converts a plain install's (docs/storage.md, "A partitioned
 * Archive").
 */
export const migrateCommand = defineCommand({
  name: 'migrate',
  summary: 'Create or migrate the schema, under the lock a starting worker takes',
  synopsis: '',
  details: [
    'Applies the versions this release has and the database lacks, as a starting worker does,',
    'and is safe while workers run. --dry-run prints the versions and the SQL it would run.',
    'A SQLite file is created if missing (not with --dry-run).',
    'SQL Server: --binary-keys then converts the key columns of an install created by an earlier',
    'release to a binary collation (keys that differ by case become different keys). PostgreSQL:',
    'it gives the job-id columns of an install that held jobs at schema version 23 the byte-wise',
    'collation a new install has (COLLATE "C"; no comparison changes, each costs less). It rewrites',
    "those tables (SQL Server: the archive's and the DLQ's indexes): stop the workers first.",
    'PostgreSQL, SQL Server: --partitioning makes the Archive and the DLQ partitions by their',
    'finish time, converting a plain install once (its old table becomes the partition of what',
    'it holds; no row is copied). Give the workers the same storage.partitioning option.',
  ],
  options: {
    'dry-run': { type: 'boolean', description: 'print what would run; change nothing' },
    'binary-keys': {
      type: 'boolean',
      description: 'SQL Server, PostgreSQL: also convert the key columns to a byte-wise collation',
    },
    partitioning: {
      type: 'string',
      value: 'PERIOD',
      description: `PostgreSQL, SQL Server: partition the Archive and the DLQ by ${PARTITION_PERIODS.join(', ')}`,
    },
  },
  positionals: { min: 0, max: 0 },
  database: 'migrate',
  parse: (line) => {
    const dryRun = flag(line, 'dry-run');
    const binaryKeys = flag(line, 'binary-keys');
    if (dryRun && binaryKeys) {
      throw new CliUsageError('--binary-keys cannot be combined with --dry-run', 'migrate');
    }
    const period = stringValue(line, 'partitioning');
    if (
      period !== undefined &&
      !PARTITION_PERIODS.includes(period as ArchivePartitioning['period'])
    ) {
      throw new CliUsageError(
        `--partitioning must be one of ${PARTITION_PERIODS.join(', ')} (got '${period}')`,
        'migrate',
      );
    }
    if (dryRun && period !== undefined) {
      throw new CliUsageError('--partitioning cannot be combined with --dry-run', 'migrate');
    }
    const partitioning =
      period === undefined ? undefined : { period: period as ArchivePartitioning['period'] };
    return { dryRun, binaryKeys, partitioning };
  },
  storageOptions: ({ partitioning }) => (partitioning === undefined ? undefined : { partitioning }),
  databaseFor: ({ dryRun }) => (dryRun ? 'any' : 'migrate'),
  async run({ dryRun, binaryKeys, partitioning }, { schema }) {
    const before = await schema.schemaStatus();
    const where = `${before.dialect} schema '${before.schema}'`;
    if (dryRun) {
      const current = before.pending.length === 0;
      return {
        data: { dryRun: true, ...before },
        view: current
          ? [text(`The ${where} is current (version ${before.currentVersion}); nothing to apply.`)]
          : [
              fields(undefined, [
                ['schema', where],
                ['version', before.currentVersion],
                ['this release', before.latestVersion],
              ]),
              text('Would apply:'),
              versionTable(before.pending),
              text('SQL:', before.script.replace(/\n$/, '')),
            ],
      };
    }
    if (binaryKeys && !schema.convertKeysToBinary) {
      throw new CliUsageError(
        `--binary-keys is for SQL Server and PostgreSQL; ${before.dialect} keys already compare byte for byte`,
        'migrate',
      );
    }
    await schema.ensureSchema();
    const converted = binaryKeys ? await schema.convertKeysToBinary!() : undefined;
    const after = await schema.schemaStatus();
    // What the lock's holder applied: this process, or another that got the lock first.
    const stillPending = new Set(after.pending.map((m) => m.version));
    const applied = before.pending.filter((m) => !stillPending.has(m.version));
    return {
      data: {
        dialect: after.dialect,
        schema: after.schema,
        fromVersion: before.currentVersion,
        toVersion: after.currentVersion,
        applied,
        ...(converted === undefined ? {} : { binaryKeysConverted: converted }),
        ...(partitioning === undefined ? {} : { partitioning }),
      },
      view: [
        ...(applied.length === 0
          ? [text(`The ${where} is current (version ${after.currentVersion}); nothing to apply.`)]
          : [
              text(
                `Migrated the ${where} from version ${before.currentVersion} to ${after.currentVersion}:`,
              ),
              versionTable(applied),
            ]),
        ...(converted === undefined
          ? []
          : [
              text(
                converted
                  ? `Converted the ${keyColumns(after.dialect)} to a byte-wise collation.`
                  : `The ${keyColumns(after.dialect)} were byte-wise already; nothing to convert.`,
              ),
            ]),
        ...(partitioning === undefined
          ? []
          : [text(`The Archive and the DLQ are partitioned by ${partitioning.period}.`)]),
      ],
    };
  },
});
