import { ChokaQError } from './chokaq.error';

/**
 * A `@JobHandler(…, { transactional: true })` was registered on a storage that cannot run handlers
 * inside its transactions: a `DataSource` ChokaQ opened itself (the handler's writes would go to a
 * database the application does not query through its own `DataSource`), or SQLite (one connection
 * and one writer serve the whole process, so a handler's open transaction would block every other
 * ChokaQ statement, heartbeats included). Thrown at startup.
 *
 * @publicApi
 */
export class ChokaQTransactionalHandlerError extends ChokaQError {
  constructor(
    /** The handlers that ask for a transaction, as `Class.method`. */
    readonly handlers: readonly string[],
    /** Why this storage cannot give them one. */
    readonly reason: string,
  ) {
    super(
      `@JobHandler({ transactional: true }) on ${handlers.length > 0 ? handlers.join(', ') : 'a handler'} ` +
        `cannot run here: ${reason}. ` +
        `Use PostgreSQL or SQL Server through your application's own DataSource ` +
        `(ChokaQModule.forRootAsync with storage: { dataSource }), or drop transactional: true ` +
        `and make the handler idempotent.`,
    );
  }
}
