import { Client } from 'pg';

/*
 * Module state is acceptable here: one bench worker process counts one system's statements, and
 * the counters are read by its progress messages.
 */
let roundTrips = 0;
let transactions = 0;
const inTransaction = new WeakSet<Client>();

/** Round trips and transactions counted since {@link installStatementCounter}. */
export function statementCounts(): { roundTrips: number; transactions: number } {
  return { roundTrips, transactions };
}

/** Sets both counters back to zero (when the drain starts, so start-up statements do not count). */
export function resetStatementCounts(): void {
  roundTrips = 0;
  transactions = 0;
}

function sqlText(query: unknown): string {
  if (typeof query === 'string') return query;
  const text = (query as { text?: unknown } | null)?.text;
  return typeof text === 'string' ? text : '';
}

/**
 * Counts, for every `pg` client of the process (ChokaQ's pool through TypeORM and the peers' pools
 * alike), each `Client.query` call as one round trip (`pg` sends one query per call and waits for
 * its result), and each committed transaction: an explicit `COMMIT` (or `END`) after a `BEGIN` /
 * `START TRANSACTION` on the same client, or a statement sent outside one (PostgreSQL runs it in
 * its own transaction and commits it). A `ROLLBACK` ends a transaction without counting it.
 */
export function installStatementCounter(): void {
  type Query = (this: Client, ...args: unknown[]) => unknown;
  const proto = Client.prototype as unknown as { query: Query };
  const original = proto.query;
  proto.query = function (this: Client, ...args: unknown[]) {
    roundTrips++;
    const head = sqlText(args[0]).trimStart().slice(0, 20).toUpperCase();
    if (head.startsWith('BEGIN') || head.startsWith('START TRANSACTION')) {
      inTransaction.add(this);
    } else if (head.startsWith('COMMIT') || head.startsWith('END')) {
      if (inTransaction.delete(this)) transactions++;
    } else if (head.startsWith('ROLLBACK') && !head.startsWith('ROLLBACK TO')) {
      inTransaction.delete(this);
    } else if (!inTransaction.has(this)) {
      transactions++;
    }
    return original.apply(this, args);
  };
}
