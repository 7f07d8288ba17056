// The dialect's three parts, loaded by createJobStorage only when this dialect is used.
export { MssqlConnection } from './mssql.connection';
export { MssqlJobQueries } from './mssql-job-queries';
export { MssqlJobStore } from './mssql-job-store';
