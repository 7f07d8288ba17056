import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { logEvent } from '../common/log-events';
import { ChokaQTransactionalHandlerError } from '../errors';
import type { HandlerDefinition } from '../interfaces/handler.interface';
import type { JobStore } from '../storage/job-storage';

/**
 * Pooled connections ChokaQ's own statements may need while every slot runs a transactional
 * handler: the heartbeat, a claim, and the write of another run's verdict. With fewer spare, the
 * heartbeat waits for a connection a handler holds, and a long run can lose its lease for it.
 */
export const POOL_RESERVE = 3;

/**
 * The startup check of transactional handlers (`@JobHandler(…, { transactional: true })`): refuses
 * them on a storage that cannot run handlers in its transactions, with a typed error that says
 * why, and warns when, at `concurrency` runs at once, they could take so many pooled connections
 * that ChokaQ's own statements (and the application's) would wait for one.
 *
 * @throws ChokaQTransactionalHandlerError
 */
export function checkHandlerTransactions(
  handlers: readonly HandlerDefinition[],
  storage: Pick<JobStore, 'handlerTransactions'>,
  concurrency: number,
  logger: ChokaQLogger,
): void {
  const names = handlers.filter((h) => h.transactional === true).map((h) => h.name);
  if (names.length === 0) return;
  const support = storage.handlerTransactions();
  if (!support.supported) throw new ChokaQTransactionalHandlerError(names, support.reason);
  const poolSize = support.poolSize;
  if (poolSize !== undefined && concurrency + POOL_RESERVE > poolSize) {
    logEvent(
      logger,
      'HandlerTransactionPoolSmall',
      `Transactional handlers (${names.join(', ')}) hold one pooled connection each for their ` +
        `whole run: at worker.concurrency ${concurrency} they could take all but ` +
        `${Math.max(0, poolSize - concurrency)} of the DataSource's ${poolSize}, and ChokaQ's ` +
        `heartbeat, claims and completions (and the application) would wait for one. Raise the ` +
        `pool size (TypeORM poolSize / extra.max, or pool.max on SQL Server) to at least ` +
        `${concurrency + POOL_RESERVE}, or lower worker.concurrency.`,
      { poolSize, concurrency, handlers: names },
    );
  }
}
