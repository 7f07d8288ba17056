import { CircuitBreakers, circuitJob, circuitKey } from './circuit-breaker';

describe('CircuitBreakers', () => {
  let now = 0;
  const make = () =>
    new CircuitBreakers(
      { failureThreshold: 3, windowMs: 1_000, breakDurationMs: 5_000, halfOpenProbes: 1 },
      () => now,
    );
  beforeEach(() => (now = 0));

  it('opens after failureThreshold failures within the window', () => {
    const breakers = make();
    breakers.recordFailure('q/t');
    breakers.recordFailure('q/t');
    expect(breakers.state('q/t')).toBe('closed');
    breakers.recordFailure('q/t');
    expect(breakers.state('q/t')).toBe('open');
    expect(breakers.tryAcquire('q/t')).toEqual({ allowed: false, retryInMs: 5_000 });
    expect(breakers.tryAcquire('other')).toEqual({ allowed: true, probe: false });
  });

  it('forgets failures older than the window', () => {
    const breakers = make();
    breakers.recordFailure('q/t');
    breakers.recordFailure('q/t');
    now = 1_500;
    breakers.recordFailure('q/t');
    expect(breakers.state('q/t')).toBe('closed');
  });

  it('goes half-open after the break, allows halfOpenProbes probes, and closes on a probe success', () => {
    const breakers = make();
    for (let i = 0; i < 3; i++) breakers.recordFailure('q/t');
    now = 5_000;
    expect(breakers.state('q/t')).toBe('half-open');
    expect(breakers.tryAcquire('q/t')).toEqual({ allowed: true, probe: true });
    expect(breakers.tryAcquire('q/t').allowed).toBe(false);
    breakers.recordSuccess('q/t', true);
    expect(breakers.state('q/t')).toBe('closed');
    expect(breakers.tryAcquire('q/t')).toEqual({ allowed: true, probe: false });
  });

  it('re-opens when a probe fails', () => {
    const breakers = make();
    for (let i = 0; i < 3; i++) breakers.recordFailure('q/t');
    now = 5_000;
    breakers.tryAcquire('q/t');
    breakers.recordFailure('q/t', true);
    expect(breakers.state('q/t')).toBe('open');
    now = 9_999;
    expect(breakers.state('q/t')).toBe('open');
    now = 10_000;
    expect(breakers.state('q/t')).toBe('half-open');
  });

  it('frees a probe that ended without a verdict', () => {
    const breakers = make();
    for (let i = 0; i < 3; i++) breakers.recordFailure('q/t');
    now = 5_000;
    breakers.tryAcquire('q/t');
    breakers.releaseProbe('q/t');
    expect(breakers.tryAcquire('q/t')).toEqual({ allowed: true, probe: true });
  });

  it('reports each transition once, and every job it holds back, to its listener (metrics)', () => {
    const events: string[] = [];
    const breakers = new CircuitBreakers(
      { failureThreshold: 2, windowMs: 1_000, breakDurationMs: 5_000, halfOpenProbes: 1 },
      () => now,
      (key, event) => events.push(`${key} ${event}`),
    );
    breakers.recordFailure('q/t');
    breakers.recordFailure('q/t'); // opens
    breakers.tryAcquire('q/t'); // rejected
    expect(breakers.snapshot()).toEqual({ 'q/t': 'open' });
    now = 5_000;
    expect(breakers.state('q/t')).toBe('half-open'); // noticed once
    expect(breakers.tryAcquire('q/t')).toEqual({ allowed: true, probe: true });
    breakers.tryAcquire('q/t'); // probes are out: rejected
    breakers.recordFailure('q/t', true); // the probe failed: open again
    now = 10_000;
    breakers.tryAcquire('q/t'); // half-open again, a probe
    breakers.recordSuccess('q/t', true); // closes
    breakers.recordSuccess('q/t'); // nothing more to say
    expect(events).toEqual([
      'q/t opened',
      'q/t rejected',
      'q/t half-opened',
      'q/t rejected',
      'q/t opened',
      'q/t half-opened',
      'q/t closed',
    ]);
  });

  it('splits a key back into its queue and type (a type may contain "/", a queue may not)', () => {
    const job = { queue: 'emails', type: 'welcome/v1' };
    expect(circuitJob(circuitKey(job))).toEqual(job);
  });
});
