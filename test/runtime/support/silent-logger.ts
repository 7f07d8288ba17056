import { ConsoleLogger, Logger, type LoggerService } from '@nestjs/common';
import { ChokaQLogRecord } from '../../../libs/chokaq/src/common/chokaq-log-record';

/** One line a {@link RecordingLogger} received. */
export interface RecordedLine {
  level: string;
  /** The message as a string logger prints it. */
  message: string;
  /** The event's name, when the line is a ChokaQ log event. */
  event?: string;
  /** The record ChokaQ handed over (message, eventId, event and the event's fields). */
  record?: Record<string, unknown>;
}

/** A logger that records instead of printing, so tests can assert "logged once". */
export class RecordingLogger implements LoggerService {
  readonly lines: RecordedLine[] = [];

  log(message: unknown): void {
    this.push('log', message);
  }
  error(message: unknown): void {
    this.push('error', message);
  }
  warn(message: unknown): void {
    this.push('warn', message);
  }
  debug(message: unknown): void {
    this.push('debug', message);
  }
  verbose(message: unknown): void {
    this.push('verbose', message);
  }

  count(level: string, fragment: string): number {
    return this.lines.filter((l) => l.level === level && l.message.includes(fragment)).length;
  }

  /** The records of the event named `event`, in the order they were logged. */
  events(event: string): Array<Record<string, unknown>> {
    return this.lines.filter((l) => l.event === event).map((l) => l.record!);
  }

  private push(level: string, message: unknown): void {
    if (message instanceof ChokaQLogRecord) {
      this.lines.push({
        level,
        message: message.message,
        event: message.event,
        record: { ...message },
      });
    } else {
      this.lines.push({ level, message: String(message) });
    }
  }
}

/**
 * Runs `work` with Nest's logger replaced by `logger`, and puts the console logger back after,
 * whether `work` succeeded or threw; returns what `work` returned.
 */
export async function recordingInto<T>(
  logger: RecordingLogger,
  work: () => Promise<T>,
): Promise<T> {
  Logger.overrideLogger(logger);
  try {
    return await work();
  } finally {
    Logger.overrideLogger(new ConsoleLogger());
  }
}
