import { ChokaQError } from '../../errors';

/**
 * What the command names does not exist or matched nothing (a job, a queue, a recurring job, a
 * filter that matched no row). Nothing was changed; the process exits 3.
 */
export class CliNothingMatchedError extends ChokaQError {}
