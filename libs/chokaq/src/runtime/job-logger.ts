import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';

/**
 * The `ctx.logger` of a job: forwards to the worker's logger with the job named in the message.
 * A prefix rather than a Nest "context" argument because a `Logger` instance that already has a
 * context appends its own, and the job's would then print as a stray parameter.
 */
export class JobLogger implements ChokaQLogger {
  constructor(
    private readonly base: ChokaQLogger,
    private readonly prefix: string,
  ) {}

  log(message: unknown, ...params: unknown[]): void {
    this.base.log(this.format(message), ...params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.base.error(this.format(message), ...params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.base.warn(this.format(message), ...params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.base.debug?.(this.format(message), ...params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.base.verbose?.(this.format(message), ...params);
  }

  private format(message: unknown): unknown {
    return typeof message === 'string' ? `[${this.prefix}] ${message}` : message;
  }
}
