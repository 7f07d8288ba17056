import type { Command, CommandGroup, OptionTable } from './command-definition';
import { CommandEntry, TOP_LEVEL_OPTIONS, commandsOf, optionsOf } from './parse-command-line';
import { DATABASE_URL_ENV } from './shared-options';

/** The exit codes, as every help text states them. */
const EXIT_LINE = 'Exit codes: 0 done, 1 failed, 2 usage error, 3 nothing matched.';

function optionLines(options: OptionTable): string[] {
  const rows = Object.entries(options).map(([name, option]) => {
    const flag = `${option.short ? `-${option.short}, ` : ''}--${name}${option.value ? ` ${option.value}` : ''}`;
    return [flag, option.description] as const;
  });
  const width = Math.max(...rows.map(([flag]) => flag.length));
  return rows.map(([flag, description]) => `  ${flag.padEnd(width)}  ${description}`);
}

function commandList(commands: readonly Command[]): string[] {
  const width = Math.max(...commands.map((c) => c.name.length));
  return commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
}

/** `chokaq --help`: every command, the connection, the exit codes. */
export function overviewHelp(table: readonly CommandEntry[]): string {
  return [
    'Usage: chokaq <command> [arguments] [options]',
    '',
    'Operate ChokaQ from a shell: the schema, queues, jobs, the DLQ, workers, recurring jobs and',
    'the audit log of a database, through the same operator API (ChokaQAdmin) an app uses.',
    '',
    'Commands:',
    ...commandList(commandsOf(table)),
    '',
    `The database: --url URL or $${DATABASE_URL_ENV} (postgres://…, postgresql://…, mssql://…,`,
    'a SQLite file or sqlite:FILE), and --schema NAME. Tables by default, --json for scripts.',
    'Changes are audited as cli:<os user> unless --actor NAME.',
    EXIT_LINE,
    '',
    ...optionLines(TOP_LEVEL_OPTIONS),
    '',
    "Run 'chokaq <command> --help' for a command's arguments and options.",
    '',
  ].join('\n');
}

/** `chokaq dlq --help`: the group's commands. */
export function groupHelp(group: CommandGroup): string {
  return [
    `Usage: chokaq ${group.name} <${group.commands.map((c) => c.name.split(' ')[1]).join('|')}> [arguments] [options]`,
    '',
    group.summary,
    '',
    'Commands:',
    ...commandList(group.commands),
    '',
    `Run 'chokaq ${group.name} <command> --help' for a command's arguments and options.`,
    '',
  ].join('\n');
}

/** `chokaq dlq resurrect --help`: its usage, what it does, its options. */
export function commandHelp(command: Command): string {
  return [
    `Usage: chokaq ${command.name}${command.synopsis ? ` ${command.synopsis}` : ''} [options]`,
    '',
    command.summary,
    ...(command.details ? ['', ...command.details] : []),
    '',
    'Options:',
    ...optionLines(optionsOf(command)),
    '',
    EXIT_LINE,
    '',
  ].join('\n');
}

/** The help of whatever `target` is, or the overview. */
export function helpOf(table: readonly CommandEntry[], target?: CommandEntry): string {
  if (!target) return overviewHelp(table);
  return 'commands' in target ? groupHelp(target) : commandHelp(target);
}
