/**
 * `npm run chaos -- --seconds N [--dialect postgres|sqlite] [--workers K] [--seed S]`
 * `npm run chaos -- --soak [--seconds N] [--dialect postgres|sqlite] [--workers K] [--rate N]`
 *
 * The runners live beside the fault suites (test/faults/chaos/), which type-check, lint and reuse
 * them; this is only the command-line entry.
 */
import { main } from '../../test/faults/chaos/chaos-runner';
import { soakMain } from '../../test/faults/chaos/soak-runner';

const argv = process.argv.slice(2);
(argv.includes('--soak') ? soakMain(argv) : main(argv)).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(2);
});
