import type { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import type { CircuitState } from '../interfaces/worker.interface';
import type { CircuitEvent } from '../observability/chokaq-metrics';

/** The state of one job type's circuit (a worker reports those not closed in its Workers row). */
export type { CircuitState };

/** What the processor may do with a job of a type. */
export type CircuitDecision =
  { allowed: true; probe: boolean } | { allowed: false; retryInMs: number };

interface Circuit {
  state: CircuitState;
  /** Failure times within the window (closed state). */
  failures: number[];
  openedAt: number;
  probesInFlight: number;
}

/**
 * Circuit breakers per job type, per process (SPEC §4). A type whose handler fails
 * `failureThreshold` times within `windowMs` opens: its jobs are released back to Pending with a
 * delay instead of running (no attempt spent). After `breakDurationMs` it turns half-open and lets
 * `halfOpenProbes` jobs run at once: a probe's success closes it, a failure opens it again.
 *
 * Per process on purpose: a type failing on one host (a bad network path) should not stop others,
 * and keeping it in memory costs no database round trip per job.
 */
export class CircuitBreakers {
  private readonly circuits = new Map<string, Circuit>();

  constructor(
    private readonly options: ResolvedChokaQOptions['circuitBreaker'],
    private readonly clock: () => number = Date.now,
    /** Hears every transition of a circuit, and every job it holds back (`rejected`): metrics. */
    private readonly onEvent: (key: string, event: CircuitEvent) => void = () => undefined,
  ) {}

  /** The state of `key`'s circuit now (an open circuit past its break reads as half-open). */
  state(key: string): CircuitState {
    const circuit = this.circuits.get(key);
    if (!circuit) return 'closed';
    this.advance(key, circuit);
    return circuit.state;
  }

  /** States of every circuit that is not closed (for dashboards and logs). */
  snapshot(): Record<string, CircuitState> {
    const out: Record<string, CircuitState> = {};
    for (const key of this.circuits.keys()) {
      const state = this.state(key);
      if (state !== 'closed') out[key] = state;
    }
    return out;
  }

  /** True when no circuit is open or half-open (jobs may start without asking per job). */
  allClosed(): boolean {
    for (const key of this.circuits.keys()) if (this.state(key) !== 'closed') return false;
    return true;
  }

  /**
   * Asks to run one job of `key`. A granted half-open probe must be followed by exactly one of
   * {@link recordSuccess}, {@link recordFailure} or {@link releaseProbe}.
   */
  tryAcquire(key: string): CircuitDecision {
    const circuit = this.circuits.get(key);
    if (!circuit) return { allowed: true, probe: false };
    this.advance(key, circuit);
    switch (circuit.state) {
      case 'closed':
        return { allowed: true, probe: false };
      case 'open':
        this.onEvent(key, 'rejected');
        return {
          allowed: false,
          retryInMs: Math.max(1, circuit.openedAt + this.options.breakDurationMs - this.clock()),
        };
      case 'half-open':
        if (circuit.probesInFlight < this.options.halfOpenProbes) {
          circuit.probesInFlight++;
          return { allowed: true, probe: true };
        }
        // Probes are out: look again after a short while rather than a whole break.
        this.onEvent(key, 'rejected');
        return {
          allowed: false,
          retryInMs: Math.max(1, Math.min(1_000, this.options.breakDurationMs)),
        };
    }
  }

  /** A job of `key` succeeded. Closes a half-open circuit. */
  recordSuccess(key: string, probe = false): void {
    const circuit = this.circuits.get(key);
    if (!circuit) return;
    if (probe) circuit.probesInFlight = Math.max(0, circuit.probesInFlight - 1);
    this.advance(key, circuit);
    // A half-open success closes the circuit. In closed state a success does not forget earlier
    // failures (the window does that), but an entry with none left is dropped to bound memory.
    if (circuit.state === 'half-open') {
      this.circuits.delete(key);
      this.onEvent(key, 'closed');
    } else if (circuit.state === 'closed' && circuit.failures.length === 0) {
      this.circuits.delete(key);
    }
  }

  /** A job of `key` failed in a way that says its dependency is unhealthy. */
  recordFailure(key: string, probe = false): void {
    const now = this.clock();
    let circuit = this.circuits.get(key);
    if (!circuit) {
      circuit = { state: 'closed', failures: [], openedAt: 0, probesInFlight: 0 };
      this.circuits.set(key, circuit);
    }
    if (probe) circuit.probesInFlight = Math.max(0, circuit.probesInFlight - 1);
    this.advance(key, circuit);
    if (circuit.state === 'half-open') {
      this.open(key, circuit, now);
      return;
    }
    if (circuit.state === 'open') return;
    circuit.failures.push(now);
    this.prune(circuit, now);
    if (circuit.failures.length >= this.options.failureThreshold) this.open(key, circuit, now);
  }

  /** A granted probe ended without a verdict (cancelled, lease lost, shutdown). */
  releaseProbe(key: string): void {
    const circuit = this.circuits.get(key);
    if (circuit) circuit.probesInFlight = Math.max(0, circuit.probesInFlight - 1);
  }

  private open(key: string, circuit: Circuit, now: number): void {
    circuit.state = 'open';
    circuit.openedAt = now;
    circuit.failures = [];
    circuit.probesInFlight = 0;
    this.onEvent(key, 'opened');
  }

  /** Time passes on an open circuit: past its break it is half-open (noticed when next looked at). */
  private advance(key: string, circuit: Circuit): void {
    if (
      circuit.state === 'open' &&
      this.clock() >= circuit.openedAt + this.options.breakDurationMs
    ) {
      circuit.state = 'half-open';
      circuit.probesInFlight = 0;
      this.onEvent(key, 'half-opened');
    }
    if (circuit.state === 'closed') this.prune(circuit, this.clock());
  }

  private prune(circuit: Circuit, now: number): void {
    const from = now - this.options.windowMs;
    while (circuit.failures.length > 0 && circuit.failures[0] <= from) circuit.failures.shift();
  }
}

/** Circuits are per `(queue, type)`: the same type key in two queues may have different handlers. */
export function circuitKey(job: { queue: string; type: string }): string {
  return `${job.queue}/${job.type}`;
}

/** The `(queue, type)` of a {@link circuitKey}: a queue name has no `/`, so the first one splits it. */
export function circuitJob(key: string): { queue: string; type: string } {
  const at = key.indexOf('/');
  return { queue: key.slice(0, at), type: key.slice(at + 1) };
}
