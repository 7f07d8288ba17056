import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as SQL from '.';
import { filterClause } from './filters';

const S = SQL.quoteSchema('chokaq');

/** Every statement text the dialect can produce (one variant of each parameterised builder). */
function allStatements(): Record<string, string> {
  const shapes: SQL.DlqMoveShape[] = [
    { status: 4, outcome: 1, counter: 'failed_total' },
    { status: 5, outcome: 2, counter: 'cancelled_total' },
  ];
  return {
    enqueue: SQL.enqueue(S, 'chokaq'),
    enqueueQuiet: SQL.enqueue(S, null),
    lookup: SQL.enqueueHolders(S),
    lock: SQL.fetchNextBatchLockBudgets(S),
    claim: SQL.fetchNextBatch(S),
    claimedByLease: SQL.fetchNextBatchClaimed(S),
    markAsProcessing: SQL.markAsProcessing(S),
    keepAlive: SQL.keepAlive(S),
    release: SQL.release(S),
    reschedule: SQL.rescheduleForRetry(S),
    archive: SQL.archiveSucceeded(S),
    ...Object.fromEntries(
      shapes.flatMap((shape) => [
        [`dlqOwned${shape.status}`, SQL.moveToDlq(S, shape, true)],
        [`dlqAdmin${shape.status}`, SQL.moveToDlq(S, shape, false)],
      ]),
    ),
    cancelMove: SQL.cancel(S),
    cancelRequest: SQL.cancelRequest(S, SQL.cancelChannel('chokaq')),
    resurrect: SQL.resurrect(S, SQL.CHOOSE_DLQ_BY_IDS),
    recover: SQL.recoverAbandoned(S),
    zombies: SQL.archiveZombies(S),
    upsertQueue: SQL.updateQueue(S),
    retainArchive: SQL.applyRetentionArchive(S),
    retainDlq: SQL.applyRetentionDlq(S),
    retainBuckets: SQL.applyRetentionBuckets(S),
    retainArchivePartition: SQL.applyRetentionArchive(S, 'jobs_archive_default'),
    retainDlqPartition: SQL.applyRetentionDlq(S, 'jobs_dlq_min_20261201'),
    ...Object.fromEntries(
      Object.entries(SQL.settlePartition(S, 'jobs_archive_20261201_20261202')).map(([k, v]) => [
        `settlePartition.${k}`,
        v,
      ]),
    ),
    makePartition: SQL.makePartition(
      S,
      'jobs_dlq',
      'jobs_dlq_20261201_20261202',
      new Date('2026-12-01T00:00:00Z'),
      new Date('2026-12-02T00:00:00Z'),
    ).join(';\n'),
    convertToPartitioned: SQL.convertToPartitioned({
      s: S,
      table: 'jobs_archive',
      legacy: 'jobs_archive_min_20261202',
      bound: new Date('2026-12-02T00:00:00Z'),
      indexes: [{ name: 'jobs_archive_pkey', definition: '', primary: true }],
      empty: false,
    }).join(';\n'),
    summary: SQL.getSummary(S),
    queueStats: SQL.getQueueStats(S),
    health: SQL.getQueueHealth(S),
    outcomes: SQL.getQueueOutcomes(S),
    throughput: SQL.getThroughput(S),
    auditLog: SQL.getAuditLog(S),
    auditLogByTarget: SQL.getAuditLog(S, true),
  };
}

describe('PostgreSQL statements (sql/)', () => {
  it('writes status codes as literals, never as parameters (partial indexes need that)', () => {
    for (const [name, sql] of Object.entries(allStatements())) {
      expect({ name, match: /status\s*(=|IN\s*\(|<>)\s*\$/i.exec(sql)?.[0] ?? null }).toEqual({
        name,
        match: null,
      });
    }
  });

  it('schema-qualifies every table it touches', () => {
    for (const [name, sql] of Object.entries(allStatements())) {
      const bare =
        /\b(?:FROM|JOIN|INTO|UPDATE)\s+(jobs_hot|jobs_archive|jobs_dlq|queues|stats_summary|metric_buckets)\b/i.exec(
          sql,
        );
      expect({ name, bare: bare?.[0] ?? null }).toEqual({ name, bare: null });
    }
  });

  it('comments the lock and isolation above every claim, move and rescue statement', () => {
    // Every section file, as one text: a statement's comment sits right above it in its own file.
    const source = readdirSync(__dirname)
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.spec.ts'))
      .map((file) => readFileSync(join(__dirname, file), 'utf8'))
      .join('\n');
    for (const name of [
      'enqueue',
      'fetchNextBatchLockBudgets',
      'fetchNextBatch',
      'markAsProcessing',
      'keepAlive',
      'release',
      'rescheduleForRetry',
      'archiveSucceeded',
      'moveToDlq',
      'cancel',
      'cancelRequest',
      'resurrect',
      'recoverAbandoned',
      'archiveZombies',
      'claimRecurringSlot',
    ]) {
      const at = source.indexOf(`export const ${name} =`);
      expect(at).toBeGreaterThan(0);
      const doc = source.slice(source.lastIndexOf('/**', at), at);
      expect({ name, documented: /Lock\/isolation/.test(doc) }).toEqual({ name, documented: true });
    }
  });

  it('claims with a per-queue LATERAL … LIMIT … FOR UPDATE SKIP LOCKED, materialised once', () => {
    const claim = SQL.fetchNextBatch(S);
    // Each queue locks its share of the claim (its budget when it is the only runnable queue).
    expect(claim).toMatch(
      /CROSS JOIN LATERAL \([\s\S]*LIMIT CASE WHEN \(SELECT count\(\*\) FROM runnable\) = 1 THEN r\.budget\s+ELSE coalesce\(\(SELECT x\.share FROM shares x WHERE x\.queue = r\.name\), 0\) END\s+FOR UPDATE SKIP LOCKED/,
    );
    expect(claim).toContain('picked AS MATERIALIZED');
    expect(claim).toContain('shares AS MATERIALIZED');
    // The only window numbers the few locked candidates (which of them start), never the backlog.
    expect(claim.match(/OVER\s*\(/gi)).toHaveLength(1);
    expect(claim).toContain(
      'row_number() OVER (ORDER BY c.priority DESC, c.due, c.id COLLATE "C")',
    );
    // Ties of priority and due time go by id, in the index's order (FIFO for one producer).
    expect(claim).toContain(
      'ORDER BY j.priority DESC, coalesce(j.scheduled_at_utc, j.enqueued_at_utc), j.id COLLATE "C"',
    );
    // Claims commit without waiting for the WAL flush, transaction-locally (SET LOCAL semantics).
    expect(claim).toContain("set_config('synchronous_commit', 'off', true)");
    expect(claim).toMatch(/FROM handled CROSS JOIN relaxed/);
    // The fast path: one statement that counts no budget and skips budgeted queues.
    const fast = SQL.fetchNextBatch(S, 'unbudgeted');
    expect(fast).toContain('q.max_workers IS NULL');
    expect(fast).not.toMatch(/count\(\*\) FROM \S+\.jobs_hot/);
    expect(SQL.fetchNextBatch(S)).toMatch(/count\(\*\) FROM \S+\.jobs_hot/);
    // Both count the rows they start in the start bucket, in the same statement.
    for (const sql of [claim, fast, SQL.markAsProcessing(S)]) {
      expect(sql).toMatch(
        /bucket AS \(\s+INSERT INTO \S+\.metric_buckets[\s\S]*SELECT date_trunc\('minute', now\(\)\), queue, 4, -1/,
      );
    }
    expect(fast).toMatch(
      /THEN r\.budget\s+ELSE coalesce\(\(SELECT x\.share FROM shares x[^)]*\), 0\) END\s+FOR UPDATE SKIP LOCKED/,
    );
    expect(SQL.fetchNextBatchLockBudgets(S)).toMatch(
      /max_workers IS NOT NULL[\s\S]*ORDER BY name\s+FOR NO KEY UPDATE/,
    );
  });

  it('refuses unvalidated identifiers', () => {
    expect(() => SQL.quoteSchema('x"; DROP TABLE y; --')).toThrow();
    expect(() => SQL.quoteSchema('')).toThrow();
    expect(SQL.quoteSchema('Chokaq_1')).toBe('"Chokaq_1"');
    expect(SQL.cancelChannel('a'.repeat(63)).length).toBeLessThanOrEqual(63);
    // Long names sharing a prefix get distinct cancel channels (a cancel must reach only its schema).
    expect(SQL.cancelChannel('a'.repeat(62) + 'b')).not.toBe(SQL.cancelChannel('a'.repeat(63)));
    expect(SQL.cancelChannel('chokaq')).toBe('chokaq:cancel');
  });

  it('builds filters with parameters, a literal status, and escaped LIKE terms', () => {
    const params: unknown[] = [];
    const where = filterClause(
      'hot',
      { queue: 'q', status: 1, tag: 'a_b', search: '50%[x]' },
      params,
      'x',
    );
    expect(where).toBe(
      "x.queue = $1 AND x.status = 1 AND x.tags LIKE '%,' || $2 || ',%' ESCAPE '\\' AND " +
        "(x.id ILIKE $3 ESCAPE '\\' OR x.type ILIKE $3 ESCAPE '\\' OR x.payload ILIKE $3 ESCAPE '\\' " +
        "OR x.last_error ILIKE $3 ESCAPE '\\')",
    );
    expect(params).toEqual(['q', 'a\\_b', '%50\\%\\[x]%']);
    const dlqParams: unknown[] = [];
    const from = new Date(0);
    expect(filterClause('dlq', { from, reason: 6, ids: ['i'] }, dlqParams, 'f')).toBe(
      'f.failed_at_utc >= $1::timestamptz AND f.failure_reason = $2::smallint AND f.id = ANY ($3::text[])',
    );
    expect(dlqParams).toEqual([from, 6, ['i']]);
    expect(filterClause('archive', {}, [], 'x')).toBe('TRUE');
  });
});
