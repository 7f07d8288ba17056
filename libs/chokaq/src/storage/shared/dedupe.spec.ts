import type { ValidatedDedupe } from '../../validation/validate-job';
import {
  DedupeHolder,
  DedupeMode,
  dedupeColumns,
  dedupeStep,
  mapDedupeHolder,
  mapDedupeRow,
  splitKeyed,
} from './dedupe';

const ID = 'job-new';
const holder = (over: Partial<DedupeHolder> = {}): DedupeHolder => ({
  jobId: 'job-old',
  inWindow: false,
  hotStatus: null,
  finishedWithinWindow: false,
  ...over,
});
const key = (over: Partial<ValidatedDedupe>): ValidatedDedupe => ({
  key: 'k',
  mode: 'throttle',
  states: [],
  windowMs: 1_000,
  ...over,
});

describe('dedupe keys: what an enqueue does when its key has a holder', () => {
  it('a retried enqueue whose first try committed holds, whatever the mode', () => {
    for (const mode of ['throttle', 'debounce', 'unique'] as const) {
      expect(dedupeStep(key({ mode, states: ['pending'] }), ID, holder({ jobId: ID }))).toBe(
        'hold',
      );
    }
  });

  it('throttle holds while the window is open, in any state, and takes the key after it', () => {
    const throttle = key({});
    expect(dedupeStep(throttle, ID, holder({ inWindow: true }))).toBe('hold');
    expect(dedupeStep(throttle, ID, holder({ inWindow: true, hotStatus: 2 }))).toBe('hold');
    expect(dedupeStep(throttle, ID, holder({ hotStatus: 0 }))).toBe('take');
  });

  it('debounce replaces only a Pending holder within the window', () => {
    const debounce = key({ mode: 'debounce' });
    expect(dedupeStep(debounce, ID, holder({ inWindow: true, hotStatus: 0 }))).toBe('replace');
    expect(dedupeStep(debounce, ID, holder({ inWindow: true, hotStatus: 1 }))).toBe('take');
    expect(dedupeStep(debounce, ID, holder({ inWindow: true }))).toBe('take');
    expect(dedupeStep(debounce, ID, holder({ hotStatus: 0 }))).toBe('take');
  });

  it('unique holds while the holder is in a chosen state', () => {
    const unique = (...states: ValidatedDedupe['states']) => key({ mode: 'unique', states });
    expect(dedupeStep(unique('pending'), ID, holder({ hotStatus: 0 }))).toBe('hold');
    expect(dedupeStep(unique('pending'), ID, holder({ hotStatus: 1 }))).toBe('take');
    expect(dedupeStep(unique('running'), ID, holder({ hotStatus: 1 }))).toBe('hold');
    expect(dedupeStep(unique('running'), ID, holder({ hotStatus: 2 }))).toBe('hold');
    expect(dedupeStep(unique('running'), ID, holder({ hotStatus: 0 }))).toBe('take');
    expect(dedupeStep(unique('finished'), ID, holder({ finishedWithinWindow: true }))).toBe('hold');
    expect(
      dedupeStep(unique('pending', 'running'), ID, holder({ finishedWithinWindow: true })),
    ).toBe('take');
    // A window of a throttle or debounce holder means nothing to a unique enqueue.
    expect(dedupeStep(unique('pending'), ID, holder({ inWindow: true }))).toBe('take');
  });
});

describe('dedupe keys: columns and rows', () => {
  it('stores the mode as a code and the states as bits', () => {
    expect(dedupeColumns(key({}))).toEqual({
      mode: DedupeMode.Throttle,
      states: 0,
      windowMs: 1_000,
    });
    expect(dedupeColumns(key({ mode: 'debounce' })).mode).toBe(DedupeMode.Debounce);
    expect(
      dedupeColumns(key({ mode: 'unique', states: ['pending', 'running', 'finished'] })),
    ).toEqual({ mode: DedupeMode.Unique, states: 7, windowMs: 1_000 });
    expect(dedupeColumns(key({ mode: 'unique', states: ['running'], windowMs: null }))).toEqual({
      mode: DedupeMode.Unique,
      states: 2,
      windowMs: 0,
    });
  });

  it('reads a key row in either spelling', () => {
    const started = new Date('2026-01-01T00:00:00Z');
    expect(
      mapDedupeRow({
        Key: 'k',
        Mode: 3,
        States: 5,
        WindowMs: '0',
        WindowStartedUtc: started,
        WindowEndsUtc: null,
      }),
    ).toEqual({
      key: 'k',
      mode: 'unique',
      states: ['pending', 'finished'],
      windowMs: null,
      windowStartedUtc: started,
      windowEndsUtc: null,
    });
    expect(
      mapDedupeRow({
        key: 'k',
        mode: 2,
        states: 0,
        window_ms: 60_000,
        window_started_utc: 1_000,
        window_ends_utc: 61_000,
      }),
    ).toEqual({
      key: 'k',
      mode: 'debounce',
      states: null,
      windowMs: 60_000,
      windowStartedUtc: new Date(1_000),
      windowEndsUtc: new Date(61_000),
    });
    expect(
      mapDedupeRow({ key: 'k', mode: 1, states: 0, window_ms: 5, window_started_utc: 1 }).mode,
    ).toBe('throttle');
  });

  it('reads a holder in either spelling', () => {
    expect(
      mapDedupeHolder({ job_id: 'a', in_window: 1, hot_status: 0, finished_within_window: 0 }),
    ).toEqual({ jobId: 'a', inWindow: true, hotStatus: 0, finishedWithinWindow: false });
    expect(
      mapDedupeHolder({ JobId: 'a', InWindow: false, HotStatus: null, FinishedWithinWindow: true }),
    ).toEqual({ jobId: 'a', inWindow: false, hotStatus: null, finishedWithinWindow: true });
    expect(mapDedupeHolder({ job_id: 'a', in_window: 0, hot_status: 2 }).hotStatus).toBe(2);
  });

  it('splits a batch into plain and keyed jobs, the keyed in key order, each with its index', () => {
    const jobs = [
      { dedupe: key({ key: 'c' }) },
      { dedupe: key({ key: 'b' }) },
      { dedupe: null },
      { dedupe: key({ key: 'a' }) },
      { dedupe: key({ key: 'b' }) },
      { dedupe: key({ key: 'a' }) },
      { dedupe: null },
    ];
    const { plain, keyed } = splitKeyed(jobs);
    expect(plain.map((p) => p.index)).toEqual([2, 6]);
    // By key, then (the same key) in batch order.
    expect(keyed.map((k) => k.index)).toEqual([3, 5, 1, 4, 0]);
    expect(keyed[0].job).toBe(jobs[3]);
    expect(splitKeyed([...jobs].reverse()).keyed.map((k) => k.index)).toEqual([1, 3, 2, 5, 6]);
  });
});
