import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { TS_LOADER } from '../support/env';

/**
 * The engine (runtime and storage) logs through its own `ChokaQLogger`, not Nest's `Logger`, so a
 * worker driven without Nest (`createJobStorage` + `ChokaQWorker`, as the bench and a plain Node
 * script do) loads neither `@nestjs/*` nor rxjs: about 20 MB of modules it would never use. The
 * storage factory loads a dialect only when it is used, and the PostgreSQL dialect runs on its own
 * `pg` pool, so a PostgreSQL worker loads no TypeORM either (about 21 MB); the `cron` package
 * (with Luxon) is loaded by the first recurring schedule. A fresh process requires exactly what
 * such a worker requires, and lists the packages it loaded.
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
  const out = execFileSync(process.execPath, ['-r', TS_LOADER, '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  return JSON.parse(out) as string[];
}

const ENGINE = [
  'libs/chokaq/src/runtime/chokaq-worker',
  'libs/chokaq/src/storage/create-storage',
  'libs/chokaq/src/config/resolve-options',
].map((path) => join(ROOT, path));

/** Packages a worker process has no use for until it needs them (or ever, outside Nest). */
const HEAVY = (name: string) =>
  name.startsWith('@nestjs/') ||
  ['rxjs', 'typeorm', 'cron', 'luxon', 'pg', 'mssql', 'better-sqlite3'].includes(name);

describe('the engine without Nest', () => {
  it('requiring the worker and the storage factory loads no framework, ORM, cron or driver', () => {
    expect(packagesLoadedBy(ENGINE).filter(HEAVY)).toEqual([]);
  });

  it('the PostgreSQL dialect, which the factory loads for PostgreSQL, adds pg and nothing else heavy', () => {
    const loaded = packagesLoadedBy([...ENGINE, join(ROOT, 'libs/chokaq/src/storage/postgres')]);
    expect(loaded.filter(HEAVY)).toEqual(['pg']);
  });

  it('the CLI, with a command that opens a database, loads no Nest either', () => {
    const loaded = packagesLoadedBy([
      join(ROOT, 'libs/chokaq/src/cli/run-cli'),
      join(ROOT, 'libs/chokaq/src/cli/connection/admin-session'),
      join(ROOT, 'libs/chokaq/src/storage/postgres'),
    ]);
    expect(loaded.filter(HEAVY)).toEqual(['pg']);
  });
});
