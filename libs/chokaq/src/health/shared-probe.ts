import { toError } from '../common/error-text';

/** What one wait on a {@link SharedProbe} saw. */
export type ProbeOutcome<T> =
  | { kind: 'answered'; value: T; elapsedMs: number }
  | { kind: 'failed'; error: Error; elapsedMs: number }
  | { kind: 'timeout'; elapsedMs: number };

/**
 * A database read that checks share while it is in flight, each waiting for it at most its own
 * timeout. A read the database does not answer (a cut network, a lock held by a migration) then
 * stays in flight once, however often the health endpoint is polled meanwhile: polling a hung
 * database every few seconds does not take one more pooled connection per poll. The next check
 * after the read settled starts a new one.
 *
 * `clock` is for tests.
 */
export class SharedProbe<T> {
  private inFlight: Promise<T> | undefined;

  constructor(private readonly clock: () => number = Date.now) {}

  /** Waits for the read in flight, or starts `read`, for at most `timeoutMs`. Never rejects. */
  async run(read: () => Promise<T>, timeoutMs: number): Promise<ProbeOutcome<T>> {
    const started = this.clock();
    const flight = (this.inFlight ??= this.start(read));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    try {
      const settled = await Promise.race([
        flight.then(
          (value) => ({ value }),
          (error: unknown) => ({ error: toError(error) }),
        ),
        timeout,
      ]);
      const elapsedMs = this.clock() - started;
      if (settled === 'timeout') return { kind: 'timeout', elapsedMs };
      return 'error' in settled
        ? { kind: 'failed', error: settled.error, elapsedMs }
        : { kind: 'answered', value: settled.value, elapsedMs };
    } finally {
      clearTimeout(timer);
    }
  }

  private start(read: () => Promise<T>): Promise<T> {
    const flight = Promise.resolve()
      .then(read)
      .finally(() => {
        if (this.inFlight === flight) this.inFlight = undefined;
      });
    return flight;
  }
}
