import {
  Body,
  ConflictException,
  Controller,
  Get,
  HttpCode,
  Inject,
  NotFoundException,
  Param,
  Post,
  Query,
  Req,
  UseFilters,
  UseGuards,
} from '@nestjs/common';
import { ChokaQAdmin } from '../admin/chokaq-admin.service';
import type { AuditEntry, DlqActionPreview } from '../interfaces/audit.interface';
import type { BatchView } from '../interfaces/batch.interface';
import type { CancelResult, JobDependencies, ResurrectEdits } from '../interfaces/job.interface';
import type { JobView, ListPage } from '../interfaces/job-view.interface';
import { DECK_OPTIONS } from './deck.constants';
import { DeckAccessGuard, DeckMutation } from './deck-access.guard';
import { DeckErrorFilter } from './deck-error.filter';
import {
  activeQuery,
  archiveQuery,
  body,
  dlqFilterFromBody,
  dlqQuery,
  pendingEditsFromBody,
  type QueryParams,
} from './deck-input';
import type { ResolvedDeckOptions } from './deck-options';
import { DeckSnapshotService } from './deck-snapshot.service';

/** A job as the inspector shows it: the full row (through `redact`) and its audit entries. */
export interface DeckJob {
  job: JobView;
  audit: AuditEntry[];
  /** Its edges in the dependency graph (empty lists for a job with none). */
  dependencies: JobDependencies;
}

/**
 * The job lists (live, archive, DLQ), the job inspector, a batch and the DLQ's bulk actions. Lists carry no
 * payload; a full job leaves only through `redact`. A bulk action by filter takes the token of a
 * preview of the same action and filter (the core checks it and re-counts before acting).
 */
@Controller('api')
@UseGuards(DeckAccessGuard)
@UseFilters(DeckErrorFilter)
export class DeckJobsController {
  constructor(
    private readonly admin: ChokaQAdmin,
    private readonly snapshots: DeckSnapshotService,
    @Inject(DECK_OPTIONS) private readonly options: ResolvedDeckOptions,
  ) {}

  @Get('active')
  active(@Query() query: QueryParams): Promise<ListPage> {
    return this.admin.listActive(activeQuery(query));
  }

  @Get('archive')
  archive(@Query() query: QueryParams): Promise<ListPage> {
    return this.admin.listArchive(archiveQuery(query));
  }

  @Get('dlq')
  dlq(@Query() query: QueryParams): Promise<ListPage> {
    return this.admin.listDlq(dlqQuery(query));
  }

  /** `{ action: 'resurrect' | 'purge', filter }` → matched, will affect, sample ids and the token. */
  @Post('dlq/preview')
  @HttpCode(200)
  preview(@Body() input: unknown): Promise<DlqActionPreview> {
    const { action, filter, max } = body(input);
    return this.admin.previewDlq(dlqFilterFromBody(filter), {
      action: action as 'resurrect' | 'purge',
      ...(max === undefined ? {} : { max: max as number }),
    });
  }

  /** `{ filter, token }` → the ids moved back to Pending. */
  @Post('dlq/resurrect')
  @HttpCode(200)
  @DeckMutation()
  async resurrectByFilter(@Body() input: unknown, @Req() req: unknown): Promise<{ ids: string[] }> {
    const { filter, token } = body(input);
    const ids = await this.admin.resurrectByFilter(
      dlqFilterFromBody(filter),
      { token: token as string },
      this.options.actor(req),
    );
    this.snapshots.kick();
    return { ids };
  }

  /** `{ filter, token }` → the rows deleted. */
  @Post('dlq/purge')
  @HttpCode(200)
  @DeckMutation()
  async purgeByFilter(@Body() input: unknown, @Req() req: unknown): Promise<{ purged: number }> {
    const { filter, token } = body(input);
    const purged = await this.admin.purgeDlqByFilter(
      dlqFilterFromBody(filter),
      { token: token as string },
      this.options.actor(req),
    );
    this.snapshots.kick();
    return { purged };
  }

  @Get('jobs/:id')
  async job(@Param('id') id: string): Promise<DeckJob> {
    const job = await this.admin.getJob(id, { attempts: true });
    if (!job) throw new NotFoundException(`No job ${id} in the hot table, the archive or the DLQ.`);
    const audit = await this.admin.getAuditLog({ target: id, limit: 50 });
    const dependencies = await this.admin.getDependencies(id);
    return { job: this.options.redact(job), audit: audit.items, dependencies };
  }

  /** A batch's counts and callbacks; 404 when no batch has that id. */
  @Get('batches/:id')
  async batch(@Param('id') id: string): Promise<BatchView> {
    const batch = await this.admin.getBatch(id);
    if (!batch) throw new NotFoundException(`No batch ${id}.`);
    return batch;
  }

  /** Cancels a batch's jobs still in the hot table (`ChokaQAdmin.cancelBatch`). */
  @Post('batches/:id/cancel')
  @HttpCode(200)
  @DeckMutation()
  async cancelBatch(@Param('id') id: string, @Req() req: unknown): Promise<CancelResult> {
    const result = await this.admin.cancelBatch(id, this.options.actor(req));
    this.snapshots.kick();
    return result;
  }

  @Post('jobs/:id/cancel')
  @HttpCode(200)
  @DeckMutation()
  async cancel(@Param('id') id: string, @Req() req: unknown): Promise<CancelResult> {
    const result = await this.admin.cancel([id], this.options.actor(req));
    this.snapshots.kick();
    return result;
  }

  /**
   * `{ payload?, priority?, tags?, runAt? }` (`runAt` ISO 8601 or `"now"`): edits a Pending job;
   * 409 once it is not Pending (the message names its state).
   */
  @Post('jobs/:id/update')
  @HttpCode(200)
  @DeckMutation()
  async update(
    @Param('id') id: string,
    @Body() input: unknown,
    @Req() req: unknown,
  ): Promise<{ updated: true }> {
    await this.admin.updatePending(id, pendingEditsFromBody(input), this.options.actor(req));
    this.snapshots.kick();
    return { updated: true };
  }

  /** `{ payload?, priority?, tags? }`: moves a DLQ job back to Pending, edited; 409 when not in the DLQ. */
  @Post('jobs/:id/resurrect')
  @HttpCode(200)
  @DeckMutation()
  async resurrect(
    @Param('id') id: string,
    @Body() input: unknown,
    @Req() req: unknown,
  ): Promise<{ resurrected: true }> {
    const edits = input === undefined ? {} : body(input);
    const moved = await this.admin.resurrect(id, edits as ResurrectEdits, this.options.actor(req));
    if (!moved) throw new ConflictException(`Job ${id} is not in the DLQ.`);
    this.snapshots.kick();
    return { resurrected: true };
  }

  /** Deletes one DLQ job; 409 when it is not in the DLQ. */
  @Post('jobs/:id/purge')
  @HttpCode(200)
  @DeckMutation()
  async purge(@Param('id') id: string, @Req() req: unknown): Promise<{ purged: true }> {
    const n = await this.admin.purgeDlq([id], this.options.actor(req));
    if (n === 0) throw new ConflictException(`Job ${id} is not in the DLQ.`);
    this.snapshots.kick();
    return { purged: true };
  }
}
