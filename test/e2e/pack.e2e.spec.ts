import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { PG_URL, pgAvailable } from '../support/env';

/**
 * Packaging proof: build the library, `npm pack` it, install the tarball with its peers into a
 * scratch app in a temp directory outside the workspace, and run one job through it from plain JS
 * (no TypeScript, no path mapping: only the published files). The scratch app stores its jobs in
 * PostgreSQL rather than SQLite: installing better-sqlite3 there would compile the native addon
 * from source (no prebuilt binary can be downloaded here), which takes minutes; `pg` is pure JS.
 * The npm cache is warm after the workspace's own install, so `--prefer-offline` keeps it quick.
 * CHOKAQ_E2E_PACK=0 skips it.
 */
const ROOT = resolve(__dirname, '..', '..');
const run = pgAvailable() && process.env.CHOKAQ_E2E_PACK !== '0' ? it : it.skip;
const SCHEMA = `chokaq_pack_${process.pid}`;

function version(pkg: string): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require(join(ROOT, 'node_modules', pkg, 'package.json')) as { version: string }).version;
}

const APP = `
require('reflect-metadata');
const { Injectable, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { ChokaQModule, JobClient, JobHandler, defineJob } = require('@chokaq/nestjs');

const Hello = defineJob('hello', 'hello.v1');
let ran = 0;
class Handlers {
  async hello(payload) { ran++; if (payload.name !== 'packed') throw new Error('bad payload'); }
}
JobHandler(Hello)(Handlers.prototype, 'hello', Object.getOwnPropertyDescriptor(Handlers.prototype, 'hello'));
Injectable()(Handlers);
class AppModule {}
Module({
  imports: [
    ChokaQModule.forRoot({
      storage: { type: 'postgres', url: process.env.PG_URL, schema: process.env.PG_SCHEMA },
      worker: { pollIntervalMs: 50 },
    }),
  ],
  providers: [Handlers],
})(AppModule);

(async () => {
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
  const jobs = app.get(JobClient);
  const id = await jobs.enqueue(Hello, { name: 'packed' });
  const deadline = Date.now() + 20000;
  let job;
  while (Date.now() < deadline) {
    job = await jobs.getJob(id);
    if (job && job.pillar !== 'hot') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await app.close();
  console.log(JSON.stringify({ pillar: job && job.pillar, ran }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

describe('the packed @chokaq/nestjs tarball', () => {
  let dir: string | undefined;
  afterAll(async () => {
    if (dir && process.env.CHOKAQ_E2E_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
    if (!pgAvailable()) return;
    const client = new Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
    await client.end();
  });

  run(
    'installs into a fresh app with its peers and runs a job',
    () => {
      execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'pipe' });
      dir = mkdtempSync(join(tmpdir(), 'chokaq-pack-'));
      execFileSync(
        'npm',
        ['pack', './libs/chokaq', '--pack-destination', dir, '--ignore-scripts'],
        { cwd: ROOT, stdio: 'pipe' },
      );
      const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
      expect(tarball).toBe('chokaq-nestjs-0.1.0.tgz');
      const app = join(dir, 'app');
      execFileSync('mkdir', ['-p', app]);
      const deps: Record<string, string> = { '@chokaq/nestjs': `file:../${tarball}` };
      for (const pkg of [
        '@nestjs/common',
        '@nestjs/core',
        '@nestjs/schedule',
        'typeorm',
        'pg',
        'reflect-metadata',
        'rxjs',
      ]) {
        deps[pkg] = version(pkg);
      }
      writeFileSync(
        join(app, 'package.json'),
        JSON.stringify(
          {
            name: 'chokaq-pack-check',
            private: true,
            dependencies: deps,
          },
          null,
          2,
        ),
      );
      writeFileSync(join(app, 'main.js'), APP);
      const install = spawnSync(
        'npm',
        ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'],
        {
          cwd: app,
          encoding: 'utf8',
          timeout: 400_000,
        },
      );
      if (install.status !== 0)
        throw new Error(`npm install failed (${install.status}):\n${install.stderr}`);
      const result = spawnSync(process.execPath, ['main.js'], {
        cwd: app,
        env: { ...process.env, PG_URL, PG_SCHEMA: SCHEMA },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(result.stderr).toBe('');
      expect(JSON.parse(result.stdout.trim().split('\n').pop()!)).toEqual({
        pillar: 'archive',
        ran: 1,
      });
    },
    600_000,
  );
});
