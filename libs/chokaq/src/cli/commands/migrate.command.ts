import type { SchemaVersionInfo } from '../../interfaces/schema-status.interface';
import { defineCommand } from '../args/command-definition';
import { flag } from '../args/shared-options';
import { CliUsageError } from '../errors/cli-usage.error';
import { Block, fields, table, text } from '../format/view';

/** Schema versions, one row each. */
function versionTable(versions: readonly SchemaVersionInfo[]): Block {
  return table(
    [{ header: 'VERSION', align: 'right' }, { header: 'DESCRIPTION' }],
    versions.map((m) => [m.version, m.description]),
  );
}

/**
 * `chokaq migrate [--dry-run]`: creates or migrates the schema through the storage's own
 * `ensureSchema()`, the call every starting worker makes, under the same lock (PostgreSQL's
 * advisory lock, SQL Server's `sp_getapplock`, SQLite's `BEGIN IMMEDIATE`), so it is safe while
 * workers start or run. `--dry-run` reads the ledger and prints the versions and the SQL it would
 * apply (`schemaStatus()`), changing nothing.
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
    'release to a binary collation (keys that differ by case become different keys). It rebuilds',
    'indexes of the archive and the DLQ: stop the workers first.',
  ],
  options: {
    'dry-run': { type: 'boolean', description: 'print what would run; change nothing' },
    'binary-keys': {
      type: 'boolean',
      description: 'SQL Server: also convert the key columns to a binary collation',
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
    return { dryRun, binaryKeys };
  },
  databaseFor: ({ dryRun }) => (dryRun ? 'any' : 'migrate'),
  async run({ dryRun, binaryKeys }, { schema }) {
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
        `--binary-keys is for SQL Server; ${before.dialect} keys already compare byte for byte`,
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
                  ? 'Converted the key columns to a binary collation.'
                  : 'The key columns were binary already; nothing to convert.',
              ),
            ]),
      ],
    };
  },
});
