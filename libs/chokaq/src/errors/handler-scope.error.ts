import { ChokaQError } from './chokaq.error';

/**
 * A `@JobHandler` or `@RecurringJob` sits on a request-scoped or transient provider (or one that
 * depends on a request-scoped provider). Jobs run outside any HTTP request, so ChokaQ needs one
 * long-lived instance to call.
 *
 * @publicApi
 */
export class ChokaQHandlerScopeError extends ChokaQError {
  constructor(
    readonly provider: string,
    readonly method: string,
    readonly scope: 'request' | 'transient',
  ) {
    super(
      `ChokaQ handler ${provider}.${method} is on a ${scope}-scoped provider` +
        `${scope === 'request' ? ' (or one that injects a request-scoped provider)' : ''}. ` +
        `Move the handler to a singleton provider (the default scope) and resolve per-job ` +
        `dependencies inside it, e.g. with ModuleRef.resolve().`,
    );
  }
}
