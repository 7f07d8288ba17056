// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/*
 * The layering of the library (docs/architecture.md), held by `no-restricted-imports`: each folder
 * of libs/chokaq/src lists what it must not import. Imports inside the library are relative, so a
 * target is matched as the first folder (or root file) after the leading `../` steps. Specs are
 * left out: a test may reach across floors to set up what it checks. test/architecture proves
 * that each zone refuses an upward import and that no folder of the library is left without one.
 */
const SRC = 'libs/chokaq/src';

/** One forbidden target: a regex on the import path and why it is refused. */
const target = (name, path, why) => ({ name, path, why });

/** A relative import whose first named segment is `path` (a folder or a root file). */
const under = (path) => `^(\\.\\./)+${path}(/|$)`;

const T = {
  validation: target('validation/', under('validation'), 'validation sits above the ground floor'),
  config: target(
    'config/',
    under('config'),
    'config reads defaults and rules, not the other way round',
  ),
  decorators: target('decorators/', under('decorators'), 'decorators only write metadata'),
  observability: target(
    'observability/',
    under('observability'),
    'metrics and traces are recorded by the runtime and the APIs above it, not by the floors below',
  ),
  storage: target('storage/', under('storage'), 'storage sits above this floor'),
  storageBeyondInterface: target(
    'storage/ beyond its interface',
    '^(\\.\\./)+storage/(?!job-storage$)',
    'above storage only the JobStorage interface (storage/job-storage.ts) may be imported; a dialect, create-storage or storage/shared is the storage’s own business',
  ),
  readHalf: {
    ...target(
      'the read half of the storage (JobStorage, JobQueries)',
      '^(\\.\\./)+storage/job-storage$',
      'the runtime writes and claims through JobStore only; the reads are for operators (client, admin)',
    ),
    importNames: ['JobStorage', 'JobQueries'],
  },
  runtime: target('runtime/', under('runtime'), 'the runtime sits above this floor'),
  discovery: target('discovery/', under('discovery'), 'discovery sits above this floor'),
  client: target('client/', under('client'), 'the producer API sits at the top'),
  admin: target('admin/', under('admin'), 'the admin API sits at the top'),
  testing: target('testing/', under('testing'), 'the testing API sits at the top'),
  cli: target('cli/', under('cli'), 'the CLI is an entry point; nothing imports it'),
  constants: target(
    'chokaq.constants',
    under('chokaq\\.constants'),
    'tokens belong to the Nest layer',
  ),
  nestLayer: target(
    'the module, its definition, the scheduler adapter or the index',
    `^(\\.\\./)+(chokaq\\.module|chokaq\\.module-definition|scheduler-registry\\.adapter|index)$|^\\.\\.(/\\.\\.)*/?$`,
    'the Nest layer sits at the top',
  ),
  registry: target(
    'worker.registry',
    under('worker\\.registry'),
    'only the orchestrator and the producer APIs (client, admin, testing) share the running worker',
  ),
  orchestrator: target(
    'chokaq.orchestrator',
    '(^|/)chokaq\\.orchestrator$',
    'only chokaq.module.ts imports the orchestrator; the others read the worker registry',
  ),
  createStorage: target(
    'storage/create-storage or a dialect class',
    '^(\\.\\./)+storage/(create-storage|(postgres|mssql|sqlite)/([a-z]+-job-(storage|store|queries)|[a-z]+-admin-store|[a-z]+\\.connection))$',
    'the CLI loads TypeORM and a driver only in cli/connection/admin-session.ts, when a command opens the database',
  ),
  dialectClasses: target(
    'a dialect class',
    '^(\\.\\./)+storage/(postgres|mssql|sqlite)/([a-z]+-job-(storage|store|queries)|[a-z]+-admin-store|[a-z]+\\.connection)$',
    'the CLI opens a database through the storage factory (createJobStorage), as an app does',
  ),
  deck: target(
    'deck/',
    '^(\\./|(\\.\\./)+)deck(/|$)',
    'the Deck is an entry point of its own (the ./deck subpath); nothing in the core imports it',
  ),
  health: target(
    'health/',
    '^(\\./|(\\.\\./)+)health(/|$)',
    'the health checks are an entry point of their own (the ./health subpath), built on the optional @nestjs/terminus; nothing in the core imports them',
  ),
  storageAny: target(
    'storage/',
    under('storage'),
    'the Deck adds no SQL: it reads and acts through ChokaQAdmin only',
  ),
  selfAlias: target(
    '@chokaq/nestjs',
    '^@chokaq/nestjs(/|$)',
    'the library imports itself by relative path (the alias does not resolve in the published package)',
  ),
};

/** What the ground floor (interfaces/, common/, errors/) must not import: any other folder. */
const GROUND = [
  T.validation,
  T.config,
  T.decorators,
  T.observability,
  T.storage,
  T.runtime,
  T.discovery,
  T.client,
  T.admin,
  T.testing,
  T.cli,
  T.constants,
  T.nestLayer,
  T.registry,
];

/** The top floor: the producer and operator APIs, the CLI and the Nest layer. */
const TOP = [T.client, T.admin, T.testing, T.cli, T.nestLayer, T.registry];

/** What each folder of the library must not import (every folder has a zone; a spec checks it). */
const ZONES = {
  interfaces: GROUND,
  common: GROUND,
  errors: GROUND,
  validation: GROUND.filter((t) => t !== T.validation),
  config: GROUND.filter((t) => t !== T.validation && t !== T.config),
  decorators: [T.config, T.observability, T.storage, T.runtime, T.discovery, ...TOP],
  // Beside validation and config: the ground floor only. Its gauges read the storage through a
  // function the Nest layer hands it, never through an import.
  observability: GROUND.filter((t) => t !== T.observability),
  storage: [T.runtime, T.discovery, T.decorators, T.observability, T.constants, ...TOP],
  runtime: [T.storageBeyondInterface, T.readHalf, T.discovery, T.decorators, T.constants, ...TOP],
  discovery: [T.storageBeyondInterface, ...TOP],
  client: [T.storageBeyondInterface, T.cli, T.nestLayer],
  admin: [T.storageBeyondInterface, T.cli, T.nestLayer],
  testing: [T.storageBeyondInterface, T.cli, T.nestLayer],
  // The CLI is built on the operator API (admin/); only admin-session.ts opens a database.
  cli: [
    T.createStorage,
    T.runtime,
    T.discovery,
    T.decorators,
    T.client,
    T.testing,
    T.nestLayer,
    T.registry,
  ],
  // The dashboard: above the admin API, which is all it uses of the engine.
  deck: [
    T.storageAny,
    T.runtime,
    T.discovery,
    T.decorators,
    T.observability,
    T.client,
    T.testing,
    T.cli,
    T.nestLayer,
    T.registry,
    T.constants,
  ],
  // The health checks (@nestjs/terminus): they read ChokaQ through ChokaQAdmin only (and the
  // interfaces, errors and validation below it), never the storage, the runtime or the registry.
  health: [
    T.config,
    T.storage,
    T.runtime,
    T.discovery,
    T.decorators,
    T.observability,
    T.client,
    T.testing,
    T.cli,
    T.nestLayer,
    T.registry,
    T.constants,
  ],
};

/**
 * The one file of the CLI that opens a database: the storage factory, the operator API over it and
 * the (empty) worker registry that API reads. The CLI loads it only when a command needs the
 * database, so `chokaq schema` loads no TypeORM.
 */
const CLI_SESSION = `${SRC}/cli/connection/admin-session.ts`;

/** The `no-restricted-imports` options of a zone: its forbidden targets, and the alias everywhere. */
const restrict = (folder, targets) => [
  'error',
  {
    patterns: [...targets, T.selfAlias].map((t) => ({
      regex: t.path,
      ...(t.importNames ? { importNames: t.importNames } : {}),
      message: `${folder} must not import ${t.name}: ${t.why} (docs/architecture.md).`,
    })),
  },
];

const layering = [
  ...Object.entries(ZONES).map(([folder, targets]) => ({
    files: [`${SRC}/${folder}/**/*.ts`],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': restrict(`${folder}/`, [
        ...targets,
        T.orchestrator,
        ...(folder === 'deck' ? [] : [T.deck]),
        ...(folder === 'health' ? [] : [T.health]),
      ]),
    },
  })),
  {
    files: [CLI_SESSION],
    rules: {
      'no-restricted-imports': restrict('cli/connection/admin-session.ts', [
        T.dialectClasses,
        T.runtime,
        T.discovery,
        T.decorators,
        T.client,
        T.testing,
        T.nestLayer,
        T.orchestrator,
        T.deck,
      ]),
    },
  },
  {
    // The root files (orchestrator, registry, adapters, index) sit at the top, with the module.
    files: [`${SRC}/*.ts`],
    ignores: ['**/*.spec.ts', `${SRC}/chokaq.module.ts`],
    rules: {
      'no-restricted-imports': restrict('a root file', [T.orchestrator, T.deck, T.health]),
    },
  },
  {
    files: [`${SRC}/chokaq.module.ts`],
    rules: { 'no-restricted-imports': restrict('chokaq.module.ts', [T.deck, T.health]) },
  },
];

/** The browser globals the Deck's code uses (listed, so a Node-only name is an error there). */
const DECK_BROWSER_GLOBALS = [
  'AbortController',
  'addEventListener',
  'Blob',
  'clearTimeout',
  'document',
  'fetch',
  'location',
  'removeEventListener',
  'sessionStorage',
  'setTimeout',
  'TextDecoder',
  'URL',
  'URLSearchParams',
];

export default tseslint.config(
  {
    // `.stryker-tmp` holds `npm run mutate`'s sandbox copies of the repository while it runs.
    ignores: [
      '**/dist/**',
      'node_modules/**',
      'coverage/**',
      '.stryker-tmp/**',
      'reports/**',
      '**/*.js',
      '**/*.mjs',
      // The Deck's own browser code is linted (below); its vendored Preact and uPlot are not.
      '!libs/chokaq/src/deck/assets/*.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-console': 'error',
    },
  },
  {
    // The Deck's browser code: ES modules run by the browser as written (no bundler), with the
    // browser's globals and none of Node's.
    files: [`${SRC}/deck/assets/*.js`],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(DECK_BROWSER_GLOBALS.map((name) => [name, 'readonly'])),
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'apps/**/*.ts', '**/*.spec.ts'],
    rules: { 'no-console': 'off' },
  },
  ...layering,
);
