import { CronSchedule } from './cron-schedule';

describe('CronSchedule', () => {
  it('gives the next slot strictly after a time', () => {
    const every5 = new CronSchedule('*/5 * * * *', 'UTC');
    expect(every5.next(new Date('2024-01-01T00:00:00Z')).toISOString()).toBe(
      '2024-01-01T00:05:00.000Z',
    );
    expect(every5.next(new Date('2024-01-01T00:03:10Z')).toISOString()).toBe(
      '2024-01-01T00:05:00.000Z',
    );
  });

  it('finds the latest slot at or before now after a long outage in few steps', () => {
    const hourly = new CronSchedule('0 * * * *', 'UTC');
    expect(hourly.latestAtOrBefore(new Date('2024-05-01T10:30:00Z'))!.toISOString()).toBe(
      '2024-05-01T10:00:00.000Z',
    );
    expect(hourly.latestAtOrBefore(new Date('2024-05-01T10:00:00Z'))!.toISOString()).toBe(
      '2024-05-01T10:00:00.000Z',
    );
  });

  it('computes wall-clock slots in the time zone across a DST change', () => {
    const nineAmBerlin = new CronSchedule('0 9 * * *', 'Europe/Berlin');
    // CET (UTC+1) before 31 March 2024, CEST (UTC+2) after.
    expect(nineAmBerlin.next(new Date('2024-03-30T12:00:00Z')).toISOString()).toBe(
      '2024-03-31T07:00:00.000Z',
    );
    expect(nineAmBerlin.next(new Date('2024-03-29T12:00:00Z')).toISOString()).toBe(
      '2024-03-30T08:00:00.000Z',
    );
  });

  it('rejects an invalid expression', () => {
    expect(() => new CronSchedule('not a cron')).toThrow();
  });
});
