import { MssqlParameter } from 'typeorm';
import { ChokaQValidationError } from '../../errors';

/** A bound value: TypeORM sends each one as `@0`, `@1`, … in array order. */
export type MssqlParam = MssqlParameter;

/** The declared width of an `nvarchar` parameter (see {@link ParamList.nvarchar}). */
export type NvarcharWidth = 255 | 100 | 500 | 4000 | 'max';

/** One T-SQL batch and its positional parameters. */
export interface MssqlStatement {
  readonly sql: string;
  readonly params: readonly MssqlParam[];
}

/** How a batch runs. */
export interface MssqlBatchOptions {
  /**
   * The batch runs in a caller's open transaction (the `transaction` option of enqueue): no
   * session prologue and no transaction of its own; the caller's transaction gives atomicity.
   */
  readonly callerTransaction?: boolean;
}

/**
 * Collects the parameters of one statement and hands back their placeholders. Every value is
 * explicitly typed, because `mssql` would otherwise send strings as `nvarchar`, and comparing an
 * `nvarchar` parameter with a `varchar` key column (`Id`, `Queue`, `LeaseId`) converts the column
 * and turns index seeks into scans.
 */
export class ParamList {
  private readonly values: MssqlParam[] = [];

  /** The parameters collected so far, in placeholder order. */
  get params(): readonly MssqlParam[] {
    return this.values;
  }

  private push(param: MssqlParam): string {
    this.values.push(param);
    return `@${this.values.length - 1}`;
  }

  /**
   * ASCII keys (ids, lease ids, queue names), validated before they get here. TypeORM sends a
   * `varchar` parameter as `nvarchar` unless the driver option `disableAsciiToUnicodeParamConversion`
   * is set, and an `nvarchar` value compared with a `varchar` column converts the column (a scan
   * under SQL collations). So the placeholder is wrapped in `CAST(… AS varchar(n))`: the comparison
   * stays varchar = varchar and seeks, whatever the driver option.
   */
  varchar(value: string | null, length: number): string {
    return `CAST(${this.push(new MssqlParameter(value, 'varchar', length))} AS varchar(${length}))`;
  }

  /**
   * Unicode text, declared with a fixed width: `nvarchar(255)` for types, keys, worker ids and
   * names, `nvarchar(100)` for actors and created-by, `nvarchar(500)` for progress notes,
   * `nvarchar(4000)` for LIKE patterns,
   * `'max'` for payloads, tags, error text and JSON documents.
   *
   * Never the value's length: tedious declares an `nvarchar` given without a length by the length
   * of its value (`nvarchar(17)`, `nvarchar(4213)`), and SQL Server caches a plan per batch text
   * AND parameter declaration list, so each new length would be a new plan-cache entry and a full
   * compile of the batch (https://learn.microsoft.com/en-us/sql/relational-databases/query-processing-architecture-guide#plan-caching-and-reuse).
   * A value longer than its width is refused here (the validation at the storage edge already
   * bounds every one of them); SQL Server would otherwise reject the request's TDS stream.
   */
  nvarchar(value: string | null, width: NvarcharWidth): string {
    if (value !== null && width !== 'max' && value.length > width) {
      throw new ChokaQValidationError([
        { path: 'parameter', message: `must be at most ${width} characters`, value },
      ]);
    }
    // mssql's `sql.MAX` (65535): tedious then declares `nvarchar(max)`.
    const length = width === 'max' ? 65_535 : width;
    return this.push(new MssqlParameter(value, 'nvarchar', length));
  }

  /** A 32-bit integer. */
  int(value: number | null): string {
    return this.push(new MssqlParameter(value, 'int'));
  }

  /** A 64-bit integer (milliseconds). */
  bigint(value: number | null): string {
    return this.push(new MssqlParameter(value, 'bigint'));
  }

  /** A bit. */
  bit(value: boolean | null): string {
    return this.push(new MssqlParameter(value === null ? null : value ? 1 : 0, 'bit'));
  }

  /**
   * An instant, sent as ISO-8601 text without a zone (`2024-05-01T10:00:00.000`) and read with
   * `CONVERT(datetime2(3), @n, 126)`. Never a JS `Date`: TypeORM opens SQL Server connections with
   * `useUTC: false` unless told otherwise, and tedious would then send local wall-clock time.
   */
  instant(value: Date | null): string {
    const text = value === null ? null : value.toISOString().slice(0, 23);
    return `CONVERT(datetime2(3), ${this.push(new MssqlParameter(text, 'varchar', 23))}, 126)`;
  }

  /** A JSON document (lists of ids, leases, jobs) read with `OPENJSON`: one parameter, any size. */
  json(value: unknown): string {
    return this.nvarchar(JSON.stringify(value), 'max');
  }

  /**
   * The finished statement: a ChokaQ-owned batch starts with {@link SESSION_PROLOGUE}; a batch
   * that runs in a caller's transaction (`callerTransaction`) leaves the caller's session alone.
   */
  statement(sql: string, options?: MssqlBatchOptions): MssqlStatement {
    const text = options?.callerTransaction ? sql : `${SESSION_PROLOGUE}\n${sql}`;
    return { sql: text, params: [...this.values] };
  }
}

/**
 * The session state every ChokaQ-owned batch relies on, pinned at its start.
 *
 * `mssql` never resets a pooled connection, and a TypeORM transaction begun with an isolation
 * level (`startTransaction('SERIALIZABLE')`, or the DataSource option `isolationLevel`) leaves the
 * session at that level after it ends. On a borrowed DataSource the next ChokaQ batch on that
 * connection would run at SERIALIZABLE or SNAPSHOT, where every `READPAST` fails with error 650
 * (claim, rescue, bulk DLQ actions, purge, retention), and a leaked `SET LOCK_TIMEOUT 0` would
 * turn every lock wait into error 1222. `-1` waits without a limit of its own; the driver's
 * `requestTimeout` bounds the batch.
 *
 * Scoped to the batch, so the application's session is untouched: TypeORM runs every statement
 * through `sp_executesql`, and "if you specify a SET statement in a dynamic SQL string that runs
 * by using either sp_executesql or EXECUTE, the value of the SET option gets restored after
 * control returns from the batch that you specified in the dynamic SQL string"
 * (https://learn.microsoft.com/en-us/sql/t-sql/statements/set-statements-transact-sql, remarks).
 * Never sent inside a caller's transaction: its isolation level is the caller's choice.
 */
export const SESSION_PROLOGUE =
  'SET TRANSACTION ISOLATION LEVEL READ COMMITTED;\nSET LOCK_TIMEOUT -1;';
