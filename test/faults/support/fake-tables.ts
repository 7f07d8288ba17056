/**
 * The SQLite table names of ChokaQ's tables, for the checkers' own specs, which feed a checker an
 * in-memory database of hand-made rows under those names.
 */
export function fakeTable(name: string): string {
  return (
    {
      hot: 'chokaq_jobs_hot',
      archive: 'chokaq_jobs_archive',
      dlq: 'chokaq_jobs_dlq',
      stats: 'chokaq_stats_summary',
      dependencies: 'chokaq_job_dependencies',
    }[name] ?? `chokaq_${name}`
  );
}
