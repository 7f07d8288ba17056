/** Injection token of the resolved Deck options. */
export const DECK_OPTIONS = Symbol('CHOKAQ_DECK_OPTIONS');

/** Metadata key marking a Deck route that changes something. */
export const DECK_MUTATION = 'chokaq:deck-mutation';

/**
 * The header every Deck mutation must carry. A cross-site HTML form cannot set a custom header,
 * and a cross-site `fetch` with one needs a CORS preflight the Deck never grants.
 */
export const DECK_CSRF_HEADER = 'x-chokaq-deck';

/** The Content-Security-Policy of every Deck response. */
export const DECK_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'";
