#!/usr/bin/env node
// The API reports of the published package: one Markdown file per entry point under
// libs/chokaq/api/, written by API Extractor from the library's declaration files, listing every
// exported name with its signature. `npm test` runs this in check mode (through scripts/checks.js):
// a change of the public surface that is not in the committed reports fails, so it shows in review.
// `npm run api:report` rewrites the reports after a deliberate change (say it in the changelog).
'use strict';

const { spawnSync } = require('node:child_process');
const { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const { basename, join } = require('node:path');
const { Extractor, ExtractorConfig } = require('@microsoft/api-extractor');

const ROOT = join(__dirname, '..');
const LIB = join(ROOT, 'libs/chokaq');
// Declarations are emitted under a fixed folder of the checkout (ignored by git and the linters),
// so the reports' file references are the same on every machine; not under node_modules, whose
// files count as other packages.
const WORK = join(ROOT, 'dist/api-report');
const DTS = join(WORK, 'dts');

/** Entry points of libs/chokaq/package.json's "exports", by report name. */
const ENTRY_POINTS = {
  root: 'index.d.ts',
  storage: 'storage/index.d.ts',
  deck: 'deck/index.d.ts',
  health: 'health/index.d.ts',
};

const update = process.argv.includes('--update');
process.chdir(ROOT);

rmSync(DTS, { recursive: true, force: true });
const tsc = spawnSync(
  process.execPath,
  [
    require.resolve('typescript/bin/tsc'),
    ...['-p', 'libs/chokaq/tsconfig.lib.json', '--emitDeclarationOnly', '--outDir', DTS],
    ...['--declarationMap', 'false', '--sourceMap', 'false', '--inlineSources', 'false'],
  ],
  { stdio: 'inherit' },
);
if (tsc.status !== 0) process.exit(tsc.status ?? 1);

const COMMITTED = join(LIB, 'api');
const GENERATED = join(WORK, 'reports');
mkdirSync(GENERATED, { recursive: true });

const configFor = (name, entry) =>
  ExtractorConfig.prepare({
    configObject: {
      projectFolder: WORK,
      mainEntryPointFilePath: join(DTS, entry),
      compiler: { tsconfigFilePath: join(LIB, 'tsconfig.lib.json') },
      apiReport: {
        enabled: true,
        // The public variant leaves out what is marked @internal (constructors Nest calls).
        reportVariants: ['public'],
        reportFileName: name,
        reportFolder: GENERATED,
        reportTempFolder: join(WORK, 'temp'),
      },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        compilerMessageReporting: { default: { logLevel: 'warning' } },
        extractorMessageReporting: {
          default: { logLevel: 'warning' },
          // Kept in the report, where a reviewer sees a type the entry point uses but does not
          // export (for the storage entry, a test requires there are none).
          'ae-forgotten-export': { logLevel: 'none', addToApiReportFile: true },
          // The library's docs are its READMEs: no release tags, no TSDoc link resolution.
          'ae-missing-release-tag': { logLevel: 'none' },
          'ae-undocumented': { logLevel: 'none' },
          'ae-unresolved-link': { logLevel: 'none' },
        },
        tsdocMessageReporting: { default: { logLevel: 'none' } },
      },
    },
    configObjectFullPath: join(LIB, 'api-extractor.json'),
    packageJsonFullPath: join(LIB, 'package.json'),
  });

const changed = [];
for (const [name, entry] of Object.entries(ENTRY_POINTS)) {
  // One program per entry point: a program shared by several treats the others' files as
  // another package and reports their names as imports.
  const config = configFor(name, entry);
  const result = Extractor.invoke(config, {
    localBuild: true,
    messageCallback: (message) => {
      // The report is compared below, after its file paths are made relative.
      if (message.messageId.startsWith('console-api-report')) message.handled = true;
    },
  });
  if (!result.succeeded) process.exit(1);
  const file = basename(config.reportConfigs[0].fileName);
  // Warnings outside any declaration name their file by absolute path: make it the checkout's.
  const report = readFileSync(join(GENERATED, file), 'utf8').split(`${DTS}/`).join('');
  const target = join(COMMITTED, file);
  const committed = existsSync(target) ? readFileSync(target, 'utf8') : null;
  if (report === committed) continue;
  changed.push(file);
  if (update) {
    mkdirSync(COMMITTED, { recursive: true });
    writeFileSync(target, report);
  } else {
    writeFileSync(join(GENERATED, file), report);
    spawnSync('git', ['diff', '--no-index', '--', target, join(GENERATED, file)], {
      stdio: 'inherit',
    });
  }
}
if (update) {
  process.stdout.write(
    changed.length ? `Rewrote ${changed.join(', ')}\n` : 'API reports unchanged\n',
  );
} else if (changed.length > 0) {
  process.stderr.write(
    `The public API differs from libs/chokaq/api/ (${changed.join(', ')}). If the change is ` +
      'deliberate, run `npm run api:report`, commit the reports and say it in the changelog.\n',
  );
  process.exit(1);
}
