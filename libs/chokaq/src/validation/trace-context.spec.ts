import type { ValidationIssue } from '../errors';
import { LIMITS } from './limits';
import { checkTraceContext, fitTraceContext } from './trace-context';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('checkTraceContext', () => {
  const check = (value: unknown) => {
    const issues: ValidationIssue[] = [];
    const json = checkTraceContext(issues, 'traceContext', value);
    return { json, paths: issues.map((i) => i.path) };
  };

  it('stores a carrier as its JSON text, and none as null', () => {
    expect(check({ traceparent: TRACEPARENT, tracestate: 'a=1, b=2' })).toEqual({
      json: `{"traceparent":"${TRACEPARENT}","tracestate":"a=1, b=2"}`,
      paths: [],
    });
    expect(check(undefined)).toEqual({ json: null, paths: [] });
    expect(check(null)).toEqual({ json: null, paths: [] });
    expect(check({})).toEqual({ json: null, paths: [] });
  });

  it('refuses anything but a plain object of printable-ASCII strings within the limit', () => {
    expect(check('00-…').paths).toEqual(['traceContext']);
    expect(check(new Map()).paths).toEqual(['traceContext']);
    expect(check({ traceparent: 'é' }).paths).toEqual(['traceContext.traceparent']);
    expect(check({ traceparent: 'a\nb' }).paths).toEqual(['traceContext.traceparent']);
    expect(check({ '': 'x' }).paths).toEqual(['traceContext.']);
    const at = LIMITS.traceContext - '{"k":""}'.length;
    expect(check({ k: 'x'.repeat(at) }).paths).toEqual([]);
    expect(check({ k: 'x'.repeat(at + 1) }).paths).toEqual(['traceContext']);
  });
});

describe('fitTraceContext', () => {
  it('keeps a carrier that fits, whole', () => {
    const carrier = { traceparent: TRACEPARENT, tracestate: 'v=1', baggage: 'user=42' };
    expect(fitTraceContext(carrier)).toEqual(carrier);
  });

  it('drops entries no column can store, and gives nothing for nothing', () => {
    expect(fitTraceContext({ traceparent: TRACEPARENT, baggage: 'ünïcode' })).toEqual({
      traceparent: TRACEPARENT,
    });
    expect(fitTraceContext({ baggage: 'ünïcode' })).toBeUndefined();
    expect(fitTraceContext({})).toBeUndefined();
    expect(fitTraceContext(undefined)).toBeUndefined();
  });

  it('too long: keeps the trace identity (traceparent and tracestate, then traceparent alone)', () => {
    const baggage = 'b'.repeat(LIMITS.traceContext);
    expect(fitTraceContext({ traceparent: TRACEPARENT, tracestate: 'v=1', baggage })).toEqual({
      traceparent: TRACEPARENT,
      tracestate: 'v=1',
    });
    const tracestate = 's'.repeat(LIMITS.traceContext);
    expect(fitTraceContext({ traceparent: TRACEPARENT, tracestate })).toEqual({
      traceparent: TRACEPARENT,
    });
    expect(fitTraceContext({ b3: 'x'.repeat(LIMITS.traceContext) })).toBeUndefined();
  });

  it('what it returns passes the rule', () => {
    const issues: ValidationIssue[] = [];
    const fitted = fitTraceContext({ traceparent: TRACEPARENT, baggage: 'b'.repeat(5_000) });
    expect(checkTraceContext(issues, 'traceContext', fitted)).not.toBeNull();
    expect(issues).toEqual([]);
  });
});
