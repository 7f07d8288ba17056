import { Client } from 'pg';
import { scheduledCpuMs } from '../lib/proc-cpu';
import type { Timing } from './protocol';

/*
 * Profile mode only. Module state is acceptable here: one bench worker process profiles one
 * storage, and the maps are read once when it reports.
 */
const operations: Record<string, Timing> = {};
const statements: Record<string, Timing> = {};

function record(into: Record<string, Timing>, key: string, ms: number, serverMs?: number): void {
  const t = (into[key] ??= { count: 0, totalMs: 0, maxMs: 0 });
  t.count++;
  t.totalMs += ms;
  if (ms > t.maxMs) t.maxMs = ms;
  if (serverMs !== undefined) t.serverMs = (t.serverMs ?? 0) + serverMs;
}

/** What was recorded so far. */
export function timings(): {
  operations: Record<string, Timing>;
  statements: Record<string, Timing>;
} {
  return { operations, statements };
}

/**
 * Wraps every async method of `storage` to time it (wall time as the worker sees it, including
 * pool waits and transient retries), keyed by method name.
 */
export function timeOperations<T extends object>(storage: T): T {
  return new Proxy(storage, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      return (...args: unknown[]) => {
        const started = performance.now();
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (result instanceof Promise) {
          return result.finally(() => record(operations, property, performance.now() - started));
        }
        return result;
      };
    },
  });
}

/** A stable key for a SQL text: whitespace collapsed, first 110 characters. */
function statementKey(sql: unknown): string {
  const text = typeof sql === 'string' ? sql : ((sql as { text?: string } | null)?.text ?? '?');
  return text.replace(/\s+/g, ' ').trim().slice(0, 110);
}

/**
 * Times every `pg` query from send to result (driver round trip plus server time), keyed by SQL
 * text, with the CPU its backend spent meanwhile (`scheduledCpuMs`). pg_stat_statements is not
 * preloaded on the bench server, so the client view is what we have.
 */
export function installStatementTimer(): void {
  type Query = (this: Client, ...args: unknown[]) => unknown;
  const proto = Client.prototype as unknown as { query: Query };
  const original = proto.query;
  proto.query = function (this: Client, ...args: unknown[]) {
    const key = statementKey(args[0]);
    // One statement at a time runs on a client's backend (ChokaQ sends no pipelined queries), so
    // the backend's CPU between send and result is the statement's.
    const pid = (this as unknown as { processID?: number }).processID;
    const cpuBefore = scheduledCpuMs(pid);
    const started = performance.now();
    const done = () => {
      const cpuAfter = scheduledCpuMs(pid);
      const server =
        cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore;
      record(statements, key, performance.now() - started, server);
    };
    const last = args[args.length - 1];
    if (typeof last === 'function') {
      args[args.length - 1] = (...cbArgs: unknown[]) => {
        done();
        return (last as (...a: unknown[]) => unknown)(...cbArgs);
      };
      return original.apply(this, args);
    }
    const result = original.apply(this, args);
    if (result && typeof (result as Promise<unknown>).then === 'function') {
      (result as Promise<unknown>).then(done, done);
    }
    return result;
  };
}
