import type { ChokaQAdmin } from '../../admin/chokaq-admin.service';
import type { JobStore } from '../../storage/job-storage';

/**
 * What a command acts through: the operator API, and the storage's own schema lifecycle (only
 * `migrate` uses it). Opened by `admin-session.ts`, closed by the CLI after the command.
 */
export interface CliSession {
  readonly admin: ChokaQAdmin;
  readonly schema: Pick<JobStore, 'schemaStatus' | 'ensureSchema' | 'convertKeysToBinary'>;
}
