import { newCronTime } from '../common/cron-time';
import type { ValidationIssue } from '../errors';

/**
 * The cron expression and time zone of a recurring job, checked with the same `CronTime` (the
 * `cron` package behind `@nestjs/schedule`) that later computes its slots: the zone must be one
 * the package resolves, and the expression must parse and have a next slot from now (`0 0 30 2 *`
 * parses, but there is no 30 February, so it would never run). An undefined field is skipped (the
 * caller has refused it already). The cron issue comes before the zone issue.
 */
export function scheduleIssues(
  cron: unknown,
  timeZone: unknown,
  paths: { cron: string; timeZone: string } = { cron: 'cron', timeZone: 'timeZone' },
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const zoneProblem = timeZone === undefined ? undefined : problemOf('0 0 * * *', timeZone);
  if (cron !== undefined) {
    // With a bad zone the expression is still checked, in UTC, so both problems are reported.
    const zone = typeof timeZone === 'string' && !zoneProblem ? timeZone : 'UTC';
    const problem = problemOf(cron, zone);
    if (problem) {
      issues.push({
        path: paths.cron,
        message: `must be a cron expression of 5 or 6 fields with a next slot (${problem})`,
        value: cron,
      });
    }
  }
  if (zoneProblem) {
    issues.push({
      path: paths.timeZone,
      message: 'must be an IANA time zone such as UTC or Europe/Paris',
      value: timeZone,
    });
  }
  return issues;
}

/** The first line of the `cron` package's complaint about `cron` in `zone`, or undefined. */
function problemOf(cron: unknown, zone: unknown): string | undefined {
  if (typeof cron !== 'string' || typeof zone !== 'string') return 'not a string';
  try {
    newCronTime(cron, zone).getNextDateFrom(new Date(), zone);
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return message.split('\n')[0].trim() || 'invalid';
  }
}
