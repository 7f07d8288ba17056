import { ERROR_FAMILY_LENGTH, errorFamily, firstLine, topErrorFamilies } from './error-family';

describe('errorFamily', () => {
  it.each([
    // [one occurrence, another occurrence of the same cause, the family]
    [
      'Error: job 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b not found',
      'Error: job 0191FFFF-0000-7000-8000-000000000001 not found',
      'Error: job <uuid> not found',
    ],
    [
      'TimeoutError: no reply after 3000 ms from 10.0.0.12:5432',
      'TimeoutError: no reply after 15000 ms from 10.0.0.7:5433',
      'TimeoutError: no reply after <n> ms from <n>:<n>',
    ],
    [
      "Error: user 'alice@example.com' has no quota left (0.5 GB)",
      "Error: user 'bob' has no quota left (12 GB)",
      "Error: user '…' has no quota left (<n> GB)",
    ],
    [
      'Error: payment "ch_3MmlLrLkdIwHu7ix" declined',
      'Error: payment "ch_9Xy" declined',
      'Error: payment "…" declined',
    ],
    [
      'Error: lock held since 2026-01-02T03:04:05.678Z by worker 7',
      'Error: lock held since 2025-12-31 23:59:59+02:00 by worker 12',
      'Error: lock held since <time> by worker <n>',
    ],
    ['Error: stale at 03:04:05.678', 'Error: stale at 23:59:59', 'Error: stale at <time>'],
    [
      'Error: object 507f1f77bcf86cd799439011 missing at 0x7ffee4b8',
      'Error: object 65a1b2c3d4e5f60718293a4b missing at 0x0',
      'Error: object <hex> missing at <hex>',
    ],
    [
      'Error: cannot load job_8f3a2b1c',
      'Error: cannot load job_00ff11aa',
      'Error: cannot load job_<hex>',
    ],
    ['Error: order `A-17` rejected', 'Error: order `B-2` rejected', 'Error: order `…` rejected'],
  ])('%s and %s are one family', (a, b, family) => {
    expect(errorFamily(a)).toBe(family);
    expect(errorFamily(b)).toBe(family);
  });

  it('keeps words, including hex-looking words without digits and apostrophes inside words', () => {
    expect(errorFamily("Error: can't reach the facade, deadline exceeded")).toBe(
      "Error: can't reach the facade, deadline exceeded",
    );
    expect(errorFamily("Error: can't open 'a.txt'")).toBe("Error: can't open '…'");
  });

  it('tells different causes apart', () => {
    expect(errorFamily('Error: boom')).not.toBe(errorFamily('TypeError: boom'));
    expect(errorFamily('Error: connection refused')).not.toBe(
      errorFamily('Error: connection reset'),
    );
  });

  it('uses the first line only, collapses blanks, and is at most 200 characters', () => {
    expect(errorFamily('Error: boom\n    at a (a.js:1:1)')).toBe('Error: boom');
    expect(errorFamily('  Error:   boom \r\n  at b')).toBe('Error: boom');
    expect(errorFamily('')).toBe('');
    expect(errorFamily(null)).toBe('');
    const long = errorFamily(`Error: ${'x'.repeat(1_000)}`);
    expect(long).toHaveLength(ERROR_FAMILY_LENGTH);
    // A surrogate pair at the cut is dropped whole, never split.
    const emoji = errorFamily(`${'y'.repeat(ERROR_FAMILY_LENGTH - 1)}😀 tail`);
    expect(emoji).toBe('y'.repeat(ERROR_FAMILY_LENGTH - 1));
  });

  it('firstLine stops at the first line break of either kind', () => {
    expect(firstLine('a\rb')).toBe('a');
    expect(firstLine('a\nb')).toBe('a');
    expect(firstLine(undefined)).toBe('');
  });
});

describe('topErrorFamilies', () => {
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

  it('counts per family, most frequent first, then the most recent; the sample is the newest line', () => {
    const top = topErrorFamilies(
      [
        { line: 'Error: job 1 failed\n  at x', failedAtUtc: at(1) },
        { line: 'Error: disk full', failedAtUtc: at(9) },
        { line: 'Error: job 22 failed', failedAtUtc: at(5) },
        { line: 'Error: job 333 failed', failedAtUtc: at(3) },
        { line: 'Error: quota', failedAtUtc: at(8) },
      ],
      10,
    );
    expect(top).toEqual([
      {
        error: 'Error: job <n> failed',
        sample: 'Error: job 22 failed',
        count: 3,
        lastFailedAtUtc: at(5),
      },
      { error: 'Error: disk full', sample: 'Error: disk full', count: 1, lastFailedAtUtc: at(9) },
      { error: 'Error: quota', sample: 'Error: quota', count: 1, lastFailedAtUtc: at(8) },
    ]);
    expect(topErrorFamilies([{ line: 'a', failedAtUtc: at(1) }], 0)).toEqual([]);
  });

  it('breaks a tie of count and time by the family text', () => {
    const top = topErrorFamilies(
      [
        { line: 'b', failedAtUtc: at(1) },
        { line: 'a', failedAtUtc: at(1) },
      ],
      1,
    );
    expect(top.map((f) => f.error)).toEqual(['a']);
  });
});
