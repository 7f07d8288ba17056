import * as health from './index';

/** Pins, at compile time, the option types of the checks: `npm run typecheck` fails without one. */
export type HealthOptionTypes = [
  health.StorageCheckOptions,
  health.WorkerCheckOptions,
  health.QueuesCheckOptions,
  health.QueueLagLevel,
];

/**
 * Pins the runtime names of `@chokaq/nestjs/health`. A change here is a change of the published
 * package: update the README and the changelog with it.
 */
describe('public API of @chokaq/nestjs/health (health/index.ts)', () => {
  it('exports exactly these values', () => {
    expect(Object.keys(health).sort()).toEqual(
      ['ChokaQHealthIndicator', 'ChokaQHealthModule', 'DEFAULT_HEALTH_KEYS'].sort(),
    );
  });
});
