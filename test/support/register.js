/**
 * The TypeScript loader of the processes the tests start (`node -r ./test/support/register.js`):
 * workers, fault fixtures, the chaos runner. It compiles with SWC and the options of `.swcrc`, as
 * Jest's transform does, and keeps each compiled file on disk, keyed by its path, its content and
 * the options, so the hundreds of processes a test run starts compile the library once rather
 * than each on its own start (a start through @swc-node/register cost about 0.4 s of CPU more).
 * The workspace's path aliases (`@chokaq/nestjs`) resolve as in the tsconfig.
 *
 * CHOKAQ_TS_CACHE names the cache directory (default: `chokaq-ts-cache` under the OS temp dir);
 * CHOKAQ_TS_SOURCE_MAPS=1 makes stack traces point into the TypeScript source.
 */
'use strict';

const { createHash } = require('node:crypto');
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const Module = require('node:module');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const ROOT = join(__dirname, '..', '..');
const SWCRC = readFileSync(join(ROOT, '.swcrc'), 'utf8');
const CACHE = process.env.CHOKAQ_TS_CACHE || join(tmpdir(), 'chokaq-ts-cache');
const ALIAS = '@chokaq/nestjs';
const LIBRARY = join(ROOT, 'libs', 'chokaq', 'src');

let swc;
let options;

function compile(source, filename) {
  swc ??= require('@swc/core');
  options ??= { ...JSON.parse(SWCRC), swcrc: false, sourceMaps: 'inline' };
  return swc.transformSync(source, { ...options, filename }).code;
}

function compiled(source, filename) {
  const key = createHash('sha1').update(SWCRC).update(filename).update(source).digest('hex');
  const file = join(CACHE, `${key}.js`);
  try {
    return readFileSync(file, 'utf8');
  } catch {
    const code = compile(source, filename);
    mkdirSync(CACHE, { recursive: true });
    // Written whole, then renamed: a process starting at the same moment reads all or nothing.
    const partial = `${file}.${process.pid}.tmp`;
    writeFileSync(partial, code);
    renameSync(partial, file);
    return code;
  }
}

Module._extensions['.ts'] = function loadTypeScript(module, filename) {
  module._compile(compiled(readFileSync(filename, 'utf8'), filename), filename);
};

const resolve = Module._resolveFilename;
Module._resolveFilename = function resolveAlias(request, ...rest) {
  const aliased = request === ALIAS || request.startsWith(`${ALIAS}/`);
  return resolve.call(this, aliased ? LIBRARY + request.slice(ALIAS.length) : request, ...rest);
};

// Source maps are kept in the compiled files but applied only on request: applying them costs
// every process start about 0.1 s of CPU, for stack traces that rarely matter.
if (process.env.CHOKAQ_TS_SOURCE_MAPS === '1') process.setSourceMapsEnabled(true);
