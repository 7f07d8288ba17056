import type { DialectJobQueries, DialectJobStorage, DialectJobStore } from './dialect-job-storage';
import type { JobQueries } from './job-storage';

/** The methods of `JobQueries`, by name: what the composition takes from the read half. */
const QUERY_METHODS = [
  'getJob',
  'listActive',
  'listArchive',
  'listDlq',
  'getSummary',
  'getQueueStats',
  'getQueueHealth',
  'getQueueOutcomes',
  'getThroughput',
  'getThroughputSeries',
  'getTopDlqErrors',
  'countExactly',
  'previewDlqFilter',
  'listWorkers',
  'getAuditLog',
] as const satisfies readonly (keyof JobQueries)[];

/** Fails to compile when `JobQueries` gains a method that {@link QUERY_METHODS} does not list. */
type Unlisted = Exclude<keyof JobQueries, (typeof QUERY_METHODS)[number]>;
const everyQueryListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyQueryListed;

type Method = (...args: unknown[]) => unknown;

/**
 * Joins a dialect's two halves, its store (writes and lifecycle) and its queries (reads), into the
 * one {@link DialectJobStorage} that the validating edge wraps. Every dialect folder has the same
 * shape (`<d>-job-store.ts` and `<d>-job-queries.ts` over one `<d>.connection.ts`), so this is the
 * one place that puts them together.
 *
 * Each method is bound to its half once, here, so a call through the composition costs what a
 * direct call does; the halves keep their own state (nothing is copied but `dialect` and the store's capability flags). A read the
 * store defines too is a mistake of the dialect, refused at once.
 */
export function composeJobStorage(
  store: DialectJobStore,
  queries: DialectJobQueries,
): DialectJobStorage {
  // The store's capabilities are read by the worker through the edge: they travel with it.
  const composed: Record<string, unknown> = {
    dialect: store.dialect,
    reportsRateLimitWait: store.reportsRateLimitWait,
    startsAhead: store.startsAhead,
  };
  for (const name of methodNames(store)) {
    composed[name] = (store as unknown as Record<string, Method>)[name].bind(store);
  }
  for (const name of QUERY_METHODS) {
    if (name in composed) throw new Error(`The store of a JobStorage defines the read ${name}`);
    composed[name] = (queries as unknown as Record<string, Method>)[name].bind(queries);
  }
  return composed as unknown as DialectJobStorage;
}

/** The methods of an instance's classes (up to, not including, `Object.prototype`). */
function methodNames(instance: object): string[] {
  const names = new Set<string>();
  for (
    let proto: object | null = Object.getPrototypeOf(instance);
    proto !== null && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const value = Object.getOwnPropertyDescriptor(proto, name)?.value;
      if (name !== 'constructor' && typeof value === 'function') names.add(name);
    }
  }
  return [...names];
}
