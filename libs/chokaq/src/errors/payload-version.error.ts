import { ChokaQFatalError } from './fatal.error';

/**
 * A stored payload the worker could not bring to its handler's version (`defineJob(…, { version,
 * upgrade })`): an upgrade step threw (`step` names it: the step from version `step` to
 * `step + 1`), or the stored version is outside what the handler runs (newer than it, or older
 * than its chain reaches; `step` is null). The handler was not called and the job went to the DLQ
 * at once as `FatalError`, this message its error text; the stored payload is unchanged. Fix the
 * upgrade step (or deploy a handler that runs the version), then resurrect the job.
 *
 * The claim keeps the second case from happening: a process claims a typed job only when its
 * handler runs the job's version. It can still meet one through a queue-wide handler of the same
 * queue, which claims every version.
 *
 * @publicApi
 */
export class ChokaQPayloadVersionError extends ChokaQFatalError {
  constructor(
    readonly queue: string,
    readonly type: string,
    readonly storedVersion: number,
    readonly handlerVersion: number,
    readonly step: number | null,
    options?: { cause?: unknown },
  ) {
    const why =
      step !== null
        ? `its upgrade step ${step} → ${step + 1} threw: ${describeCause(options?.cause)}`
        : storedVersion > handlerVersion
          ? `the handler runs version ${handlerVersion}, older than the payload`
          : `the handler's upgrade chain does not start at version ${storedVersion}`;
    super(
      `Payload of ${queue}/${type} stored as version ${storedVersion} could not be brought to version ${handlerVersion}: ${why} (the handler was not called and the job went to the DLQ without retries; the stored payload is unchanged)`,
      options,
    );
  }
}

function describeCause(cause: unknown): string {
  return cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
}
