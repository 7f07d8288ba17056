import type { LoggerService } from '@nestjs/common';

/** A logger that records instead of printing, so tests can assert "logged once". */
export class RecordingLogger implements LoggerService {
  readonly lines: Array<{ level: string; message: string }> = [];

  log(message: unknown): void {
    this.lines.push({ level: 'log', message: String(message) });
  }
  error(message: unknown): void {
    this.lines.push({ level: 'error', message: String(message) });
  }
  warn(message: unknown): void {
    this.lines.push({ level: 'warn', message: String(message) });
  }
  debug(message: unknown): void {
    this.lines.push({ level: 'debug', message: String(message) });
  }
  verbose(message: unknown): void {
    this.lines.push({ level: 'verbose', message: String(message) });
  }

  count(level: string, fragment: string): number {
    return this.lines.filter((l) => l.level === level && l.message.includes(fragment)).length;
  }
}
