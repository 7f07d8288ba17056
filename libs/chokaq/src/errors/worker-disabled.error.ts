import { ChokaQError } from './chokaq.error';

/**
 * An action needs the local worker, but this process runs producer-only
 * (`worker: { enabled: false }`), the application is not initialised yet (`app.init()` discovers
 * the handlers), or the worker has already stopped.
 *
 * @publicApi
 */
export class ChokaQWorkerDisabledError extends ChokaQError {
  constructor(readonly action: string) {
    super(
      `Cannot ${action}: no ChokaQ worker is running in this process (worker.enabled is false, ` +
        `the application is not initialised yet, or it is shutting down). Enable the worker, or act through ChokaQAdmin on the database.`,
    );
  }
}
