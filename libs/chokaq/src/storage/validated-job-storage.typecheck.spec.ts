/**
 * Compile-time contract of the validating edge's two halves: `npm run typecheck` fails if the
 * `@ts-expect-error` line below stops being an error. The edge calls every read on the queries
 * half by name, so a store that defines a read too would hold a method nothing calls; the edge's
 * `store` parameter (`DialectJobStore & NoReads`) refuses it. The Jest part only proves the file
 * loads.
 */
import type { SqlStorageConfig } from './storage-config';
import type { DialectJobQueries, DialectJobStore } from './dialect-job-storage';
import { ValidatedJobStorage } from './validated-job-storage';

/** Builds the edge over two halves; never called, only type-checked. */
export function edgeOver(
  store: DialectJobStore,
  greedy: DialectJobStore & { getJob(id: string): Promise<null> },
  queries: DialectJobQueries,
  config: SqlStorageConfig,
): ValidatedJobStorage[] {
  return [
    new ValidatedJobStorage(store, queries, config),
    // @ts-expect-error a store that also defines a read (getJob) is refused
    new ValidatedJobStorage(greedy, queries, config),
  ];
}

describe('ValidatedJobStorage halves (compile-time)', () => {
  it('loads', () => {
    expect(typeof edgeOver).toBe('function');
  });
});
