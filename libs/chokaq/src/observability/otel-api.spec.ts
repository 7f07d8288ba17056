import { OTEL_API_PACKAGE, loadOtelApi } from './otel-api';

describe('loadOtelApi', () => {
  it('loads the installed @opentelemetry/api', () => {
    const api = loadOtelApi();
    expect(typeof api?.metrics.getMeterProvider).toBe('function');
    expect(typeof api?.createNoopMeter).toBe('function');
  });

  it('is undefined when the optional peer is not installed', () => {
    const missing = () => {
      throw Object.assign(new Error(`Cannot find module '${OTEL_API_PACKAGE}'\nRequire stack:`), {
        code: 'MODULE_NOT_FOUND',
      });
    };
    expect(loadOtelApi(missing)).toBeUndefined();
  });

  it('throws when the package is there but fails to load (a dependency of it missing, a broken install)', () => {
    const broken = () => {
      throw Object.assign(new Error("Cannot find module './metrics/NoopMeter'"), {
        code: 'MODULE_NOT_FOUND',
      });
    };
    expect(() => loadOtelApi(broken)).toThrow('NoopMeter');
    expect(() =>
      loadOtelApi(() => {
        throw new SyntaxError('Unexpected token');
      }),
    ).toThrow(SyntaxError);
  });
});
