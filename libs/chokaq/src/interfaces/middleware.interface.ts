import type { JobContext } from './job-context.interface';

/**
 * Wraps every handler call. Implement it on an `@Injectable()` class and list the class in
 * `ChokaQModule.forRoot({ middleware: [...] })`; the first listed runs outermost. Call `next()`
 * exactly once to run the rest of the pipeline (and the handler); its result is the handler's.
 *
 * @publicApi
 */
export interface ChokaQMiddleware {
  use(ctx: JobContext, payload: unknown, next: () => Promise<unknown>): Promise<unknown>;
}
