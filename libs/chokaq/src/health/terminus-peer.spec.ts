import { ChokaQMissingPeerError } from '../errors';
import { assertTerminusInstalled } from './terminus-peer';

describe('assertTerminusInstalled', () => {
  it('passes when @nestjs/terminus resolves (it does here)', () => {
    expect(() => assertTerminusInstalled()).not.toThrow();
  });

  it('names the package to install when it is missing', () => {
    const missing = () => {
      throw Object.assign(new Error("Cannot find module '@nestjs/terminus'"), {
        code: 'MODULE_NOT_FOUND',
      });
    };
    expect(() => assertTerminusInstalled(missing)).toThrow(ChokaQMissingPeerError);
    expect(() => assertTerminusInstalled(missing)).toThrow(
      '@chokaq/nestjs/health needs the optional peer dependency @nestjs/terminus, which is not installed',
    );
    try {
      assertTerminusInstalled(missing);
    } catch (error) {
      expect(error).toMatchObject({
        packageName: '@nestjs/terminus',
        feature: '@chokaq/nestjs/health',
      });
    }
  });

  it('rethrows any other failure as it is', () => {
    const broken = new Error('EACCES');
    expect(() =>
      assertTerminusInstalled(() => {
        throw broken;
      }),
    ).toThrow(broken);
  });
});
