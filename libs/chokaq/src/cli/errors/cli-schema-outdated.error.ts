import { ChokaQError } from '../../errors';

/**
 * The database's ChokaQ schema is older than this release (or absent), so a command other than
 * `migrate` refuses to run rather than fail halfway on a missing table or column. The process
 * exits 1.
 */
export class CliSchemaOutdatedError extends ChokaQError {
  constructor(
    readonly schema: string,
    readonly currentVersion: number,
    readonly latestVersion: number,
  ) {
    super(
      currentVersion === 0
        ? `The database has no ChokaQ schema '${schema}'. Check --url and --schema, or create it with 'chokaq migrate'.`
        : `The ChokaQ schema '${schema}' is at version ${currentVersion}; this release needs ${latestVersion}. ` +
            `Run 'chokaq migrate' (or start a worker of this release), then try again.`,
    );
  }
}
