import { ChokaQValidationError } from '../../libs/chokaq/src/errors';
import type { ValidationIssue } from '../../libs/chokaq/src/errors/validation.error';

/** Runs `fn`, which must throw a `ChokaQValidationError`, and returns every issue it reported. */
export function validationIssues(fn: () => unknown): ValidationIssue[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ChokaQValidationError);
    return [...(error as ChokaQValidationError).issues];
  }
  throw new Error('expected a ChokaQValidationError');
}

/** The `path` of every issue `fn` reported (see {@link validationIssues}). */
export function issuePaths(fn: () => unknown): string[] {
  return validationIssues(fn).map((issue) => issue.path);
}
