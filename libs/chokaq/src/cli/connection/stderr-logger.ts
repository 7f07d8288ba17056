import type { LoggerService } from '@nestjs/common';
import type { CliWriter } from '../cli-io';

/**
 * Where the library's own log lines go while a command runs: stderr, so stdout holds only the
 * command's output (one JSON document with `--json`), and only warnings and errors (a transient
 * retry, a failed read), so a command that went well prints nothing else. The message is the
 * human line of the `ChokaQLogRecord` (its `toString()`).
 */
export class StderrLogger implements LoggerService {
  constructor(private readonly err: CliWriter) {}

  log(): void {
    // Routine lines (a migration applied, a queue updated) are the command's own output.
  }

  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }

  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }

  private write(level: string, message: unknown, rest: unknown[]): void {
    const context = typeof rest[rest.length - 1] === 'string' ? ` [${String(rest.at(-1))}]` : '';
    this.err.write(`chokaq: ${level}${context}: ${String(message)}\n`);
  }
}
