#!/usr/bin/env node
// The static checks of `npm test`: `npm run lint` (ESLint, Prettier), `npm run typecheck` (the
// tsc projects) and `npm run api:check` (the public API against its committed reports) at once.
// Each tool is single-threaded, so on a machine with two cores or more they take little longer
// than the longest (about 25 s here). A check's output is printed when it ends, so they never
// interleave. Exits non-zero when any failed.
'use strict';

const { spawn } = require('node:child_process');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(script) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(NPM, ['run', '--silent', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    const done = (code, extra = '') =>
      resolve({ script, code, out: `${out}${extra}`, ms: Date.now() - started });
    child.once('error', (error) => done(1, `${error.message}\n`));
    child.once('close', (code) => done(code ?? 1));
  });
}

(async () => {
  const results = await Promise.all(['lint', 'typecheck', 'api:check'].map(run));
  for (const { script, code, out, ms } of results) {
    const verdict = code === 0 ? 'ok' : `FAILED (exit ${code})`;
    process.stdout.write(`> npm run ${script}: ${verdict}, ${(ms / 1000).toFixed(1)} s\n`);
    if (code !== 0) process.stdout.write(out);
  }
  process.exitCode = results.every(({ code }) => code === 0) ? 0 : 1;
})();
