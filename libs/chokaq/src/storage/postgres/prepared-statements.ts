import { createHash } from 'node:crypto';

/** The message PostgreSQL gives (SQLSTATE 0A000) when a prepared statement's row shape changed. */
const STALE_PLAN_MESSAGE = /cached plan must not change result type/i;

/**
 * True when a prepared statement can no longer run because DDL changed the shape of its result
 * (`RETURNING j.*` after a column was added, say). PostgreSQL keeps refusing that statement on
 * that connection until it is prepared again.
 */
export function isStalePlanError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (code === '0A000' && typeof message === 'string' && STALE_PLAN_MESSAGE.test(message)) {
      return true;
    }
    const next = e as { driverError?: unknown; cause?: unknown };
    e = next.driverError ?? next.cause;
  }
  return false;
}

/** The name a statement runs under, and the generation it belongs to. */
export interface PreparedName {
  name: string;
  generation: number;
}

/**
 * The hot path's named prepared statements: a stable name per fixed statement text, and a
 * generation that moves on when the schema changed under them.
 *
 * `pg` remembers per connection which names it has prepared and never prepares a name twice, so a
 * statement invalidated by DDL (a migration applied while workers run) would fail on every
 * connection until the pool is recycled. Instead, the first stale-plan error moves the generation
 * on: every name changes, each connection prepares the new names against the current schema, and
 * the failed operation is retried as a transient error. The old statements stay on their
 * connections until those close (a few kilobytes each).
 */
export class PreparedStatements {
  private readonly bases = new Map<string, string>();
  private current = 0;

  constructor(texts: Iterable<string>) {
    for (const text of texts) {
      this.bases.set(text, `chokaq_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`);
    }
  }

  /** The generation in use (0 until the first schema change is noticed). */
  get generation(): number {
    return this.current;
  }

  /** The name to run `text` under now, or undefined for a text that is not prepared. */
  nameOf(text: string): PreparedName | undefined {
    const base = this.bases.get(text);
    if (base === undefined) return undefined;
    const generation = this.current;
    return { name: generation === 0 ? base : `${base}_${generation}`, generation };
  }

  /**
   * A statement of `generation` hit a stale plan. Returns true when this call moved the
   * generation on (false when another call already did, so only one caller logs it).
   */
  invalidate(generation: number): boolean {
    if (generation !== this.current) return false;
    this.current++;
    return true;
  }
}
