import { ChokaQMissingPeerError } from '../errors';

/** The optional peer dependency the health checks are built on. */
export const TERMINUS_PACKAGE = '@nestjs/terminus';

/** What needs it, as the error names it. */
export const HEALTH_ENTRY_POINT = '@chokaq/nestjs/health';

/**
 * Throws {@link ChokaQMissingPeerError} when `@nestjs/terminus` cannot be found, instead of
 * Node's bare "Cannot find module". Any other failure to resolve it is rethrown as it is.
 *
 * `resolve` is for tests (one that fails as a missing package does).
 */
export function assertTerminusInstalled(
  resolve: (id: string) => string = (id) => require.resolve(id),
): void {
  try {
    resolve(TERMINUS_PACKAGE);
  } catch (error) {
    const e = error as { code?: unknown } | null;
    if (e?.code === 'MODULE_NOT_FOUND') {
      throw new ChokaQMissingPeerError(TERMINUS_PACKAGE, HEALTH_ENTRY_POINT);
    }
    throw error;
  }
}

// Runs when the entry point loads, before the files that import the peer (see index.ts).
assertTerminusInstalled();
