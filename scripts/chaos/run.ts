/**
 * `npm run chaos -- --seconds N [--dialect postgres|sqlite] [--workers K] [--seed S]`
 *
 * The runner lives beside the fault suites (test/faults/chaos/chaos-runner.ts), which type-check,
 * lint and reuse it; this is only the command-line entry.
 */
import { main } from '../../test/faults/chaos/chaos-runner';

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(2);
});
