import { join } from 'node:path';
import { forkFixture } from './worker-processes';

const UNREADY = join(__dirname, '..', 'fixtures', 'unready-process.ts');

/** Whether a process with this pid still exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('forkFixture', () => {
  let pid: number | undefined;
  afterEach(() => {
    // Only if the assertion below failed: the test must not leave the child behind either.
    if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
    pid = undefined;
  });

  it('kills a child that did not become ready before the start fails, so nothing is left running', async () => {
    const error = await forkFixture(UNREADY, {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    pid = Number(/"notReady":(\d+)/.exec((error as Error).message)?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(alive(pid)).toBe(false);
  });
});
