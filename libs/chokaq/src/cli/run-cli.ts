import { toError } from '../common/error-text';
import { libraryVersion } from '../common/version';
import { ChokaQError } from '../errors';
import type { CommandResult, Invocation, ParsedCommandLine } from './args/command-definition';
import { helpOf, overviewHelp } from './args/help-text';
import { CommandEntry, commandsOf, parseCommandLine } from './args/parse-command-line';
import { DATABASE_URL_ENV, READ_REPLICA_URL_ENV, stringValue } from './args/shared-options';
import type { CliIo } from './cli-io';
import { COMMAND_TABLE } from './commands/command-table';
import { databaseTarget, withReadReplica, withStorageOptions } from './connection/database-url';
import { CliUsageError } from './errors/cli-usage.error';
import { EXIT_CODES, ExitCode, exitCodeOf } from './exit-code';
import { renderJson, renderView } from './format/render';

/**
 * Runs `chokaq <args>` and resolves to the process's exit code ({@link EXIT_CODES}). The steps,
 * each in its own layer: parse the command line strictly (`args/`), let the command check its
 * arguments (nothing is read yet, so a usage error never touches the database), open the database
 * when the command needs it (`connection/`, loaded only then), run the command through the
 * operator API (`commands/`), and print its result as tables or as one JSON document (`format/`).
 * Errors go to stderr, as a line (or a JSON document with `--json`), and decide the exit code.
 */
export async function runCli(
  args: readonly string[],
  io: CliIo,
  table: readonly CommandEntry[] = COMMAND_TABLE,
): Promise<ExitCode> {
  // Known before parsing, so even a usage error is reported as JSON to a script that asked for it.
  const end = args.indexOf('--');
  const json = (end === -1 ? args : args.slice(0, end)).includes('--json');
  let commandName: string | undefined;
  try {
    const request = parseCommandLine(args, table);
    switch (request.kind) {
      case 'none':
        io.err.write(overviewHelp(table));
        return EXIT_CODES.usage;
      case 'help':
        io.out.write(helpOf(table, request.target));
        return EXIT_CODES.done;
      case 'version':
        io.out.write(`${libraryVersion()}\n`);
        return EXIT_CODES.done;
    }
    const { command, line } = request;
    commandName = command.name;
    const result = await execute(command.prepare(line, io), line, io);
    io.out.write(line.values.json === true ? renderJson(result.data) : renderView(result.view));
    if (result.nothingMatched === undefined) return EXIT_CODES.done;
    if (!json) io.err.write(`chokaq ${command.name}: ${result.nothingMatched}\n`);
    return EXIT_CODES.nothingMatched;
  } catch (thrown) {
    return report(thrown, io, json, table, commandName);
  }
}

/** Opens the database when the invocation needs it, runs it, and always closes what it opened. */
async function execute(
  invocation: Invocation,
  line: ParsedCommandLine,
  io: CliIo,
): Promise<CommandResult> {
  if (invocation.database === 'none') return invocation.run(undefined);
  const target = withStorageOptions(
    withReadReplica(
      databaseTarget(
        stringValue(line, 'url') ?? io.env[DATABASE_URL_ENV],
        stringValue(line, 'schema'),
      ),
      stringValue(line, 'read-replica') ?? io.env[READ_REPLICA_URL_ENV],
    ),
    invocation.storageOptions,
  );
  // Loaded here, not imported at the top: TypeORM, a driver and Nest load only for a command that
  // opens the database.
  const { openSession } = await import('./connection/admin-session');
  const session = await openSession(target, invocation.database, invocation.moduleOptions, io.err);
  try {
    return await invocation.run(session);
  } finally {
    await session.close().catch(() => undefined);
  }
}

/** The message of an error, including those of an `AggregateError` (a refused connection). */
function messageOf(error: Error): string {
  if (error.message) return error.message;
  if (error instanceof AggregateError) {
    return error.errors.map((e: unknown) => toError(e).message).join('; ') || error.name;
  }
  return error.name;
}

/**
 * The fields a typed error carries (issues, reason, counts, versions), for `--json`; of any other
 * error (a driver's), only its `code` (`ECONNREFUSED`, a SQLSTATE).
 */
function fieldsOf(error: Error): Record<string, unknown> {
  if (!(error instanceof ChokaQError)) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' || typeof code === 'number' ? { code } : {};
  }
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) {
    if (!['name', 'message', 'stack', 'cause'].includes(key)) fields[key] = value;
  }
  return fields;
}

function report(
  thrown: unknown,
  io: CliIo,
  json: boolean,
  table: readonly CommandEntry[],
  commandName: string | undefined,
): ExitCode {
  const error = toError(thrown);
  const exitCode = exitCodeOf(error);
  const message = messageOf(error);
  if (json) {
    io.err.write(
      renderJson({ error: { name: error.name, exitCode, message, ...fieldsOf(error) } }),
    );
    return exitCode;
  }
  const name = error instanceof CliUsageError ? (error.command ?? commandName) : commandName;
  io.err.write(`chokaq${name ? ` ${name}` : ''}: ${message}\n`);
  if (error instanceof CliUsageError) {
    const entry =
      commandsOf(table).find((c) => c.name === name) ?? table.find((e) => e.name === name);
    io.err.write(`\n${helpOf(table, entry)}`);
  } else if (!(error instanceof ChokaQError) && error.stack && io.env.CHOKAQ_DEBUG === '1') {
    io.err.write(`${error.stack}\n`);
  }
  return exitCode;
}
