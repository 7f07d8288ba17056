import { isTransientPostgresError } from './postgres-errors';

describe('isTransientPostgresError', () => {
  it.each([
    ['serialization failure', { code: '40001' }],
    ['deadlock', { code: '40P01' }],
    ['admin shutdown', { code: '57P01' }],
    ['cannot connect now', { code: '57P03' }],
    ['connection failure', { code: '08006' }],
    ['connection reset', { code: 'ECONNRESET' }],
    ['refused', { code: 'ECONNREFUSED' }],
    ['terminated', new Error('Connection terminated unexpectedly')],
    ['wrapped by TypeORM', { message: 'x', driverError: { code: '40P01' } }],
  ])('retries %s', (_name, error) => {
    expect(isTransientPostgresError(error)).toBe(true);
  });

  it.each([
    ['unique violation', { code: '23505' }],
    ['syntax error', { code: '42601' }],
    ['raise exception', { code: 'P0001', message: 'chokaq test: injected failure' }],
    ['plain error', new Error('boom')],
    ['not an object', 'Connection'],
  ])('does not retry %s', (_name, error) => {
    expect(isTransientPostgresError(error)).toBe(false);
  });
});
