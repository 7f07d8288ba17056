import * as storage from '../storage/create-storage';
import {
  CLI_USAGE,
  DEFAULT_SCHEMA,
  DEFAULT_SQLITE_PREFIX,
  runCli,
  schemaDdl,
} from './schema-command';

function capture(args: string[]): { code: number; out: string; err: string } {
  let out = '';
  let err = '';
  const code = runCli(
    args,
    { write: (t: string) => (out += t) },
    { write: (t: string) => (err += t) },
  );
  return { code, out, err };
}

describe('chokaq schema', () => {
  it.each(['mssql', 'postgres', 'sqlite'] as const)('prints the %s DDL on stdout', (dialect) => {
    const { code, out, err } = capture(['schema', '--dialect', dialect]);
    expect(code).toBe(0);
    expect(err).toBe('');
    expect(out).toBe(schemaDdl(dialect));
    expect(out.length).toBeGreaterThan(500);
  });

  it('honours --schema (and --opt=value)', () => {
    const { out } = capture(['schema', '--dialect=mssql', '--schema', 'jobs']);
    expect(out).toContain('[jobs].[JobsHot]');
    expect(out).toContain("sp_getapplock @Resource = N'chokaq:schema:jobs'");
    expect(out).not.toContain('[chokaq].');
    expect(capture(['schema', '--dialect', 'sqlite', '--schema', 'q_']).out).toContain(
      'q_jobs_hot',
    );
  });

  it('uses the same defaults as createJobStorage', () => {
    expect([DEFAULT_SCHEMA, DEFAULT_SQLITE_PREFIX]).toEqual([
      storage.DEFAULT_SCHEMA,
      storage.DEFAULT_SQLITE_PREFIX,
    ]);
  });

  it('rejects bad input with exit code 2 and a message on stderr', () => {
    expect(capture(['schema', '--dialect', 'oracle'])).toMatchObject({ code: 2, out: '' });
    expect(capture(['schema', '--dialect', 'mssql', '--schema', 'x]; DROP TABLE y']).code).toBe(2);
    expect(capture(['nope']).err).toContain("unknown command 'nope'");
    expect(capture(['--help'])).toEqual({ code: 0, out: CLI_USAGE, err: '' });
  });
});
