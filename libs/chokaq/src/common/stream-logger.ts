import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';

/**
 * The engine's logger when none is given (a worker or a storage used without Nest): one line per
 * record, `[ChokaQ] LEVEL context: message`, on stdout for `log` and stderr for the rest. Inside a
 * Nest application the module hands the engine Nest's `Logger` instead, so lines follow the app's
 * logger and its levels. `debug` and `verbose` lines are dropped.
 */
export class StreamLogger implements ChokaQLogger {
  constructor(private readonly context: string) {}

  log(message: unknown): void {
    this.write(process.stdout, 'LOG', message);
  }

  warn(message: unknown): void {
    this.write(process.stderr, 'WARN', message);
  }

  error(message: unknown, trace?: unknown): void {
    this.write(process.stderr, 'ERROR', message);
    if (typeof trace === 'string' && trace !== '') process.stderr.write(`${trace}\n`);
  }

  private write(stream: NodeJS.WriteStream, level: string, message: unknown): void {
    stream.write(`[ChokaQ] ${level} ${this.context}: ${String(message)}\n`);
  }
}
