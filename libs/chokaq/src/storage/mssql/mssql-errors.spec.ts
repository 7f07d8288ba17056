import { isDuplicateKeyError, isPartitionLockBusy, isTransientMssqlError } from './mssql-errors';

/** A server error as TypeORM hands it over: QueryFailedError → mssql RequestError (`number`). */
function serverError(number: number): Error {
  const driverError = Object.assign(new Error(`error ${number}`), {
    name: 'RequestError',
    code: 'EREQUEST',
    number,
  });
  return Object.assign(new Error(`error ${number}`), { name: 'QueryFailedError', driverError });
}

/** A driver error without a server number (mssql ConnectionError / RequestError `code`). */
function driverError(code: string): Error {
  return Object.assign(new Error(code), { name: 'ConnectionError', code });
}

describe('isTransientMssqlError', () => {
  it.each([
    [1205, 'deadlock victim'],
    [1222, 'lock request time out'],
    [-2, 'client timeout'],
    [601, 'NOLOCK scan lost its position (data movement)'],
    [3960, "snapshot update conflict (a caller's SNAPSHOT transaction)"],
    [4060, 'cannot open database'],
    [4221, 'Azure SQL: login to a secondary waits for versioning'],
    [10928, 'Azure SQL: resource limit reached'],
    [10929, 'Azure SQL: minimum guarantee not available'],
    [40143, 'Azure SQL: error processing the request'],
    [40197, 'Azure SQL: service error, reconfiguring'],
    [40501, 'Azure SQL: service busy'],
    [40540, 'Azure SQL: service error, try again'],
    [40613, 'Azure SQL: database unavailable'],
    [49918, 'Azure SQL: not enough resources'],
    [49919, 'Azure SQL: too many create/update operations'],
    [49920, 'Azure SQL: too many operations'],
    [233, 'network: no process on the other end of the pipe'],
    [64, 'network: the specified network name is no longer available'],
    [10053, 'network: connection aborted by the host'],
    [10054, 'network: connection reset by the peer'],
    [10060, 'network: connection attempt timed out'],
  ])('server error %i (%s) is transient', (number) => {
    expect(isTransientMssqlError(serverError(number))).toBe(true);
  });

  it.each(['ECONNRESET', 'ESOCKET', 'ETIMEOUT', 'ECONNCLOSED', 'ENOTOPEN'])(
    'driver code %s is transient',
    (code) => {
      expect(isTransientMssqlError(driverError(code))).toBe(true);
    },
  );

  it.each([
    [547, 'constraint violation'],
    [650, 'READPAST outside READ COMMITTED / REPEATABLE READ'],
    [2627, 'duplicate key'],
    [208, 'invalid object name'],
    [102, 'syntax error'],
    [51001, "ChokaQ's partition change gave up on a lock (left to the next pass)"],
  ])('server error %i (%s) is not transient', (number) => {
    expect(isTransientMssqlError(serverError(number))).toBe(false);
  });

  it.each(['EREQUEST', 'EABORT', 'ELOGIN', 'EINJECT'])(
    'driver code %s is not transient',
    (code) => {
      expect(isTransientMssqlError(driverError(code))).toBe(false);
    },
  );

  it('finds a number in tedious `info` and in precedingErrors', () => {
    const withInfo = Object.assign(new Error('x'), { info: { number: 10054 } });
    expect(isTransientMssqlError(withInfo)).toBe(true);
    const preceded = Object.assign(new Error('last'), {
      number: 3621,
      precedingErrors: [serverError(1205)],
    });
    expect(isTransientMssqlError(preceded)).toBe(true);
  });
});

describe('isDuplicateKeyError', () => {
  it('is 2601 and 2627 only', () => {
    expect(isDuplicateKeyError(serverError(2601))).toBe(true);
    expect(isDuplicateKeyError(serverError(2627))).toBe(true);
    expect(isDuplicateKeyError(serverError(547))).toBe(false);
  });
});

describe('isPartitionLockBusy', () => {
  it('is 51001 anywhere in the chain (after a transaction-count error, too), and not the lock timeout it replaces', () => {
    expect(isPartitionLockBusy(serverError(51001))).toBe(true);
    const preceded = Object.assign(new Error('last'), {
      number: 266,
      precedingErrors: [serverError(51001)],
    });
    expect(isPartitionLockBusy(preceded)).toBe(true);
    expect(isPartitionLockBusy(serverError(1222))).toBe(false);
    expect(isPartitionLockBusy(serverError(51000))).toBe(false);
  });
});
