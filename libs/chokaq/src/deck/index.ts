/**
 * `@chokaq/nestjs/deck`: The Deck, the operator dashboard, as a Nest module. Nothing of it loads
 * unless this entry point is imported.
 */
export { ChokaQDeckModule } from './deck.module';
export type { ChokaQDeckAsyncOptions } from './deck.module';
export { ChokaQDeckConfigError } from './deck-config.error';
export { DECK_CSP, DECK_CSRF_HEADER } from './deck.constants';
export type { ChokaQDeckMount, ChokaQDeckOptions, DeckGuard } from './deck-options';
export type { DeckConfig } from './deck-api.controller';
export type { DeckJob } from './deck-jobs.controller';
export type { DeckQueue, DeckSnapshot } from './deck-snapshot.service';
