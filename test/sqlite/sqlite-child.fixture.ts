/**
 * Child-process helper of `test/sqlite/sqlite-storage.spec.ts` (outside `libs/`, so the library
 * build never sees it): proves that separate OS processes sharing one SQLite file stay correct,
 * because the correctness comes from `BEGIN IMMEDIATE`, not from the in-process mutex.
 *
 * Usage: node -r test/support/register.js sqlite-child.fixture.ts <file> schema|claim <queue>
 * Prints one JSON line: `{ "ok": true }` or `{ "claimed": [ids…] }`.
 */
import { randomUUID } from 'node:crypto';
import { createJobStorage } from '../../libs/chokaq/src/storage/create-storage';

async function main(): Promise<void> {
  const [file, mode, queue] = process.argv.slice(2);
  const storage = await createJobStorage({
    type: 'sqlite',
    database: file,
    // Many processes start at once: give the busy retry room.
    transientRetry: { maxAttempts: 40, baseDelayMs: 5, maxDelayMs: 100 },
  });
  try {
    if (mode === 'schema') {
      process.stdout.write(`${JSON.stringify({ ok: true })}\n`);
      return;
    }
    const claimed: string[] = [];
    const workerId = `child:${process.pid}`;
    for (let idle = 0; idle < 3;) {
      const rows = await storage.fetchNextBatch({
        workerId,
        leaseId: randomUUID(),
        limit: 3,
        handled: { queues: [queue], types: [] },
      });
      if (rows.length === 0) idle++;
      for (const row of rows) claimed.push(row.id);
      await new Promise((resolve) => setImmediate(resolve));
    }
    process.stdout.write(`${JSON.stringify({ claimed })}\n`);
  } finally {
    await storage.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
