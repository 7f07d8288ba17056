// The dialect's three parts, loaded by createJobStorage only when this dialect is used.
export { PostgresConnection } from './postgres.connection';
export { PostgresJobQueries } from './postgres-job-queries';
export { PostgresJobStore } from './postgres-job-store';
