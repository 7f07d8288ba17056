#!/usr/bin/env node
// The static checks of `npm test` (what `npm run lint` and `npm run typecheck` run), in two lanes at
// once: each tool is single-threaded, so on a machine with two cores or more the checks take about
// half as long as one after the other. Each lane stops at its first failure; a lane's output is
// printed when it ends, so the two never interleave. Exits non-zero when any check failed.
'use strict';

const { spawn } = require('node:child_process');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');
const bin = (name) => join(ROOT, 'node_modules', '.bin', name);

/** Two lanes of about the same length on this project (each about 25 s on a 2-core machine). */
const LANES = [
  [
    ['eslint', [bin('eslint'), '.']],
    ['tsc (project)', [bin('tsc'), '-p', 'tsconfig.json', '--noEmit']],
  ],
  [
    ['prettier', [bin('prettier'), '--check', '.']],
    ['tsc (TypeORM 0.3 types)', [bin('tsc'), '-p', 'libs/chokaq/tsconfig.typeorm-0.3.json']],
    ['deck vendor files', [process.execPath, join(__dirname, 'deck-assets.js'), 'vendor']],
    ['tsc (the Deck)', [bin('tsc'), '-p', 'libs/chokaq/tsconfig.deck.json']],
  ],
];

function run(label, [command, ...args]) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    child.once('error', (error) => resolve({ label, code: 1, out: `${out}${error.message}\n` }));
    child.once('close', (code) => resolve({ label, code: code ?? 1, out }));
  });
}

async function lane(steps) {
  const results = [];
  for (const [label, command] of steps) {
    const started = Date.now();
    const result = await run(label, command);
    results.push({ ...result, ms: Date.now() - started });
    if (result.code !== 0) break;
  }
  return results;
}

(async () => {
  const lanes = await Promise.all(LANES.map(lane));
  let failed = false;
  for (const result of lanes.flat()) {
    const verdict = result.code === 0 ? 'ok' : `FAILED (exit ${result.code})`;
    process.stdout.write(`> ${result.label}: ${verdict}, ${(result.ms / 1000).toFixed(1)} s\n`);
    if (result.code !== 0) {
      failed = true;
      process.stdout.write(result.out);
    }
  }
  process.exitCode = failed ? 1 : 0;
})();
