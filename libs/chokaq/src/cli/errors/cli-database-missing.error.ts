import { ChokaQError } from '../../errors';

/**
 * The SQLite file a command names does not exist. Opening it would create an empty database, so
 * the command refuses (only `chokaq migrate` creates one). The process exits 1.
 */
export class CliDatabaseMissingError extends ChokaQError {
  constructor(readonly target: string) {
    super(
      `No database: the ${target} does not exist. Check --url, or create it with 'chokaq migrate'.`,
    );
  }
}
