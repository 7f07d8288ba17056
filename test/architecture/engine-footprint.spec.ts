import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * The engine (runtime and storage) logs through its own `ChokaQLogger`, not Nest's `Logger`, so a
 * worker driven without Nest (`createJobStorage` + `ChokaQWorker`, as the bench and a plain Node
 * script do) loads neither `@nestjs/*` nor rxjs: about 20 MB of modules it would never use. A
 * fresh process requires exactly what such a worker requires, and lists the packages it loaded.
 */
const ROOT = join(__dirname, '..', '..');

function packagesLoadedBy(modules: string[]): string[] {
  const script = `
    for (const m of ${JSON.stringify(modules)}) require(m);
    const names = new Set();
    for (const file of Object.keys(require.cache)) {
      const at = file.lastIndexOf('/node_modules/');
      if (at < 0) continue;
      const parts = file.slice(at + 14).split('/');
      names.add(parts[0].startsWith('@') ? parts[0] + '/' + parts[1] : parts[0]);
    }
    process.stdout.write(JSON.stringify([...names].sort()));
  `;
  const out = execFileSync(process.execPath, ['-r', '@swc-node/register', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return JSON.parse(out) as string[];
}

describe('the engine without Nest', () => {
  it('requiring the worker and the storage factory loads neither @nestjs nor rxjs', () => {
    const loaded = packagesLoadedBy([
      join(ROOT, 'libs/chokaq/src/runtime/chokaq-worker'),
      join(ROOT, 'libs/chokaq/src/storage/create-storage'),
      join(ROOT, 'libs/chokaq/src/config/resolve-options'),
    ]);
    expect(loaded.filter((name) => name.startsWith('@nestjs/') || name === 'rxjs')).toEqual([]);
    // The check sees packages at all: the storage factory does load TypeORM.
    expect(loaded).toContain('typeorm');
  });
});
