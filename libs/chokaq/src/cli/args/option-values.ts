import { AUDIT_ACTIONS, AuditAction } from '../../interfaces/audit.interface';
import { FailureReason } from '../../interfaces/job-status.enum';
import { CliUsageError } from '../errors/cli-usage.error';

/*
 * The values of the command line, from text to what the operator API takes. Only the form is
 * checked here (an integer, a duration, a known reason); ranges are the API's own rules, applied
 * by its validating edge, so the CLI refuses exactly what a direct call refuses.
 */

/** Milliseconds per duration unit. */
const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

const DURATION = /^(\d{1,15})(ms|s|m|h|d)$/;
const INTEGER = /^\d{1,15}$/;

/** A whole number, at least `min`. */
export function readInteger(option: string, text: string, min = 0): number {
  if (!INTEGER.test(text) || Number(text) < min) {
    throw new CliUsageError(`${option} must be a whole number of at least ${min} (got '${text}')`);
  }
  return Number(text);
}

/**
 * A whole number that may be negative. A value that starts with a dash is written with `=`
 * (`--priority=-5`): the strict parse takes `--priority -5` for a missing value.
 */
export function readSignedInteger(option: string, text: string): number {
  if (!/^-?\d{1,15}$/.test(text)) {
    throw new CliUsageError(`${option} must be a whole number, as 5 or -5 (got '${text}')`);
  }
  return Number(text);
}

/** A whole number, or `none` (null: clear the setting, back to the global one). */
export function readIntegerOrNone(option: string, text: string): number | null {
  return text === 'none' ? null : readInteger(option, text);
}

/** A duration with its unit (`500ms`, `30s`, `5m`, `2h`, `1d`), in milliseconds. */
export function readDuration(option: string, text: string): number {
  const match = DURATION.exec(text);
  if (!match) {
    throw new CliUsageError(
      `${option} must be a duration with its unit, as 500ms, 30s, 5m, 2h or 1d (got '${text}')`,
    );
  }
  return Number(match[1]) * UNIT_MS[match[2]];
}

/** A duration, or `none` (null). */
export function readDurationOrNone(option: string, text: string): number | null {
  return text === 'none' ? null : readDuration(option, text);
}

/**
 * An ISO 8601 date or date-time (`2026-01-02`, `2026-01-02T03:04:05Z`; without a zone it is UTC),
 * or undefined when `text` is not one.
 */
function isoTime(text: string): Date | undefined {
  if (
    /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?)?(Z|[+-]\d{2}:?\d{2})?$/.test(text)
  ) {
    const zoned = /(Z|[+-]\d{2}:?\d{2})$/.test(text) || text.length === 10;
    const date = new Date(zoned ? text : `${text.replace(' ', 'T')}Z`);
    if (!Number.isNaN(date.getTime())) return date;
  }
  return undefined;
}

/**
 * A point in time: an ISO 8601 date or date-time (`2026-01-02`, `2026-01-02T03:04:05Z`; without
 * a zone it is UTC), or a duration back from now (`1h`: an hour ago, by this machine's clock).
 */
export function readTime(option: string, text: string, nowMs: number): Date {
  if (DURATION.test(text)) return new Date(nowMs - readDuration(option, text));
  const date = isoTime(text);
  if (date) return date;
  throw new CliUsageError(
    `${option} must be an ISO date or time (2026-01-02, 2026-01-02T03:04:05Z) or a duration ago (30m, 2h, 7d) (got '${text}')`,
  );
}

/**
 * When a job becomes due: an ISO 8601 date or date-time, as {@link readTime} reads one, or `now`
 * (at once). A duration is refused: whether `2h` means ago or ahead would be a guess.
 */
export function readRunAt(option: string, text: string): Date | 'now' {
  if (text === 'now') return 'now';
  const date = isoTime(text);
  if (date) return date;
  throw new CliUsageError(
    `${option} must be an ISO date or time (2026-01-02, 2026-01-02T03:04:05Z) or now (got '${text}')`,
  );
}

/** A JSON document (`{"to":"a@example.com"}`), parsed. */
export function readJson(option: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new CliUsageError(`${option} must be JSON, as {"to":"a@example.com"} (${reason})`);
  }
}

/**
 * A list separated by commas (`a,b`; blanks around an item are dropped); `''` is the empty list.
 * An empty item (`a,,b`) is refused, as a likely typo.
 */
export function readList(option: string, text: string): string[] {
  if (text === '') return [];
  const items = text.split(',').map((item) => item.trim());
  if (items.includes('')) {
    throw new CliUsageError(
      `${option} must be items separated by commas, none of them empty, or '' for none (got '${text}')`,
    );
  }
  return items;
}

/** `MaxRetriesExceeded`, `max-retries-exceeded` and `max_retries_exceeded` all name one reason. */
const squash = (name: string) => name.replace(/[-_\s]/g, '').toLowerCase();

/** The names of {@link FailureReason}, kebab-case, for help texts and messages. */
export const FAILURE_REASON_NAMES: readonly string[] = Object.keys(FailureReason)
  .filter((key) => Number.isNaN(Number(key)))
  .map((key) => key.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase());

/** A DLQ failure reason by name (any case, with or without dashes) or by its code. */
export function readFailureReason(option: string, text: string): FailureReason {
  const byCode = INTEGER.test(text) ? Number(text) : undefined;
  for (const [key, value] of Object.entries(FailureReason)) {
    if (typeof value !== 'number') continue;
    if (value === byCode || squash(key) === squash(text)) return value;
  }
  throw new CliUsageError(
    `${option} must be one of ${FAILURE_REASON_NAMES.join(', ')} (got '${text}')`,
  );
}

/** The kebab-case name of a failure reason, as the CLI prints it. */
export function failureReasonName(reason: FailureReason): string {
  const key = FailureReason[reason] as string | undefined;
  return key ? key.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase() : String(reason);
}

/** One of the audit log's actions. */
export function readAuditAction(option: string, text: string): AuditAction {
  if ((AUDIT_ACTIONS as readonly string[]).includes(text)) return text as AuditAction;
  throw new CliUsageError(`${option} must be one of ${AUDIT_ACTIONS.join(', ')} (got '${text}')`);
}

/** One of `choices`. */
export function readChoice<T extends string>(
  option: string,
  text: string,
  choices: readonly T[],
): T {
  if ((choices as readonly string[]).includes(text)) return text as T;
  throw new CliUsageError(`${option} must be one of ${choices.join(', ')} (got '${text}')`);
}

/** A fraction written as a decimal number (`0.05`). */
export function readFraction(option: string, text: string): number {
  if (!/^\d+(\.\d+)?$/.test(text)) {
    throw new CliUsageError(`${option} must be a decimal number such as 0.05 (got '${text}')`);
  }
  return Number(text);
}
