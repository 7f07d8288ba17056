import { ChokaQError } from './chokaq.error';

/**
 * The `transaction` option was not an open transaction ChokaQ can enqueue in: not one of the
 * accepted shapes (a TypeORM `QueryRunner` of ChokaQ's `DataSource`, a `pg` client, a
 * better-sqlite3 `Database`, an `mssql` transaction, a Knex, Kysely, Drizzle or Prisma
 * transaction), of another dialect or database, or not inside a transaction. `reason` says which.
 * Nothing was written.
 *
 * @publicApi
 */
export class ChokaQTransactionError extends ChokaQError {
  constructor(readonly reason: string) {
    super(
      `Cannot enqueue inside the given transaction: ${reason}. Pass your open transaction on ` +
        `ChokaQ's database (library README, "Enqueue in your own transaction").`,
    );
  }
}
