import { FailureReason } from '../../interfaces/job-status.enum';
import { CliUsageError } from '../errors/cli-usage.error';
import {
  failureReasonName,
  readAuditAction,
  readDuration,
  readDurationOrNone,
  readFailureReason,
  readFraction,
  readInteger,
  readIntegerOrNone,
  readJson,
  readList,
  readRunAt,
  readSignedInteger,
  readTime,
} from './option-values';

const NOW = Date.parse('2026-01-02T03:04:05.000Z');

describe('command-line values', () => {
  it('reads durations with their unit, and none', () => {
    expect(readDuration('--x', '500ms')).toBe(500);
    expect(readDuration('--x', '30s')).toBe(30_000);
    expect(readDuration('--x', '5m')).toBe(300_000);
    expect(readDuration('--x', '2h')).toBe(7_200_000);
    expect(readDuration('--x', '1d')).toBe(86_400_000);
    expect(readDurationOrNone('--x', 'none')).toBeNull();
    for (const bad of ['30', '1.5s', '-1s', '5 m', '5M', 'soon', '']) {
      expect(() => readDuration('--x', bad)).toThrow(CliUsageError);
    }
  });

  it('reads whole numbers from a minimum, and none', () => {
    expect(readInteger('--n', '0')).toBe(0);
    expect(readIntegerOrNone('--n', '12')).toBe(12);
    expect(readIntegerOrNone('--n', 'none')).toBeNull();
    expect(() => readInteger('--n', '0', 1)).toThrow('--n must be a whole number of at least 1');
    for (const bad of ['-1', '1.5', '1e3', '0x10', ' 1', '']) {
      expect(() => readInteger('--n', bad)).toThrow(CliUsageError);
    }
  });

  it('reads whole numbers with a sign', () => {
    expect(readSignedInteger('--n', '5')).toBe(5);
    expect(readSignedInteger('--n', '-5')).toBe(-5);
    expect(readSignedInteger('--n', '0')).toBe(0);
    for (const bad of ['+5', '1.5', '1e3', '--5', ' 1', '']) {
      expect(() => readSignedInteger('--n', bad)).toThrow(CliUsageError);
    }
  });

  it('reads a run time as an ISO date or time, or now; never a duration', () => {
    expect(readRunAt('--run-at', 'now')).toBe('now');
    expect((readRunAt('--run-at', '2026-01-02T03:04') as Date).toISOString()).toBe(
      '2026-01-02T03:04:00.000Z',
    );
    for (const bad of ['2h', 'NOW', 'tomorrow', '2025-13-45', '']) {
      expect(() => readRunAt('--run-at', bad)).toThrow(CliUsageError);
    }
  });

  it('reads JSON, naming the option when it does not parse', () => {
    expect(readJson('--payload', '{"x":[1,"a"]}')).toEqual({ x: [1, 'a'] });
    expect(readJson('--payload', 'null')).toBeNull();
    for (const bad of ['{x:1}', "{'x':1}", '', 'undefined']) {
      expect(() => readJson('--payload', bad)).toThrow(/^--payload must be JSON/);
    }
  });

  it("reads lists separated by commas, '' as none", () => {
    expect(readList('--tags', 'a,b')).toEqual(['a', 'b']);
    expect(readList('--tags', ' a , b ')).toEqual(['a', 'b']);
    expect(readList('--tags', 'one')).toEqual(['one']);
    expect(readList('--tags', '')).toEqual([]);
    for (const bad of ['a,,b', 'a,', ',', ' ']) {
      expect(() => readList('--tags', bad)).toThrow(CliUsageError);
    }
  });

  it('reads times as ISO dates and times (UTC without a zone) or a duration ago', () => {
    expect(readTime('--since', '2h', NOW).toISOString()).toBe('2026-01-02T01:04:05.000Z');
    expect(readTime('--since', '2025-12-31', NOW).toISOString()).toBe('2025-12-31T00:00:00.000Z');
    expect(readTime('--since', '2025-12-31T10:00', NOW).toISOString()).toBe(
      '2025-12-31T10:00:00.000Z',
    );
    expect(readTime('--since', '2025-12-31 10:00:30.5', NOW).toISOString()).toBe(
      '2025-12-31T10:00:30.500Z',
    );
    expect(readTime('--since', '2025-12-31T10:00:00+02:00', NOW).toISOString()).toBe(
      '2025-12-31T08:00:00.000Z',
    );
    for (const bad of ['yesterday', '2025-13-45', '31/12/2025', '2025-12-31T25:00Z']) {
      expect(() => readTime('--since', bad, NOW)).toThrow(CliUsageError);
    }
  });

  it('reads failure reasons by name in any spelling, or by code', () => {
    expect(readFailureReason('--reason', 'timeout')).toBe(FailureReason.Timeout);
    expect(readFailureReason('--reason', 'max-retries-exceeded')).toBe(
      FailureReason.MaxRetriesExceeded,
    );
    expect(readFailureReason('--reason', 'MaxRetriesExceeded')).toBe(
      FailureReason.MaxRetriesExceeded,
    );
    expect(readFailureReason('--reason', 'circuit_breaker_open')).toBe(
      FailureReason.CircuitBreakerOpen,
    );
    expect(readFailureReason('--reason', '9')).toBe(FailureReason.HeartbeatFailure);
    expect(() => readFailureReason('--reason', '4')).toThrow(CliUsageError);
    expect(() => readFailureReason('--reason', 'bored')).toThrow('heartbeat-failure');
    expect(failureReasonName(FailureReason.RetryLifetimeExpired)).toBe('retry-lifetime-expired');
  });

  it('reads audit actions and fractions', () => {
    expect(readAuditAction('--action', 'dlq.purge-by-filter')).toBe('dlq.purge-by-filter');
    expect(() => readAuditAction('--action', 'dlq.delete')).toThrow(CliUsageError);
    expect(readFraction('--tolerance', '0.05')).toBe(0.05);
    expect(() => readFraction('--tolerance', '5%')).toThrow(CliUsageError);
  });
});
