#!/usr/bin/env node
// Copies The Deck's browser files into place, with no bundler:
//   node scripts/deck-assets.js vendor      the third-party ES modules and styles, from their npm
//                                           packages into libs/chokaq/src/deck/assets/vendor (run
//                                           before npm start, npm test and the build);
//   node scripts/deck-assets.js dist <dir>  every Deck asset into <dir>/deck/assets of a build.
// htm's preact/standalone module carries Preact 10 and its hooks in one file, so the browser needs
// no bare-specifier resolution and no import map (which the Deck's CSP would refuse inline).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const ASSETS = path.join(ROOT, 'libs/chokaq/src/deck/assets');
const VENDOR = path.join(ASSETS, 'vendor');

/** What goes into vendor/, from which package file. */
const VENDORED = [
  ['htm/preact/standalone.module.js', 'preact-htm.js'],
  ['uplot/dist/uPlot.esm.js', 'uplot.js'],
  ['uplot/dist/uPlot.min.css', 'uplot.css'],
];

/** Whose licence notices ship beside them (the standalone module bundles Preact). */
const LICENSED = ['htm', 'preact', 'uplot'];

/** The installed package's folder (found as Node would, upwards from the checkout). */
function packageDir(name) {
  for (let dir = ROOT; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`${name} is not installed (run npm install)`);
  }
}

function vendor() {
  fs.mkdirSync(VENDOR, { recursive: true });
  for (const [from, to] of VENDORED) {
    const [pkg, ...rest] = from.split('/');
    fs.copyFileSync(path.join(packageDir(pkg), ...rest), path.join(VENDOR, to));
  }
  const notices = LICENSED.map((name) => {
    const dir = packageDir(name);
    const { version, license } = JSON.parse(
      fs.readFileSync(path.join(dir, 'package.json'), 'utf8'),
    );
    const file = fs.readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
    const text = file ? fs.readFileSync(path.join(dir, file), 'utf8').trim() : `${license}`;
    return `${name} ${version} (${license})\n\n${text}\n`;
  });
  fs.writeFileSync(
    path.join(VENDOR, 'LICENSES.txt'),
    `Third-party code shipped with The Deck, with its licence notices.\n\n${notices.join('\n---\n\n')}`,
  );
}

function dist(outDir) {
  if (!fs.existsSync(path.join(VENDOR, 'preact-htm.js'))) vendor();
  fs.cpSync(ASSETS, path.join(path.resolve(outDir), 'deck/assets'), { recursive: true });
}

const [command, dir] = process.argv.slice(2);
if (command === 'vendor') vendor();
else if (command === 'dist' && dir) dist(dir);
else {
  process.stderr.write('usage: node scripts/deck-assets.js vendor | dist <dir>\n');
  process.exit(2);
}
