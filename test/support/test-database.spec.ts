import { toDialectSql } from './test-database';

describe('toDialectSql (raw SQL of the suites, written once)', () => {
  const query =
    "SELECT idempotency_key AS k FROM [s].[JobsHot] WHERE status = ? AND worker_id = 'worker_id' AND queue = ?";

  it('numbers placeholders and spells snake_case columns as SPEC §2 PascalCase on SQL Server, not inside literals', () => {
    expect(toDialectSql('mssql', query)).toBe(
      "SELECT IdempotencyKey AS k FROM [s].[JobsHot] WHERE status = @0 AND WorkerId = 'worker_id' AND queue = @1",
    );
    expect(
      toDialectSql('mssql', 'SELECT SUM(succeeded_total) AS s FROM [chokaq_t_1_ab].[StatsSummary]'),
    ).toBe('SELECT SUM(SucceededTotal) AS s FROM [chokaq_t_1_ab].[StatsSummary]');
  });

  it('numbers placeholders $1… on PostgreSQL, not inside literals, and keeps the columns', () => {
    expect(toDialectSql('postgres', "SELECT a_b FROM t WHERE x = ? AND y = '?' AND z = ?")).toBe(
      "SELECT a_b FROM t WHERE x = $1 AND y = '?' AND z = $2",
    );
  });

  it('leaves SQLite SQL as written', () => {
    expect(toDialectSql('sqlite', query)).toBe(query);
  });
});
