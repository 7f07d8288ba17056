import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../../../../test/support/wait-for';
import { SqliteChangeWatch } from './sqlite-change-watch';

/** Two real connections on one file: the watcher's, and another process's stand-in. */
describe('SqliteChangeWatch without its file watch', () => {
  let dir: string;
  let watching: Database.Database;
  let writer: Database.Database;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'chokaq-change-watch-'));
    const file = join(dir, 'jobs.db');
    watching = new Database(file);
    watching.pragma('journal_mode = WAL');
    watching.exec('CREATE TABLE t (x INTEGER)');
    writer = new Database(file);
  });
  afterEach(() => {
    writer.close();
    watching.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('still notices another connection’s commit by polling data_version', async () => {
    const lost: unknown[] = [];
    let changes = 0;
    const watch = new SqliteChangeWatch({
      readVersion: () => Number(watching.pragma('data_version', { simple: true })),
      // A WAL file that cannot be watched (it does not exist): the poll is all there is.
      walFile: join(dir, 'missing', 'jobs.db-wal'),
      pollMs: 20,
      onChange: () => changes++,
      onListenerError: (error) => lost.push(error),
      onFileWatchLost: (error) => lost.push(error),
    });
    try {
      expect(watch.watchingFile).toBe(false);
      writer.prepare('INSERT INTO t VALUES (1)').run();
      await waitFor('the poll to notice the commit', () => changes === 1, { timeoutMs: 5_000 });
      // Its own commits do not change its data_version: no wake-up for them.
      watching.prepare('INSERT INTO t VALUES (2)').run();
      writer.prepare('INSERT INTO t VALUES (3)').run();
      await waitFor('the second commit', () => changes === 2, { timeoutMs: 5_000 });
      expect(lost).toEqual([]);
    } finally {
      watch.stop();
    }
  });
});
