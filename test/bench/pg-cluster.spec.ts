import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import { endServer } from '../../bench/lib/pg-cluster';
import { TS_LOADER } from '../support/env';
import { describePostgres } from '../support/test-database';
import { waitFor } from '../support/wait-for';

const MODULE = join(__dirname, '..', '..', 'bench', 'lib', 'pg-cluster.ts');

/** How a holder process ended: its exit code, or the signal that ended it. */
interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * A process that starts a cluster of its own (bench/lib/pg-cluster.ts), prints its URL and data
 * directory, and then waits to be ended (`wait`) or fails at once with an uncaught error
 * (`throw`), as a run that fails before its `stop()` would.
 */
function startHolder(then: 'wait' | 'throw'): {
  child: ChildProcess;
  ready: Promise<{ url: string; dir: string }>;
  ended: Promise<Ended>;
} {
  const script = `
    const { startOwnCluster } = require(${JSON.stringify(MODULE)});
    const { Client } = require('pg');
    startOwnCluster().then(async (cluster) => {
      const client = new Client({ connectionString: cluster.url });
      await client.connect();
      const { rows } = await client.query('SHOW data_directory');
      await client.end();
      process.stdout.write(JSON.stringify({ url: cluster.url, dir: rows[0].data_directory }) + '\\n');
      if (${JSON.stringify(then)} === 'throw') setImmediate(() => { throw new Error('a run that fails'); });
      else setInterval(() => undefined, 60_000);
    });`;
  const child = spawn(process.execPath, ['-r', TS_LOADER, '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ended = new Promise<Ended>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let err = '';
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const ready = new Promise<{ url: string; dir: string }>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(JSON.parse(out) as { url: string; dir: string });
    });
    void ended.then(({ code }) =>
      reject(new Error(`the holder exited (${code}) before its cluster ran:\n${err}`)),
    );
  });
  return { child, ready, ended };
}

/** True when a server answers at `url`. */
async function answers(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/**
 * A cluster the bench or a test started must not outlive the process that started it when that
 * process is interrupted (Ctrl-C, a runner's SIGTERM) before its `stop()`: such a server kept its
 * port, its memory and its directory under the temporary directory until someone stopped it.
 */
describePostgres('bench/lib/pg-cluster: a cluster ends with the process that started it', () => {
  /** Runs a holder to its end by `end`, and checks its server is gone with it. */
  async function endsWithIt(then: 'wait' | 'throw', end: (child: ChildProcess) => void) {
    const { child, ready, ended } = startHolder(then);
    let dataDir: string | undefined;
    try {
      const { url, dir } = await ready;
      dataDir = dir;
      end(child);
      const how = await ended;
      await waitFor(`the server at ${url} to stop`, async () => !(await answers(url)), {
        timeoutMs: 20_000,
      });
      expect(existsSync(dir)).toBe(false);
      return how;
    } finally {
      child.kill('SIGKILL');
      // What a failing run left behind (the cluster directory is the data directory's parent).
      if (dataDir !== undefined && existsSync(dataDir)) endServer(dirname(dataDir), dataDir);
    }
  }

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'a %s to the process stops its server and removes its directory; the signal still ends it',
    async (signal) => {
      expect(await endsWithIt('wait', (child) => child.kill(signal))).toEqual({
        code: null,
        signal,
      });
    },
    60_000,
  );

  it('a process that fails with an uncaught error stops its server on the way out', async () => {
    expect(await endsWithIt('throw', () => undefined)).toEqual({ code: 1, signal: null });
  }, 60_000);
});
