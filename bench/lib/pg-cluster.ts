import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where Debian's PostgreSQL 15 keeps its programs (`initdb`, `pg_ctl`). */
const PG_BIN = process.env.CHOKAQ_PG_BIN ?? '/usr/lib/postgresql/15/bin';
/** The operating-system user a cluster runs as: PostgreSQL refuses to run as root. */
const PG_USER = 'postgres';

/** A PostgreSQL cluster the bench started for itself, and how to stop it. */
export interface OwnCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, local only). */
  url: string;
  port: number;
  /** Stops the server (fast shutdown) and removes its data directory. */
  stop(): Promise<void>;
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

/**
 * Starts a fresh PostgreSQL cluster under a temporary directory on a free port, with the server's
 * stock settings (autovacuum on, as a production server runs) and `extra` settings given as
 * `name=value` (`-c`), trust authentication on 127.0.0.1 only. The soak runs on one when the
 * bench's own server is configured otherwise (a CI server with autovacuum off, say). Whoever
 * starts one stops it (`stop()`), also when the run fails.
 */
export async function startOwnCluster(extra: readonly string[] = []): Promise<OwnCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'chokaq-bench-pg-'));
  const data = join(dir, 'data');
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', PG_USER]).toString().trim());
    const gid = Number(execFileSync('id', ['-g', PG_USER]).toString().trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  const port = await freePort();
  try {
    asPostgres('initdb', ['-D', data, '-U', PG_USER, '-A', 'trust', '--no-sync', '-E', 'UTF8']);
    const options = [
      `-p ${port}`,
      "-c listen_addresses='127.0.0.1'",
      `-c unix_socket_directories='${dir}'`,
      ...extra.map((setting) => `-c ${setting}`),
    ].join(' ');
    asPostgres('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-o', options, '-w', 'start']);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  let stopped = false;
  return {
    url: `postgres://${PG_USER}@127.0.0.1:${port}/postgres`,
    port,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      try {
        asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
