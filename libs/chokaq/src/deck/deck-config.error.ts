import { ChokaQError } from '../errors';

/**
 * `ChokaQDeckModule` was mounted with options that cannot run: most often without `guards` and
 * without `allowAnonymous: true` (the Deck is deny-by-default). The message says what to add.
 * Thrown while the application starts, so a misconfigured Deck never serves a request.
 *
 * @publicApi
 */
export class ChokaQDeckConfigError extends ChokaQError {}
