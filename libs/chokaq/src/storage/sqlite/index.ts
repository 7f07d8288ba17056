// The dialect's three parts, loaded by createJobStorage only when this dialect is used.
export { SqliteConnection } from './sqlite.connection';
export { SqliteJobQueries } from './sqlite-job-queries';
export { SqliteJobStore } from './sqlite-job-store';
