import type { CommandEntry } from '../args/parse-command-line';
import { auditCommand } from './audit.command';
import { dlqCommands } from './dlq.command';
import { jobsCommands } from './jobs.command';
import { migrateCommand } from './migrate.command';
import { queuesCommands } from './queues.command';
import { recurringCommands } from './recurring.command';
import { schemaCommand } from './schema.command';
import { statsCommand } from './stats.command';
import { workersCommand } from './workers.command';

/** Every command of `chokaq`, in the order the help lists them. */
export const COMMAND_TABLE: readonly CommandEntry[] = [
  schemaCommand,
  migrateCommand,
  statsCommand,
  queuesCommands,
  jobsCommands,
  dlqCommands,
  workersCommand,
  recurringCommands,
  auditCommand,
];
