import { randomBytes } from 'node:crypto';
import { toError } from '../common/error-text';
import { logEvent } from '../common/log-events';
import { StreamLogger } from '../common/stream-logger';
import {
  ChokaQConfirmationError,
  ChokaQJobNotPendingError,
  ChokaQRecurringJobNotFoundError,
  ChokaQValidationError,
} from '../errors';
import {
  AuditAction,
  AuditLogPage,
  AuditLogQuery,
  BulkConfirmation,
  BulkDlqAction,
  DlqActionPreview,
} from '../interfaces/audit.interface';
import {
  ActiveFilter,
  CountQuery,
  DlqErrorFamily,
  DlqFilter,
  HistoryFilter,
  GetJobOptions,
  JobView,
  ListPage,
  ListQuery,
  QueueHealth,
  QueueOutcomes,
  QueueOutcomesQuery,
  QueueStats,
  ReadSource,
  SummaryStats,
  ThroughputPoint,
  ThroughputSeriesQuery,
  ThroughputStats,
} from '../interfaces/job-view.interface';
import {
  CancelResult,
  PendingEdits,
  PendingUpdate,
  QueueInfo,
  QueuePatch,
  QueueGroupLoad,
  RateLimit,
  RetentionPolicy,
  RetentionResult,
  ResurrectEdits,
} from '../interfaces/job.interface';
import type { BatchView } from '../interfaces/batch.interface';
import type { JobDependencies } from '../interfaces/job.interface';
import type { ChokaQLogger } from '../interfaces/chokaq-logger.interface';
import { ResolvedChokaQOptions } from '../interfaces/module-options.interface';
import { RecurringJobSpec, RecurringJobView } from '../interfaces/recurring-job.interface';
import { SchemaStatus } from '../interfaces/schema-status.interface';
import { LocalWorkerHealth, WorkerInfo, WorkerQuery } from '../interfaces/worker.interface';
import { ChokaQMetrics } from '../observability/chokaq-metrics';
import { HandlerRegistry } from '../discovery/handler.registry';
import { JobStatus } from '../interfaces/job-status.enum';
import { CronSchedule } from '../runtime/cron-schedule';
import { JobEvents } from '../runtime/job-events';
import { announceCancelled } from '../runtime/lifecycle-events';
import { JobStorage } from '../storage/job-storage';
import { assertRecurringJobSpec } from '../validation/decorator-options';
import { CONFIRMATION, MAX_ADMIN_BULK } from '../validation/limits';
import { assertTolerance, canonicalFilter } from '../validation/validate-audit';
import { assertDlqFilter } from '../validation/validate-filter';
import { OPTION_RULES, describeRule, satisfies } from '../validation/option-rules';
import { assertActor } from '../validation/validate-args';
import { assertNonNegativeInt, assertPendingUpdated } from '../validation/validate-job';
import { assertPayloadMatches } from '../validation/validate-payload';
import { WorkerRegistry } from '../worker.registry';
import { readConfirmation, signConfirmation } from './confirmation-token';

/**
 * Every operator action and read of ChokaQ (SPEC §3), for your own admin endpoints, scripts and
 * (later) the dashboard. It acts on the database, so it works from any process, including
 * producer-only ones; only {@link setConcurrency} and {@link workerStats} concern the local worker
 * ({@link listWorkers} lists every worker of the cluster).
 *
 * Protect whatever exposes it: these are destructive operations. Every mutation takes an optional
 * `actor` (at most 100 characters, the rule of `createdBy`; default `'system'`) and leaves one
 * row in the audit log ({@link getAuditLog}), written by the storage in the same transaction as
 * the change; where the storage keeps `LastModifiedBy` the actor is recorded there too. Arguments
 * are checked by the storage's validating edge, with the same rules and issue paths as a direct
 * storage call; this class adds only its own policy: a bulk DLQ action touches at most
 * {@link MAX_ADMIN_BULK} rows, and a bulk action by filter needs the confirmation token of a
 * {@link previewDlq} of the same action and filter.
 *
 * With `storage.readReplica` (PostgreSQL), its lists, counts and statistics (the active, archive
 * and DLQ lists, the audit log, summary, queue stats, health, outcomes, throughput, top errors,
 * exact counts, queues, groups, recurring jobs and workers) read the hot standby, so a dashboard
 * that polls them costs the primary nothing; they trail the primary by the replication lag
 * ({@link readSource}). A read of one job, batch or its dependencies (what an operator is about to
 * act on), every preview behind a confirmation token and every action read and write the primary.
 *
 * @publicApi
 */
export class ChokaQAdmin {
  /**
   * `ChokaQModule` builds it (a factory provider, so this file loads no Nest and the CLI, which
   * builds it too, starts without `@nestjs/common`): inject `ChokaQAdmin` instead. @internal
   */
  constructor(
    private readonly storage: JobStorage,
    private readonly options: ResolvedChokaQOptions,
    private readonly workers: WorkerRegistry,
    private readonly events?: JobEvents,
    private readonly metrics: ChokaQMetrics = ChokaQMetrics.disabled(),
    private readonly handlers?: HandlerRegistry,
    private readonly logger: ChokaQLogger = new StreamLogger('ChokaQAdmin'),
    private readonly reads: JobStorage = storage,
  ) {}

  /**
   * Where the lists, counts and statistics are read (see the class comment): `'replica'` when
   * `storage.readReplica` is set, with how far it trails the primary (`lagMs`, null when the server
   * named is not a standby), else `'primary'`.
   */
  async readSource(): Promise<ReadSource> {
    if (this.reads === this.storage) return { from: 'primary' };
    return { from: 'replica', lagMs: await this.reads.replicationLagMs() };
  }

  /** The confirmation secret, read (or first stored) once per instance. */
  private secret?: Promise<string>;

  // ------------------------------------------------------------------ queues

  /**
   * Every queue with its controls, from the read replica if there is one; `{ fresh: true }` reads
   * the primary (before an action on a queue).
   */
  listQueues(options: { fresh?: boolean } = {}): Promise<QueueInfo[]> {
    return (options.fresh === true ? this.storage : this.reads).getQueues();
  }

  /** Applies several queue controls at once (undefined = unchanged, null = clear). */
  updateQueue(queue: string, patch: QueuePatch, actor?: string): Promise<QueueInfo> {
    return this.changeQueue(queue, patch, 'queue.update', actor);
  }

  private async changeQueue(
    queue: string,
    patch: QueuePatch,
    action: AuditAction,
    actor: string | undefined,
  ): Promise<QueueInfo> {
    const info = await this.storage.updateQueue(queue, patch, { action, actor });
    // The stored controls, not the patch: a patch may carry keys the storage ignores (a BigInt,
    // a cycle) that JSON.stringify would throw on.
    logEvent(this.logger, 'QueueUpdated', `Queue ${queue} updated: ${JSON.stringify(info)}`, {
      queue,
      settings: { ...info },
    });
    return info;
  }

  /** Stops claiming from the queue; workers release its buffered jobs on their next cycle. */
  pauseQueue(queue: string, actor?: string): Promise<QueueInfo> {
    return this.changeQueue(queue, { isPaused: true }, 'queue.pause', actor);
  }

  /** Claims from the queue again. */
  resumeQueue(queue: string, actor?: string): Promise<QueueInfo> {
    return this.changeQueue(queue, { isPaused: false }, 'queue.resume', actor);
  }

  /** Makes a retired queue active (claimed and listed) again. */
  activateQueue(queue: string, actor?: string): Promise<QueueInfo> {
    return this.changeQueue(queue, { isActive: true }, 'queue.activate', actor);
  }

  /** Retires the queue: not claimed, hidden from default lists. */
  deactivateQueue(queue: string, actor?: string): Promise<QueueInfo> {
    return this.changeQueue(queue, { isActive: false }, 'queue.deactivate', actor);
  }

  /** Cluster-wide budget of Fetched + Processing jobs of the queue; null = unlimited. */
  setMaxWorkers(queue: string, maxWorkers: number | null, actor?: string): Promise<QueueInfo> {
    return this.setLimit(queue, 'maxWorkers', maxWorkers, actor);
  }

  /**
   * Cluster-wide start rate limit of the queue: in any window of `perMs` milliseconds (database
   * clock) at most `max` of its jobs start, across every process; null removes it. Enforced inside
   * the claim; holds together with `MaxWorkers`. Jobs held back stay Pending, no attempt spent.
   * `max` 1–1,000,000, `perMs` 1–86,400,000. Audited as `queue.update`.
   *
   * @example
   * await admin.setRateLimit('emails', { max: 10, perMs: 1_000 }); // 10 starts per second
   * await admin.setRateLimit('emails', null); // unlimited again
   */
  setRateLimit(queue: string, rateLimit: RateLimit | null, actor?: string): Promise<QueueInfo> {
    if (rateLimit === undefined) {
      const message = 'must be given: { max, perMs }, or null to remove the limit';
      return Promise.reject(
        new ChokaQValidationError([{ path: 'patch.rateLimit', message, value: rateLimit }]),
      );
    }
    return this.updateQueue(queue, { rateLimit }, actor);
  }

  /**
   * The queue's group limits (`NewJob.group`), cluster-wide and enforced inside the claim:
   * `concurrency`, at most this many of one group's jobs Fetched or Processing at once;
   * `rateLimit`, each group's own start rate limit (the guarantee of {@link setRateLimit}, per
   * group). An omitted field is left as it is; null removes it. A queue with either is a grouped
   * queue: its claim takes turns across its groups, so one group's backlog does not keep another
   * group's jobs waiting, and it never starts jobs ahead of free slots. Audited as `queue.update`.
   *
   * @example
   * await admin.setGroupLimits('reports', { concurrency: 2 }); // at most 2 per tenant at once
   * await admin.setGroupLimits('reports', { rateLimit: { max: 10, perMs: 60_000 } });
   * await admin.setGroupLimits('reports', { concurrency: null, rateLimit: null }); // no limits
   */
  setGroupLimits(
    queue: string,
    limits: { concurrency?: number | null; rateLimit?: RateLimit | null },
    actor?: string,
  ): Promise<QueueInfo> {
    if (
      limits === null ||
      typeof limits !== 'object' ||
      (limits.concurrency === undefined && limits.rateLimit === undefined)
    ) {
      const message = 'must name concurrency, rateLimit or both (null removes one)';
      return Promise.reject(
        new ChokaQValidationError([{ path: 'limits', message, value: limits }]),
      );
    }
    return this.updateQueue(
      queue,
      { groupConcurrency: limits.concurrency, groupRateLimit: limits.rateLimit },
      actor,
    );
  }

  /**
   * The busiest groups of `queue`: each group's Pending and running (Fetched or Processing) jobs,
   * most running first, then most pending; at most `limit` (default 10, at most 100).
   */
  getQueueGroups(queue: string, limit?: number): Promise<QueueGroupLoad[]> {
    return this.reads.getQueueGroups(queue, limit);
  }

  /** Zombie timeout of the queue in seconds (a heartbeat this old makes a zombie); null = global. */
  setZombieTimeout(queue: string, seconds: number | null, actor?: string): Promise<QueueInfo> {
    return this.setLimit(queue, 'zombieTimeoutSeconds', seconds, actor);
  }

  /** Execution timeout of the queue's jobs in ms (a handler's own timeout still wins); null = global. */
  setExecutionTimeout(queue: string, timeoutMs: number | null, actor?: string): Promise<QueueInfo> {
    return this.setLimit(queue, 'executionTimeoutMs', timeoutMs, actor);
  }

  /**
   * One limit of a queue, as a patch. The value is required: in a patch `undefined` means "leave it
   * as it is", so a setter given `undefined` would change nothing and still report success.
   */
  private setLimit(
    queue: string,
    key: 'maxWorkers' | 'zombieTimeoutSeconds' | 'executionTimeoutMs',
    value: number | null,
    actor: string | undefined,
  ): Promise<QueueInfo> {
    if (value === undefined) {
      const message = 'must be given: an integer, or null for the global setting';
      return Promise.reject(new ChokaQValidationError([{ path: `patch.${key}`, message, value }]));
    }
    return this.updateQueue(queue, { [key]: value }, actor);
  }

  /** Zombies of the queue return to Pending instead of the DLQ (only for idempotent work). */
  setRetryZombies(queue: string, retryZombies: boolean, actor?: string): Promise<QueueInfo> {
    return this.updateQueue(queue, { retryZombies }, actor);
  }

  // ------------------------------------------------------------------ jobs

  /**
   * One job wherever it is, or null. With `{ attempts: true }` the view also carries the job's
   * attempts that did not end in the archive (`attempts`, oldest first: worker, lease, start and
   * finish, outcome, error, duration); without it nothing more is read.
   */
  getJob(id: string, options?: GetJobOptions): Promise<JobView | null> {
    return this.storage.getJob(id, options);
  }

  /**
   * A batch's counts (total, succeeded, failed, pending), when it last settled and its callbacks'
   * job ids with whether each fired; null when no batch has that id.
   */
  getBatch(id: string): Promise<BatchView | null> {
    return this.storage.getBatch(id);
  }

  /**
   * A job's edges in the dependency graph: the jobs it waits (or waited) on and, at most 1,000,
   * those that wait (or waited) on it, each with its state (`waiting`, `succeeded`, `ignored`,
   * `failed`, `removed`), whether it is blocked on a dependency in the DLQ, and where the job
   * waited on is now.
   */
  getDependencies(id: string): Promise<JobDependencies> {
    return this.storage.getDependencies(id);
  }

  /**
   * Cancels a batch: its jobs still in the hot table, as {@link cancel} cancels them (Pending and
   * Fetched ones to the DLQ as `Cancelled` at once, running ones asked to stop); each counts as
   * failed in the batch, so the batch settles and calls `onComplete` and `onFailure` once its last
   * job has left. Jobs already finished are left as they are; a job resurrected into the batch
   * after this call is not cancelled by it. Audited as `job.cancel` of each job.
   */
  async cancelBatch(id: string, actor?: string): Promise<CancelResult> {
    const ids = await this.storage.batchHotJobIds(id);
    if (ids.length === 0) return { cancelled: [], cancelRequested: [] };
    return this.cancel(ids, actor);
  }

  /** Cancels jobs (see `JobClient.cancel`). */
  async cancel(ids: string | readonly string[], actor?: string): Promise<CancelResult> {
    const list = typeof ids === 'string' ? [ids] : ids;
    const result = await this.storage.cancel(list, actor, { action: 'job.cancel', actor });
    this.workers.cancelLocal(result.cancelRequested);
    announceCancelled(
      this.events,
      result.cancelled,
      (id) => this.storage.getJob(id),
      (error) => {
        const message = toError(error).message;
        logEvent(
          this.logger,
          'CancelEventsFailed',
          `Announcing cancelled jobs failed: ${message}`,
          {
            error: message,
          },
        );
      },
    );
    logEvent(
      this.logger,
      'JobsCancelled',
      `Cancel of ${list.length} job(s)${actor ? ` by ${actor}` : ''}: ${result.cancelled.length} cancelled, ` +
        `${result.cancelRequested.length} running asked to stop`,
      {
        actor,
        requested: list.length,
        cancelled: result.cancelled.length,
        cancelRequested: result.cancelRequested.length,
      },
    );
    return result;
  }

  /**
   * Edits a job that is still Pending: its payload, tags, priority, or when it runs (`runAt`: a
   * `Date`, or `'now'` to make a delayed or retrying job due at once). Refused with
   * `ChokaQJobNotPendingError` (its `status` says what the job is now; null: no such job) once a
   * worker has claimed it, including a row started ahead, or it has finished; nothing is changed
   * then. A new payload is checked as an enqueue checks it: size and JSON, and, when this process
   * registers a handler for the job's queue and type, that handler's schema
   * (`ChokaQPayloadValidationError`); it is stored under that handler's payload version, or, with
   * no handler here, under the job's own. One guarded statement with its audit row (`job.update`,
   * the payload as its hash and size) in one transaction.
   */
  async updatePending(id: string, edits: PendingEdits, actor?: string): Promise<void> {
    const update = await this.withHandlerRules(id, edits);
    const result = await this.storage.updatePending(id, update, actor, {
      action: 'job.update',
      actor,
    });
    assertPendingUpdated(id, result);
    logEvent(this.logger, 'JobUpdated', `Pending job ${id} edited${actor ? ` by ${actor}` : ''}`, {
      jobId: id,
      actor,
      fields: Object.keys(edits).filter((k) => edits[k as keyof PendingEdits] !== undefined),
    });
  }

  /**
   * The edits with the rules of the handler this process registers for the job, when they carry a
   * payload: its schema checks the payload, its version is the payload's. The job is read for its
   * queue and type, and the update is then held to them.
   */
  private async withHandlerRules(id: string, edits: PendingEdits): Promise<PendingUpdate> {
    const handlers = this.handlers;
    // Anything but an object with a payload is left to the storage edge, which names the problem.
    if (handlers === undefined || typeof edits !== 'object' || edits === null) return edits;
    if (edits.payload === undefined) return edits;
    const job = await this.storage.getJob(id);
    if (job === null || job.status !== JobStatus.Pending) {
      throw new ChokaQJobNotPendingError(id, job?.status ?? null);
    }
    const handler = handlers.resolve(job.queue, job.type);
    if (handler === undefined) return edits;
    if (handler.schema) {
      await assertPayloadMatches(handler.schema, job, edits.payload, 'edits.payload');
    }
    return {
      ...edits,
      payloadVersion: handler.version ?? 1,
      expect: { queue: job.queue, type: job.type },
    };
  }

  /**
   * A page of the active jobs (Pending, Fetched, Processing), newest enqueue first (a resurrected
   * job counts from its resurrection). Keyset pagination: pass the page's `nextCursor` back as
   * `cursor`, with the same `order`, for the next one; a page costs the same at any depth, and
   * walking to the end returns each row once. `limit` 1–1,000 (default 50); filter by queue,
   * type, status, tag, text and enqueue time (`from` inclusive, `to` exclusive).
   *
   * Items carry no payload and no full error text: `payloadBytes` and `errorPrefix` (200
   * characters) instead; read one job whole with {@link getJob}. A `search` (substring of id,
   * type, payload or error, matched literally) or a `tag` reads at most `MAX_LIST_SCAN` (10,000)
   * rows per call: `scanLimited: true` says the page stopped there with rows left, and its
   * `nextCursor` continues the scan.
   *
   * @example
   * let page = await admin.listActive({ filter: { queue: 'emails' }, limit: 100 });
   * while (page.nextCursor) page = await admin.listActive({ filter: { queue: 'emails' }, limit: 100, cursor: page.nextCursor });
   */
  listActive(query: ListQuery<ActiveFilter> = {}): Promise<ListPage> {
    return this.reads.listActive(query);
  }

  /**
   * A page of the archive (succeeded jobs), newest finish first; filter by queue, type, tag, text
   * and finish time. Otherwise as {@link listActive}.
   */
  listArchive(query: ListQuery<HistoryFilter> = {}): Promise<ListPage> {
    return this.reads.listArchive(query);
  }

  /**
   * A page of the DLQ, newest failure first; filter by queue, type, failure reason, tag, text,
   * failure time and ids. Otherwise as {@link listActive}.
   */
  listDlq(query: ListQuery<DlqFilter> = {}): Promise<ListPage> {
    return this.reads.listDlq(query);
  }

  // ------------------------------------------------------------------ DLQ

  /** Moves one DLQ job back to Pending (attempts 0), optionally with a new payload, tags or priority. */
  async resurrect(id: string, edits?: ResurrectEdits, actor?: string): Promise<boolean> {
    const moved = await this.storage.resurrect(id, edits, actor, {
      action: 'dlq.resurrect',
      actor,
    });
    logEvent(
      this.logger,
      'JobResurrected',
      `Resurrect ${id}${actor ? ` by ${actor}` : ''}: ${moved ? 'done' : 'not in the DLQ'}`,
      { jobId: id, actor, resurrected: moved > 0 },
    );
    return moved > 0;
  }

  /** Resurrects DLQ jobs by id; resolves to the ids that moved. */
  resurrectMany(ids: readonly string[], actor?: string): Promise<string[]> {
    return this.storage.resurrectMany(ids, actor, { action: 'dlq.resurrect-many', actor });
  }

  /**
   * What a bulk action on `filter` would touch (matched, will-affect ≤ `max`, up to 20 sample ids),
   * and the token that confirms it: pass it to {@link resurrectByFilter} or
   * {@link purgeDlqByFilter} (the `action` named here) with the same filter within 5 minutes. The
   * token is an HMAC over the action, the filter, the matched count, `max` and the expiry, with a
   * secret kept in the database, so any process of the cluster verifies it. `max` 0–10,000,
   * default 1,000.
   */
  async previewDlq(
    filter: DlqFilter,
    options: { action: BulkDlqAction; max?: number },
  ): Promise<DlqActionPreview> {
    const action = options?.action;
    if (action !== 'resurrect' && action !== 'purge') {
      throw new ChokaQValidationError([
        { path: 'options.action', message: "must be 'resurrect' or 'purge'", value: action },
      ]);
    }
    const max = assertNonNegativeInt(options.max ?? 1_000, 'max', MAX_ADMIN_BULK);
    const valid = assertDlqFilter(filter);
    const [preview, now, secret] = await Promise.all([
      this.storage.previewDlqFilter(valid, max),
      this.storage.now(),
      this.confirmationSecret(),
    ]);
    const expiresAtMs = now.getTime() + CONFIRMATION.validForMs;
    const token = signConfirmation(secret, {
      action,
      filter: canonicalFilter(valid),
      matched: preview.matched,
      max,
      expiresAtMs,
    });
    return { action, ...preview, token, expiresAt: new Date(expiresAtMs) };
  }

  /**
   * Resurrects the DLQ jobs matching `filter`, oldest failure first, at most the previewed `max`,
   * with the token of a {@link previewDlq} of `'resurrect'` on the same filter. It re-runs the
   * filter first and refuses with {@link ChokaQConfirmationError}, changing nothing, when the
   * token is invalid, expired or already used (a token confirms one action), or when the rows it would affect now differ from the previewed
   * `willAffect` by more than `confirm.tolerance` (default 0, at most 0.1). Resolves to the ids
   * that moved.
   */
  async resurrectByFilter(
    filter: DlqFilter,
    confirm: BulkConfirmation,
    actor?: string,
  ): Promise<string[]> {
    const { valid, rows } = await this.confirmed('resurrect', filter, confirm);
    const ids = await this.storage.resurrectByFilter(valid, rows, actor, {
      action: 'dlq.resurrect-by-filter',
      actor,
      confirmation: confirm.token,
    });
    logEvent(
      this.logger,
      'DlqResurrectedByFilter',
      `Resurrected ${ids.length} DLQ job(s) by filter${actor ? ` by ${actor}` : ''}`,
      { actor, count: ids.length },
    );
    return ids;
  }

  /** Deletes DLQ jobs by id (lifetime counters are untouched); resolves to rows deleted. */
  async purgeDlq(ids: readonly string[], actor?: string): Promise<number> {
    const n = await this.storage.purgeDlq(ids, { action: 'dlq.purge', actor });
    logEvent(
      this.logger,
      'DlqPurged',
      `Purged ${n} DLQ job(s) by id${actor ? ` by ${actor}` : ''}`,
      {
        actor,
        count: n,
      },
    );
    return n;
  }

  /**
   * Deletes the DLQ jobs matching `filter`, at most the previewed `max`, with the token of a
   * {@link previewDlq} of `'purge'` on the same filter; refuses as {@link resurrectByFilter} does.
   * Resolves to rows deleted.
   */
  async purgeDlqByFilter(
    filter: DlqFilter,
    confirm: BulkConfirmation,
    actor?: string,
  ): Promise<number> {
    const { valid, rows } = await this.confirmed('purge', filter, confirm);
    const n = await this.storage.purgeDlqByFilter(valid, rows, {
      action: 'dlq.purge-by-filter',
      actor,
      confirmation: confirm.token,
    });
    logEvent(
      this.logger,
      'DlqPurgedByFilter',
      `Purged ${n} DLQ job(s) by filter${actor ? ` by ${actor}` : ''}`,
      { actor, count: n },
    );
    return n;
  }

  /**
   * Checks a bulk action's confirmation and re-runs its filter: the filter (checked) and how many
   * rows the action may now touch, or a {@link ChokaQConfirmationError} before anything changed.
   */
  private async confirmed(
    action: BulkDlqAction,
    filter: DlqFilter,
    confirm: BulkConfirmation,
  ): Promise<{ valid: DlqFilter; rows: number }> {
    const valid = assertDlqFilter(filter);
    if (confirm === null || typeof confirm !== 'object' || typeof confirm.token !== 'string') {
      throw new ChokaQValidationError([
        {
          path: 'confirm',
          message: 'must be { token, tolerance? } with the token of a previewDlq',
          value: confirm,
        },
      ]);
    }
    const tolerance = assertTolerance(confirm.tolerance);
    const claims = readConfirmation(await this.confirmationSecret(), confirm.token);
    if (!claims || claims.action !== action || claims.filter !== canonicalFilter(valid)) {
      throw new ChokaQConfirmationError('invalid');
    }
    const previewed = Math.min(claims.matched, claims.max);
    if ((await this.storage.now()).getTime() >= claims.expiresAtMs) {
      throw new ChokaQConfirmationError('expired', previewed);
    }
    const current = (await this.storage.previewDlqFilter(valid, claims.max)).willAffect;
    if (Math.abs(current - previewed) > Math.floor(tolerance * previewed)) {
      throw new ChokaQConfirmationError('count-changed', previewed, current);
    }
    return { valid, rows: current };
  }

  /** The database's confirmation secret (stored by the first process that needs one). */
  private confirmationSecret(): Promise<string> {
    this.secret ??= this.storage.confirmationSecret(randomBytes(32).toString('hex')).catch((e) => {
      this.secret = undefined;
      throw e;
    });
    return this.secret;
  }

  // ------------------------------------------------------------------ maintenance

  /**
   * Runs retention now, with the configured windows unless others are given; recorded in the
   * audit log as one `retention.run` entry with its windows and the rows removed per table.
   */
  runRetention(policy?: Partial<RetentionPolicy>, actor?: string): Promise<RetentionResult> {
    const { archiveMs, dlqMs, metricsMs, workersMs, auditMs } = this.options.retention;
    return this.storage.applyRetention(
      { archiveMs, dlqMs, metricsMs, workersMs, auditMs, ...policy },
      { action: 'retention.run', actor },
    );
  }

  /**
   * A page of the audit log, newest first: one entry per mutation of this class (and per
   * retention run), with its actor, action, target, rows affected and the edit made. Keyset
   * pagination as the lists ({@link listActive}); filter by actor, action, time and exact
   * `target` (1–4,000 characters). The entries of one job are `{ target: jobId }`: its id is the
   * target of a cancel, resurrect or purge of that job alone (an action on several ids has the
   * target `"<n> ids"`, and a recurring trigger the recurring job's name); an index on the target
   * keeps that read the cost of its page at any size of the log.
   *
   * @example
   * const { items } = await admin.getAuditLog({ target: jobId, limit: 20 });
   */
  getAuditLog(query: AuditLogQuery = {}): Promise<AuditLogPage> {
    return this.reads.getAuditLog(query);
  }

  // ------------------------------------------------------------------ stats

  /**
   * Lifetime counters, hot counts by status and the rows the archive and the DLQ retain, cheap at
   * any size (it never counts the history tables). The retained rows are estimates on PostgreSQL
   * and SQL Server: `estimated` says which figures are; {@link countExactly} counts.
   */
  getSummary(): Promise<SummaryStats> {
    return this.reads.getSummary();
  }

  /** Per-queue counters, hot counts and controls. */
  getQueueStats(): Promise<QueueStats[]> {
    return this.reads.getQueueStats();
  }

  /**
   * Per-queue lag (the oldest due job's age, live; recent start lag) and saturation, from the read
   * replica if there is one; `{ fresh: true }` reads the primary (a health check does).
   */
  getQueueHealth(options: { fresh?: boolean } = {}): Promise<QueueHealth[]> {
    return (options.fresh === true ? this.storage : this.reads).getQueueHealth();
  }

  /**
   * How each queue's runs ended recently: succeeded, failed, cancelled and retried per queue
   * (every queue, zeros included, by name), over the current minute so far plus `minutes` whole
   * minutes before it (default 5, 1–1,440), from the metric buckets; `fromUtc` says where the
   * window starts. One statement for all queues; it reads (minutes + 1) buckets per queue and
   * outcome, so a card that polls it costs the same at any size of the archive or the DLQ.
   */
  getQueueOutcomes(query: QueueOutcomesQuery = {}): Promise<QueueOutcomes[]> {
    return this.reads.getQueueOutcomes(query);
  }

  /**
   * Where the database's schema stands against this release (`JobStore.schemaStatus`): the
   * newest version its ledger records (0 before any schema was created), the newest this release
   * knows, and the versions `ensureSchema()` would apply. Read from the ledger without a lock;
   * while the schema is current it builds no script, so a health check may call it often.
   */
  getSchemaStatus(): Promise<SchemaStatus> {
    return this.storage.schemaStatus();
  }

  /** Completions per second over the last minute and the last five. */
  getThroughput(queue?: string): Promise<ThroughputStats> {
    return this.reads.getThroughput(queue);
  }

  /**
   * Succeeded, failed, retried and cancelled runs, mean run time, starts and start lag per step of
   * a time range, for charts. The step is a whole number of minutes; at most 10,000 points.
   */
  getThroughputSeries(query: ThroughputSeriesQuery): Promise<ThroughputPoint[]> {
    return this.reads.getThroughputSeries(query);
  }

  /**
   * The most frequent DLQ error families over the newest 10,000 matching rows of the last 24 hours
   * (ids, numbers, UUIDs, hex, quoted values and times do not split a family).
   */
  getTopErrors(limit = 10, filter?: DlqFilter): Promise<DlqErrorFamily[]> {
    return this.reads.getTopDlqErrors(limit, filter);
  }

  /**
   * The exact number of rows of one pillar matching a filter. It counts the rows (the archive and
   * the DLQ can hold millions), so call it when the exact number is needed, not on every refresh.
   */
  countExactly(query: CountQuery): Promise<number> {
    return this.reads.countExactly(query);
  }

  // ------------------------------------------------------------------ recurring jobs
  //
  // A name that no recurring job has makes every method below throw
  // ChokaQRecurringJobNotFoundError, having changed and enqueued nothing.

  /**
   * Every recurring job: its definition, source (`decorator` or `runtime`), whether it is paused,
   * its last and next slots, and where its last run (the job the last claimed slot or trigger
   * enqueued) is now, read by id (`lastRun` null before the first run, or once retention removed
   * that job).
   */
  async getRecurringJobs(): Promise<RecurringJobView[]> {
    const records = await this.reads.getRecurringJobs();
    return Promise.all(
      records.map(async (record) => {
        const job = record.lastJobId === null ? null : await this.reads.getJob(record.lastJobId);
        const lastRun = job ? { id: job.id, pillar: job.pillar, status: job.status } : null;
        return { ...record, lastRun };
      }),
    );
  }

  /**
   * Creates or replaces a recurring job whose schedule lives in data (source `runtime`). It is
   * checked by exactly the rules of `@RecurringJob`, kept across restarts until
   * {@link removeRecurringJob}, and run by every worker process that has a handler for its
   * (queue, type); each slot is still enqueued once. Replacing a job keeps its last slot, last run
   * and paused state, and moves its next slot only when the cron or time zone changed. A
   * decorator-declared job of the same name becomes a runtime one until a process that declares it
   * starts again: at its start the decorator's definition wins.
   */
  async upsertRecurringJob(spec: RecurringJobSpec, actor?: string): Promise<void> {
    const maxBytes = this.options.storage.payloadMaxBytes ?? this.options.payload.maxBytes;
    const valid = assertRecurringJobSpec(spec, maxBytes);
    const schedule = new CronSchedule(valid.cron, valid.timeZone);
    const now = await this.storage.now();
    await this.storage.upsertRecurringJob(
      {
        name: valid.name,
        cron: valid.cron,
        timeZone: valid.timeZone,
        queue: valid.queue,
        type: valid.type,
        payload: valid.payload,
        misfirePolicy: valid.misfire,
        nextSlotUtc: schedule.next(now),
        source: 'runtime',
      },
      { action: 'recurring.upsert', actor },
    );
    logEvent(
      this.logger,
      'RecurringJobUpserted',
      `Recurring job ${valid.name} upserted: '${valid.cron}' (${valid.timeZone})`,
      { recurringJob: valid.name, cron: valid.cron, timeZone: valid.timeZone },
    );
  }

  /** Stops enqueuing the job's slots until {@link resumeRecurringJob}; slots meanwhile are missed. */
  async pauseRecurringJob(name: string, actor?: string): Promise<void> {
    await this.setRecurringPaused(name, true, actor);
  }

  /** Enqueues the job's slots again; slots missed while paused follow its misfire policy. */
  async resumeRecurringJob(name: string, actor?: string): Promise<void> {
    await this.setRecurringPaused(name, false, actor);
  }

  private async setRecurringPaused(
    name: string,
    paused: boolean,
    actor: string | undefined,
  ): Promise<void> {
    const action = paused ? 'recurring.pause' : 'recurring.resume';
    if (!(await this.storage.setRecurringJobPaused(name, paused, { action, actor }))) {
      throw new ChokaQRecurringJobNotFoundError(name);
    }
    logEvent(
      this.logger,
      paused ? 'RecurringJobPaused' : 'RecurringJobResumed',
      `Recurring job ${name} ${paused ? 'paused' : 'resumed'}`,
      { recurringJob: name },
    );
  }

  /**
   * Deletes the recurring job; jobs it already enqueued stay. A decorator-declared job comes back
   * at the next start of a process that declares it: remove the decorator too.
   */
  async removeRecurringJob(name: string, actor?: string): Promise<void> {
    if (!(await this.storage.removeRecurringJob(name, { action: 'recurring.remove', actor }))) {
      throw new ChokaQRecurringJobNotFoundError(name);
    }
    logEvent(this.logger, 'RecurringJobRemoved', `Recurring job ${name} removed`, {
      recurringJob: name,
    });
  }

  /**
   * Enqueues one run of the recurring job now, outside its schedule (its next slot does not move),
   * with the job's queue, type and payload; the run becomes its last run. The job's `createdBy` is
   * `actor` (checked as `createdBy` is), else `'chokaq:recurring-trigger'`. Resolves to the id of
   * the enqueued job.
   */
  async triggerRecurringJob(name: string, actor?: string): Promise<string> {
    const createdBy = assertActor(actor) ?? 'chokaq:recurring-trigger';
    const record = (await this.storage.getRecurringJobs()).find((r) => r.name === name);
    if (!record) throw new ChokaQRecurringJobNotFoundError(name);
    const result = await this.storage.triggerRecurringJob(
      name,
      { queue: record.queue, type: record.type, payload: record.payload, createdBy },
      { action: 'recurring.trigger', actor },
    );
    // Removed between the read and the trigger: nothing was enqueued.
    if (!result) throw new ChokaQRecurringJobNotFoundError(name);
    if (result.created) this.metrics.enqueued(record.queue, record.type);
    logEvent(
      this.logger,
      'RecurringJobTriggered',
      `Recurring job ${name} triggered by ${createdBy}: enqueued ${result.id}`,
      { recurringJob: name, actor: createdBy, jobId: result.id },
    );
    return result.id;
  }

  // ------------------------------------------------------------------ workers

  /**
   * Every worker process of the cluster, from the Workers table (works in any process, a
   * producer-only one included), the most recently seen first, each with its state:
   * - `running`: it reports with its heartbeat;
   * - `draining`: its graceful shutdown began (it finishes what it runs, claims nothing);
   * - `stopped`: it shut down cleanly;
   * - `lost`: not seen for longer than `rescue.zombieTimeoutMs` (of this process) and never said it
   *   stopped; its running jobs become zombies.
   * Stopped and lost workers stay listed until `retention.workersMs` after they were last seen.
   */
  listWorkers(query: Pick<WorkerQuery, 'limit'> = {}): Promise<WorkerInfo[]> {
    return this.reads.listWorkers({
      lostAfterMs: this.options.rescue.zombieTimeoutMs,
      limit: query?.limit,
    });
  }

  // ------------------------------------------------------------------ local worker

  /** Resizes this process's handler concurrency at run time. Throws in producer-only mode. */
  setConcurrency(concurrency: number): void {
    // The rule of `worker.concurrency`, so a resize refuses exactly what `forRoot` refuses.
    const rule = OPTION_RULES.worker.concurrency;
    if (!satisfies(rule, concurrency)) {
      throw new ChokaQValidationError([
        { path: 'concurrency', message: describeRule(rule), value: concurrency },
      ]);
    }
    this.workers.setConcurrency(concurrency);
    logEvent(this.logger, 'ConcurrencyChanged', `Local concurrency set to ${concurrency}`, {
      concurrency,
    });
  }

  /**
   * This process's worker for a health check: its state (`starting`, `running`, `draining`,
   * `stopped`), how long ago its last heartbeat reached the database, its consecutive heartbeat
   * failures and its load; null when this process started none (producer-only mode, before
   * bootstrap, or once shutdown is over). Read from memory: it answers at once, whatever the
   * database does.
   */
  localWorkerHealth(): LocalWorkerHealth | null {
    return this.workers.startedWorker?.health() ?? null;
  }

  /** Buffered and running jobs of this process's worker, or null when none runs. */
  workerStats(): {
    workerId: string;
    buffered: number;
    running: number;
    concurrency: number;
  } | null {
    const worker = this.workers.localWorker;
    return worker ? { workerId: worker.workerId, ...worker.stats() } : null;
  }
}
