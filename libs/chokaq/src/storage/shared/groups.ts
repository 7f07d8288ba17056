/**
 * Groups (`NewJob.group`): what every dialect's grouped claim shares. The claim itself is SQL of
 * each dialect (`sql/claim.ts`); see its `fetchNextGroupedBatch`.
 */
import type { HandledJobs, QueueGroupLoad } from '../../interfaces/job.interface';

/**
 * The most groups one grouped claim visits on its walk: four per row it may start, at least 64,
 * at most 1,000. The walk stops earlier once the groups it visited have room for every row; the
 * bound matters only when many groups with Pending rows have none (at their concurrency, out of
 * rate, or with nothing due yet), and then the next claim goes on from where this one stopped.
 */
export function groupVisits(start: number): number {
  return Math.min(1_000, Math.max(64, 4 * start));
}

/** Maps a row of a dialect's `getQueueGroups` (columns `group_key`, `pending`, `running`). */
export function mapQueueGroupRow(r: Record<string, unknown>): QueueGroupLoad {
  return { group: String(r.group_key), pending: Number(r.pending), running: Number(r.running) };
}

/**
 * The `(queue, type)` pairs a worker runs in `queue`, for its grouped claim: null when it has a
 * queue-wide handler there (every type).
 */
export function typesOfQueue(handled: HandledJobs, queue: string): HandledJobs['types'] | null {
  return handled.queues.includes(queue) ? null : handled.types.filter((p) => p.queue === queue);
}

/**
 * One part of a claim that covers grouped queues, which the dialect runs in the claim's
 * transaction: the ordinary claim with what is left of the limit and the start, or one grouped
 * queue's claim, which starts every row it takes, at most `start`.
 */
export type ClaimTurn =
  | { kind: 'ordinary'; limit: number; start: number }
  | { kind: 'grouped'; queue: string; start: number };

/**
 * The parts of a claim and their order (`grouped`: the handled queues with group limits, which the
 * ordinary claim skips). Grouped queues and the ordinary claim take turns at going first
 * (`groupsFirst`: the store flips it after each committed claim that covered grouped queues), so
 * neither can keep the other's jobs waiting by filling every slot claim after claim. The grouped
 * queues, in order, share what is left to start (every row they take starts); the ordinary claim
 * takes what they left of the limit and the start, and none when they filled the limit or when
 * `skipOrdinary` (every handled queue grouped). Yields each part; returns every row taken.
 */
export function* claimTurns<R>(
  request: { limit: number; start: number },
  grouped: readonly string[],
  options: { groupsFirst: boolean; skipOrdinary?: boolean; started: (row: R) => boolean },
): Generator<ClaimTurn, R[], R[]> {
  const { limit, start } = request;
  function* claimGrouped(startable: number): Generator<ClaimTurn, R[], R[]> {
    const rows: R[] = [];
    for (const queue of grouped) {
      const room = startable - rows.length;
      if (room <= 0) break;
      rows.push(...(yield { kind: 'grouped', queue, start: room }));
    }
    return rows;
  }
  const first = grouped.length > 0 && options.groupsFirst ? yield* claimGrouped(start) : [];
  const rest =
    first.length >= limit || options.skipOrdinary
      ? []
      : yield { kind: 'ordinary', limit: limit - first.length, start: start - first.length };
  const last =
    grouped.length > 0 && !options.groupsFirst
      ? yield* claimGrouped(
          Math.min(start - rest.filter(options.started).length, limit - rest.length),
        )
      : [];
  // A claim that covers no grouped queue (most claims) returns the ordinary claim's rows as they are.
  return first.length === 0 && last.length === 0 ? rest : [...first, ...rest, ...last];
}

/** Runs {@link claimTurns} with `take` answering each part (an asynchronous driver). */
export async function takeTurns<R>(
  turns: Generator<ClaimTurn, R[], R[]>,
  take: (turn: ClaimTurn) => Promise<R[]>,
): Promise<R[]> {
  for (let next = turns.next(); ;) {
    if (next.done) return next.value;
    next = turns.next(await take(next.value));
  }
}

/** {@link takeTurns} for a synchronous driver, inside its transaction. */
export function takeTurnsSync<R>(
  turns: Generator<ClaimTurn, R[], R[]>,
  take: (turn: ClaimTurn) => R[],
): R[] {
  for (let next = turns.next(); ;) {
    if (next.done) return next.value;
    next = turns.next(take(next.value));
  }
}
