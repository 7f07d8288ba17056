import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as api from './index';
import * as storageApi from './storage';

/** The committed API report of an entry point (`npm run api:report` writes them). */
function report(name: 'root' | 'storage' | 'deck' | 'health'): string {
  return readFileSync(join(__dirname, '..', 'api', `${name}.public.api.md`), 'utf8');
}

/** The runtime names an API report declares: its classes, functions, enums and constants. */
function valueNames(text: string): string[] {
  const names = [
    ...text.matchAll(
      /^export (?:declare )?(?:abstract )?(?:class|function|enum|const|let) (\w+)/gm,
    ),
  ];
  return [...new Set(names.map((match) => match[1]))].sort();
}

/**
 * The public API. `npm run api:check` (part of `npm test`) holds every exported name and signature
 * to the committed reports in libs/chokaq/api/; these tests hold the running entry points to the
 * same reports, so the two cannot drift. A change here is a change of the published package:
 * update the README and the changelog with it.
 */
describe('public API (index.ts)', () => {
  it('exports at run time exactly the values its API report declares', () => {
    expect(Object.keys(api).sort()).toEqual(valueNames(report('root')));
  });

  it('keeps the application surface at the root and the storage protocol at its subpath', () => {
    const root = report('root');
    for (const name of ['ChokaQModule', 'JobClient', 'ChokaQAdmin', 'ChokaQTesting', 'JobEvents']) {
      expect(root).toMatch(new RegExp(`^export (class|const) ${name}\\b`, 'm'));
    }
    // The worker's half of the protocol is not an application's business.
    for (const name of ['JobStorage', 'JobStore', 'JobLease', 'FetchRequest', 'CompletedJob']) {
      expect(root).not.toMatch(new RegExp(`^export (type|interface) ${name}\\b`, 'm'));
      expect(report('storage')).toMatch(new RegExp(`^export (type|interface) ${name}\\b`, 'm'));
    }
    // No mutable registry is exported.
    expect(root).not.toMatch(/^export class \w*Registry\b/m);
    // Nest builds ChokaQAdmin and JobClient: their constructors are not part of the API.
    expect(root).not.toMatch(/constructor\(storage: JobStorage/);
  });

  it('exports from @chokaq/nestjs/storage every type the protocol mentions', () => {
    // API Extractor marks a type that a signature uses but the entry point does not export.
    expect(report('storage')).not.toContain('ae-forgotten-export');
    expect(Object.keys(storageApi).sort()).toEqual(valueNames(report('storage')));
    expect(storageApi.JobStatus).toBe(api.JobStatus);
  });

  it('exposes forRoot and forRootAsync', () => {
    expect(typeof api.ChokaQModule.forRoot).toBe('function');
    expect(typeof api.ChokaQModule.forRootAsync).toBe('function');
  });

  it('keeps the contract codes of SPEC §2', () => {
    expect(api.JobStatus).toMatchObject({
      Pending: 0,
      Fetched: 1,
      Processing: 2,
      Succeeded: 3,
      Failed: 4,
      Cancelled: 5,
      Zombie: 6,
    });
    expect(api.FailureReason).toMatchObject({
      MaxRetriesExceeded: 0,
      Cancelled: 1,
      Zombie: 2,
      CircuitBreakerOpen: 3,
      Throttled: 5,
      FatalError: 6,
      Timeout: 7,
      HeartbeatFailure: 9,
      RetryLifetimeExpired: 10,
      NoHandler: 11,
    });
  });

  it('makes every error a ChokaQError', () => {
    for (const [name, value] of Object.entries(api)) {
      if (name.endsWith('Error') && name !== 'ChokaQError') {
        expect((value as { prototype: unknown }).prototype).toBeInstanceOf(api.ChokaQError);
      }
    }
  });
});
