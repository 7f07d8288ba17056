import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  JOB_EVENT_METADATA,
  JOB_HANDLER_METADATA,
  RECURRING_JOB_METADATA,
} from '../chokaq.constants';
import { JobHandlerMetadata } from '../interfaces/handler.interface';
import type { OnJobEventMetadata } from '../interfaces/job-event.interface';
import { RecurringJobMetadata } from '../interfaces/recurring-job.interface';

/** Reads (only reads) what the ChokaQ decorators stored. */
@Injectable()
export class ChokaQMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /** The `@JobHandler` metadata of a method, if any. */
  getJobHandlerMetadata(method: (...args: never[]) => unknown): JobHandlerMetadata | undefined {
    return this.reflector.get<JobHandlerMetadata | undefined>(JOB_HANDLER_METADATA, method);
  }

  /** The `@OnJobEvent` metadata of a method, if any. */
  getJobEventMetadata(method: (...args: never[]) => unknown): OnJobEventMetadata | undefined {
    return this.reflector.get<OnJobEventMetadata | undefined>(JOB_EVENT_METADATA, method);
  }

  /** The `@RecurringJob` declarations on a class or a method (empty when none). */
  getRecurringJobMetadata(target: object): RecurringJobMetadata[] {
    return (this.reflector.get<RecurringJobMetadata[] | undefined>(
      RECURRING_JOB_METADATA,
      target as never,
    ) ?? []) as RecurringJobMetadata[];
  }
}
