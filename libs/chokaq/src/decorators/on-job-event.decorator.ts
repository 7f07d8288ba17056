import { SetMetadata } from '@nestjs/common';
import { JOB_EVENT_METADATA } from '../chokaq.constants';
import type {
  JobEventFilter,
  JobEventName,
  OnJobEventMetadata,
} from '../interfaces/job-event.interface';

/**
 * Calls the decorated method of a singleton provider with every `event` (a name or a list of
 * names) of the jobs `filter` selects, as `method(event: JobEvent)`:
 *
 * ```ts
 * @OnJobEvent('dead', { queue: 'emails' })
 * onDead(event: JobEvent) { this.alerts.page(`email job ${event.job.id}: ${event.error}`); }
 * ```
 *
 * Found at startup like `@JobHandler`; an unknown event name or a bad filter fails the start. The
 * method runs outside the worker's call stack, one event at a time, in the process that made the
 * move; what it throws is logged and never touches the job (see `JobEvents`).
 *
 * @publicApi
 */
export function OnJobEvent(
  event: JobEventName | readonly JobEventName[],
  filter: JobEventFilter = {},
): MethodDecorator {
  const events = typeof event === 'string' ? [event] : [...event];
  const metadata: OnJobEventMetadata = { ...filter, events };
  return SetMetadata(JOB_EVENT_METADATA, metadata);
}
