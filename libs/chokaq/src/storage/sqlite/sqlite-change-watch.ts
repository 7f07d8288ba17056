import { existsSync, watch, type FSWatcher } from 'node:fs';

/** What a change watch is built from. */
export interface SqliteChangeWatchOptions {
  /** Reads `PRAGMA data_version` on the watching connection; may throw (closed, busy). */
  readVersion: () => number;
  /** The database's WAL file (`<database>-wal`), watched when it exists. */
  walFile: string;
  /** The `data_version` poll: the check when the file watch is missing or misses a commit. */
  pollMs: number;
  /** Called once per commit of another connection noticed. */
  onChange: () => void;
  /** `onChange` threw; the watch keeps going. */
  onListenerError: (error: unknown) => void;
  /** The file watch could not start or ended; the poll goes on alone. */
  onFileWatchLost: (error: unknown) => void;
}

/**
 * Delays after a WAL file event at which `data_version` is read again when the first read saw no
 * change: a writer appends the commit's frames to the WAL (the events) before it publishes them in
 * the shared-memory index (no event), so the first read may be a moment early.
 */
const RECHECK_MS = [1, 3, 8, 20] as const;

/**
 * Notices commits of other connections to a SQLite file (other processes, or other storages on
 * the same file) as soon as they happen. `PRAGMA data_version` is the check: it changes when, and
 * only when, another connection committed. A file watch on the WAL (inotify on Linux, FSEvents,
 * ReadDirectoryChangesW) says when to check, so a job enqueued by another process wakes the worker
 * within milliseconds; a poll every `pollMs` remains as the fallback (a platform or file system
 * without file events, a WAL file created later, an event missed). Events of this connection's
 * own writes are read and ignored: its commits do not change its `data_version`.
 */
export class SqliteChangeWatch {
  private seen: number;
  private readonly poll: NodeJS.Timeout;
  private fileWatch: FSWatcher | undefined;
  private rechecks: NodeJS.Timeout[] = [];
  private checkQueued = false;
  private stopped = false;

  constructor(private readonly options: SqliteChangeWatchOptions) {
    this.seen = options.readVersion();
    this.poll = setInterval(() => this.check(), options.pollMs);
    this.poll.unref();
    this.fileWatch = this.watchWal();
  }

  /** True while the WAL file is watched (false: the poll alone). */
  get watchingFile(): boolean {
    return this.fileWatch !== undefined;
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.poll);
    this.clearRechecks();
    this.fileWatch?.close();
    this.fileWatch = undefined;
  }

  private watchWal(): FSWatcher | undefined {
    if (!existsSync(this.options.walFile)) return undefined;
    try {
      const watcher = watch(this.options.walFile, { persistent: false }, () => this.onFileEvent());
      watcher.on('error', (error) => {
        // The file went away (a checkpoint may recreate it) or the watch broke: poll alone.
        this.options.onFileWatchLost(error);
        watcher.close();
        if (this.fileWatch === watcher) this.fileWatch = undefined;
      });
      return watcher;
    } catch (error) {
      this.options.onFileWatchLost(error);
      return undefined;
    }
  }

  /** Several events of one write burst are read once, on the next turn of the event loop. */
  private onFileEvent(): void {
    if (this.checkQueued || this.stopped) return;
    this.checkQueued = true;
    setImmediate(() => {
      this.checkQueued = false;
      if (this.check()) return;
      this.clearRechecks();
      this.rechecks = RECHECK_MS.map((ms) => {
        const timer = setTimeout(() => {
          if (this.check()) this.clearRechecks();
        }, ms);
        timer.unref();
        return timer;
      });
    });
  }

  private clearRechecks(): void {
    for (const timer of this.rechecks) clearTimeout(timer);
    this.rechecks = [];
  }

  /** Reads `data_version`; on a change calls `onChange`. True when it changed. */
  private check(): boolean {
    if (this.stopped) return false;
    let now: number;
    try {
      now = this.options.readVersion();
    } catch {
      return false; // closed or busy: the next event or poll tries again
    }
    if (now === this.seen) return false;
    this.seen = now;
    try {
      this.options.onChange();
    } catch (error) {
      this.options.onListenerError(error);
    }
    return true;
  }
}
