import { Injectable, Logger } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { ChokaQAdmin } from '../admin/chokaq-admin.service';
import type {
  QueueLagLevel,
  QueuesCheckOptions,
  StorageCheckOptions,
  WorkerCheckOptions,
} from '../interfaces/health-check.interface';
import type { QueueHealth } from '../interfaces/job-view.interface';
import type { QueueInfo } from '../interfaces/job.interface';
import type { SchemaStatus } from '../interfaces/schema-status.interface';
import {
  assertQueuesCheck,
  assertStorageCheck,
  assertWorkerCheck,
  HEARTBEAT_STALE_INTERVALS,
} from '../validation/validate-health';
import { publicErrorCode, toError } from '../common/error-text';
import { SharedProbe, type ProbeOutcome } from './shared-probe';

/** The key of each check in Terminus' response when the caller names none. */
export const DEFAULT_HEALTH_KEYS = {
  storage: 'chokaq-storage',
  worker: 'chokaq-worker',
  queues: 'chokaq-queues',
} as const;

/** What the queues check reads: every queue's lag, and the controls that say which to check. */
interface QueuesReading {
  health: QueueHealth[];
  queues: QueueInfo[];
}

/**
 * ChokaQ's health checks for `@nestjs/terminus`' `HealthCheckService`: whether the database is
 * reachable with its schema at the version this release needs ({@link storage}), whether this
 * process's worker runs and heartbeats ({@link worker}), and how far the queues lag
 * ({@link queues}). Each returns Terminus' result (`{ [key]: { status: 'up' | 'down', …data } }`)
 * with the figures an operator needs; a failure of the database is a `down` result, never a
 * throw, and a bad argument throws `ChokaQValidationError`.
 *
 * **Degraded.** Terminus knows up and down only. A queue lagging past `lagDegradedMs` but not
 * `lagUnhealthyMs` is reported **up** with `level: 'degraded'` (and the queues over the threshold
 * in `degraded`), so a readiness or liveness probe does not take the process out for what is a
 * capacity signal, while a monitor that reads the body can alert on it; past `lagUnhealthyMs` the
 * check is down (`level: 'unhealthy'`).
 *
 * **Bounded.** The checks that read the database (`storage`, `queues`) wait for it at most
 * `timeoutMs` (default 3,000) and are then down with `reason: 'timeout'`; a read still in flight
 * is shared by the checks that come meanwhile, so a hung database holds one pooled connection per
 * check, not one per poll. The worker check reads this process's memory only.
 *
 * Provided by `ChokaQHealthModule` (`@chokaq/nestjs/health`), which needs `ChokaQModule` registered
 * globally (its default).
 *
 * @publicApi
 */
@Injectable()
export class ChokaQHealthIndicator {
  private readonly storageProbe = new SharedProbe<SchemaStatus>();
  private readonly queuesProbe = new SharedProbe<QueuesReading>();
  private readonly logger = new Logger('ChokaQHealth');

  constructor(
    private readonly health: HealthIndicatorService,
    private readonly admin: ChokaQAdmin,
  ) {}

  /**
   * The storage: up when the database answers within `timeoutMs` and its ledger records every
   * schema version this release needs (`ChokaQAdmin.getSchemaStatus()` finds none pending; a newer
   * schema is up too: a newer release migrated it, and every migration only adds). Data:
   * `schemaVersion` (the newest the ledger records, 0 without a schema), `expectedSchemaVersion`
   * (the newest this release knows), `responseTimeMs`; when down also `reason` (`unreachable`,
   * `timeout`, `schema-missing`, `schema-behind`) and `message`.
   */
  async storage(
    key: string = DEFAULT_HEALTH_KEYS.storage,
    options?: StorageCheckOptions,
  ): Promise<HealthIndicatorResult> {
    const check = assertStorageCheck(key, options);
    const session = this.health.check(check.key);
    const outcome = await this.storageProbe.run(
      () => this.admin.getSchemaStatus(),
      check.timeoutMs,
    );
    if (outcome.kind !== 'answered')
      return session.down(unanswered(outcome, check.timeoutMs, this.logger));
    const { currentVersion, latestVersion, pending } = outcome.value;
    const data = {
      schemaVersion: currentVersion,
      expectedSchemaVersion: latestVersion,
      responseTimeMs: outcome.elapsedMs,
    };
    if (currentVersion === 0) {
      return session.down({
        ...data,
        reason: 'schema-missing',
        message:
          'The database has no ChokaQ schema: start with autoCreateSchema, or run `chokaq migrate`.',
      });
    }
    if (pending.length > 0) {
      return session.down({
        ...data,
        reason: 'schema-behind',
        message:
          `The schema is at version ${currentVersion}; this release needs ${latestVersion} ` +
          `(missing ${pending.map((p) => p.version).join(', ')}): start with autoCreateSchema, ` +
          'or run `chokaq migrate`.',
      });
    }
    return session.up(data);
  }

  /**
   * This process's worker: up while its loops run, it is not draining, and its last complete
   * heartbeat (leases renewed, Workers row written) is younger than `heartbeatStaleMs` (default
   * three heartbeat intervals). Data: `workerId`, `state`, `heartbeatAgeMs`, `heartbeatStaleMs`,
   * `heartbeatFailures`, `running`, `buffered`, `concurrency`; when down also `reason`
   * (`no-worker`, `starting`, `draining`, `stopped`, `heartbeat-stale`) and `message`. A
   * producer-only process (`worker.enabled: false`) has no worker: do not check it there.
   */
  async worker(
    key: string = DEFAULT_HEALTH_KEYS.worker,
    options?: WorkerCheckOptions,
  ): Promise<HealthIndicatorResult> {
    const check = assertWorkerCheck(key, options);
    const session = this.health.check(check.key);
    const worker = this.admin.localWorkerHealth();
    if (!worker) {
      return session.down({
        reason: 'no-worker',
        message:
          'No ChokaQ worker runs in this process (worker.enabled is false, or the application is not bootstrapped or has shut down).',
      });
    }
    const { heartbeatIntervalMs, ...figures } = worker;
    const heartbeatStaleMs =
      check.heartbeatStaleMs ?? HEARTBEAT_STALE_INTERVALS * heartbeatIntervalMs;
    const data = { ...figures, heartbeatStaleMs };
    if (worker.state !== 'running') {
      return session.down({
        ...data,
        reason: worker.state,
        message: `The worker is ${worker.state}, not running.`,
      });
    }
    if (worker.heartbeatAgeMs !== null && worker.heartbeatAgeMs > heartbeatStaleMs) {
      return session.down({
        ...data,
        reason: 'heartbeat-stale',
        message:
          `The worker's last heartbeat reached the database ${worker.heartbeatAgeMs} ms ago ` +
          `(stale after ${heartbeatStaleMs} ms); past the zombie timeout its running jobs are ` +
          'rescued as zombies by another process.',
      });
    }
    return session.up(data);
  }

  /**
   * The queues' lag: the longest wait of each checked queue's due Pending jobs and of those an
   * open circuit holds back (by default every queue neither paused nor retired), the worst of
   * them compared with the thresholds. Up when it is
   * below `lagDegradedMs` (`level: 'healthy'`) or below `lagUnhealthyMs` (`level: 'degraded'`),
   * down at or past `lagUnhealthyMs` (`level: 'unhealthy'`). Data: `level`, `worstQueue` (null
   * when no checked queue has a waiting job), its `lagMs`, `duePending` and `heldPending` (its
   * depth), the
   * thresholds, `queuesChecked`, and the queues over each threshold (`degraded`, `unhealthy`).
   * When the database does not answer, down with `reason` (`unreachable`, `timeout`) and
   * `message`.
   */
  queues(options: QueuesCheckOptions): Promise<HealthIndicatorResult>;
  queues(key: string, options: QueuesCheckOptions): Promise<HealthIndicatorResult>;
  async queues(
    keyOrOptions: string | QueuesCheckOptions,
    maybeOptions?: QueuesCheckOptions,
  ): Promise<HealthIndicatorResult> {
    // queues(options), queues(key, options), and queues(undefined, options) from plain JavaScript.
    const [key, options] =
      typeof keyOrOptions === 'object' && keyOrOptions !== null && maybeOptions === undefined
        ? [DEFAULT_HEALTH_KEYS.queues, keyOrOptions]
        : [keyOrOptions ?? DEFAULT_HEALTH_KEYS.queues, maybeOptions];
    const check = assertQueuesCheck(key, options);
    const session = this.health.check(check.key);
    const outcome = await this.queuesProbe.run(
      // From the primary, with a read replica too: what an orchestrator acts on must not depend
      // on a standby that only dashboards need, nor trail the primary by its lag.
      async () => ({
        health: await this.admin.getQueueHealth({ fresh: true }),
        queues: await this.admin.listQueues({ fresh: true }),
      }),
      check.timeoutMs,
    );
    if (outcome.kind !== 'answered')
      return session.down(unanswered(outcome, check.timeoutMs, this.logger));
    const named = check.queues && new Set(check.queues);
    const stopped = new Set(
      outcome.value.queues.filter((q) => q.isPaused || !q.isActive).map((q) => q.name),
    );
    const checked = outcome.value.health.filter((h) =>
      named ? named.has(h.queue) : !stopped.has(h.queue),
    );
    const level = (lagMs: number): QueueLagLevel =>
      lagMs >= check.lagUnhealthyMs
        ? 'unhealthy'
        : lagMs >= check.lagDegradedMs
          ? 'degraded'
          : 'healthy';
    // The worst lag; among equal lags, the deeper queue. Jobs held by an open circuit wait too.
    const depth = (h: QueueHealth) => h.duePending + h.heldPending;
    const waiting = checked.filter((h) => depth(h) > 0);
    const worst = waiting.reduce<QueueHealth | undefined>(
      (w, h) =>
        !w || h.maxLagMs > w.maxLagMs || (h.maxLagMs === w.maxLagMs && depth(h) > depth(w)) ? h : w,
      undefined,
    );
    const lagMs = worst?.maxLagMs ?? 0;
    const overall = worst ? level(lagMs) : 'healthy';
    const data = {
      level: overall,
      worstQueue: worst?.queue ?? null,
      lagMs,
      duePending: worst?.duePending ?? 0,
      heldPending: worst?.heldPending ?? 0,
      lagDegradedMs: check.lagDegradedMs,
      lagUnhealthyMs: check.lagUnhealthyMs,
      queuesChecked: checked.length,
      degraded: waiting.filter((h) => level(h.maxLagMs) === 'degraded').map((h) => h.queue),
      unhealthy: waiting.filter((h) => level(h.maxLagMs) === 'unhealthy').map((h) => h.queue),
    };
    return overall === 'unhealthy' ? session.down(data) : session.up(data);
  }
}

/**
 * The data of a check whose database read failed or timed out. A failure is told by a stable
 * `code` ({@link publicErrorCode}) and a generic message: the driver's text, which may name the
 * schema, tables, host and port, goes to the server log only (`logger`).
 */
function unanswered(
  outcome: Exclude<ProbeOutcome<unknown>, { kind: 'answered' }>,
  timeoutMs: number,
  logger: Pick<Logger, 'warn'>,
): { reason: string; message: string; timeoutMs: number; code?: string } {
  if (outcome.kind === 'timeout') {
    return {
      reason: 'timeout',
      message: `The database did not answer within ${timeoutMs} ms.`,
      timeoutMs,
    };
  }
  const code = publicErrorCode(outcome.error);
  logger.warn(`A health check's database read failed (${code}): ${toError(outcome.error).message}`);
  return {
    reason: 'unreachable',
    code,
    message: `The database read failed (${code}); the server log has the details.`,
    timeoutMs,
  };
}
