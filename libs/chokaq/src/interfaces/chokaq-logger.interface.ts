/**
 * What ChokaQ's engine (the runtime and the storage) logs through: the shape of Nest's
 * `LoggerService`, so Nest's `Logger`, `nestjs-pino` or `nest-winston` are one as they are, but
 * declared here so that a worker process outside Nest loads neither `@nestjs/common` nor rxjs.
 * Every line is a `ChokaQLogRecord` (its message, event id and fields) as the first argument.
 *
 * @publicApi
 */
export interface ChokaQLogger {
  log(message: unknown, ...optionalParams: unknown[]): unknown;
  error(message: unknown, ...optionalParams: unknown[]): unknown;
  warn(message: unknown, ...optionalParams: unknown[]): unknown;
  debug?(message: unknown, ...optionalParams: unknown[]): unknown;
  verbose?(message: unknown, ...optionalParams: unknown[]): unknown;
}
