import { ChokaQError } from './chokaq.error';

/**
 * The `transaction` option was not an open TypeORM `QueryRunner` of the `DataSource` ChokaQ uses.
 * Enqueue in your transaction only when ChokaQ shares your `DataSource` (`storage: { dataSource }`).
 *
 * @publicApi
 */
export class ChokaQTransactionError extends ChokaQError {
  constructor(readonly reason: string) {
    super(
      `Cannot enqueue inside the given transaction: ${reason}. Pass a QueryRunner of the same ` +
        `DataSource ChokaQ uses (storage: { dataSource }) with an open transaction.`,
    );
  }
}
