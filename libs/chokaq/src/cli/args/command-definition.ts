import type { ChokaQModuleOptions } from '../../interfaces/module-options.interface';
import type { ArchivePartitioning } from '../../interfaces/storage-options.interface';
import type { CliIo } from '../cli-io';
import type { CliSession } from '../connection/cli-session';
import type { View } from '../format/view';

/** One option of a command, as `util.parseArgs` takes it, with its help text. */
export interface OptionDefinition {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  /** The value's placeholder in the help (`URL`, `N`). */
  readonly value?: string;
  readonly description: string;
}

/** A command's options by name (without the leading `--`). */
export type OptionTable = Readonly<Record<string, OptionDefinition>>;

/** The command line after strict parsing: option values and the arguments after the command's name. */
export interface ParsedCommandLine {
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
}

/** What a command produced: the document `--json` prints and what a person reads. */
export interface CommandResult {
  /** The one JSON document printed with `--json`. */
  readonly data: unknown;
  /** The tables and lines printed without `--json`. */
  readonly view: View;
  /**
   * Set when the command matched nothing (an empty list, a filter without rows): the result is
   * still printed, this line goes to stderr, and the process exits 3.
   */
  readonly nothingMatched?: string;
}

/** How a command uses the database. */
export type DatabaseUse =
  /** None (`schema` prints DDL). */
  | 'none'
  /** Any schema version; a SQLite file must exist (`migrate --dry-run`). */
  | 'any'
  /** Any schema version, and a SQLite file may be created (`migrate`). */
  | 'migrate'
  /** The schema must be current (every other command). */
  | 'current';

/**
 * Storage options a command adds to those of its connection: the Archive's partitioning, which
 * `migrate` applies (PostgreSQL, SQL Server).
 */
export interface CliStorageOptions {
  readonly partitioning?: ArchivePartitioning;
}

/** A parsed invocation, ready to run. */
export interface Invocation {
  readonly database: DatabaseUse;
  /** Options of the operator API for this run (`workers --lost-after`). */
  readonly moduleOptions?: ChokaQModuleOptions;
  /** Storage options of this run beside the connection's (`migrate --partitioning`). */
  readonly storageOptions?: CliStorageOptions;
  /** Runs it; `session` is undefined exactly when `database` is `'none'`. */
  run(session: CliSession | undefined): Promise<CommandResult>;
}

/** One command of the CLI: its help, its options, and how it turns a command line into an invocation. */
export interface Command {
  /** Its words after `chokaq`: `'stats'`, `'dlq resurrect'`. */
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** The arguments of its usage line, e.g. `'<queue> <n|none>'` (options are listed apart). */
  readonly synopsis: string;
  /** Further lines of its help. */
  readonly details?: readonly string[];
  /** Its own options; the connection, output and help options are added by the CLI. */
  readonly options: OptionTable;
  /** How many arguments it takes after its name. */
  readonly positionals: { readonly min: number; readonly max: number };
  readonly database: DatabaseUse;
  /**
   * Turns the parsed command line into an invocation. Only parses and checks (throws
   * `CliUsageError`): nothing is read or written before `run`.
   */
  prepare(line: ParsedCommandLine, io: CliIo): Invocation;
}

/** Commands under one word (`chokaq dlq list|preview|resurrect|purge`). */
export interface CommandGroup {
  readonly name: string;
  readonly summary: string;
  readonly commands: readonly Command[];
}

/** The typed halves a command is written as; {@link defineCommand} joins them. */
export interface CommandSpec<A> extends Omit<Command, 'prepare'> {
  /** Reads the command's arguments from the line (throws `CliUsageError`). */
  parse(line: ParsedCommandLine, io: CliIo): A;
  moduleOptions?(args: A): ChokaQModuleOptions;
  storageOptions?(args: A): CliStorageOptions | undefined;
  /** How this invocation uses the database, when it differs from {@link Command.database}. */
  databaseFor?(args: A): DatabaseUse;
  run(args: A, session: CliSession): Promise<CommandResult>;
}

/** A {@link Command} from its typed parse and run. */
export function defineCommand<A>(spec: CommandSpec<A>): Command {
  const { parse, run, moduleOptions, storageOptions, databaseFor, ...rest } = spec;
  return {
    ...rest,
    prepare(line, io) {
      const args = parse(line, io);
      return {
        database: databaseFor?.(args) ?? spec.database,
        moduleOptions: moduleOptions?.(args),
        storageOptions: storageOptions?.(args),
        // Undefined only for a command that declared no database use, and then never read.
        run: (session) => run(args, session as CliSession),
      };
    },
  };
}
