import type { ChokaQLogger } from '../../interfaces/chokaq-logger.interface';
import type { CliWriter } from '../cli-io';

/**
 * Where the library's own log lines go while a command runs: stderr, so stdout holds only the
 * command's output (one JSON document with `--json`), and only warnings and errors (a transient
 * retry, a failed read), so a command that went well prints nothing else. The message is the
 * human line of the `ChokaQLogRecord` (its `toString()`).
 */
export class StderrLogger implements ChokaQLogger {
  constructor(
    private readonly err: CliWriter,
    private readonly context: string,
  ) {}

  log(): void {
    // Routine lines (a migration applied, a queue updated) are the command's own output.
  }

  warn(message: unknown): void {
    this.write('warn', message);
  }

  error(message: unknown): void {
    this.write('error', message);
  }

  private write(level: string, message: unknown): void {
    this.err.write(`chokaq: ${level} [${this.context}]: ${String(message)}\n`);
  }
}
