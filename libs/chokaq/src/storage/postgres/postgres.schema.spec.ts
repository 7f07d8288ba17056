import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as SQL from './sql';
import { POSTGRES_MIGRATIONS, postgresSchemaScript } from './postgres.schema';

const S = SQL.quoteSchema('chokaq');

describe('postgres.schema', () => {
  it('creates every table and the indexes of SPEC §2, each with a comment', () => {
    const script = postgresSchemaScript(S, 'chokaq');
    for (const table of [
      'jobs_hot',
      'jobs_archive',
      'jobs_dlq',
      'stats_summary',
      'metric_buckets',
      'queues',
      'recurring_jobs',
      'schema_migrations',
      'workers',
    ]) {
      expect(script).toContain(`CREATE TABLE IF NOT EXISTS ${S}.${table} (`);
    }
    expect(script).toMatch(
      /ix_jobs_hot_pending[\s\S]*\(queue, priority DESC, \(coalesce\(scheduled_at_utc, enqueued_at_utc\)\)\)\s+WHERE status = 0/,
    );
    expect(script).toMatch(/ix_jobs_hot_active[^;]*WHERE status IN \(1, 2\)/);
    expect(script).toMatch(
      /UNIQUE INDEX[^;]*idempotency_key[^;]*WHERE idempotency_key IS NOT NULL/,
    );
    expect(script).toMatch(/ix_jobs_hot_fetched[^;]*WHERE status = 1/);
    expect(script).toMatch(/ix_jobs_hot_processing[^;]*WHERE status = 2/);
    expect(script).not.toMatch(/jsonb/);
    const source = readFileSync(join(__dirname, 'postgres.schema.ts'), 'utf8');
    const indexes = source.match(/CREATE (UNIQUE )?INDEX/g) ?? [];
    const commented =
      source.match(/\/\/ Serves[^\n]*\n(\s*\/\/[^\n]*\n)*\s*`CREATE (UNIQUE )?INDEX/g) ?? [];
    expect(commented.length).toBe(indexes.length);
    expect(script).toMatch(
      /CREATE INDEX ix_jobs_hot_pending ON [^;]*\(queue, priority DESC, \(coalesce\(scheduled_at_utc, enqueued_at_utc\)\), id COLLATE "C"\)\s+WHERE status = 0/,
    );
    // Version 8: the same keys, and the due time's columns for index-only queue health.
    expect(script).toMatch(
      /CREATE INDEX ix_jobs_hot_pending ON [^;]*\(queue, priority DESC, \(coalesce\(scheduled_at_utc, enqueued_at_utc\)\), id COLLATE "C"\)\s+INCLUDE \(scheduled_at_utc, enqueued_at_utc\)\s+WHERE status = 0/,
    );
    // Versions are consecutive from 1, so the ledger says how far a database is.
    expect(POSTGRES_MIGRATIONS.map((m) => m.version)).toEqual(
      POSTGRES_MIGRATIONS.map((_, i) => i + 1),
    );
    expect(script).toContain(
      'ALTER TABLE "chokaq".recurring_jobs ADD COLUMN IF NOT EXISTS last_job_id varchar(36) NULL',
    );
    expect(script).toContain(`CREATE TABLE IF NOT EXISTS ${S}.workers (`);
    for (const table of ['jobs_hot', 'jobs_archive', 'jobs_dlq']) {
      expect(script).toContain(
        `ALTER TABLE ${S}.${table} ADD COLUMN IF NOT EXISTS progress_note varchar(500) NULL`,
      );
    }
    expect(script).toMatch(/ADD COLUMN IF NOT EXISTS lag_count bigint NOT NULL DEFAULT 0/);
    expect(script).toMatch(
      /CREATE INDEX IF NOT EXISTS ix_metric_buckets_queue ON [^;]*\(queue, bucket_utc\)/,
    );
    // Version 9: the audit log by target, keyed by the target's first 255 characters (a B-tree
    // entry holds about a third of a page; a target may be 4,000 characters).
    expect(script).toMatch(
      /CREATE INDEX IF NOT EXISTS ix_audit_log_target ON [^;]*\(\(left\(target, 255\)\), at_utc, id COLLATE "C"\)/,
    );
    expect(SQL.getAuditLog(S, true)).toContain(
      'left(a.target, 255) = left($8::text, 255) AND a.target = $8::text',
    );
  });
});
