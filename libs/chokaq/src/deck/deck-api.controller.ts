import {
  Body,
  Controller,
  Get,
  HttpCode,
  Inject,
  MessageEvent,
  Param,
  Patch,
  Post,
  Query,
  Req,
  Sse,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { Observable, interval, map, merge } from 'rxjs';
import { ChokaQAdmin } from '../admin/chokaq-admin.service';
import { libraryVersion } from '../common/version';
import type { QueueInfo, QueuePatch } from '../interfaces/job.interface';
import type { DlqErrorFamily, ThroughputPoint } from '../interfaces/job-view.interface';
import type { RecurringJobView } from '../interfaces/recurring-job.interface';
import type { WorkerInfo } from '../interfaces/worker.interface';
import type { AuditLogPage } from '../interfaces/audit.interface';
import { DECK_CSRF_HEADER, DECK_OPTIONS } from './deck.constants';
import { DeckAccessGuard, DeckMutation } from './deck-access.guard';
import { DeckErrorFilter } from './deck-error.filter';
import { auditQuery, body, dlqFilter, type QueryParams } from './deck-input';
import type { ResolvedDeckOptions } from './deck-options';
import { DeckSnapshotService, type DeckSnapshot } from './deck-snapshot.service';

/** What the page needs to know before its first read. */
export interface DeckConfig {
  version: string;
  readOnly: boolean;
  refreshMs: number;
  heartbeatMs: number;
  csrfHeader: string;
}

/**
 * The Deck's API: its configuration, the shared snapshot (once, or as a stream of server-sent
 * events), the Queues panel's controls and the reads of the other overview panels. Every route runs
 * the Deck's guards; the mutations also the read-only switch, the CSRF header and the destructive
 * guards.
 */
@Controller('api')
@UseGuards(DeckAccessGuard)
@UseFilters(DeckErrorFilter)
export class DeckApiController {
  constructor(
    private readonly admin: ChokaQAdmin,
    private readonly snapshots: DeckSnapshotService,
    @Inject(DECK_OPTIONS) private readonly options: ResolvedDeckOptions,
  ) {}

  @Get('config')
  config(): DeckConfig {
    return {
      version: libraryVersion(),
      readOnly: this.options.readOnly,
      refreshMs: this.options.refreshMs,
      heartbeatMs: this.options.heartbeatMs,
      csrfHeader: DECK_CSRF_HEADER,
    };
  }

  @Get('snapshot')
  snapshot(): Promise<DeckSnapshot> {
    return this.snapshots.current();
  }

  /** The shared snapshot as server-sent events, with a heartbeat event while nothing changes. */
  @Sse('stream')
  stream(): Observable<MessageEvent> {
    return merge(
      this.snapshots.snapshots$.pipe(map((data): MessageEvent => ({ type: 'snapshot', data }))),
      interval(this.options.heartbeatMs).pipe(
        map((): MessageEvent => ({ type: 'heartbeat', data: { at: new Date().toISOString() } })),
      ),
    );
  }

  // ------------------------------------------------------------------ queues

  @Post('queues/:name/pause')
  @HttpCode(200)
  @DeckMutation()
  pause(@Param('name') name: string, @Req() req: unknown): Promise<QueueInfo> {
    return this.kick(this.admin.pauseQueue(name, this.options.actor(req)));
  }

  @Post('queues/:name/resume')
  @HttpCode(200)
  @DeckMutation()
  resume(@Param('name') name: string, @Req() req: unknown): Promise<QueueInfo> {
    return this.kick(this.admin.resumeQueue(name, this.options.actor(req)));
  }

  /**
   * Changes a queue's controls: any of `isActive` (false hides a retired queue), `maxWorkers`,
   * `zombieTimeoutSeconds`, `executionTimeoutMs`, `retryZombies`, `rateLimit` (`{ max, perMs }`),
   * and the group limits `groupConcurrency` (at most this many of one group's jobs running) and
   * `groupRateLimit` (`{ max, perMs }`, each group's own start rate); null clears a limit. The core
   * validates the body (`admin.updateQueue`): a bad field is a 400 with its issues.
   */
  @Patch('queues/:name')
  @DeckMutation()
  update(
    @Param('name') name: string,
    @Body() patch: unknown,
    @Req() req: unknown,
  ): Promise<QueueInfo> {
    return this.kick(
      this.admin.updateQueue(name, body(patch) as QueuePatch, this.options.actor(req)),
    );
  }

  // ------------------------------------------------------------------ overview panels

  /** Throughput per step over `[from, to)`; default the last hour in one-minute steps. */
  @Get('series')
  series(@Query() query: QueryParams): Promise<ThroughputPoint[]> {
    const minutes = query.range === 'day' ? 1_440 : 60;
    const stepMs = query.range === 'day' ? 15 * 60_000 : 60_000;
    const to = new Date(Math.ceil(Date.now() / 60_000) * 60_000);
    const from = new Date(to.getTime() - minutes * 60_000);
    const queue = typeof query.queue === 'string' && query.queue !== '' ? query.queue : undefined;
    return this.admin.getThroughputSeries({ queue, from, to, stepMs });
  }

  /** The most frequent error families of the DLQ (the core bounds the window it reads). */
  @Get('errors')
  errors(@Query() query: QueryParams): Promise<DlqErrorFamily[]> {
    return this.admin.getTopErrors(20, dlqFilter(query));
  }

  @Get('workers')
  workers(): Promise<WorkerInfo[]> {
    return this.admin.listWorkers({ limit: 500 });
  }

  @Get('audit')
  audit(@Query() query: QueryParams): Promise<AuditLogPage> {
    return this.admin.getAuditLog(auditQuery(query));
  }

  // ------------------------------------------------------------------ recurring

  @Get('recurring')
  recurring(): Promise<RecurringJobView[]> {
    return this.admin.getRecurringJobs();
  }

  @Post('recurring/:name/pause')
  @HttpCode(200)
  @DeckMutation()
  async pauseRecurring(@Param('name') name: string, @Req() req: unknown): Promise<{ ok: true }> {
    await this.admin.pauseRecurringJob(name, this.options.actor(req));
    return { ok: true };
  }

  @Post('recurring/:name/resume')
  @HttpCode(200)
  @DeckMutation()
  async resumeRecurring(@Param('name') name: string, @Req() req: unknown): Promise<{ ok: true }> {
    await this.admin.resumeRecurringJob(name, this.options.actor(req));
    return { ok: true };
  }

  @Post('recurring/:name/trigger')
  @HttpCode(200)
  @DeckMutation()
  async triggerRecurring(
    @Param('name') name: string,
    @Req() req: unknown,
  ): Promise<{ jobId: string }> {
    const jobId = await this.kick(this.admin.triggerRecurringJob(name, this.options.actor(req)));
    return { jobId };
  }

  private async kick<T>(done: Promise<T>): Promise<T> {
    const result = await done;
    this.snapshots.kick();
    return result;
  }
}
