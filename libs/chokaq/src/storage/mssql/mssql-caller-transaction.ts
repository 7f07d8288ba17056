import { ChokaQTransactionError } from '../../errors';
import type { MssqlTransactionLike } from '../shared/caller-transaction';
import type { MssqlParam, MssqlStatement } from './mssql-params';

/** A row as the driver returns it. */
type Row = Record<string, unknown>;

/** The parameter types of the `mssql` package (a dependency of ChokaQ, shipped without typings). */
export interface MssqlTypes {
  MAX: number;
  VarChar(length?: number): unknown;
  NVarChar(length?: number): unknown;
  Int: unknown;
  BigInt: unknown;
  Bit: unknown;
}

/**
 * The `mssql` package as the application resolves it: the one its transaction comes from in a
 * usual install, so the types below are the ones its `Request` knows.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const loadMssql = (): MssqlTypes => require('mssql') as MssqlTypes;

/**
 * Runs one batch in a caller's `mssql` transaction: a `Request` of that transaction, each
 * parameter declared with the type and width ChokaQ gave it (`ParamList`), as TypeORM declares
 * them on ChokaQ's own connections, so a key compares `varchar` with `varchar` and seeks. A
 * transaction that was not begun (mssql's `ENOTBEGUN`) is the caller's mistake:
 * `ChokaQTransactionError`.
 */
export async function runOnMssqlTransaction(
  transaction: MssqlTransactionLike,
  statement: MssqlStatement,
): Promise<Row[]> {
  const request = transaction.request();
  statement.params.forEach((param, i) => request.input(String(i), sqlType(param), param.value));
  try {
    const result = await request.query(statement.sql);
    return (result?.recordset ?? []) as Row[];
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === 'ENOTBEGUN') {
      throw new ChokaQTransactionError('the mssql transaction has not begun (call begin() first)');
    }
    throw error;
  }
}

/** The `mssql` type of one of ChokaQ's parameters (the types `ParamList` makes). */
export function sqlType(param: MssqlParam, mssql: MssqlTypes = loadMssql()): unknown {
  const length = param.params[0] as number | undefined;
  switch (param.type) {
    case 'varchar':
      return mssql.VarChar(length);
    case 'nvarchar':
      return mssql.NVarChar(length === undefined || length === mssql.MAX ? mssql.MAX : length);
    case 'int':
      return mssql.Int;
    case 'bigint':
      return mssql.BigInt;
    case 'bit':
      return mssql.Bit;
    default:
      throw new Error(`ChokaQ mssql: no driver type for a ${param.type} parameter`);
  }
}
