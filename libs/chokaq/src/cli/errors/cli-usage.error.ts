import { ChokaQError } from '../../errors';

/**
 * The command line is wrong: an unknown command or option, a missing or extra argument, a value
 * that does not parse. Nothing was read or changed; the process exits 2.
 */
export class CliUsageError extends ChokaQError {
  constructor(
    message: string,
    /** The command whose usage was broken (`'dlq resurrect'`), or undefined at the top level. */
    readonly command?: string,
  ) {
    super(message);
  }
}
