import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TS_LOADER } from '../support/env';

/**
 * `@nestjs/schedule` is an optional peer: an application where it cannot be found starts, and its
 * recurring jobs fire on ChokaQ's own timers (a real process, with the package hidden from
 * Node's resolver).
 */
describe('an application without @nestjs/schedule', () => {
  it('starts, and its recurring job runs', async () => {
    const root = join(__dirname, '..', '..');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        '-r',
        join(__dirname, 'fixtures', 'hide-schedule.js'),
        '-r',
        TS_LOADER,
        join(__dirname, 'fixtures', 'without-schedule-app.ts'),
      ],
      { cwd: root, timeout: 60_000 },
    );
    const last = stdout.trim().split('\n').at(-1)!;
    expect(JSON.parse(last)).toEqual({ ran: true, scheduleLoaded: false });
  }, 90_000);
});
