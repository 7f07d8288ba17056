import { Client } from 'pg';
import { cpuBetween, cpuSnapshot, processCpuMs } from '../../bench/lib/proc-cpu';
import {
  installStatementCounter,
  resetStatementCounts,
  statementCounts,
} from '../../bench/worker/statement-counter';
import { PG_URL } from '../support/env';
import { describePostgres } from '../support/test-database';

/**
 * The drain's cost figures (bench/lib/proc-cpu.ts, bench/worker/statement-counter.ts): what they
 * read and how they count. They time nothing.
 */
describe('bench drain cost: CPU from /proc', () => {
  it('reads a live process, grows with work, and is undefined for a pid that does not exist', () => {
    const before = processCpuMs(process.pid);
    expect(before).toBeGreaterThanOrEqual(0);
    // Burn about 60 ms of CPU (several 10 ms ticks), checked by the process's own clock.
    const started = process.cpuUsage();
    while (process.cpuUsage(started).user < 60_000) Math.sqrt(Math.random());
    expect(processCpuMs(process.pid)!).toBeGreaterThan(before!);
    expect(processCpuMs(2 ** 22 + 7)).toBeUndefined();
  });

  it('adds a process started meanwhile in full and reports one that ended as missing', () => {
    const before = new Map([
      [1, 100],
      [2, 50],
    ]);
    const after = new Map([
      [1, 130],
      [3, 20],
    ]);
    expect(cpuBetween(before, after)).toEqual({ ms: 50, missing: 1 });
    expect(cpuSnapshot([process.pid, 2 ** 22 + 7]).size).toBe(1);
  });
});

describePostgres('bench drain cost: round trips and transactions of pg clients', () => {
  let client: Client;

  beforeAll(async () => {
    installStatementCounter();
    client = new Client({ connectionString: PG_URL });
    await client.connect();
  });

  afterAll(async () => {
    await client.end();
  });

  it('counts every query as a round trip, a BEGIN…COMMIT as one transaction, a lone statement as one, a rollback as none', async () => {
    resetStatementCounts();
    await client.query('BEGIN');
    await client.query('SELECT 1');
    await client.query({ text: 'SELECT $1::int', values: [2] });
    await client.query('COMMIT');
    expect(statementCounts()).toEqual({ roundTrips: 4, transactions: 1 });

    await client.query('SELECT 3');
    expect(statementCounts()).toEqual({ roundTrips: 5, transactions: 2 });

    await client.query('START TRANSACTION');
    await client.query('SELECT 4');
    await client.query('ROLLBACK');
    expect(statementCounts()).toEqual({ roundTrips: 8, transactions: 2 });

    resetStatementCounts();
    expect(statementCounts()).toEqual({ roundTrips: 0, transactions: 0 });
  });
});
