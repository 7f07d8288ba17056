import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where Debian's PostgreSQL 15 keeps its programs (`initdb`, `pg_ctl`). */
const PG_BIN = process.env.CHOKAQ_PG_BIN ?? '/usr/lib/postgresql/15/bin';
/** The operating-system user a cluster runs as: PostgreSQL refuses to run as root. */
const PG_USER = 'postgres';

/** A PostgreSQL cluster the bench or a test started for itself, and how to stop it. */
export interface OwnCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, local only). */
  url: string;
  port: number;
  /** The server's log so far (`server.log` in its directory): its statements, with `log_statement`. */
  log(): string;
  /**
   * Kills the server as a crash would (`pg_ctl stop -m immediate`: no checkpoint, sessions cut);
   * its directory stays until `stop()`.
   */
  crash(): void;
  /** Promotes a standby to a primary (`pg_ctl promote`, waiting until it accepts writes). */
  promote(): void;
  /** Stops the server (fast shutdown) and removes its data directory. */
  stop(): Promise<void>;
}

/**
 * The servers this process started and has not stopped, by directory, each with the synchronous
 * way to end it (an immediate stop, then its directory removed). They are ended when the process
 * exits or is interrupted before their `stop()`, so that a bench or test run ended by Ctrl-C or a
 * runner's SIGTERM leaves no server holding its port, its memory and its directory.
 */
const running = new Map<string, () => void>();

/** Signals that end a process by default and that an interrupted run receives. */
const INTERRUPTS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Ends every server of {@link running}. Synchronous: it also runs in an `exit` listener. */
function endAll(): void {
  for (const end of [...running.values()]) end();
}

let guarded = false;

/**
 * Listens, once per process, for its exit and for the interrupts: each ends the servers still
 * running, and an interrupt is then raised again with the listener gone, so the process still
 * ends by that signal, as it would have without a server.
 */
function guardProcess(): void {
  if (guarded) return;
  guarded = true;
  process.once('exit', endAll);
  for (const signal of INTERRUPTS) {
    process.once(signal, () => {
      endAll();
      process.kill(process.pid, signal);
    });
  }
}

/**
 * Stops the server of the data directory `data` at once (`pg_ctl stop -m immediate`; nothing to
 * stop when it is not running) and removes its cluster directory `dir`. Synchronous, so that it
 * can run as the process exits; a test also sweeps with it what a failing run left behind.
 */
export function endServer(dir: string, data: string): void {
  try {
    asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
  } catch {
    // Stopped already (a crash() or the server's own end): only the directory is left.
  }
  rmSync(dir, { recursive: true, force: true });
}

/** A free TCP port on 127.0.0.1, as the kernel hands one out. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

/** Runs a PostgreSQL program as {@link PG_USER} (through `runuser` when this process is root). */
function asPostgres(program: string, args: readonly string[]): void {
  const path = join(PG_BIN, program);
  const root = process.getuid?.() === 0;
  execFileSync(root ? 'runuser' : path, root ? ['-u', PG_USER, '--', path, ...args] : [...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

/** A temporary directory the PostgreSQL user owns (mode 0700, as `initdb` and the server want). */
function clusterDirectory(): string {
  const dir = mkdtempSync(join(tmpdir(), 'chokaq-bench-pg-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', PG_USER]).toString().trim());
    const gid = Number(execFileSync('id', ['-g', PG_USER]).toString().trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  return dir;
}

/**
 * Starts the server of the data directory `data` (inside `dir`) on a free port, with `extra`
 * settings, and returns the handle that stops it and removes `dir`.
 */
async function startServer(
  dir: string,
  data: string,
  extra: readonly string[],
): Promise<OwnCluster> {
  const port = await freePort();
  const logFile = join(dir, 'server.log');
  try {
    const options = [
      `-p ${port}`,
      "-c listen_addresses='127.0.0.1'",
      `-c unix_socket_directories='${dir}'`,
      ...extra.map((setting) => `-c ${setting}`),
    ].join(' ');
    asPostgres('pg_ctl', ['-D', data, '-l', logFile, '-o', options, '-w', 'start']);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  let stopped = false;
  let crashed = false;
  running.set(dir, () => {
    running.delete(dir);
    endServer(dir, data);
  });
  guardProcess();
  return {
    url: `postgres://${PG_USER}@127.0.0.1:${port}/postgres`,
    port,
    log: () => readFileSync(logFile, 'utf8'),
    crash: () => {
      asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      crashed = true;
    },
    promote: () => asPostgres('pg_ctl', ['-D', data, '-w', 'promote']),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      running.delete(dir);
      try {
        if (!crashed) asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * Starts a fresh PostgreSQL cluster under a temporary directory on a free port, with the server's
 * stock settings (autovacuum on, as a production server runs; `wal_level` replica, so a standby
 * can follow it) and `extra` settings given as `name=value` (`-c`), trust authentication on
 * 127.0.0.1 only (replication connections included: `initdb -A trust` writes those lines of
 * `pg_hba.conf`). The soak runs on one when the bench's own server is configured otherwise (a CI
 * server with autovacuum off, say); the read-replica tests run a primary and its standby. Whoever
 * starts one stops it (`stop()`), also when the run fails; one still running when the process
 * exits or is interrupted (SIGINT, SIGTERM, SIGHUP) is stopped then, and its directory removed.
 */
export async function startOwnCluster(extra: readonly string[] = []): Promise<OwnCluster> {
  const dir = clusterDirectory();
  const data = join(dir, 'data');
  try {
    asPostgres('initdb', ['-D', data, '-U', PG_USER, '-A', 'trust', '--no-sync', '-E', 'UTF8']);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return startServer(dir, data, extra);
}

/**
 * Starts a hot standby of `primary`: a base backup taken with `pg_basebackup -R` (which writes
 * `primary_conninfo` and `standby.signal`, so the server starts streaming from the primary) under
 * a temporary directory of its own, on a free port, with `extra` settings. It follows the primary
 * until it is stopped or promoted.
 * https://www.postgresql.org/docs/15/app-pgbasebackup.html
 */
export async function startStandby(
  primary: OwnCluster,
  extra: readonly string[] = [],
): Promise<OwnCluster> {
  const dir = clusterDirectory();
  const data = join(dir, 'data');
  try {
    asPostgres('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      PG_USER,
      '-D',
      data,
      '-R',
      '-X',
      'stream',
      '--no-sync',
    ]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return startServer(dir, data, extra);
}
