import { resolve } from 'node:path';
import { CliUsageError } from '../errors/cli-usage.error';
import { databaseTarget, withReadReplica } from './database-url';

describe('databaseTarget', () => {
  it('reads PostgreSQL URLs, never migrating on open and never listening', () => {
    for (const url of ['postgres://u:secret@db:5432/app', 'postgresql://u:secret@db/app']) {
      const target = databaseTarget(url, 'jobs');
      expect(target.storage).toEqual({
        type: 'postgres',
        url,
        schema: 'jobs',
        poolSize: 2,
        notify: false,
        autoCreateSchema: false,
      });
      expect(target.label).toBe('PostgreSQL at db');
      expect(target.label).not.toContain('secret');
    }
  });

  it('reads SQL Server URLs with encrypt and trustServerCertificate as parameters', () => {
    expect(databaseTarget('mssql://sa:pw@sql:1433/app', undefined).storage).toEqual({
      type: 'mssql',
      url: 'mssql://sa:pw@sql:1433/app',
      schema: undefined,
      poolSize: 2,
      autoCreateSchema: false,
    });
    expect(
      databaseTarget('mssql://sa:pw@sql/app?trustServerCertificate=true&encrypt=false', 's')
        .storage,
    ).toMatchObject({
      url: 'mssql://sa:pw@sql/app',
      options: { trustServerCertificate: true, encrypt: false },
    });
    expect(() => databaseTarget('mssql://sa:pw@sql/app?timeout=5', undefined)).toThrow(
      'takes only encrypt=true|false, trustServerCertificate=true|false',
    );
  });

  it('reads SQLite as sqlite:FILE, sqlite://FILE or a plain path, made absolute', () => {
    const abs = resolve('/tmp/jobs.db');
    for (const url of ['sqlite:/tmp/jobs.db', 'sqlite:///tmp/jobs.db', '/tmp/jobs.db']) {
      expect(databaseTarget(url, 'q_')).toEqual({
        storage: { type: 'sqlite', database: abs, schema: 'q_', autoCreateSchema: false },
        sqliteFile: abs,
        label: `SQLite file ${abs}`,
      });
    }
    expect(databaseTarget('jobs.db', undefined).sqliteFile).toBe(resolve('jobs.db'));
    expect(databaseTarget('sqlite:./jobs.db', undefined).sqliteFile).toBe(resolve('jobs.db'));
  });

  it('refuses no URL, other databases, a bad URL and a bad schema', () => {
    expect(() => databaseTarget(undefined, undefined)).toThrow('no database: pass --url');
    expect(() => databaseTarget(' ', undefined)).toThrow(CliUsageError);
    expect(() => databaseTarget('mysql://h/db', undefined)).toThrow(
      "unsupported database 'mysql:'",
    );
    expect(() => databaseTarget('sqlite:', undefined)).toThrow('sqlite: needs a file path');
    expect(() => databaseTarget('postgres://u:secret@[bad', undefined)).toThrow(
      /^--url is not a valid URL$/,
    );
    expect(() => databaseTarget('x.db', 'a-b')).toThrow('--schema must match');
  });
});

describe('withReadReplica (--read-replica)', () => {
  it('adds a PostgreSQL hot standby to a PostgreSQL target, named without its password', () => {
    const target = databaseTarget('postgres://u:secret@db/app', undefined);
    expect(withReadReplica(target, undefined)).toBe(target);
    expect(withReadReplica(target, ' ')).toBe(target);
    const replica = withReadReplica(target, 'postgres://u:secret@standby/app');
    expect(replica.storage).toEqual({
      ...target.storage,
      readReplica: { url: 'postgres://u:secret@standby/app', poolSize: 2 },
    });
    expect(replica.label).toBe('PostgreSQL at db (reads from the replica at standby)');
    // Either scheme, in any case.
    for (const url of ['postgresql://standby/app', 'POSTGRES://standby/app']) {
      expect(withReadReplica(target, url).storage).toMatchObject({ readReplica: { url } });
    }
  });

  it('refuses a replica of SQLite or SQL Server, of another scheme, and a bad URL', () => {
    const pg = databaseTarget('postgres://db/app', undefined);
    expect(() => withReadReplica(databaseTarget('x.db', undefined), 'postgres://r/app')).toThrow(
      '--read-replica: a read replica is for a PostgreSQL --url only',
    );
    expect(() =>
      withReadReplica(databaseTarget('mssql://u:p@h/db', undefined), 'postgres://r/app'),
    ).toThrow(CliUsageError);
    expect(() => withReadReplica(pg, '//standby/app')).toThrow(
      '--read-replica: must be a postgres:// or postgresql:// URL',
    );
    expect(() => withReadReplica(pg, 'mssql://r/db')).toThrow(
      '--read-replica: must be a postgres:// or postgresql:// URL',
    );
    expect(() => withReadReplica(pg, 'postgres://u:secret@[bad')).toThrow(
      /^--read-replica is not a valid URL$/,
    );
  });
});
