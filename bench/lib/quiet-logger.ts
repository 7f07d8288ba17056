import type { LoggerService } from '@nestjs/common';

/** Only warnings and errors reach stderr: per-job logging would be part of the measurement. */
export const quietLogger: LoggerService = {
  log: () => undefined,
  debug: () => undefined,
  verbose: () => undefined,
  warn: (message: unknown) => process.stderr.write(`[chokaq warn] ${String(message)}\n`),
  error: (message: unknown) => process.stderr.write(`[chokaq error] ${String(message)}\n`),
};
