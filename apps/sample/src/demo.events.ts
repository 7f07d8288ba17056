import { Injectable, Logger } from '@nestjs/common';
import { JobEvent, OnJobEvent } from '@chokaq/nestjs';

/** Lifecycle events, as an application would use them: a line per job that reached the DLQ. */
@Injectable()
export class DemoEvents {
  private readonly logger = new Logger('DemoEvents');

  @OnJobEvent(['dead', 'cancelled'])
  onDlq(event: JobEvent): void {
    this.logger.warn(
      `${event.job.queue}/${event.job.type} ${event.job.id} went to the DLQ (${event.name}) ` +
        `after attempt ${event.attempt}: ${event.error ?? 'no error text'}`,
    );
  }
}
