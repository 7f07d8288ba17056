import { RecordingLogger } from '../../../../test/runtime/support/silent-logger';
import { ChokaQTransactionalHandlerError } from '../errors';
import type { HandlerDefinition } from '../interfaces/handler.interface';
import type { HandlerTransactionSupport } from '../storage/job-storage';
import { checkHandlerTransactions } from './handler-transactions';

const handler = (name: string, transactional?: boolean): HandlerDefinition => ({
  queue: 'q',
  name,
  ...(transactional === undefined ? {} : { transactional }),
  invoke: async () => undefined,
});
const storage = (support: HandlerTransactionSupport) => ({ handlerTransactions: () => support });

describe('checkHandlerTransactions', () => {
  it('asks nothing of the storage when no handler is transactional', () => {
    const handlerTransactions = jest.fn();
    checkHandlerTransactions(
      [handler('A.run'), handler('B.run', false)],
      { handlerTransactions },
      10,
      new RecordingLogger(),
    );
    expect(handlerTransactions).not.toHaveBeenCalled();
  });

  it('refuses transactional handlers with the storage’s reason, naming them', () => {
    const run = () =>
      checkHandlerTransactions(
        [handler('A.run', true), handler('B.run'), handler('C.run', true)],
        storage({ supported: false, reason: 'not here' }),
        10,
        new RecordingLogger(),
      );
    expect(run).toThrow(ChokaQTransactionalHandlerError);
    expect(run).toThrow(/on A\.run, C\.run cannot run here: not here/);
  });

  it('warns when the concurrency could take the pool, and not otherwise', () => {
    const small = new RecordingLogger();
    checkHandlerTransactions(
      [handler('A.run', true)],
      storage({ supported: true, poolSize: 10 }),
      8,
      small,
    );
    expect(small.events('HandlerTransactionPoolSmall')).toEqual([
      expect.objectContaining({ poolSize: 10, concurrency: 8, handlers: ['A.run'] }),
    ]);
    expect(small.lines).toHaveLength(1);
    const ample = new RecordingLogger();
    checkHandlerTransactions(
      [handler('A.run', true)],
      storage({ supported: true, poolSize: 11 }),
      8,
      ample,
    );
    checkHandlerTransactions([handler('A.run', true)], storage({ supported: true }), 8, ample);
    expect(ample.lines).toEqual([]);
  });
});
