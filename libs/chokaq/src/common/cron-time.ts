import type { CronTime } from 'cron';

let CronTimeClass: typeof CronTime | undefined;

/**
 * A `CronTime` of the `cron` package (the library behind `@nestjs/schedule`), which is loaded on
 * first use: with Luxon behind it, it is about 4 MB that a process without recurring jobs never
 * needs. Throws the package's error when the expression or the zone is invalid.
 */
export function newCronTime(expression: string, timeZone: string): CronTime {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  CronTimeClass ??= (require('cron') as typeof import('cron')).CronTime;
  return new CronTimeClass(expression, timeZone);
}
