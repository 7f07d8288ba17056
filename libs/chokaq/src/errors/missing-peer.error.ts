import { ChokaQError } from './chokaq.error';

/**
 * A part of ChokaQ that needs an optional peer dependency was loaded, and the peer is not
 * installed (e.g. `@chokaq/nestjs/health` without `@nestjs/terminus`). The core never needs one.
 *
 * @publicApi
 */
export class ChokaQMissingPeerError extends ChokaQError {
  constructor(
    /** The package to install. */
    readonly packageName: string,
    /** What needs it. */
    readonly feature: string,
  ) {
    super(
      `${feature} needs the optional peer dependency ${packageName}, which is not installed. ` +
        `Install it (npm install ${packageName}, the major version of your NestJS) or stop importing ${feature}.`,
    );
  }
}
