import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/*
 * The layering of libs/chokaq/src (docs/architecture.md) is held by ESLint zones in
 * eslint.config.mjs, which `npm test` runs through `npm run lint`. This spec proves the zones bite:
 * each case lints a one-line import, placed at a path inside the library, with the repository's own
 * configuration, and expects the layering rule to refuse it or to let it pass. It also checks that
 * every folder of the library has a zone, so a new folder cannot escape the rule unnoticed.
 */

const ROOT = join(__dirname, '..', '..');
const SRC = 'libs/chokaq/src';

type Expectation = 'refused' | 'allowed';

/**
 * [file the import is written in, the import path, what the layering rule must do, and the name
 * imported when it matters (else `probe`)].
 */
const CASES: ReadonlyArray<[string, string, Expectation, string?]> = [
  // The upward imports this layout removed.
  ['storage/postgres/pg-listener.ts', '../../runtime/backoff', 'refused'],
  ['decorators/job-handler.decorator.ts', '../runtime/job-context', 'refused'],
  ['decorators/job-handler.decorator.ts', '../discovery/handler-definition', 'refused'],
  ['config/resolve-options.ts', '../storage/storage-options', 'refused'],
  ['validation/option-rules.ts', '../config/resolve-options', 'refused'],
  // Storage never imports what sits above it.
  ['storage/create-storage.ts', '../runtime/loop', 'refused'],
  ['storage/sqlite/sqlite-job-store.ts', '../../discovery/handler.registry', 'refused'],
  ['storage/shared/page.ts', '../../client/job-client', 'refused'],
  ['storage/job-storage.ts', '../admin/chokaq-admin.service', 'refused'],
  ['storage/job-storage.ts', '../testing/chokaq-testing', 'refused'],
  ['storage/job-storage.ts', '../chokaq.orchestrator', 'refused'],
  ['storage/job-storage.ts', '../chokaq.module', 'refused'],
  ['storage/job-storage.ts', '../worker.registry', 'refused'],
  ['storage/mssql/sql/fragments.ts', '../../../validation/limits', 'allowed'],
  ['storage/create-storage.ts', '../config/storage-defaults', 'allowed'],
  // The ground floor and the decorators import none of runtime, discovery or storage.
  ['interfaces/job.interface.ts', '../storage/job-storage', 'refused'],
  ['interfaces/job.interface.ts', '../validation/limits', 'refused'],
  ['common/jitter.ts', '../runtime/backoff', 'refused'],
  ['errors/chokaq.error.ts', '../discovery/chokaq.explorer', 'refused'],
  ['decorators/job-definition.ts', '../storage/job-storage', 'refused'],
  ['decorators/job-definition.ts', '../validation/validate-job', 'allowed'],
  ['interfaces/handler.interface.ts', './job.interface', 'allowed'],
  ['interfaces/handler.interface.ts', '../errors', 'allowed'],
  // Metrics: recorded by the runtime and above; the instruments know neither storage nor runtime.
  ['runtime/job-processor.ts', '../observability/chokaq-metrics', 'allowed'],
  ['client/job-client.ts', '../observability/chokaq-metrics', 'allowed'],
  ['observability/chokaq-metrics.ts', '../common/log-events', 'allowed'],
  ['observability/chokaq-metrics.ts', '../storage/job-storage', 'refused'],
  ['observability/queue-gauges.ts', '../runtime/job-processor', 'refused'],
  ['observability/chokaq-metrics.ts', '../config/resolve-options', 'refused'],
  ['storage/postgres/postgres-job-store.ts', '../../observability/chokaq-metrics', 'refused'],
  // Traces: spans started by the runtime, contexts captured by the client; the tracing knows the
  // rule of a stored context only through the client, which fits it (validation/trace-context).
  ['runtime/job-executor.ts', '../observability/chokaq-tracing', 'allowed'],
  ['client/job-client.ts', '../validation/trace-context', 'allowed'],
  ['observability/chokaq-tracing.ts', '../validation/trace-context', 'refused'],
  ['storage/sqlite/sqlite-job-store.ts', '../../observability/chokaq-tracing', 'refused'],
  ['common/log-events.ts', '../observability/chokaq-metrics', 'refused'],
  // The runtime uses only the storage interface.
  ['runtime/job-processor.ts', '../storage/job-storage', 'allowed'],
  // ...and of it only the write half: the reads are for operators.
  ['runtime/job-processor.ts', '../storage/job-storage', 'allowed', 'JobStore'],
  ['runtime/job-processor.ts', '../storage/job-storage', 'refused', 'JobStorage'],
  ['runtime/job-processor.ts', '../storage/job-storage', 'refused', 'JobQueries'],
  ['runtime/job-processor.ts', '../storage/postgres/postgres-job-store', 'refused'],
  ['runtime/job-processor.ts', '../storage/create-storage', 'refused'],
  ['runtime/job-processor.ts', '../storage/shared/page', 'refused'],
  ['runtime/job-processor.ts', '../discovery/handler.registry', 'refused'],
  ['client/job-client.ts', '../storage/sqlite/sqlite-job-store', 'refused'],
  // Only the module imports the orchestrator; the producer APIs read the registry.
  ['chokaq.module.ts', './chokaq.orchestrator', 'allowed'],
  ['worker.registry.ts', './chokaq.orchestrator', 'refused'],
  ['client/job-client.ts', '../chokaq.orchestrator', 'refused'],
  ['admin/chokaq-admin.service.ts', '../chokaq.orchestrator', 'refused'],
  ['testing/chokaq-testing.ts', '../chokaq.orchestrator', 'refused'],
  ['client/job-client.ts', '../worker.registry', 'allowed'],
  // The CLI prints DDL without TypeORM: only its admin session opens a database, through the
  // storage factory and the operator API; nothing in the library imports itself by its alias.
  ['cli/commands/schema.command.ts', '../../storage/create-storage', 'refused'],
  ['cli/commands/schema.command.ts', '../../storage/postgres/postgres.schema', 'allowed'],
  ['cli/commands/stats.command.ts', '../../admin/chokaq-admin.service', 'allowed'],
  ['cli/commands/stats.command.ts', '../../worker.registry', 'refused'],
  ['cli/connection/admin-session.ts', '../../storage/create-storage', 'allowed'],
  ['cli/connection/admin-session.ts', '../../worker.registry', 'allowed'],
  ['cli/connection/admin-session.ts', '../../storage/postgres/postgres-job-store', 'refused'],
  ['cli/connection/admin-session.ts', '../../storage/sqlite/sqlite-admin-store', 'refused'],
  ['cli/commands/schema.command.ts', '../../storage/mssql/mssql-admin-store', 'refused'],
  ['cli/connection/admin-session.ts', '../../runtime/chokaq-worker', 'refused'],
  ['runtime/loop.ts', '@chokaq/nestjs', 'refused'],
  // The Deck sits on the admin API and adds no SQL; nothing in the core imports the Deck.
  ['deck/deck-api.controller.ts', '../admin/chokaq-admin.service', 'allowed'],
  ['deck/deck-input.ts', '../interfaces/job-view.interface', 'allowed'],
  ['deck/deck-api.controller.ts', '../storage/job-storage', 'refused'],
  ['deck/deck-api.controller.ts', '../storage/postgres/postgres-job-queries', 'refused'],
  ['deck/deck-snapshot.service.ts', '../runtime/job-processor', 'refused'],
  ['deck/deck.module.ts', '../chokaq.module', 'refused'],
  ['deck/deck.module.ts', '../worker.registry', 'refused'],
  ['admin/chokaq-admin.service.ts', '../deck/deck.module', 'refused'],
  ['chokaq.module.ts', './deck', 'refused'],
  ['index.ts', './deck/deck.module', 'refused'],
  // The health checks (subpath @chokaq/nestjs/health, optional @nestjs/terminus): nothing of the
  // core imports them, and they read ChokaQ through ChokaQAdmin only.
  ['index.ts', './health', 'refused'],
  ['chokaq.module.ts', './health/chokaq-health.module', 'refused'],
  ['admin/chokaq-admin.service.ts', '../health/chokaq-health.indicator', 'refused'],
  ['storage/job-storage.ts', '../health/shared-probe', 'refused'],
  ['interfaces/job.interface.ts', '../health/chokaq-health.indicator', 'refused'],
  ['health/chokaq-health.indicator.ts', '../admin/chokaq-admin.service', 'allowed'],
  ['health/chokaq-health.indicator.ts', '../validation/validate-health', 'allowed'],
  ['health/chokaq-health.indicator.ts', '../worker.registry', 'refused'],
  ['health/chokaq-health.indicator.ts', '../storage/job-storage', 'refused'],
  ['health/chokaq-health.indicator.ts', '../index', 'refused'],
  ['health/chokaq-health.indicator.ts', '../deck/deck.module', 'refused'],
  ['deck/deck.module.ts', '../health/chokaq-health.module', 'refused'],
];

interface LintOutput {
  lint: Array<{ filePath: string; messages: Array<{ ruleId: string | null; message: string }> }>;
  configs: Array<{ filePath: string; rule: unknown }>;
}

/** The top-level folders of the library. */
const FOLDERS = readdirSync(join(ROOT, SRC), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

let output: LintOutput;

beforeAll(() => {
  const input = {
    texts: CASES.map(([file, path, , name]) => ({
      filePath: `${SRC}/${file}`,
      text: `import { ${name ? `${name} as probe` : 'probe'} } from '${path}';\n\nexport const used = probe;\n`,
    })),
    configFor: [...FOLDERS.map((folder) => `${SRC}/${folder}/any.ts`), `${SRC}/any.ts`],
  };
  const child = spawnSync(process.execPath, [join(__dirname, 'support', 'lint-texts.mjs')], {
    cwd: ROOT,
    input: JSON.stringify(input),
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (child.status !== 0) throw new Error(`ESLint failed: ${child.stderr || String(child.error)}`);
  output = JSON.parse(child.stdout) as LintOutput;
}, 150_000);

describe('the layering zones of eslint.config.mjs', () => {
  it.each(CASES.map(([f, p, e, n], i) => [f, n ? `${n} from ${p}` : p, e, i] as const))(
    '%s importing %s: %s',
    (_f, _p, expected, i) => {
      const result = output.lint[i];
      const refusals = result.messages.filter((m) => m.ruleId === 'no-restricted-imports');
      if (expected === 'refused') {
        expect(refusals).toHaveLength(1);
        expect(refusals[0].message).toContain('docs/architecture.md');
      } else {
        expect(refusals).toEqual([]);
      }
      // Nothing else in the probe text may fail, or a refusal could hide behind another error.
      expect(result.messages.filter((m) => m.ruleId !== 'no-restricted-imports')).toEqual([]);
    },
  );

  it('has a zone for every folder of the library and for its root files', () => {
    expect(FOLDERS.length).toBeGreaterThan(10);
    for (const { filePath, rule } of output.configs) {
      expect({ filePath, level: Array.isArray(rule) ? rule[0] : rule }).toEqual({
        filePath,
        level: 2,
      });
    }
  });
});
