import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { toError } from '../common/error-text';
import { logEvent } from '../common/log-events';
import type { WorkerHeartbeat } from '../interfaces/worker.interface';
import type { JobStore } from '../storage/job-storage';

/** What a {@link WorkerPresence} is built from. */
export interface WorkerPresenceDeps {
  storage: Pick<JobStore, 'upsertWorker' | 'markWorkerStopped'>;
  /** This process's report as it is now, without `starting` (the presence adds it). */
  report: () => Omit<WorkerHeartbeat, 'starting'>;
  logger: ChokaQLogger;
}

/**
 * This worker's row of the Workers table: written when the worker starts, with every heartbeat,
 * and marked stopped once its graceful shutdown is over, so that `ChokaQAdmin.listWorkers()` in
 * any process sees it. The row is for operators' eyes only: nothing here fails the worker. A write
 * that fails is logged once per outage and tried again on the next beat; the row then shows the
 * worker as `lost` for as long as it cannot write, which is what the database can tell.
 */
export class WorkerPresence {
  /** Until one report was stored, each report is the first of this run (`starting`). */
  private stored = false;
  private failures = 0;
  private written = 0;

  constructor(private readonly deps: WorkerPresenceDeps) {}

  /** Reports stored so far. */
  get reportCount(): number {
    return this.written;
  }

  /** Writes the current report; resolves to whether it was stored. Never rejects. */
  async beat(): Promise<boolean> {
    const report = this.deps.report();
    try {
      await this.deps.storage.upsertWorker({ ...report, starting: !this.stored });
      this.stored = true;
      this.written++;
      if (this.failures > 0) {
        logEvent(
          this.deps.logger,
          'WorkerRowRecovered',
          `Worker row written again after ${this.failures} failed attempt(s)`,
          { workerId: report.workerId, failures: this.failures },
        );
      }
      this.failures = 0;
      return true;
    } catch (error) {
      if (this.failures++ === 0) {
        const message = toError(error).message;
        logEvent(
          this.deps.logger,
          'WorkerRowWriteFailed',
          `Could not write this worker's row of the Workers table: ${message}. ` +
            'Retried with every heartbeat; further failures are counted, not logged.',
          { workerId: report.workerId, error: message },
        );
      }
      return false;
    }
  }

  /**
   * Marks the row stopped (a clean shutdown). Only a worker that stored a report has a row to mark.
   * Never rejects: a worker that cannot say so is shown as lost once the zombie timeout passed.
   */
  async stopped(): Promise<void> {
    if (!this.stored) return;
    const { workerId } = this.deps.report();
    try {
      await this.deps.storage.markWorkerStopped(workerId);
    } catch (error) {
      const message = toError(error).message;
      logEvent(
        this.deps.logger,
        'WorkerRowStopFailed',
        `Could not mark this worker stopped in the Workers table (${message}); ` +
          'it will be shown as lost once the zombie timeout passed.',
        { workerId, error: message },
      );
    }
  }
}
