import type { HandlerDefinition } from '../interfaces/handler.interface';
import type { HotJob } from '../interfaces/job.interface';
import { circuitKey, type CircuitDecision } from './circuit-breaker';

/** What may happen to a claimed run that has not reached its handler yet. */
export type Triage =
  /** No handler of this process runs its type (removed since the claim): DLQ `NoHandler`. */
  | { kind: 'no-handler' }
  /** Its queue is paused or retired: back to Pending at once. */
  | { kind: 'held' }
  /** Its type's circuit is open: back to Pending after `delayMs`, no attempt spent. */
  | { kind: 'circuit-open'; delayMs: number }
  /** Its type's circuit stayed open past the job's age limit: DLQ `CircuitBreakerOpen`. */
  | { kind: 'circuit-expired' }
  /** Run it; `probe` when it is a half-open circuit's probe. */
  | { kind: 'run'; handler: HandlerDefinition; probe: boolean };

/** What triage reads: the process's handlers, queue controls, circuits and the database clock. */
export interface TriageView {
  resolve(queue: string, type: string): HandlerDefinition | undefined;
  isHeld(queue: string): boolean;
  /** Asks the circuit of `key` for a run (a granted probe must later be settled). */
  tryAcquire(key: string): CircuitDecision;
  /** Age of the job on the database clock, against `maxJobAgeMs`. */
  ageMs(since: Date): number;
  maxJobAgeMs: number;
}

/**
 * Decides, in this order, what happens to a claimed run before its handler: a missing handler
 * first (nothing else can run it here), then a held queue (no circuit is asked, so no probe is
 * spent on a job that goes back), then the circuit. Only a `run` verdict may hold a circuit probe.
 */
export function triage(job: HotJob, view: TriageView): Triage {
  const handler = view.resolve(job.queue, job.type);
  if (!handler) return { kind: 'no-handler' };
  if (view.isHeld(job.queue)) return { kind: 'held' };
  const decision = view.tryAcquire(circuitKey(job));
  if (decision.allowed) return { kind: 'run', handler, probe: decision.probe };
  if (view.ageMs(job.enqueuedAtUtc) >= view.maxJobAgeMs) return { kind: 'circuit-expired' };
  return { kind: 'circuit-open', delayMs: decision.retryInMs };
}
