import {
  ChokaQJobNotPendingError,
  ChokaQRecurringJobNotFoundError,
  ChokaQValidationError,
} from '../errors';
import { CliConfirmationRequiredError } from './errors/cli-confirmation-required.error';
import { CliNothingMatchedError } from './errors/cli-nothing-matched.error';
import { CliUsageError } from './errors/cli-usage.error';

/** The exit codes of `chokaq`, the contract scripts rely on (README, "Command line"). */
export const EXIT_CODES = {
  /** The command did what it was asked. */
  done: 0,
  /** It failed: the database was unreachable, the schema is outdated, a confirmation was refused… */
  failed: 1,
  /** The command line is wrong: unknown command or option, bad value, missing argument, no `--yes`. */
  usage: 2,
  /** What it names does not exist, or its filter matched nothing. */
  nothingMatched: 3,
} as const;

/** One of {@link EXIT_CODES}. */
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/**
 * The exit code of an error a command threw. A value the library refused (`ChokaQValidationError`:
 * a queue name too long, an actor with NUL) is the command line's fault, like a value that does
 * not parse. An edit of an id no job has (`ChokaQJobNotPendingError` without a status) matched
 * nothing; of a job that is no longer Pending, it failed.
 */
export function exitCodeOf(error: unknown): ExitCode {
  if (error instanceof CliUsageError || error instanceof CliConfirmationRequiredError) {
    return EXIT_CODES.usage;
  }
  if (error instanceof ChokaQValidationError) return EXIT_CODES.usage;
  if (error instanceof CliNothingMatchedError || error instanceof ChokaQRecurringJobNotFoundError) {
    return EXIT_CODES.nothingMatched;
  }
  if (error instanceof ChokaQJobNotPendingError && error.status === null) {
    return EXIT_CODES.nothingMatched;
  }
  return EXIT_CODES.failed;
}
