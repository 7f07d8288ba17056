import { inspect } from 'node:util';

/** A value a log event carries: what every JSON logger writes as it is. */
export type LogFieldValue =
  | string
  | number
  | boolean
  | null
  | undefined
  | readonly string[]
  | readonly number[]
  | Readonly<Record<string, unknown>>;

/**
 * What ChokaQ hands the logger for each line it writes: the human-readable `message`, the stable
 * `eventId` and `event` name of `CHOKAQ_LOG_EVENTS`, and the event's own fields, all as own
 * enumerable properties, in that order (read a field as `record['queue']`).
 *
 * Why an object as the first argument (Nest 11, checked in `@nestjs/common`'s source):
 * - `nestjs-pino` merges an object message into the pino record (`Object.assign`), so every field
 *   becomes a field of the JSON line; a *string* message followed by an object loses the object,
 *   because pino reads further arguments only as `%s`-style interpolation values.
 * - `nest-winston` takes `message` out of an object message as the line's text and the rest as
 *   metadata.
 * - Nest's `ConsoleLogger` prints a non-string message through `util.inspect`, prefixed with
 *   `Object(n)` for a plain object; this is a class instance whose `util.inspect.custom` returns the
 *   message, so the default logger prints the human line it printed before event ids existed
 *   (without the level's colour on the text, which it applies to strings only). With
 *   `json: true` it writes the record, fields included, under `message`. A string message with
 *   the fields as an extra argument would print a second line, `Object(n) {…}`.
 * - A logger that turns its argument into a string (`String(x)`, a template literal) gets the
 *   message through `toString()`.
 *
 * @publicApi
 */
export class ChokaQLogRecord {
  /** The human-readable line. */
  readonly message: string;
  /** The stable numeric id of the event (`CHOKAQ_LOG_EVENTS`). */
  readonly eventId: number;
  /** The stable name of the event (`CHOKAQ_LOG_EVENTS`). */
  readonly event: string;
  constructor(
    message: string,
    eventId: number,
    event: string,
    fields: Readonly<Record<string, LogFieldValue>>,
  ) {
    this.message = message;
    this.eventId = eventId;
    this.event = event;
    Object.assign(this, fields);
  }

  /** The message: what a logger that stringifies its argument prints. */
  toString(): string {
    return this.message;
  }

  /** The message: what Nest's `ConsoleLogger` (through `util.inspect`) prints. */
  [inspect.custom](): string {
    return this.message;
  }
}
