import { issuePaths } from '../../../../../test/support/validation-issues';
import { FailureReason } from '../../interfaces/job-status.enum';
import { assertDlqFilter } from '../../validation/validate-filter';
import { normalizePage } from './page';

const CODES = Object.values(FailureReason).filter((v): v is number => typeof v === 'number');

describe('DLQ filter reason', () => {
  it.each(CODES)('accepts the FailureReason code %s', (reason) => {
    expect(assertDlqFilter({ reason })).toEqual({ reason });
    expect(normalizePage('dlq', { filter: { reason } }).filter).toEqual({ reason });
  });

  // Names of Object.prototype members and enum names are keys of the enum object (inherited, or
  // the reverse mapping of a numeric enum) but not codes: an `in` test let them reach the SQL.
  it.each<unknown>([
    'toString',
    '__proto__',
    'constructor',
    'hasOwnProperty',
    'valueOf',
    'Timeout',
    'FatalError',
    '7',
    4,
    8,
    12,
    -1,
    7.5,
    NaN,
    null,
    true,
    {},
  ])('rejects %p by field, on bulk filters and on pages', (reason) => {
    expect(issuePaths(() => assertDlqFilter({ reason } as never))).toEqual(['filter.reason']);
    expect(issuePaths(() => normalizePage('dlq', { filter: { reason } as never }))).toEqual([
      'filter.reason',
    ]);
  });
});
