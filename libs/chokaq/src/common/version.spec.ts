import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { libraryVersion } from './version';

describe('libraryVersion', () => {
  it('is the version of libs/chokaq/package.json (the published package.json)', () => {
    const manifest = JSON.parse(
      readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'),
    ) as { name: string; version: string };
    expect(manifest.name).toBe('@chokaq/nestjs');
    expect(libraryVersion()).toBe(manifest.version);
  });
});
