import { errorFamily, topErrorFamilies } from './error-family';
import { ERROR_FAMILY_MEMO_LINES, ErrorFamilyMemo } from './error-family-memo';

describe('ErrorFamilyMemo', () => {
  it('returns what errorFamily returns, normalising each line once', () => {
    const normalise = jest.fn(errorFamily);
    const memo = new ErrorFamilyMemo(10, normalise);
    const lines = [
      'Error: job 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b timed out after 3000 ms',
      "Error: user 'alice' not found",
      'TypeError: boom',
    ];
    for (let round = 0; round < 3; round++) {
      for (const line of lines) expect(memo.familyOf(line)).toBe(errorFamily(line));
    }
    expect(normalise).toHaveBeenCalledTimes(lines.length);
    expect(memo.size).toBe(lines.length);
  });

  it('keeps at most its capacity, forgetting the line it remembered first', () => {
    const normalise = jest.fn((line: string) => line.toUpperCase());
    const memo = new ErrorFamilyMemo(2, normalise);
    memo.familyOf('a');
    memo.familyOf('b');
    memo.familyOf('c');
    expect(memo.size).toBe(2);
    normalise.mockClear();
    memo.familyOf('c');
    memo.familyOf('b');
    expect(normalise).not.toHaveBeenCalled();
    expect(memo.familyOf('a')).toBe('A');
    expect(normalise).toHaveBeenCalledTimes(1);
    expect(memo.size).toBe(2);
  });

  it('holds two windows of the top errors by default', () => {
    expect(ERROR_FAMILY_MEMO_LINES).toBe(20_000);
  });

  it('gives topErrorFamilies the same families as errorFamily', () => {
    const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms);
    const rows = [
      { line: 'Error: order 17 failed', failedAtUtc: at(1) },
      { line: 'Error: order 18 failed', failedAtUtc: at(3) },
      { line: 'Error: disk full', failedAtUtc: at(2) },
    ];
    const memo = new ErrorFamilyMemo();
    expect(topErrorFamilies(rows, 10, (line) => memo.familyOf(line))).toEqual(
      topErrorFamilies(rows, 10),
    );
    expect(topErrorFamilies(rows, 10, (line) => memo.familyOf(line))[0]).toMatchObject({
      error: 'Error: order <n> failed',
      count: 2,
      sample: 'Error: order 18 failed',
    });
  });
});
