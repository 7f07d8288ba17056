import { hotJob } from '../../../../test/runtime/support/hot-job';
import type { HandlerDefinition } from '../interfaces/handler.interface';
import type { CircuitDecision } from './circuit-breaker';
import { triage, type TriageView } from './run-triage';

const HANDLER = { queue: 'q', type: 't' } as unknown as HandlerDefinition;
const HOUR = 3_600_000;

function view(overrides: Partial<TriageView> = {}): TriageView & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    resolve: () => HANDLER,
    isHeld: () => false,
    tryAcquire: (key): CircuitDecision => {
      asked.push(key);
      return { allowed: true, probe: false };
    },
    ageMs: () => 0,
    maxJobAgeMs: HOUR,
    ...overrides,
  };
}

describe('triage', () => {
  const job = hotJob();

  it('runs a job of a handled type on an open queue with a closed circuit', () => {
    expect(triage(job, view())).toEqual({ kind: 'run', handler: HANDLER, probe: false });
  });

  it('passes a half-open circuit probe on to the run', () => {
    const v = view({ tryAcquire: () => ({ allowed: true, probe: true }) });
    expect(triage(job, v)).toEqual({ kind: 'run', handler: HANDLER, probe: true });
  });

  it('sends a type no handler runs to the DLQ before anything else is asked', () => {
    const v = view({ resolve: () => undefined, isHeld: () => true });
    expect(triage(job, v)).toEqual({ kind: 'no-handler' });
    expect(v.asked).toEqual([]);
  });

  it('hands a held queue back without asking its circuit for a probe', () => {
    const v = view({ isHeld: () => true });
    expect(triage(job, v)).toEqual({ kind: 'held' });
    expect(v.asked).toEqual([]);
  });

  it('waits out an open circuit, and gives up once the job is past its age limit', () => {
    const open = { tryAcquire: (): CircuitDecision => ({ allowed: false, retryInMs: 1_500 }) };
    expect(triage(job, view({ ...open, ageMs: () => HOUR - 1 }))).toEqual({
      kind: 'circuit-open',
      delayMs: 1_500,
    });
    expect(triage(job, view({ ...open, ageMs: () => HOUR }))).toEqual({
      kind: 'circuit-expired',
    });
  });
});
