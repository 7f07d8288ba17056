import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The package this library is published as. */
const PACKAGE_NAME = '@chokaq/nestjs';

/**
 * The version of `@chokaq/nestjs` this code belongs to, read from its `package.json`: two levels
 * above this file both in the workspace (`libs/chokaq/src/common/` → `libs/chokaq/package.json`)
 * and in the published package (`dist/common/` → the package root, where npm always puts
 * `package.json`). Read, not imported: the compiled library must not reach outside `src/`.
 *
 * `'unknown'` when that file cannot be read or is not this package's (a bundler that moved the
 * code): the version is reported for operators' eyes, never used to decide anything.
 */
export function libraryVersion(): string {
  try {
    const file = join(__dirname, '..', '..', 'package.json');
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as {
      name?: unknown;
      version?: unknown;
    };
    return manifest.name === PACKAGE_NAME && typeof manifest.version === 'string'
      ? manifest.version
      : 'unknown';
  } catch {
    return 'unknown';
  }
}
