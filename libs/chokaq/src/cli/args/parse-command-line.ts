import { ParseArgsConfig, parseArgs } from 'node:util';
import { CliUsageError } from '../errors/cli-usage.error';
import type {
  Command,
  CommandGroup,
  OptionDefinition,
  OptionTable,
  ParsedCommandLine,
} from './command-definition';
import { CONNECTION_OPTIONS, HELP_OPTIONS, OUTPUT_OPTIONS } from './shared-options';

/** A command, or a group of them, as the CLI's table lists them. */
export type CommandEntry = Command | CommandGroup;

/** The options `chokaq` takes before any command. */
export const TOP_LEVEL_OPTIONS = {
  ...HELP_OPTIONS,
  version: { type: 'boolean', short: 'v', description: 'print the version of @chokaq/nestjs' },
} as const satisfies OptionTable;

/** What the command line asks for. */
export type CommandLineRequest =
  /** Help: of a command, of a group, or (no target) the overview. */
  | { readonly kind: 'help'; readonly target?: CommandEntry }
  | { readonly kind: 'version' }
  /** No command at all. */
  | { readonly kind: 'none' }
  | {
      readonly kind: 'run';
      readonly command: Command;
      readonly line: ParsedCommandLine;
    };

/** Every option a command takes: its own, `--help`, and for a database command `--url --schema --json`. */
export function optionsOf(command: Command): OptionTable {
  return {
    ...command.options,
    ...(command.database === 'none' ? {} : { ...CONNECTION_OPTIONS, ...OUTPUT_OPTIONS }),
    ...HELP_OPTIONS,
  };
}

/** The commands of the table, groups flattened. */
export function commandsOf(table: readonly CommandEntry[]): Command[] {
  return table.flatMap((entry) => ('commands' in entry ? entry.commands : [entry]));
}

/**
 * Every option any command takes, for the first pass that finds the command's words. An option
 * name means the same (string or boolean) in every command, or a value could be taken for a word;
 * a table that breaks this is a bug, refused here.
 */
export function everyOption(table: readonly CommandEntry[]): OptionTable {
  const all: Record<string, OptionDefinition> = { ...TOP_LEVEL_OPTIONS };
  for (const command of commandsOf(table)) {
    for (const [name, option] of Object.entries(optionsOf(command))) {
      const seen = all[name];
      if (seen && (seen.type !== option.type || seen.short !== option.short)) {
        throw new Error(`The option --${name} of 'chokaq ${command.name}' differs from another's`);
      }
      all[name] ??= option;
    }
  }
  return all;
}

function parseArgsOptions(table: OptionTable): NonNullable<ParseArgsConfig['options']> {
  return Object.fromEntries(
    Object.entries(table).map(([name, { type, short }]) => [
      name,
      short === undefined ? { type } : { type, short },
    ]),
  );
}

/** Finds `words` (`['dlq']`, `['dlq', 'list']`) in the table, for `help`. */
function findEntry(table: readonly CommandEntry[], words: readonly string[]): CommandEntry {
  const [first, second] = words;
  const entry = table.find((e) => e.name === first);
  if (!entry) throw new CliUsageError(`unknown command '${words.join(' ')}'`);
  if (second === undefined || !('commands' in entry)) return entry;
  const command = entry.commands.find((c) => c.name === `${first} ${second}`);
  if (!command) throw new CliUsageError(`unknown command '${first} ${second}'`, entry.name);
  return command;
}

/**
 * Reads the command line strictly (`util.parseArgs` with `strict: true`): a misspelt flag
 * (`--schmea`) or an option another command takes (`stats --max 5`) stops the command with a
 * usage error, instead of being dropped while the command runs as if it were not there.
 *
 * Two passes. The first, over every option of every command, finds the command's words wherever
 * options stand (`chokaq --json dlq list` is `dlq list`) and names an unknown option as it was
 * written, whatever wording Node's own error has. The second, strict, over the command's own
 * options, reports the rest (a missing value, a value given to a flag).
 */
export function parseCommandLine(
  args: readonly string[],
  table: readonly CommandEntry[],
): CommandLineRequest {
  const all = everyOption(table);
  const { tokens } = parseArgs({
    args: [...args],
    options: parseArgsOptions(all),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const unknown = tokens.find((t) => t.kind === 'option' && !Object.hasOwn(all, t.name));
  if (unknown?.kind === 'option') throw new CliUsageError(`unknown option '${unknown.rawName}'`);
  const words = tokens.flatMap((t) => (t.kind === 'positional' ? [t.value] : []));
  const given = new Set(tokens.flatMap((t) => (t.kind === 'option' ? [t.name] : [])));

  if (words[0] === 'help') {
    return {
      kind: 'help',
      target: words.length > 1 ? findEntry(table, words.slice(1)) : undefined,
    };
  }
  if (words.length === 0) {
    if (given.has('help')) return { kind: 'help' };
    if (given.has('version')) return { kind: 'version' };
    if (given.size === 0) return { kind: 'none' };
  }
  const entry = table.find((e) => e.name === words[0]);
  if (!entry) {
    throw new CliUsageError(
      words[0] === undefined ? 'missing command' : `unknown command '${words[0]}'`,
    );
  }
  let command: Command;
  if ('commands' in entry) {
    if (words[1] === undefined) {
      if (given.has('help')) return { kind: 'help', target: entry };
      throw new CliUsageError(
        `'chokaq ${entry.name}' needs one of: ${entry.commands.map((c) => c.name.split(' ')[1]).join(', ')}`,
        entry.name,
      );
    }
    const found = entry.commands.find((c) => c.name === `${entry.name} ${words[1]}`);
    if (!found) throw new CliUsageError(`unknown command '${entry.name} ${words[1]}'`, entry.name);
    command = found;
  } else {
    command = entry;
  }
  if (given.has('help')) return { kind: 'help', target: command };

  const options = optionsOf(command);
  const foreign = tokens.find((t) => t.kind === 'option' && !Object.hasOwn(options, t.name));
  if (foreign?.kind === 'option') {
    throw new CliUsageError(
      `unknown option '${foreign.rawName}' for 'chokaq ${command.name}'`,
      command.name,
    );
  }
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: [...args],
      options: parseArgsOptions(options),
      strict: true,
      allowPositionals: true,
    }) as typeof parsed;
  } catch (error) {
    throw new CliUsageError(error instanceof Error ? error.message : String(error), command.name);
  }
  const positionals = parsed.positionals.slice(command.name.split(' ').length);
  const { min, max } = command.positionals;
  if (positionals.length < min) {
    throw new CliUsageError(
      `missing argument: chokaq ${command.name} ${command.synopsis}`,
      command.name,
    );
  }
  if (positionals.length > max) {
    throw new CliUsageError(`unexpected argument '${positionals[max]}'`, command.name);
  }
  return { kind: 'run', command, line: { values: parsed.values, positionals } };
}
