import type { EntityManager, QueryRunner } from 'typeorm';
import type { Checked } from '../../interfaces/checked.interface';
import type { CompletedJob } from '../../interfaces/job.interface';
import type { DialectHandlerTransaction } from '../dialect-job-storage';

/**
 * Why a `DataSource` ChokaQ opened itself gives handlers no transaction: the application's writes
 * go through its own `DataSource`, so a transaction on ChokaQ's would not hold them.
 */
export const OWN_DATA_SOURCE_REASON =
  'ChokaQ opened its DataSource itself (storage options without dataSource), so the ' +
  "handler's writes would not share its transactions; borrow the application's DataSource";

/** What a dialect supplies to {@link SqlHandlerTransaction}: its SQL and its way to drop a connection. */
export interface HandlerTransactionDialect {
  /** The fenced Hot → Archive move of `completed` on the open transaction; true when it hit its row. */
  archive(completed: Checked<CompletedJob>): Promise<boolean>;
  /**
   * Ends the transaction and frees the connection without waiting for statements in flight, so
   * that nothing of it can commit any more and the runner refuses further statements. Never rejects.
   */
  abandon(): Promise<void>;
}

/**
 * The open transaction of one run of a transactional handler, on a `QueryRunner` that began it at
 * READ COMMITTED. It ends exactly once: the first of `archive`, `rollback` and `abandon` decides,
 * the others do nothing (`archive` after an end rejects: its run can no longer commit).
 *
 * The final COMMIT and ROLLBACK go through TypeORM's `commitTransaction`/`rollbackTransaction`, so
 * its transaction depth stays right: a `manager.transaction(…)` of the handler is a savepoint.
 */
export class SqlHandlerTransaction implements DialectHandlerTransaction {
  readonly manager: EntityManager;
  private ended = false;

  constructor(
    readonly queryRunner: QueryRunner,
    private readonly dialect: HandlerTransactionDialect,
  ) {
    this.manager = queryRunner.manager;
  }

  async archive(completed: Checked<CompletedJob>): Promise<boolean> {
    if (!this.end()) throw new Error('the transaction of this run has already ended');
    const runner = this.queryRunner;
    try {
      if (!runner.isTransactionActive) {
        throw new Error(
          'the handler ended the transaction of its run itself (commitTransaction or ' +
            'rollbackTransaction on ctx.queryRunner); ChokaQ commits it with the job',
        );
      }
      const moved = await this.dialect.archive(completed);
      if (moved) await runner.commitTransaction();
      else await runner.rollbackTransaction();
      await runner.release();
      return moved;
    } catch (error) {
      // Nothing committed, or the COMMIT's fate is unknown: the connection goes, the server rolls
      // back what is still open, and the caller treats the run as failed.
      await this.dialect.abandon();
      throw error;
    }
  }

  async rollback(): Promise<void> {
    if (!this.end()) return;
    try {
      if (this.queryRunner.isTransactionActive) await this.queryRunner.rollbackTransaction();
      await this.queryRunner.release();
    } catch {
      await this.dialect.abandon();
    }
  }

  async abandon(): Promise<void> {
    if (!this.end()) return;
    await this.dialect.abandon();
  }

  /** Marks the end; false when it had already ended. */
  private end(): boolean {
    if (this.ended) return false;
    this.ended = true;
    return true;
  }
}
