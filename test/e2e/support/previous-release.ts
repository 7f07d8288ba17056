import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/*
 * The previous release of the library, produced from git history for the upgrade suite
 * (previous-release-upgrade.e2e.spec.ts).
 */

/**
 * The previous release: the last commit on main before the operator core's first schema change
 * (0298178, "Recurring jobs you can operate", SQLite schema version 2 and PostgreSQL version 3).
 * Its schema is SQLite version 1 and PostgreSQL version 2 (PostgreSQL's version 2, the claim index
 * that breaks ties by id, came before the operator core). `git log` of the dialects' schema files
 * (`libs/chokaq/src/storage/<dialect>/<dialect>.schema.ts`) finds it again.
 */
export const PREVIOUS_RELEASE = 'b1bff30161bfe516e0e9829fdeec3c8767b66c1d';

const ROOT = resolve(__dirname, '..', '..', '..');

/** Whether the suite must fail rather than skip when the previous release cannot be produced. */
export function previousReleaseRequired(): boolean {
  return process.env.CHOKAQ_REQUIRE_PG === '1' || !!process.env.CI;
}

/**
 * Why the previous release cannot be produced here (not a git checkout, or a shallow clone without
 * that commit), or undefined when it can.
 */
export function previousReleaseUnavailable(commit = PREVIOUS_RELEASE): string | undefined {
  try {
    execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: ROOT, stdio: 'pipe' });
    return undefined;
  } catch (error) {
    return (
      `the previous release (commit ${commit}) is not in this checkout's git history ` +
      `(${String(error).split('\n')[0]}). The upgrade suite builds it from git: clone with full ` +
      `history (git fetch --unshallow, or actions/checkout with fetch-depth: 0).`
    );
  }
}

/** Runs a command to its end, bounded, without blocking the event loop; rejects on failure. */
function run(command: string, args: string[], cwd: string, timeoutMs: number): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not end within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolvePromise();
      else reject(new Error(`${command} ${args.join(' ')} failed (${code}):\n${out}`));
    });
  });
}

/**
 * The previous release's package directory (`…/libs/chokaq`, its `package.json` and compiled
 * `dist/`), built once per commit and cached under `node_modules/.cache/chokaq-prev-<commit>`.
 *
 * `git archive` writes the commit's library and root tsconfig into a scratch directory beside the
 * cache; the release's own build (`npm run build` at that commit: `tsc -p
 * libs/chokaq/tsconfig.lib.json` into an empty `dist/`) compiles it with this workspace's
 * TypeScript, and its `dist/` resolves its dependencies from this workspace's `node_modules` (an
 * ancestor directory), which the lock file pins as it did then. The finished directory is renamed
 * into place, so a half-built cache is never used and concurrent runs cannot mix their output.
 */
export async function buildPreviousRelease(commit = PREVIOUS_RELEASE): Promise<string> {
  const cacheRoot = join(ROOT, 'node_modules', '.cache');
  const target = join(cacheRoot, `chokaq-prev-${commit}`);
  const pkg = join(target, 'libs', 'chokaq');
  const done = join(target, '.complete');
  if (existsSync(done)) return pkg;
  const unavailable = previousReleaseUnavailable(commit);
  if (unavailable) throw new Error(unavailable);
  mkdirSync(cacheRoot, { recursive: true });
  const scratch = `${target}.tmp-${process.pid}-${randomBytes(3).toString('hex')}`;
  try {
    mkdirSync(scratch);
    const tar = join(scratch, 'release.tar');
    await run(
      'git',
      ['archive', '--format=tar', '-o', tar, commit, 'libs/chokaq', 'tsconfig.json'],
      ROOT,
      60_000,
    );
    await run('tar', ['-xf', tar], scratch, 60_000);
    rmSync(tar);
    await run(
      process.execPath,
      [
        join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
        '-p',
        'libs/chokaq/tsconfig.lib.json',
      ],
      scratch,
      180_000,
    );
    writeFileSync(join(scratch, '.complete'), `${commit}\n`);
    try {
      renameSync(scratch, target);
    } catch (error) {
      // Another run finished first: use its build.
      if (!existsSync(done)) throw error;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return pkg;
}
