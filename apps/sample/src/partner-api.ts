import { Injectable } from '@nestjs/common';

/**
 * A pretend partner API that has an outage now and then, so the demo shows a circuit breaker
 * doing its job: the partner-sync jobs fail while it is down, their circuit opens and holds the
 * next ones back (Pending, no attempt spent), a probe after the break finds the API back, the
 * circuit closes and the held jobs run. Down for the last `DEMO_OUTAGE_MS` (default 20 s) of every
 * `DEMO_OUTAGE_EVERY_MS` (default 2 min, from the start; 0: never down).
 */
@Injectable()
export class PartnerApi {
  private readonly startedAt = Date.now();
  private readonly everyMs = Number(process.env.DEMO_OUTAGE_EVERY_MS ?? 120_000);
  private readonly outageMs = Number(process.env.DEMO_OUTAGE_MS ?? 20_000);

  /** Whether the API is down now. */
  isDown(now = Date.now()): boolean {
    if (!(this.everyMs > 0) || !(this.outageMs > 0)) return false;
    return (now - this.startedAt) % this.everyMs >= this.everyMs - this.outageMs;
  }

  /** Pushes one record, or fails as an unreachable API would. */
  async push(n: number): Promise<void> {
    if (this.isDown()) throw new Error(`partner API unavailable (503) for record #${n}`);
  }
}
