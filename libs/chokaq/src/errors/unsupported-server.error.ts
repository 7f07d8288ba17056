import type { StorageDialect } from '../interfaces/job.interface';
import { ChokaQError } from './chokaq.error';

/**
 * The database server is older than ChokaQ's SQL needs, so `createJobStorage` (and with it the
 * application's start) refuses it instead of letting claims and moves fail at run time. The same
 * policy holds on every server dialect: PostgreSQL below 12 (`server_version_num` 120000), SQL
 * Server below compatibility level 130 (the subclass {@link ChokaQCompatibilityLevelError}).
 * SQLite is bundled with its driver and is not checked.
 *
 * @publicApi
 */
export class ChokaQUnsupportedServerError extends ChokaQError {
  constructor(
    /** The dialect that was checked. */
    readonly dialect: Exclude<StorageDialect, 'sqlite'>,
    /** What the server reported (`server_version_num`, `compatibility_level`). */
    readonly found: number,
    /** The lowest value ChokaQ runs on, in the same unit. */
    readonly needed: number,
    /** What to do about it; the message starts with what was found and needed. */
    advice: string,
  ) {
    super(advice);
  }
}
