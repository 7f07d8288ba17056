/**
 * The T-SQL parse thread (`parseInThread` in tsql-grammar.ts): answers each text posted on its port
 * with `{ errors, hints }` from `parseForCache`, then raises the shared flag the caller waits on.
 * A failure is answered too, so the caller never waits out its bound for a thrown parse.
 */
import { MessagePort, workerData } from 'node:worker_threads';
import { parseForCache } from './tsql-grammar';

const { port, signal } = workerData as { port: MessagePort; signal: Int32Array };

port.on('message', (sql: string) => {
  try {
    port.postMessage(parseForCache(sql));
  } catch (error) {
    port.postMessage({ failed: error instanceof Error ? error.stack : String(error) });
  }
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
});
