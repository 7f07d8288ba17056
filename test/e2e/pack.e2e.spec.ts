import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from 'pg';
import { schemaDdl } from '../../libs/chokaq/src/cli/commands/schema.command';
import { PG_URL, pgAvailable } from '../support/env';

/**
 * Packaging proof. Builds the library once, `npm pack`s it once, and installs the tarball into two
 * fresh apps in a temp directory outside the workspace, at both ends of every peer range:
 *
 * - NestJS 11 + TypeORM 0.3 (0.3.28, the lowest the range admits) + @nestjs/typeorm 11;
 * - NestJS 12 + TypeORM 1 + @nestjs/typeorm 12 + @nestjs/schedule 12.
 *
 * In each app, `fixtures/pack-borrowed-app.ts` (the app's own DataSource from @nestjs/typeorm,
 * borrowed by ChokaQ, a job enqueued in the app's transaction, read back through the storage
 * protocol of the subpath `@chokaq/nestjs/storage`) runs a job end to end on SQLite and on
 * PostgreSQL, and `fixtures/pack-health-app.ts` imports the health checks from the subpath
 * export `@chokaq/nestjs/health` (with @nestjs/terminus 11 and 12 respectively), after proving the
 * core loads without loading Terminus. The first app also compiles and runs the README's quick start verbatim (ChokaQ's
 * own SQLite DataSource) and runs the `chokaq` binary through npx. The tarball itself is checked
 * for what it must and must not ship.
 *
 * Offline-friendly: every package version the apps install is pinned in the workspace's lock file
 * (TypeORM 0.3 under the alias `typeorm-0.3`, NestJS 12 in `fixtures/pack-nest12`), so `npm ci`
 * has put their tarballs in the npm cache and `--prefer-offline` takes them from there. The two
 * installs run in parallel. better-sqlite3 is installed with --ignore-scripts and its compiled
 * addon copied from the workspace (same version, same Node): compiling it takes minutes.
 * CHOKAQ_E2E_PACK=0 skips the test; CHOKAQ_E2E_KEEP=1 keeps the temp directory.
 */
const ROOT = resolve(__dirname, '..', '..');
const NEST12 = join(ROOT, 'test', 'e2e', 'fixtures', 'pack-nest12');
const enabled = process.env.CHOKAQ_E2E_PACK !== '0';
const runPack = enabled ? it : it.skip;
const runPackPg = enabled && pgAvailable() ? it : it.skip;

/** Version of `pkg` installed under `base/node_modules` (an npm alias directory name works too). */
function installedVersion(base: string, pkg: string): string {
  const file = join(base, 'node_modules', pkg, 'package.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

interface AppVariant {
  readonly name: string;
  readonly dependencies: Record<string, string>;
}

/** Both apps' dependencies, pinned to versions the workspace's lock file holds. */
function variants(): AppVariant[] {
  const shared = Object.fromEntries(
    ['better-sqlite3', 'pg', 'reflect-metadata', 'rxjs'].map((pkg) => [
      pkg,
      installedVersion(ROOT, pkg),
    ]),
  );
  const nest = (base: string) =>
    Object.fromEntries(
      [
        '@nestjs/common',
        '@nestjs/core',
        '@nestjs/schedule',
        '@nestjs/terminus',
        '@nestjs/typeorm',
      ].map((pkg) => [pkg, installedVersion(base, pkg)]),
    );
  return [
    {
      name: 'nest11-typeorm03',
      dependencies: {
        ...shared,
        ...nest(ROOT),
        // An HTTP platform for the Deck's app.
        '@nestjs/platform-express': installedVersion(ROOT, '@nestjs/platform-express'),
        typeorm: installedVersion(ROOT, 'typeorm-0.3'),
      },
    },
    {
      name: 'nest12-typeorm1',
      dependencies: { ...shared, ...nest(NEST12), typeorm: installedVersion(ROOT, 'typeorm') },
    },
  ];
}

/**
 * The compiler options of a project that `nest new` makes: its CommonJS tsconfig (Nest 11's
 * schematics), or the ESM layout (Nest 12's: `nodenext`, relative imports with `.js`). Both have
 * `isolatedModules` with `emitDecoratorMetadata`.
 */
function schematicsTsconfig(layout: 'commonjs' | 'esm'): object {
  return {
    compilerOptions: {
      module: layout === 'esm' ? 'nodenext' : 'commonjs',
      ...(layout === 'esm' ? { moduleResolution: 'nodenext' } : {}),
      declaration: true,
      removeComments: true,
      emitDecoratorMetadata: true,
      experimentalDecorators: true,
      allowSyntheticDefaultImports: true,
      target: 'ES2023',
      sourceMap: true,
      outDir: './dist',
      baseUrl: './',
      incremental: true,
      skipLibCheck: true,
      strictNullChecks: true,
      forceConsistentCasingInFileNames: true,
      noImplicitAny: false,
      strictBindCallApply: false,
      noFallthroughCasesInSwitch: false,
      isolatedModules: true,
      typeRoots: [join(ROOT, 'node_modules', '@types')],
      types: ['node'],
    },
    include: ['src'],
  };
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

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const children = new Set<ChildProcess>();

/** Runs a command to its end (bounded: killed after `timeoutMs`), without blocking the event loop. */
function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not end within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolvePromise({ code, signal, stdout, stderr });
    });
  });
}

function expectSuccess(what: string, result: Run): void {
  if (result.code !== 0) {
    throw new Error(`${what} failed (${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
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

/** What `npm pack --json` reports about the tarball. */
interface PackReport {
  filename: string;
  files: { path: string }[];
}

describe('the packed @chokaq/nestjs tarball', () => {
  let dir = '';
  let pack: PackReport;
  const apps = new Map<string, string>();

  beforeAll(async () => {
    if (!enabled) return;
    dir = mkdtempSync(join(tmpdir(), 'chokaq-pack-'));
    // `npm run build` empties dist/ first, so no output of a file since removed can be packed.
    execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'pipe' });
    const packed = execFileSync(
      'npm',
      ['pack', './libs/chokaq', '--pack-destination', dir, '--ignore-scripts', '--json'],
      { cwd: ROOT, encoding: 'utf8' },
    );
    [pack] = JSON.parse(packed) as PackReport[];
    mkdirSync(join(dir, 'unpacked'));
    execFileSync('tar', ['-xzf', join(dir, pack.filename), '-C', join(dir, 'unpacked')]);

    await Promise.all(
      variants().map(async ({ name, dependencies }) => {
        const app = join(dir, name);
        mkdirSync(join(app, 'src'), { recursive: true });
        writeFileSync(
          join(app, 'package.json'),
          JSON.stringify(
            {
              name,
              private: true,
              dependencies: { '@chokaq/nestjs': `file:../${pack.filename}`, ...dependencies },
            },
            null,
            2,
          ),
        );
        const install = await run(
          'npm',
          [
            'install',
            '--ignore-scripts',
            '--prefer-offline',
            '--no-audit',
            '--no-fund',
            '--loglevel=error',
          ],
          { cwd: app, timeoutMs: 300_000 },
        );
        expectSuccess(`npm install in the ${name} app`, install);
        cpSync(
          join(ROOT, 'node_modules', 'better-sqlite3', 'build'),
          join(app, 'node_modules', 'better-sqlite3', 'build'),
          { recursive: true },
        );
        cpSync(
          join(ROOT, 'test', 'e2e', 'fixtures', 'pack-borrowed-app.ts'),
          join(app, 'src', 'borrowed.ts'),
        );
        for (const file of ['pack-health-app.ts', 'pack-health-checks.ts']) {
          cpSync(join(ROOT, 'test', 'e2e', 'fixtures', file), join(app, 'src', file));
        }
        if (name === 'nest11-typeorm03') {
          for (const [file, body] of quickStartFiles()) writeFileSync(join(app, file), body);
          cpSync(
            join(ROOT, 'test', 'e2e', 'fixtures', 'pack-deck-app.ts'),
            join(app, 'src', 'deck.ts'),
          );
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
              // Node's types from the workspace: the apps install only what they run.
              typeRoots: [join(ROOT, 'node_modules', '@types')],
              types: ['node'],
              rootDir: 'src',
              outDir: 'dist',
            },
            include: ['src'],
          }),
        );
        const tsc = await run(
          process.execPath,
          [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app],
          { cwd: app, timeoutMs: 120_000 },
        );
        expect(`${tsc.stdout}${tsc.stderr}`).toBe('');
        // The quick start again, alone, under the compiler options a project made by `nest new`
        // has: CommonJS with Nest 11's, the ESM layout with Nest 12's (both `isolatedModules`
        // with `emitDecoratorMetadata`, so a type in a decorated signature needs `import type`).
        const layout = name === 'nest11-typeorm03' ? 'commonjs' : 'esm';
        const qs = join(app, `quickstart-${layout}`);
        mkdirSync(join(qs, 'src'), { recursive: true });
        for (const [file, body] of quickStartFiles()) writeFileSync(join(qs, file), body);
        if (layout === 'esm') writeFileSync(join(qs, 'package.json'), '{ "type": "module" }');
        writeFileSync(join(qs, 'tsconfig.json'), JSON.stringify(schematicsTsconfig(layout)));
        const quick = await run(
          process.execPath,
          [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', qs, '--noEmit'],
          { cwd: qs, timeoutMs: 120_000 },
        );
        expect({ layout, out: `${quick.stdout}${quick.stderr}` }).toEqual({ layout, out: '' });
        apps.set(name, app);
      }),
    );
  }, 600_000);

  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
    if (dir && process.env.CHOKAQ_E2E_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
  });

  it('the README quick start has its three files', () => {
    expect([...quickStartFiles().keys()]).toEqual([
      'src/emails.ts',
      'src/signups.ts',
      'src/main.ts',
    ]);
  });

  runPack(
    'ships its LICENSE, no test fixture or spec, source maps with their sources, true peers',
    () => {
      const files = pack.files.map((f) => f.path);
      const unpacked = join(dir, 'unpacked', 'package');
      expect(files).toEqual(
        expect.arrayContaining([
          'LICENSE',
          'README.md',
          'CHANGELOG.md',
          'package.json',
          'dist/cli/main.js',
          'dist/deck/index.js',
          'dist/deck/index.d.ts',
          'dist/deck/assets/index.html',
          'dist/deck/assets/deck.js',
          'dist/deck/assets/deck.css',
          'dist/deck/assets/vendor/preact-htm.js',
          'dist/deck/assets/vendor/uplot.js',
          'dist/deck/assets/vendor/LICENSES.txt',
        ]),
      );
      expect(readFileSync(join(unpacked, 'LICENSE'), 'utf8')).toBe(
        readFileSync(join(ROOT, 'LICENSE'), 'utf8'),
      );
      expect(files.filter((f) => /\.(spec|fixture)\./.test(f))).toEqual([]);
      expect(
        files.filter(
          (f) => !/^(dist\/.*\.(js|d\.ts|js\.map)|dist\/deck\/assets\/[\w./-]+|[\w.]+)$/.test(f),
        ),
      ).toEqual([]);

      // Every emitted file that points at a map ships it, and every map carries its sources (the
      // .ts files themselves are not shipped).
      const maps = files.filter((f) => f.endsWith('.js.map'));
      expect(maps.length).toBeGreaterThan(50);
      for (const js of files.filter((f) => f.endsWith('.js'))) {
        const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(
          readFileSync(join(unpacked, js), 'utf8'),
        );
        if (url) expect(files).toContain(join(dirname(js), url[1]));
      }
      for (const map of maps) {
        const { sources, sourcesContent } = JSON.parse(
          readFileSync(join(unpacked, map), 'utf8'),
        ) as {
          sources: string[];
          sourcesContent?: (string | null)[];
        };
        expect({ map, sources: sources.length, contents: sourcesContent?.length }).toEqual({
          map,
          sources: sources.length,
          contents: sources.length,
        });
        expect(sourcesContent?.every((text) => typeof text === 'string' && text.length > 0)).toBe(
          true,
        );
      }

      const manifest = JSON.parse(readFileSync(join(unpacked, 'package.json'), 'utf8')) as {
        repository?: { url?: string };
        homepage?: string;
        bugs?: { url?: string };
        dependencies?: Record<string, string>;
        peerDependencies?: Record<string, string>;
        peerDependenciesMeta?: Record<string, { optional?: boolean }>;
      };
      expect(manifest.repository?.url).toMatch(/^git\+https:\/\//);
      expect(manifest.homepage).toMatch(/^https:\/\//);
      expect(manifest.bugs?.url).toMatch(/^https:\/\//);

      // True dependencies: what the shipped code requires is exactly the dependencies plus the
      // required peers. The optional peers are the database drivers, which TypeORM loads for the
      // storage type in use (ChokaQ's own code only imports their types), except pg, which the
      // PostgreSQL dialect's connection requires (to open its own pool without TypeORM) and which
      // createJobStorage loads only for PostgreSQL storage, @opentelemetry/api,
      // which ChokaQ requires lazily, guarded, when metrics are on (the apps here lack it, so
      // their runs prove the library works without it), @nestjs/schedule, required only when
      // installed, to list recurring timers in the app's SchedulerRegistry
      // (test/e2e/without-schedule.e2e.spec.ts runs an app without it), and @nestjs/terminus,
      // which only the subpath @chokaq/nestjs/health requires (the health app below proves the
      // core does not). mssql is required by ChokaQ's own code only to type the parameters of a
      // caller's mssql transaction, when one is given, and drizzle-orm only when a caller passes a
      // Drizzle transaction (an application that does has it; it is no peer of ChokaQ's).
      const required = new Set<string>();
      for (const js of files.filter((f) => f.endsWith('.js'))) {
        // tsc writes an import as require("…"), and keeps the quotes of a require written by hand.
        for (const [, , spec] of readFileSync(join(unpacked, js), 'utf8').matchAll(
          /require\((["'])([^"'.][^"']*)\1\)/g,
        )) {
          if (!spec.startsWith('node:')) {
            required.add(
              spec
                .split('/')
                .slice(0, spec.startsWith('@') ? 2 : 1)
                .join('/'),
            );
          }
        }
      }
      const peers = Object.keys(manifest.peerDependencies ?? {});
      const optional = peers.filter((p) => manifest.peerDependenciesMeta?.[p]?.optional);
      const lazy = [
        '@nestjs/schedule',
        '@nestjs/terminus',
        '@opentelemetry/api',
        'pg',
        'mssql',
        'drizzle-orm',
      ];
      expect([...required]).toEqual(expect.arrayContaining(lazy));
      expect([...required].filter((r) => !lazy.includes(r)).sort()).toEqual(
        [
          ...Object.keys(manifest.dependencies ?? {}),
          ...peers.filter((p) => !optional.includes(p)),
        ].sort(),
      );
      expect(optional.sort()).toEqual([
        '@nestjs/schedule',
        '@nestjs/terminus',
        '@opentelemetry/api',
        'better-sqlite3',
        'mssql',
        'pg',
      ]);
      // Terminus is required by the health subpath's files only.
      const terminusUsers = files.filter(
        (f) =>
          f.endsWith('.js') &&
          readFileSync(join(unpacked, f), 'utf8').includes('require("@nestjs/terminus")'),
      );
      expect(terminusUsers.length).toBeGreaterThan(0);
      expect(terminusUsers.filter((f) => !f.startsWith('dist/health/'))).toEqual([]);
      // pg is required by the PostgreSQL dialect's files only, which only PostgreSQL loads.
      const pgUsers = files.filter(
        (f) =>
          f.endsWith('.js') && readFileSync(join(unpacked, f), 'utf8').includes('require("pg")'),
      );
      expect(pgUsers).toEqual(['dist/storage/postgres/postgres.connection.js']);
    },
  );

  runPack('installed at both ends of the peer ranges', () => {
    const versions = (name: string) =>
      ['@nestjs/core', 'typeorm', '@nestjs/typeorm', '@nestjs/schedule', '@nestjs/terminus'].map(
        (pkg) => installedVersion(apps.get(name) ?? '', pkg).split('.')[0],
      );
    expect(versions('nest11-typeorm03')).toEqual(['11', '0', '11', '6', '11']);
    expect(versions('nest12-typeorm1')).toEqual(['12', '1', '12', '12', '12']);
    expect(installedVersion(apps.get('nest11-typeorm03') ?? '', 'typeorm')).toMatch(/^0\.3\./);
  });

  describe.each(['nest11-typeorm03', 'nest12-typeorm1'])(
    'the %s app, ChokaQ on its @nestjs/typeorm DataSource',
    (name) => {
      async function runBorrowed(env: NodeJS.ProcessEnv): Promise<void> {
        const result = await run(process.execPath, ['dist/borrowed.js'], {
          cwd: apps.get(name) ?? '',
          env,
          timeoutMs: 90_000,
        });
        // The process ends on its own after app.close(): nothing of ChokaQ's is left running.
        expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
        expect(result.stdout).toContain('PACK-OK {"shipped":1,"protocol":true,"closed":true}');
      }

      runPack(
        'runs a job enqueued in the app’s transaction on SQLite',
        () => runBorrowed({ PACK_DB: `sqlite:${join(dir, `${name}.db`)}` }),
        120_000,
      );

      runPack(
        'imports the health checks from @chokaq/nestjs/health: the core loads without Terminus, the checks answer through HealthCheckService',
        async () => {
          const result = await run(process.execPath, ['dist/pack-health-app.js'], {
            cwd: apps.get(name) ?? '',
            env: { PACK_DB: `sqlite:${join(dir, `${name}-health.db`)}` },
            timeoutMs: 90_000,
          });
          expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
          expect(result.stdout).toContain(
            'PACK-HEALTH {"loadedByCore":0,"loadedBySubpath":true,"status":"ok","up":["chokaq-queues","chokaq-storage","chokaq-worker"]}',
          );
        },
        120_000,
      );

      runPackPg(
        'runs a job enqueued in the app’s transaction on PostgreSQL',
        async () => {
          const schema = `chokaq_pack_${process.pid}_${randomBytes(4).toString('hex')}`;
          const client = new Client({ connectionString: PG_URL });
          await client.connect();
          try {
            await client.query(`CREATE SCHEMA ${schema}`);
            await runBorrowed({ PACK_DB: PG_URL, PACK_SCHEMA: schema });
          } finally {
            await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
            await client.end();
          }
        },
        120_000,
      );
    },
  );

  runPack(
    'runs the README quick start on the SQLite default',
    async () => {
      const app = apps.get('nest11-typeorm03') ?? '';
      const child = spawn(process.execPath, ['dist/main.js'], {
        cwd: app,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(child);
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
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
      children.delete(child);
      expect(output).toMatch(/Worker \S+ stopped/);
    },
    120_000,
  );

  runPack(
    'serves the Deck from the @chokaq/nestjs/deck subpath, assets included',
    async () => {
      const app = apps.get('nest11-typeorm03') ?? '';
      const result = await run(process.execPath, ['dist/deck.js'], {
        cwd: app,
        env: { ...process.env, PACK_DB: `sqlite:${join(dir, 'deck.db')}` },
        timeoutMs: 60_000,
      });
      expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
      expect(result.stdout).toContain(
        'DECK-OK {"page":200,"csp":true,"base":true,"asset":200,"vendor":200,"anonymous":403,"config":200}',
      );
    },
    90_000,
  );

  runPack(
    'the chokaq binary runs through npx, by its name and by the package name',
    async () => {
      const app = apps.get('nest11-typeorm03') ?? '';
      const npx = (...args: string[]) =>
        run('npx', ['--offline', ...args], { cwd: app, timeoutMs: 60_000 });
      // `npx @chokaq/nestjs …` runs the package's only binary: the form the README gives for a
      // project without a local install (here the local one is found, so nothing is fetched).
      const [byPackage, version, misspelt] = await Promise.all([
        npx('@chokaq/nestjs', 'schema', '--dialect', 'sqlite', '--schema', 'jobs_'),
        npx('chokaq', '--version'),
        npx('chokaq', 'schema', '--dialect', 'postgres', '--schmea', 'jobs'),
      ]);
      expect(byPackage).toMatchObject({ code: 0, stdout: schemaDdl('sqlite', 'jobs_') });
      expect(version).toMatchObject({
        code: 0,
        stdout: `${installedVersion(app, '@chokaq/nestjs')}\n`,
      });
      expect(misspelt).toMatchObject({ code: 2, stdout: '' });
      expect(misspelt.stderr).toContain("unknown option '--schmea'");
    },
    120_000,
  );

  it('finds the workspace’s pinned TypeORM 0.3 and NestJS 12', () => {
    expect(installedVersion(ROOT, 'typeorm-0.3')).toMatch(/^0\.3\./);
    expect(existsSync(join(NEST12, 'node_modules', '@nestjs', 'core'))).toBe(true);
  });
});
