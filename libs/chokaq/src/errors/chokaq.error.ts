/**
 * Base class of every error ChokaQ throws on purpose. Catch this to tell ChokaQ's own errors
 * from driver or user errors.
 *
 * @publicApi
 */
export class ChokaQError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
