import { ChokaQError } from '../../errors';

/**
 * A bulk action would touch more rows than the CLI acts on unasked, and `--yes` was not given.
 * Nothing was changed; the process exits 2 (the command line lacks its confirmation).
 */
export class CliConfirmationRequiredError extends ChokaQError {
  constructor(
    /** What the action would do, e.g. `'resurrect'`. */
    readonly action: string,
    /** Rows it would touch. */
    readonly rows: number,
    /** The most it touches without `--yes`. */
    readonly threshold: number,
  ) {
    super(
      `This would ${action} ${rows} row(s), more than ${threshold}. Nothing was changed. ` +
        `Check with --dry-run, then run it again with --yes.`,
    );
  }
}
