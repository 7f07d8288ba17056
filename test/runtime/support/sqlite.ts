import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createJobStorage } from '../../../libs/chokaq/src/storage/create-storage';
import type { JobStorage } from '../../../libs/chokaq/src/storage/job-storage';

/** A real SQLite storage on a temporary file, and its cleanup. */
export async function sqliteStorage(): Promise<{
  storage: JobStorage;
  cleanup: () => Promise<void>;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'chokaq-runtime-'));
  const storage = await createJobStorage({ type: 'sqlite', database: join(dir, 'jobs.db') });
  return {
    storage,
    cleanup: async () => {
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
