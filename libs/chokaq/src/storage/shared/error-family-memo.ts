import { TOP_ERRORS_WINDOW_ROWS } from '../../validation/limits';
import { errorFamily } from './error-family';

/**
 * Most error lines an {@link ErrorFamilyMemo} remembers: two windows of `getTopDlqErrors`, so a
 * dashboard that polls the unfiltered window and one filtered view keeps both.
 */
export const ERROR_FAMILY_MEMO_LINES = 2 * TOP_ERRORS_WINDOW_ROWS;

/**
 * The family of each error line seen before, per storage. A dashboard polls the top errors, and
 * from one poll to the next the window (the newest 10,000 DLQ rows of the last 24 hours) holds
 * mostly the same rows, whose lines were normalised last time: {@link errorFamily} runs nine
 * regular expressions over a line (15 to 25 ms for a window of 10,000 distinct lines on the
 * 2-core bench machine), a lookup here costs next to nothing (under 1 ms for the window). The family is a function of the line
 * alone, so a remembered one is exactly what {@link errorFamily} would return. At most
 * {@link ERROR_FAMILY_MEMO_LINES} lines (of at most 500 characters each) are kept; when full, the
 * line remembered first is forgotten first, which in a window that slides forward in time is the
 * line that left it first.
 */
export class ErrorFamilyMemo {
  private readonly families = new Map<string, string>();

  /**
   * @param capacity Most lines kept (default {@link ERROR_FAMILY_MEMO_LINES}).
   * @param normalise The family of a line (default {@link errorFamily}; tests count its calls).
   */
  constructor(
    private readonly capacity: number = ERROR_FAMILY_MEMO_LINES,
    private readonly normalise: (line: string) => string = errorFamily,
  ) {}

  /** The family of `line`: remembered, or normalised now and remembered. */
  familyOf(line: string): string {
    const known = this.families.get(line);
    if (known !== undefined) return known;
    const family = this.normalise(line);
    if (this.families.size >= this.capacity) {
      // A Map iterates in insertion order: its first key is the oldest line.
      const oldest = this.families.keys().next();
      if (!oldest.done) this.families.delete(oldest.value);
    }
    this.families.set(line, family);
    return family;
  }

  /** Lines remembered now. */
  get size(): number {
    return this.families.size;
  }
}
