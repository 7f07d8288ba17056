import { JobStorage } from '../job-storage';
import { SqlStorageConfig } from '../storage-options';

// PLACEHOLDER while the mssql dialect is being written: declaration merging lets the rest of the
// code type-check; every operation is missing at run time. Replace this whole file.
// eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unsafe-declaration-merging
export interface MssqlJobStorage extends JobStorage {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class MssqlJobStorage {
  readonly dialect = 'mssql' as const;
  constructor(readonly config: SqlStorageConfig) {}
}
