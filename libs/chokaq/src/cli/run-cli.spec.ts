import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ChokaQConfirmationError,
  ChokaQJobNotPendingError,
  ChokaQValidationError,
} from '../errors';
import { JobStatus } from '../interfaces/job-status.enum';
import { defineCommand } from './args/command-definition';
import { commandHelp, overviewHelp } from './args/help-text';
import { CommandEntry, commandsOf, everyOption } from './args/parse-command-line';
import { CliIo } from './cli-io';
import { COMMAND_TABLE } from './commands/command-table';
import { schemaDdl } from './commands/schema.command';
import { CliNothingMatchedError } from './errors/cli-nothing-matched.error';
import { runCli } from './run-cli';
import { text } from './format/view';

/*
 * The dispatcher in process, with buffers for its streams: parsing, help, usage errors, exit codes
 * and error reports. None of these cases opens a database (a usage error is found before one is
 * opened); test/e2e/cli.e2e.spec.ts runs the built binary against SQLite and PostgreSQL.
 */

interface Run {
  code: number;
  out: string;
  err: string;
}

async function cli(
  args: string[],
  options: { env?: Record<string, string>; table?: readonly CommandEntry[] } = {},
): Promise<Run> {
  let out = '';
  let err = '';
  const io: CliIo = {
    out: { write: (t: string) => (out += t) },
    err: { write: (t: string) => (err += t) },
    env: options.env ?? {},
    now: () => Date.parse('2026-01-02T03:04:05.000Z'),
    defaultActor: () => 'cli:tester',
  };
  const code = await runCli(args, io, options.table);
  return { code, out, err };
}

const command = (name: string) => commandsOf(COMMAND_TABLE).find((c) => c.name === name)!;

describe('chokaq: parsing, help and usage errors', () => {
  it('prints the DDL of `schema` on stdout, as it is, with exit code 0', async () => {
    expect(await cli(['schema', '--dialect', 'sqlite', '--schema', 'q_'])).toEqual({
      code: 0,
      out: schemaDdl('sqlite', 'q_'),
      err: '',
    });
    expect((await cli(['schema', '--dialect=mssql', '--schema=jobs'])).out).toBe(
      schemaDdl('mssql', 'jobs'),
    );
  });

  it('loads neither TypeORM, nor a driver, nor Nest to print DDL', async () => {
    const heavy = ['typeorm', 'pg', 'mssql', 'better-sqlite3', '@nestjs/common', '@nestjs/core'];
    let code: number | undefined;
    let out = '';
    await jest.isolateModulesAsync(async () => {
      for (const name of heavy) {
        jest.doMock(name, () => {
          throw new Error(`the CLI loaded ${name}`);
        });
      }
      const isolated = jest.requireActual<typeof import('./run-cli')>('./run-cli');
      code = await isolated.runCli(['schema', '--dialect', 'postgres'], {
        out: { write: (t: string) => (out += t) },
        err: { write: (t: string) => (out += t) },
        env: {},
        now: () => 0,
        defaultActor: () => 'cli:tester',
      });
    });
    expect({ code, out }).toEqual({ code: 0, out: schemaDdl('postgres') });
  });

  it.each([
    [['schema', '--dialect', 'sqlite', '--schmea', 'jobs'], "unknown option '--schmea'"],
    [['schema', '--schmea=jobs', '--dialect', 'sqlite'], "unknown option '--schmea'"],
    [['--verbose'], "unknown option '--verbose'"],
    [['stats', '--max', '5'], "unknown option '--max' for 'chokaq stats'"],
    [['schema', '--dialect', 'sqlite', '--url', 'x'], "unknown option '--url' for 'chokaq schema'"],
    [['schema', '-d', 'sqlite'], "unknown option '-d'"],
    [['nope'], "unknown command 'nope'"],
    [['dlq', 'nope'], "unknown command 'dlq nope'"],
    [['dlq'], "'chokaq dlq' needs one of: list, preview, resurrect, purge"],
    [['schema', '--dialect'], '--dialect'],
    [['schema', '--dialect', 'sqlite', 'jobs'], "unexpected argument 'jobs'"],
    [['schema', '--dialect', 'oracle'], '--dialect must be one of mssql, postgres, sqlite'],
    [['schema', '--dialect', 'mssql', '--schema', 'x]; DROP TABLE y'], '--schema must match'],
    [['jobs', 'get'], 'missing argument: chokaq jobs get <id>'],
    [['jobs', 'run-now'], 'missing argument: chokaq jobs run-now <id>'],
    [['jobs', 'edit', 'x'], 'give at least one of --payload, --priority, --tags, --run-at'],
    [['jobs', 'edit', 'x', '--actor', 'a'], 'give at least one of --payload, --priority'],
    [['jobs', 'edit', 'x', '--payload', '{x:1}'], '--payload must be JSON'],
    [['jobs', 'edit', 'x', '--priority', '1.5'], '--priority must be a whole number'],
    [['jobs', 'edit', 'x', '--tags', 'a,,b'], '--tags must be items separated by commas'],
    [['jobs', 'edit', 'x', '--run-at', '2h'], '--run-at must be an ISO date or time'],
    [['queues', 'set-max-workers', 'q', 'many'], 'max workers must be a whole number'],
    [['queues', 'set-rate-limit', 'q'], 'give --max and --per-ms together, or --clear'],
    [['queues', 'set-rate-limit', 'q', '--max', '5'], 'give --max and --per-ms together'],
    [
      ['queues', 'set-rate-limit', 'q', '--max', '5', '--per-ms', '1000', '--clear'],
      'give either --clear or --max with --per-ms, not both',
    ],
    [['queues', 'set-rate-limit', 'q', '--max', '0', '--per-ms', '1000'], '--max must be a whole'],
    [['queues', 'set-rate-limit', 'q', '--max', '5', '--per-ms', '1s'], '--per-ms must be a whole'],
    [
      ['queues', 'set-group-limits', 'q'],
      'give --concurrency, --max with --per-ms, or --clear-rate',
    ],
    [['queues', 'set-group-limits', 'q', '--max', '5'], 'give --max and --per-ms together'],
    [['queues', 'set-group-limits', 'q', '--concurrency', '0'], '--concurrency must be a whole'],
    [
      ['queues', 'set-group-limits', 'q', '--max', '5', '--per-ms', '9', '--clear-rate'],
      'give either --clear-rate or --max with --per-ms, not both',
    ],
    [['queues', 'groups', 'q', '--limit', '0'], '--limit must be a whole'],
    [['queues', 'set-timeout', 'q'], 'give --execution, --zombie or both'],
    [['queues', 'set-timeout', 'q', '--execution', '30'], '--execution must be a duration'],
    [['queues', 'set-timeout', 'q', '--zombie', '1500ms'], '--zombie must be whole seconds'],
    [['dlq', 'list', '--reason', 'bored'], '--reason must be one of max-retries-exceeded'],
    [['dlq', 'list', '--since', 'yesterday'], '--since must be an ISO date or time'],
    [['dlq', 'list', '--limit', '0'], '--limit must be a whole number of at least 1'],
    [['dlq', 'purge'], 'name the jobs: ids, a filter'],
    [['dlq', 'purge', 'a', '--queue', 'q'], 'name the jobs one way only'],
    [['dlq', 'resurrect', 'a', '--token', 't'], '--token and --tolerance apply to a filter'],
    [['dlq', 'purge', 'a', 'b', '--max', '1'], '--max applies to a filter, not to ids'],
    [['dlq', 'preview', '--all'], '--action is required'],
    [['audit', '--action', 'job.delete'], '--action must be one of queue.pause'],
    [['workers', '--lost-after', '10'], '--lost-after must be a duration'],
    [['migrate', '--binary-keys', '--dry-run'], '--binary-keys cannot be combined with --dry-run'],
    [['migrate', '--partitioning', 'hour'], '--partitioning must be one of day, week, month'],
    [['migrate', '--partitioning', 'day', '--dry-run'], 'cannot be combined with --dry-run'],
    [
      ['migrate', '--partitioning', 'week', '--url', 'sqlite:/nonexistent/dir/jobs.db'],
      'a partitioned Archive is for PostgreSQL and SQL Server',
    ],
  ])('%j is a usage error (exit 2) before any database is opened: %s', async (args, message) => {
    const run = await cli(args);
    expect({ code: run.code, out: run.out }).toEqual({ code: 2, out: '' });
    expect(run.err).toContain(message);
    expect(run.err).toContain('Usage: chokaq');
  });

  it('a usage error of a command shows that command’s help', async () => {
    const run = await cli(['queues', 'pause']);
    expect(run.err).toBe(
      `chokaq queues pause: missing argument: chokaq queues pause <queue>\n\n${commandHelp(command('queues pause'))}`,
    );
  });

  it('a group without its command shows the group’s help', async () => {
    const run = await cli(['queues']);
    expect(run.code).toBe(2);
    expect(run.err).toContain(
      'Usage: chokaq queues <list|groups|pause|resume|set-max-workers|set-rate-limit|set-group-limits|set-timeout>',
    );
  });

  it('refuses more than 25 jobs to cancel without --yes, before opening the database', async () => {
    const ids = Array.from({ length: 26 }, (_, i) => `id-${i}`);
    const run = await cli(['jobs', 'cancel', ...ids]);
    expect(run.code).toBe(2);
    expect(run.err).toContain('This would cancel 26 row(s), more than 25');
    // With --yes the command goes on, to the database it needs.
    expect((await cli(['jobs', 'cancel', ...ids, '--yes'])).err).toContain('no database');
  });

  it('takes migrate with or without --partitioning as far as the database it needs', async () => {
    for (const args of [
      ['migrate'],
      ['migrate', '--partitioning', 'month'],
      ['migrate', '--binary-keys'],
    ]) {
      const run = await cli(args);
      expect({ args, code: run.code }).toEqual({ args, code: 2 });
      expect(run.err).toContain('no database: pass --url');
    }
  });

  it('needs a database: --url, else $CHOKAQ_DATABASE_URL', async () => {
    const run = await cli(['stats']);
    expect(run).toMatchObject({ code: 2, out: '' });
    expect(run.err).toContain('no database: pass --url');
    expect((await cli(['stats'], { env: { CHOKAQ_DATABASE_URL: 'mysql://h/db' } })).err).toContain(
      "unsupported database 'mysql:'",
    );
    expect((await cli(['stats', '--url', 'x.db', '--schema', '1x'])).err).toContain(
      '--schema must match',
    );
  });

  it('prints help for --help, -h and help, for the CLI, a group and a command', async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      expect(await cli(args)).toEqual({ code: 0, out: overviewHelp(COMMAND_TABLE), err: '' });
    }
    const dlqHelp = await cli(['dlq', '--help']);
    expect(dlqHelp.out).toContain('Usage: chokaq dlq <list|preview|resurrect|purge>');
    expect(await cli(['help', 'dlq'])).toEqual(dlqHelp);
    for (const args of [
      ['dlq', 'resurrect', '--help'],
      ['help', 'dlq', 'resurrect'],
      ['dlq', 'resurrect', '--bogus', '-h'],
    ]) {
      const run = await cli(args);
      expect(run.code).toBe(args.includes('--bogus') ? 2 : 0);
      if (run.code === 0) expect(run.out).toBe(commandHelp(command('dlq resurrect')));
    }
  });

  it('lists every command in the overview, and every option in a command’s help', () => {
    const overview = overviewHelp(COMMAND_TABLE);
    for (const c of commandsOf(COMMAND_TABLE)) {
      expect(overview).toContain(`  ${c.name} `);
      const help = commandHelp(c);
      for (const name of Object.keys(c.options)) expect(help).toContain(`--${name}`);
      if (c.database !== 'none') {
        for (const name of ['url', 'schema', 'json', 'help']) expect(help).toContain(`--${name}`);
      }
    }
    expect(commandsOf(COMMAND_TABLE).map((c) => c.name)).toEqual([
      'schema',
      'migrate',
      'stats',
      'queues list',
      'queues groups',
      'queues pause',
      'queues resume',
      'queues set-max-workers',
      'queues set-rate-limit',
      'queues set-group-limits',
      'queues set-timeout',
      'jobs get',
      'jobs waiting',
      'jobs cancel',
      'jobs run-now',
      'jobs edit',
      'dlq list',
      'dlq preview',
      'dlq resurrect',
      'dlq purge',
      'workers',
      'recurring list',
      'recurring pause',
      'recurring resume',
      'recurring trigger',
      'audit',
    ]);
  });

  it('gives each option one meaning across commands (the first pass depends on it)', () => {
    expect(() => everyOption(COMMAND_TABLE)).not.toThrow();
    const clash = defineCommand({
      name: 'clash',
      summary: '',
      synopsis: '',
      options: { json: { type: 'string', description: '' } },
      positionals: { min: 0, max: 0 },
      database: 'none',
      parse: () => ({}),
      run: () => Promise.resolve({ data: null, view: [] }),
    });
    expect(() => everyOption([...COMMAND_TABLE, clash])).toThrow(/--json/);
  });

  it('prints the package version for --version and -v', async () => {
    const { version } = JSON.parse(
      readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8'),
    ) as { version: string };
    expect(await cli(['--version'])).toEqual({ code: 0, out: `${version}\n`, err: '' });
    expect((await cli(['-v'])).out).toBe(`${version}\n`);
  });

  it('without a command prints the overview on stderr with exit code 2', async () => {
    expect(await cli([])).toEqual({ code: 2, out: '', err: overviewHelp(COMMAND_TABLE) });
  });
});

describe('chokaq: results, errors and exit codes', () => {
  /** A table of one command, `probe`, that runs without a database and does what it is told. */
  function probe(run: () => Promise<{ data: unknown; nothingMatched?: string }>) {
    return [
      defineCommand({
        name: 'probe',
        summary: 'a probe',
        synopsis: '',
        options: { json: { type: 'boolean', description: 'json' } },
        positionals: { min: 0, max: 0 },
        database: 'none',
        parse: () => ({}),
        run: async () => ({ view: [text('human')], ...(await run()) }),
      }),
    ];
  }

  it('prints the view, or with --json the one JSON document, and exits 0', async () => {
    const table = probe(() => Promise.resolve({ data: { at: new Date(0), n: 1 } }));
    expect(await cli(['probe'], { table })).toEqual({ code: 0, out: 'human\n', err: '' });
    const json = await cli(['probe', '--json'], { table });
    expect(json).toMatchObject({ code: 0, err: '' });
    expect(JSON.parse(json.out)).toEqual({ at: '1970-01-01T00:00:00.000Z', n: 1 });
  });

  it('nothing matched: the result is printed, a line goes to stderr, exit 3', async () => {
    const table = probe(() => Promise.resolve({ data: { items: [] }, nothingMatched: 'None.' }));
    expect(await cli(['probe'], { table })).toEqual({
      code: 3,
      out: 'human\n',
      err: 'chokaq probe: None.\n',
    });
    expect(await cli(['probe', '--json'], { table })).toEqual({
      code: 3,
      out: '{\n  "items": []\n}\n',
      err: '',
    });
  });

  it.each([
    [new CliNothingMatchedError('No job has the id x.'), 3],
    [new ChokaQJobNotPendingError('x', null), 3],
    [new ChokaQJobNotPendingError('x', JobStatus.Processing), 1],
    [new ChokaQValidationError([{ path: 'queue', message: 'is too long', value: 'q' }]), 2],
    [new ChokaQConfirmationError('count-changed', 40, 41), 1],
    [new Error('connect ECONNREFUSED 127.0.0.1:1'), 1],
    [new AggregateError([new Error('connect ECONNREFUSED ::1:1')], ''), 1],
  ])('%s: a message on stderr and exit %d', async (error, code) => {
    const table = probe(() => Promise.reject(error));
    const human = await cli(['probe'], { table });
    expect(human).toMatchObject({ code, out: '' });
    expect(human.err).toContain(`chokaq probe: ${error.message || 'connect ECONNREFUSED ::1:1'}`);

    const json = await cli(['probe', '--json'], { table });
    expect(json).toMatchObject({ code, out: '' });
    const report = JSON.parse(json.err) as { error: Record<string, unknown> };
    expect(report.error).toMatchObject({ name: error.name, exitCode: code });
  });

  it('a driver error reports its code, not its internals', async () => {
    const driverError = Object.assign(new Error('sorry, too many clients already'), {
      code: '53300',
      severity: 'FATAL',
      routine: 'InitProcess',
    });
    const table = probe(() => Promise.reject(driverError));
    const report = JSON.parse((await cli(['probe', '--json'], { table })).err) as unknown;
    expect(report).toEqual({
      error: {
        name: 'Error',
        exitCode: 1,
        message: 'sorry, too many clients already',
        code: '53300',
      },
    });
  });

  it('a typed error carries its fields into the JSON report', async () => {
    const table = probe(() => Promise.reject(new ChokaQConfirmationError('count-changed', 40, 41)));
    const report = JSON.parse((await cli(['probe', '--json'], { table })).err) as {
      error: Record<string, unknown>;
    };
    expect(report.error).toEqual({
      name: 'ChokaQConfirmationError',
      exitCode: 1,
      message: expect.stringContaining('would now affect 41 row(s), the preview said 40'),
      reason: 'count-changed',
      previewed: 40,
      current: 41,
    });
  });

  it('with --json, a usage error is a JSON report on stderr too', async () => {
    const run = await cli(['stats', '--json', '--bogus']);
    expect(run).toMatchObject({ code: 2, out: '' });
    expect(JSON.parse(run.err)).toEqual({
      error: {
        name: 'CliUsageError',
        exitCode: 2,
        message: "unknown option '--bogus'",
      },
    });
  });
});
