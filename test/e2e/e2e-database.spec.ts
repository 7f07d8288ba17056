import { toMssqlQuery } from './support/e2e-database';

describe('toMssqlQuery (the e2e suites on SQL Server)', () => {
  it('numbers placeholders and spells snake_case columns as SPEC §2 PascalCase, not inside literals', () => {
    expect(
      toMssqlQuery(
        "SELECT idempotency_key AS k FROM [s].[JobsHot] WHERE status = ? AND worker_id = 'worker_id' AND queue = ?",
      ),
    ).toBe(
      "SELECT IdempotencyKey AS k FROM [s].[JobsHot] WHERE status = @0 AND WorkerId = 'worker_id' AND queue = @1",
    );
    expect(
      toMssqlQuery('SELECT SUM(succeeded_total) AS s FROM [chokaq_e2e_1_ab].[StatsSummary]'),
    ).toBe('SELECT SUM(SucceededTotal) AS s FROM [chokaq_e2e_1_ab].[StatsSummary]');
  });
});
