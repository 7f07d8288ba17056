import type { BenchSystem } from '../systems/bench-system';

/** Scenario (a), one call per job: jobs/s over `n` sequential `enqueue` calls on a fresh schema. */
export async function enqueueSingle(
  system: BenchSystem,
  n: number,
  timeoutMs: number,
): Promise<number> {
  const run = await system.open();
  try {
    const deadline = Date.now() + timeoutMs;
    const started = performance.now();
    for (let i = 0; i < n; i++) {
      if (Date.now() > deadline) throw new Error(`${system.label}: single enqueue timed out`);
      await run.enqueueOne({ i });
    }
    return n / ((performance.now() - started) / 1_000);
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
    const deadline = Date.now() + timeoutMs;
    const started = performance.now();
    for (const batch of batches) {
      if (Date.now() > deadline) throw new Error(`${system.label}: bulk enqueue timed out`);
      await run.enqueueMany(batch);
    }
    return n / ((performance.now() - started) / 1_000);
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
