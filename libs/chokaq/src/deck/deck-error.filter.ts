import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { toError } from '../common/error-text';
import {
  ChokaQConfirmationError,
  ChokaQJobNotPendingError,
  ChokaQRecurringJobNotFoundError,
  ChokaQValidationError,
} from '../errors';

/**
 * The Deck API's error bodies: a validation error is a 400 with its issues, a refused bulk
 * confirmation a 409 with its reason, an edit of a job that is no longer Pending a 409 with its
 * status (404 when there is no such job), an HTTP error keeps its status, anything else is a 500 whose
 * message stays in the server log.
 */
@Catch()
export class DeckErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('ChokaQDeck');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<unknown>();
    const [status, body] = this.describe(exception);
    this.adapterHost.httpAdapter.reply(response, body, status);
  }

  private describe(exception: unknown): [number, Record<string, unknown>] {
    if (exception instanceof ChokaQValidationError) {
      return [400, { error: 'validation', message: exception.message, issues: exception.issues }];
    }
    if (exception instanceof ChokaQConfirmationError) {
      return [
        409,
        {
          error: 'confirmation',
          reason: exception.reason,
          message: exception.message,
          previewed: exception.previewed,
          current: exception.current,
        },
      ];
    }
    if (exception instanceof ChokaQJobNotPendingError) {
      return [
        exception.status === null ? 404 : 409,
        {
          error: exception.status === null ? 'not-found' : 'not-pending',
          message: exception.message,
          status: exception.status,
        },
      ];
    }
    if (exception instanceof ChokaQRecurringJobNotFoundError) {
      return [404, { error: 'not-found', message: exception.message }];
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const payload = exception.getResponse();
      const message =
        typeof payload === 'string'
          ? payload
          : String((payload as { message?: unknown }).message ?? exception.message);
      return [status, { error: errorName(status), message }];
    }
    const error = toError(exception);
    this.logger.error(`Deck request failed: ${error.message}`, error.stack);
    return [
      500,
      {
        error: 'internal',
        message: 'The Deck could not complete the request; see the server log.',
      },
    ];
  }
}

function errorName(status: number): string {
  switch (status) {
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not-found';
    case 409:
      return 'conflict';
    default:
      return status >= 500 ? 'internal' : 'bad-request';
  }
}
