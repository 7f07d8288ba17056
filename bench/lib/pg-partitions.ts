import {
  makePartition,
  type PartitionedTable,
} from '../../libs/chokaq/src/storage/postgres/sql/partitions';
import {
  dayStamp,
  nextPeriod,
  periodStart,
  type PartitionPeriod,
} from '../../libs/chokaq/src/storage/shared/partitions';

/*
 * What the bench does to a partitioned Archive and DLQ (`storage.partitioning`) beside the storage:
 * the partitions of past periods a seed of past rows needs, and the sizes, dead tuples and WAL the
 * partitions scenario reports. PostgreSQL only.
 */

/**
 * One session of the bench's own: statements and rows on ONE connection, so a `BEGIN` … `COMMIT`
 * sent through `exec` is one transaction.
 */
export interface SqlSession {
  exec(sql: string, params?: unknown[]): Promise<void>;
  rows<T>(sql: string, params?: unknown[]): Promise<T[]>;
}

/**
 * Makes the partitions of `table` for every `period` from the one holding `fromMs` up to the one
 * holding `nowMs` (excluded: `ensureSchema` made that one and those ahead), as the maintenance
 * loop would have made them when those periods were ahead. A seed of past rows needs them: a row
 * no partition covers lands in `<table>_default`. Each partition is made by the library's own
 * statements (`makePartition`), in one transaction; one that exists is left alone. Returns the
 * names made.
 */
export async function makePastPartitions(
  session: SqlSession,
  schema: string,
  table: PartitionedTable,
  period: PartitionPeriod,
  fromMs: number,
  nowMs: number,
): Promise<string[]> {
  const s = `"${schema}"`;
  const current = periodStart(new Date(nowMs), period).getTime();
  const made: string[] = [];
  for (let from = periodStart(new Date(fromMs), period); from.getTime() < current;) {
    const to = nextPeriod(from, period);
    const name = `${table}_${dayStamp(from)}_${dayStamp(to)}`;
    const [{ present }] = await session.rows<{ present: boolean }>(
      'SELECT to_regclass($1) IS NOT NULL AS present',
      [`${s}.${name}`],
    );
    if (!present) {
      await session.exec('BEGIN');
      try {
        for (const sql of makePartition(s, table, name, from, to)) await session.exec(sql);
        await session.exec('COMMIT');
      } catch (error) {
        await session.exec('ROLLBACK').catch(() => undefined);
        throw error;
      }
      made.push(name);
    }
    from = to;
  }
  return made;
}

/** The partitions of a table (0 when it is plain). */
export async function partitionCount(session: SqlSession, qualified: string): Promise<number> {
  const [row] = await session.rows<{ n: string }>(
    'SELECT count(*) AS n FROM pg_partition_tree($1::regclass) WHERE isleaf AND level > 0',
    [qualified],
  );
  return Number(row.n);
}

/**
 * A table's size on disk with its indexes and TOAST: `pg_total_relation_size` of a plain table,
 * the sum over the partitions of a partitioned one (the parent holds no storage).
 */
export async function tableBytes(session: SqlSession, qualified: string): Promise<number> {
  const [row] = await session.rows<{ bytes: string }>(
    `SELECT coalesce(
       (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree($1::regclass) WHERE isleaf),
       pg_total_relation_size($1::regclass))::bigint AS bytes`,
    [qualified],
  );
  return Number(row.bytes);
}

/**
 * Dead and live tuples of a table (summed over its partitions), as the statistics system counts
 * them: a backend reports its counts when its transaction ends, at most once a second, or when
 * it exits, so read them after the writers have closed their connections.
 */
export async function tupleCounts(
  session: SqlSession,
  qualified: string,
): Promise<{ dead: number; live: number }> {
  const [row] = await session.rows<{ dead: string; live: string }>(
    `SELECT coalesce(sum(n_dead_tup), 0)::bigint AS dead, coalesce(sum(n_live_tup), 0)::bigint AS live
     FROM pg_stat_user_tables
     WHERE relid = $1::regclass OR relid IN (SELECT relid FROM pg_partition_tree($1::regclass))`,
    [qualified],
  );
  return { dead: Number(row.dead), live: Number(row.live) };
}

/** The server's current WAL insert position (`pg_current_wal_lsn()`), as text. */
export async function walPosition(session: SqlSession): Promise<string> {
  const [row] = await session.rows<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
  return row.lsn;
}

/** Bytes of WAL between two positions of {@link walPosition} (the whole cluster's, not one session's). */
export async function walBytesSince(session: SqlSession, from: string): Promise<number> {
  const [row] = await session.rows<{ bytes: string }>(
    'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint AS bytes',
    [from],
  );
  return Number(row.bytes);
}
