import { DEFAULT_SCHEMA, DEFAULT_SQLITE_PREFIX } from '../../config/storage-defaults';
import { schemaDdl } from './schema.command';

describe('schemaDdl', () => {
  it.each(['mssql', 'postgres', 'sqlite'] as const)(
    'is the %s DDL, a script of its own',
    (dialect) => {
      const ddl = schemaDdl(dialect);
      expect(ddl.length).toBeGreaterThan(500);
      expect(ddl.endsWith('\n')).toBe(true);
    },
  );

  it('honours the schema name (mssql, postgres) and the table prefix (sqlite)', () => {
    const mssql = schemaDdl('mssql', 'jobs');
    expect(mssql).toContain('[jobs].[JobsHot]');
    expect(mssql).toContain("sp_getapplock @Resource = N'chokaq:schema:jobs'");
    expect(mssql).not.toContain('[chokaq].');
    expect(schemaDdl('postgres', 'jobs')).toContain('"jobs".jobs_hot');
    expect(schemaDdl('sqlite', 'q_')).toContain('q_jobs_hot');
  });

  it('uses the storage defaults of createJobStorage', () => {
    expect(schemaDdl('postgres')).toBe(schemaDdl('postgres', DEFAULT_SCHEMA));
    expect(schemaDdl('mssql')).toBe(schemaDdl('mssql', DEFAULT_SCHEMA));
    expect(schemaDdl('sqlite')).toBe(schemaDdl('sqlite', DEFAULT_SQLITE_PREFIX));
  });
});
