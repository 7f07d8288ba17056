/**
 * The T-SQL parse thread (`parseInThread` in tsql-grammar.ts): answers each `{ seq, sql }` posted on
 * its port with `{ seq, errors, hints }` from `parseForCache`, then counts the answer in the shared
 * counter the caller waits on. A failure is answered too, so the caller never waits out its bound
 * for a thrown parse.
 */
import { MessagePort, workerData } from 'node:worker_threads';
import { parseForCache } from './tsql-grammar';

const { port, signal } = workerData as { port: MessagePort; signal: Int32Array };

port.on('message', ({ seq, sql }: { seq: number; sql: string }) => {
  try {
    port.postMessage({ seq, ...parseForCache(sql) });
  } catch (error) {
    port.postMessage({ seq, failed: error instanceof Error ? error.stack : String(error) });
  }
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
});
