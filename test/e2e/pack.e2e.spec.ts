import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';

/**
 * Packaging proof, and a test of the README's quick start: build the library, `npm pack` it,
 * install the tarball with its peers into a fresh app in a temp directory outside the workspace,
 * copy the quick start's files from README.md verbatim, compile them with `tsc` and run the app
 * until the job ran, then stop it with SIGTERM (a graceful drain through enableShutdownHooks).
 *
 * better-sqlite3 is installed with --ignore-scripts and its compiled addon copied from the
 * workspace (same version, same Node): no prebuilt binary can be downloaded here and compiling it
 * from source takes minutes. The npm cache is warm after the workspace's own install, so
 * --prefer-offline keeps the install quick. CHOKAQ_E2E_PACK=0 skips the test.
 */
const ROOT = resolve(__dirname, '..', '..');
const run = process.env.CHOKAQ_E2E_PACK === '0' ? it.skip : it;
const PEERS = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/schedule',
  'typeorm',
  'better-sqlite3',
  'reflect-metadata',
  'rxjs',
];

function version(pkg: string): string {
  const file = join(ROOT, 'node_modules', pkg, 'package.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/** The quick start's files: each ```ts block of that section whose first line is `// src/<file>.ts`. */
function quickStartFiles(): Map<string, string> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(
    readme.indexOf('## Quick start'),
    readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1),
  );
  const files = new Map<string, string>();
  for (const [, body] of section.matchAll(/```ts\n([\s\S]*?)```/g)) {
    const name = /^\/\/ (src\/[\w./-]+\.ts)\n/.exec(body)?.[1];
    if (name) files.set(name, body);
  }
  return files;
}

/** Resolves once `child` printed `text` (bounded). */
function waitForOutput(child: ChildProcess, text: string, timeoutMs: number): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    let output = '';
    const timer = setTimeout(
      () => reject(new Error(`no "${text}" within ${timeoutMs} ms:\n${output}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(text)) {
        clearTimeout(timer);
        resolvePromise(output);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the app exited (${code}) before "${text}":\n${output}`));
    });
  });
}

function exitOf(
  child: ChildProcess,
  timeoutMs: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the app did not exit within ${timeoutMs} ms`)),
      timeoutMs,
    );
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal });
    });
  });
}

describe('the packed @chokaq/nestjs tarball', () => {
  let dir: string | undefined;
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    if (dir && process.env.CHOKAQ_E2E_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
  });

  it('the README quick start has its three files', () => {
    expect([...quickStartFiles().keys()]).toEqual([
      'src/emails.ts',
      'src/signups.ts',
      'src/main.ts',
    ]);
  });

  run(
    'installs into a fresh app and runs the README quick start on the SQLite default',
    async () => {
      execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'pipe' });
      dir = mkdtempSync(join(tmpdir(), 'chokaq-pack-'));
      execFileSync(
        'npm',
        ['pack', './libs/chokaq', '--pack-destination', dir, '--ignore-scripts'],
        {
          cwd: ROOT,
          stdio: 'pipe',
        },
      );
      const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
      expect(tarball).toBe('chokaq-nestjs-0.1.0.tgz');

      const app = join(dir, 'app');
      const dependencies: Record<string, string> = { '@chokaq/nestjs': `file:../${tarball}` };
      for (const pkg of PEERS) dependencies[pkg] = version(pkg);
      mkdirSync(app);
      writeFileSync(
        join(app, 'package.json'),
        JSON.stringify({ name: 'quick-start', private: true, dependencies }, null, 2),
      );
      const install = spawnSync(
        'npm',
        [
          'install',
          '--ignore-scripts',
          '--prefer-offline',
          '--no-audit',
          '--no-fund',
          '--loglevel=error',
        ],
        { cwd: app, encoding: 'utf8', timeout: 300_000 },
      );
      if (install.status !== 0)
        throw new Error(`npm install failed (${install.status}):\n${install.stderr}`);
      cpSync(
        join(ROOT, 'node_modules', 'better-sqlite3', 'build'),
        join(app, 'node_modules', 'better-sqlite3', 'build'),
        {
          recursive: true,
        },
      );

      for (const [name, body] of quickStartFiles()) {
        mkdirSync(dirname(join(app, name)), { recursive: true });
        writeFileSync(join(app, name), body);
      }
      writeFileSync(
        join(app, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'commonjs',
            moduleResolution: 'node',
            strict: true,
            experimentalDecorators: true,
            emitDecoratorMetadata: true,
            skipLibCheck: true,
            types: [],
            rootDir: 'src',
            outDir: 'dist',
          },
          include: ['src'],
        }),
      );
      const tsc = spawnSync(
        process.execPath,
        [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app],
        {
          encoding: 'utf8',
          timeout: 120_000,
        },
      );
      expect(`${tsc.stdout}${tsc.stderr}`).toBe('');

      child = spawn(process.execPath, ['dist/main.js'], {
        cwd: app,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await waitForOutput(child, 'Welcome email sent to ada@example.com (attempt 1)', 60_000);
      // The job is archived once its completion batch is written: wait for the row, then drain.
      const db = new Database(join(app, 'chokaq.db'), { readonly: true });
      try {
        const deadline = Date.now() + 10_000;
        let archived = 0;
        while (archived === 0 && Date.now() < deadline) {
          archived = (
            db.prepare('SELECT COUNT(*) AS n FROM chokaq_jobs_archive').get() as { n: number }
          ).n;
          if (archived === 0) await new Promise((r) => setTimeout(r, 50));
        }
        expect(archived).toBe(1);
      } finally {
        db.close();
      }
      // The worker keeps the process alive until a signal; enableShutdownHooks drains it, then
      // Nest re-raises the signal, so the process ends by SIGTERM after logging the stop.
      const exited = exitOf(child, 30_000);
      child.kill('SIGTERM');
      expect(await exited).toEqual({ code: null, signal: 'SIGTERM' });
      expect(output).toMatch(/Worker \S+ stopped/);
    },
    600_000,
  );
});
