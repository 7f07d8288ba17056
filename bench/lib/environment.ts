import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';

/** Version of an installed package, read from its package.json. */
export function packageVersion(name: string): string {
  try {
    const file = join(__dirname, '..', '..', 'node_modules', name, 'package.json');
    return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** PostgreSQL server version, e.g. `15.20`. */
export async function postgresVersion(url: string): Promise<string> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ v: string }>(`SELECT current_setting('server_version') AS v`))
      .rows[0].v;
  } finally {
    await client.end();
  }
}

/** One line describing the machine. */
export function machineLine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model.trim() ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${release()}, Node ${process.version}`;
}

/** The 1, 5 and 15-minute load averages, formatted. */
export function loadLine(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
}
