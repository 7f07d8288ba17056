import type { BenchSystem } from '../systems/bench-system';

/**
 * Jobs per second of `jobs` jobs sent by `calls` sequential calls (`call(k)` sends the k-th, its
 * arguments built before the clock starts), refusing to run past `deadline` (epoch ms).
 */
export async function callRate(
  jobs: number,
  calls: number,
  call: (k: number) => Promise<unknown>,
  deadline = Infinity,
  what = 'enqueue',
): Promise<number> {
  const started = performance.now();
  for (let k = 0; k < calls; k++) {
    if (Date.now() > deadline) throw new Error(`${what} timed out`);
    await call(k);
  }
  return jobs / ((performance.now() - started) / 1_000);
}

/** Scenario (a), one call per job: jobs/s over `n` sequential `enqueue` calls on a fresh schema. */
export async function enqueueSingle(
  system: BenchSystem,
  n: number,
  timeoutMs: number,
): Promise<number> {
  const run = await system.open();
  try {
    return await callRate(
      n,
      n,
      (i) => run.enqueueOne({ i }),
      Date.now() + timeoutMs,
      `${system.label}: single enqueue`,
    );
  } finally {
    await run.close();
  }
}

/** Scenario (a), bulk: jobs/s over `n` jobs in sequential calls of `chunk` on a fresh schema. */
export async function enqueueBulk(
  system: BenchSystem,
  n: number,
  chunk: number,
  timeoutMs: number,
): Promise<number> {
  const run = await system.open();
  try {
    const batches = chunked(n, chunk);
    return await callRate(
      n,
      batches.length,
      (k) => run.enqueueMany(batches[k]),
      Date.now() + timeoutMs,
      `${system.label}: bulk enqueue`,
    );
  } finally {
    await run.close();
  }
}

/** `n` payloads `{ i }` in arrays of at most `chunk` (built before any clock starts). */
export function chunked(n: number, chunk: number, offset = 0): Array<Array<{ i: number }>> {
  const out: Array<Array<{ i: number }>> = [];
  for (let start = 0; start < n; start += chunk) {
    const size = Math.min(chunk, n - start);
    out.push(Array.from({ length: size }, (_, k) => ({ i: offset + start + k })));
  }
  return out;
}
