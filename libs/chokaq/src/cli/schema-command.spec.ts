import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_SCHEMA, DEFAULT_SQLITE_PREFIX } from '../config/storage-defaults';
import { CLI_USAGE, runCli, schemaDdl } from './schema-command';

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

  it('uses the storage defaults of createJobStorage', () => {
    expect(schemaDdl('postgres')).toBe(schemaDdl('postgres', DEFAULT_SCHEMA));
    expect(schemaDdl('mssql')).toBe(schemaDdl('mssql', DEFAULT_SCHEMA));
    expect(schemaDdl('sqlite')).toBe(schemaDdl('sqlite', DEFAULT_SQLITE_PREFIX));
  });

  it('loads neither TypeORM nor a driver to print DDL', () => {
    jest.isolateModules(() => {
      for (const heavy of ['typeorm', 'pg', 'mssql', 'better-sqlite3']) {
        jest.doMock(heavy, () => {
          throw new Error(`the CLI loaded ${heavy}`);
        });
      }
      const cli = jest.requireActual<typeof import('./schema-command')>('./schema-command');
      expect(cli.schemaDdl('postgres')).toBe(schemaDdl('postgres'));
    });
  });

  it('rejects bad input with exit code 2 and a message on stderr', () => {
    expect(capture(['schema', '--dialect', 'oracle'])).toMatchObject({ code: 2, out: '' });
    expect(capture(['schema', '--dialect', 'mssql', '--schema', 'x]; DROP TABLE y']).code).toBe(2);
    expect(capture(['nope']).err).toContain("unknown command 'nope'");
    expect(capture(['--help'])).toEqual({ code: 0, out: CLI_USAGE, err: '' });
  });

  it.each([
    [['schema', '--dialect', 'sqlite', '--schmea', 'jobs'], '--schmea'],
    [['schema', '--schmea=jobs', '--dialect', 'sqlite'], '--schmea'],
    [['schema', '-d', 'sqlite'], '-d'],
    [['--verbose'], '--verbose'],
  ])('rejects the unknown option in %j with exit code 2, naming it', (args, flag) => {
    const { code, out, err } = capture(args);
    expect({ code, out }).toEqual({ code: 2, out: '' });
    expect(err).toContain(`unknown option '${flag}'`);
    expect(err).toContain(CLI_USAGE);
  });

  it('rejects a missing option value and a stray argument with exit code 2', () => {
    const missing = capture(['schema', '--dialect']);
    expect(missing).toMatchObject({ code: 2, out: '' });
    expect(missing.err).toContain('--dialect');
    const stray = capture(['schema', '--dialect', 'sqlite', 'jobs']);
    expect(stray).toMatchObject({ code: 2, out: '' });
    expect(stray.err).toContain("unexpected argument 'jobs'");
  });

  it('prints the package version for --version and -v', () => {
    const { version } = JSON.parse(
      readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'),
    ) as { version: string };
    expect(capture(['--version'])).toEqual({ code: 0, out: `${version}\n`, err: '' });
    expect(capture(['-v']).out).toBe(`${version}\n`);
  });

  it('prints the usage for --help, -h and help, also after the command', () => {
    for (const args of [['--help'], ['-h'], ['help'], ['schema', '--help']]) {
      expect(capture(args)).toEqual({ code: 0, out: CLI_USAGE, err: '' });
    }
  });

  it('without a command prints the usage on stderr with exit code 2', () => {
    expect(capture([])).toEqual({ code: 2, out: '', err: CLI_USAGE });
  });
});
