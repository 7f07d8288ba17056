import { Logger } from '@nestjs/common';
import { logEvent } from './common/log-events';
import type { SchedulerRegistry } from '@nestjs/schedule';
import type { RecurringTimerRegistry } from './runtime/recurring.loop';

/** The name under which recurring job `name`'s timer is listed in `SchedulerRegistry`. */
export function recurringTimerName(name: string): string {
  return `chokaq:${name}`;
}

/**
 * Lists the recurring loop's timers in the application's `SchedulerRegistry` as timeouts named
 * `chokaq:<name>`, where Nest users look for their scheduled work.
 *
 * Why timeouts (`addTimeout`) and not `CronJob`s (`addCronJob`): a `CronJob` ticks on this
 * process's clock, while a slot is due when the database's clock reaches it, and every process
 * must agree on that or slots would be claimed early by a process whose clock runs fast. The loop
 * therefore arms a plain Node timer per job for the delay the database clock gives, as it always
 * has (a `setTimeout` chain), and those timers are what is listed.
 *
 * Only entries this adapter added are ever removed: `ScheduleModule` clears every timeout in its
 * registry in its own `beforeApplicationShutdown`, and the application may delete or reuse a name.
 * Deleting `chokaq:<name>` from outside only drops that slot's wake-up: the sync loop still runs
 * the slot within one poll interval, and lists the next one again.
 */
export class SchedulerRegistryAdapter implements RecurringTimerRegistry {
  private readonly logger = new Logger('ChokaQ');
  private readonly listed = new Map<string, NodeJS.Timeout>();
  private readonly clashes = new Set<string>();

  constructor(private readonly registry: SchedulerRegistry) {}

  set(name: string, timer: NodeJS.Timeout): void {
    this.delete(name);
    const key = recurringTimerName(name);
    if (this.registry.doesExist('timeout', key)) {
      if (!this.clashes.has(key)) {
        this.clashes.add(key);
        logEvent(
          this.logger,
          'RecurringTimerNameTaken',
          `SchedulerRegistry already has a timeout named '${key}' that ChokaQ did not add; ` +
            `recurring job '${name}' runs but is not listed there. Rename the other timeout.`,
          { recurringJob: name, timerName: key },
        );
      }
      return;
    }
    this.registry.addTimeout(key, timer);
    this.listed.set(name, timer);
  }

  delete(name: string): void {
    const timer = this.listed.get(name);
    if (!timer) return;
    this.listed.delete(name);
    const key = recurringTimerName(name);
    if (this.registry.doesExist('timeout', key) && this.registry.getTimeout(key) === timer) {
      this.registry.deleteTimeout(key);
    }
  }

  /** Removes every entry this adapter added (shutdown); the timers themselves are the loop's. */
  clear(): void {
    for (const name of [...this.listed.keys()]) this.delete(name);
  }
}
