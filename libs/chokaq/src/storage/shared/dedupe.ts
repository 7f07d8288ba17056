/**
 * Dedupe keys (`NewJob.dedupe`), the part every dialect shares: how a key's mode and states are
 * stored, what an enqueue does when the key has a holder, and a key row as `getJob` shows it.
 * The statements live in each dialect's `sql/dedupe.ts`; the order of the steps is the same in
 * each (see `dedupeStep`).
 */
import type { DedupeState, JobDedupe } from '../../interfaces/job.interface';
import type { ValidatedDedupe } from '../../validation/validate-job';
import { bool, fold, toDate } from './row-mapper';

/** `mode` column codes. */
export enum DedupeMode {
  Throttle = 1,
  Debounce = 2,
  Unique = 3,
}

const MODES: Record<ValidatedDedupe['mode'], DedupeMode> = {
  throttle: DedupeMode.Throttle,
  debounce: DedupeMode.Debounce,
  unique: DedupeMode.Unique,
};

/** `states` column bits of a unique key: pending 1, running 2, finished 4. */
const STATE_BITS: Record<DedupeState, number> = { pending: 1, running: 2, finished: 4 };

/** The column values of a key: mode code, state bits, window (0 for unique without finished). */
export function dedupeColumns(d: ValidatedDedupe): {
  mode: DedupeMode;
  states: number;
  windowMs: number;
} {
  return {
    mode: MODES[d.mode],
    states: d.states.reduce((bits, state) => bits | STATE_BITS[state], 0),
    windowMs: d.windowMs ?? 0,
  };
}

/**
 * A key's current holder, as the dialect's locking read of the key row sees it: the job it names,
 * whether the key's stored window (throttle, debounce) is still open on the database clock, the
 * holder's hot status (null when it is not hot), and whether it succeeded within the enqueue's
 * own `windowMs` (unique with `finished`).
 */
export interface DedupeHolder {
  jobId: string;
  inWindow: boolean;
  hotStatus: number | null;
  finishedWithinWindow: boolean;
}

/**
 * What an enqueue whose key row already exists does, the row locked:
 * - `hold`: return the holder's id (created false), nothing written;
 * - `replace`: debounce only; update the Pending holder's payload and run time with a guarded
 *   UPDATE (`status = 0`), and if a claim took it meanwhile, `take` instead;
 * - `take`: insert the job and, if it was made, point the key at it with a new window.
 * The holder being the job itself (a retried enqueue whose first try committed) is `hold`. The
 * enqueue's own mode and states decide; the window of throttle and debounce is the one the holder
 * took.
 */
export function dedupeStep(
  d: ValidatedDedupe,
  jobId: string,
  holder: DedupeHolder,
): 'hold' | 'replace' | 'take' {
  if (holder.jobId === jobId) return 'hold';
  switch (d.mode) {
    case 'throttle':
      return holder.inWindow ? 'hold' : 'take';
    case 'debounce':
      return holder.inWindow && holder.hotStatus === 0 ? 'replace' : 'take';
    case 'unique': {
      const held =
        (holder.hotStatus === 0 && d.states.includes('pending')) ||
        ((holder.hotStatus === 1 || holder.hotStatus === 2) && d.states.includes('running')) ||
        (holder.finishedWithinWindow && d.states.includes('finished'));
      return held ? 'hold' : 'take';
    }
  }
}

/**
 * The locking read of a key row (`job_id, in_window, hot_status, finished_within_window`, in any
 * dialect's spelling) as a {@link DedupeHolder}.
 */
export function mapDedupeHolder(raw: Record<string, unknown>): DedupeHolder {
  const row = fold(raw);
  const hotStatus = row.hotstatus ?? null;
  return {
    jobId: String(row.jobid),
    inWindow: bool(row.inwindow),
    hotStatus: hotStatus === null ? null : Number(hotStatus),
    finishedWithinWindow: bool(row.finishedwithinwindow),
  };
}

/** A key row (`key, mode, states, window_ms, window_started_utc, window_ends_utc`) as `getJob` shows it. */
export function mapDedupeRow(raw: Record<string, unknown>): JobDedupe {
  const row = fold(raw);
  const mode = Number(row.mode) as DedupeMode;
  const bits = Number(row.states);
  const windowMs = Number(row.windowms);
  return {
    key: String(row.key),
    mode:
      mode === DedupeMode.Throttle
        ? 'throttle'
        : mode === DedupeMode.Debounce
          ? 'debounce'
          : 'unique',
    states:
      mode === DedupeMode.Unique
        ? (Object.keys(STATE_BITS) as DedupeState[]).filter((s) => (bits & STATE_BITS[s]) !== 0)
        : null,
    windowMs: windowMs > 0 ? windowMs : null,
    windowStartedUtc: toDate(row.windowstartedutc)!,
    windowEndsUtc: toDate(row.windowendsutc),
  };
}

/** What a keyed enqueue returns: an enqueue's result, `replaced` when a debounce replaced its holder. */
export interface KeyedEnqueueResult {
  id: string;
  created: boolean;
  replaced?: boolean;
}

/**
 * One dialect's steps of a keyed enqueue, all inside one transaction: `Answer<T>` is `T` where the
 * driver is synchronous (better-sqlite3) and `Promise<T>` where it is not.
 */
export interface DedupeSteps<J, Sync extends boolean = false> {
  /** Inserts the key row for `job` if none exists; true when it did. */
  take(job: J): Answer<boolean, Sync>;
  /** Locks the key row and reads its holder; null when the row is gone. */
  holder(job: J): Answer<DedupeHolder | null, Sync>;
  /** Debounce: replaces the holder's payload and run time if it is still Pending; true when it was. */
  replace(holderId: string, job: J): Answer<boolean, Sync>;
  /** Inserts the job as an enqueue without a key would. */
  insert(job: J): Answer<KeyedEnqueueResult, Sync>;
  /** Points the locked key row at `job`, just inserted, with a new window. */
  move(job: J): Answer<void, Sync>;
}

type Answer<T, Sync extends boolean> = Sync extends true ? T : Promise<T>;

/** A step the plan asks its driver to run, by the name of the {@link DedupeSteps} method. */
type Ask = { step: 'take' | 'holder' | 'insert' | 'move' } | { step: 'replace'; holderId: string };

/**
 * A keyed enqueue as a plan of steps, driven synchronously or not ({@link enqueueWithKey},
 * {@link enqueueWithKeySync}), so every dialect runs the same order: take the free key and
 * insert; or lock the key row and hold, replace or take it over ({@link dedupeStep}). A key
 * removed by retention between the take and the lock is taken again (three rounds at most:
 * retention only removes a key that holds nothing).
 */
function* keyedEnqueue(job: {
  id: string;
  dedupe: ValidatedDedupe | null;
}): Generator<Ask, KeyedEnqueueResult, unknown> {
  for (let round = 0; round < 3; round++) {
    if ((yield { step: 'take' }) as boolean)
      return (yield { step: 'insert' }) as KeyedEnqueueResult;
    const holder = (yield { step: 'holder' }) as DedupeHolder | null;
    if (holder === null) continue;
    const step = dedupeStep(job.dedupe!, job.id, holder);
    if (step === 'hold') return { id: holder.jobId, created: false };
    if (step === 'replace' && ((yield { step: 'replace', holderId: holder.jobId }) as boolean)) {
      return { id: holder.jobId, created: false, replaced: true };
    }
    const result = (yield { step: 'insert' }) as KeyedEnqueueResult;
    if (result.created) yield { step: 'move' };
    return result;
  }
  throw new Error(
    `enqueue could not take dedupe key ${JSON.stringify(job.dedupe!.key)}: it kept vanishing`,
  );
}

function ask<J, Sync extends boolean>(steps: DedupeSteps<J, Sync>, a: Ask, job: J): unknown {
  return a.step === 'replace' ? steps.replace(a.holderId, job) : steps[a.step](job);
}

/** Runs a keyed enqueue's steps (`keyedEnqueue`) in the caller's transaction. */
export async function enqueueWithKey<J extends { id: string; dedupe: ValidatedDedupe | null }>(
  job: J,
  steps: DedupeSteps<J>,
): Promise<KeyedEnqueueResult> {
  const plan = keyedEnqueue(job);
  for (let next = plan.next(); ;) {
    if (next.done) return next.value;
    next = plan.next(await ask(steps, next.value, job));
  }
}

/** {@link enqueueWithKey} for a synchronous driver, inside its transaction. */
export function enqueueWithKeySync<J extends { id: string; dedupe: ValidatedDedupe | null }>(
  job: J,
  steps: DedupeSteps<J, true>,
): KeyedEnqueueResult {
  const plan = keyedEnqueue(job);
  for (let next = plan.next(); ;) {
    if (next.done) return next.value;
    next = plan.next(ask(steps, next.value, job));
  }
}

/**
 * An `enqueueMany` batch split into the jobs without a dedupe key (inserted in chunks, in order)
 * and those with one (each its own keyed enqueue, in key order, so two batches with the same keys
 * lock them in the same order), each with its index in the batch for the results.
 */
export function splitKeyed<J extends { dedupe: ValidatedDedupe | null }>(
  jobs: readonly J[],
): { plain: { job: J; index: number }[]; keyed: { job: J; index: number }[] } {
  const plain: { job: J; index: number }[] = [];
  const keyed: { job: J; index: number }[] = [];
  jobs.forEach((job, index) => (job.dedupe === null ? plain : keyed).push({ job, index }));
  // Array.prototype.sort is stable: items of one key keep their batch order.
  keyed.sort((a, b) =>
    a.job.dedupe!.key < b.job.dedupe!.key ? -1 : a.job.dedupe!.key > b.job.dedupe!.key ? 1 : 0,
  );
  return { plain, keyed };
}

/**
 * `enqueueMany` of every dialect: the jobs without a dedupe key through `insertPlain` (the
 * dialect's chunked insert, results in its input order), then each keyed job through
 * `enqueueKeyed` in key order ({@link splitKeyed}); the results in the batch's order. A batch
 * without keys goes to `insertPlain` whole, as before keys existed.
 */
export async function enqueueManyKeyed<J extends { dedupe: ValidatedDedupe | null }, R>(
  jobs: readonly J[],
  insertPlain: (plain: readonly J[]) => Promise<R[]>,
  enqueueKeyed: (job: J) => Promise<R>,
): Promise<R[]> {
  const { plain, keyed } = splitKeyed(jobs);
  if (keyed.length === 0) return insertPlain(jobs);
  const results = new Array<R>(jobs.length);
  const inserted = await insertPlain(plain.map((p) => p.job));
  inserted.forEach((result, i) => (results[plain[i].index] = result));
  for (const { job, index } of keyed) results[index] = await enqueueKeyed(job);
  return results;
}
