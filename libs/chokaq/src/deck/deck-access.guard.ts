import {
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  Inject,
  Injectable,
  SetMetadata,
  Type,
} from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import { isObservable, lastValueFrom } from 'rxjs';
import { DECK_CSRF_HEADER, DECK_MUTATION, DECK_OPTIONS } from './deck.constants';
import type { DeckGuard, ResolvedDeckOptions } from './deck-options';
import { crossSiteRefusal, frameworkOrigin, isAllowedOrigin } from './deck-origin';

/** The response headers of CORS that let another origin read a response. */
const CORS_RESPONSE_HEADERS = [
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'access-control-expose-headers',
];

/** Express's response, or Fastify's reply and the raw response under it. */
interface CorsResponse {
  removeHeader?: (name: string) => void;
  raw?: { removeHeader?: (name: string) => void };
}

/** Marks a Deck route as a mutation: read-only refuses it; it needs the CSRF header and the destructive guards. */
export const DeckMutation = (): MethodDecorator => SetMetadata(DECK_MUTATION, true);

/**
 * The Deck's access policy, in the order a request meets it (after the app's global guards, which
 * Nest runs first): a request from another origin is refused (`deck-origin.ts`, whatever CORS the
 * host app enables); the configured `guards`; then, on a mutation route, `readOnly`, the CSRF
 * header and the `destructiveGuards`. A guard that returns false refuses with 403, as Nest's own
 * guard consumer does; a guard that throws (say a 401) refuses with its own error.
 */
@Injectable()
export class DeckAccessGuard implements CanActivate {
  private readonly instances = new Map<DeckGuard, Promise<CanActivate>>();

  constructor(
    @Inject(DECK_OPTIONS) private readonly options: ResolvedDeckOptions,
    private readonly moduleRef: ModuleRef,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string | undefined> }>();
    const refusal = crossSiteRefusal(
      { headers: req.headers, ownOrigin: () => frameworkOrigin(req) },
      this.options.allowedOrigins,
    );
    // The host's CORS layer has added its headers by now (Express middleware, Fastify's onRequest
    // hook): no Deck response grants another origin anything, a refusal included.
    // (Fastify's adapter copies them to the raw response too: both are cleared.)
    // An origin of `allowedOrigins` keeps them: it is let in to read.
    const res = context.switchToHttp().getResponse<CorsResponse>();
    if (!isAllowedOrigin(req.headers, this.options.allowedOrigins)) {
      for (const name of CORS_RESPONSE_HEADERS) {
        res.removeHeader?.(name);
        res.raw?.removeHeader?.(name);
      }
    }
    if (refusal !== null) throw new ForbiddenException(refusal);
    await this.runAll(this.options.guards, context);
    const mutation = this.reflector.get<boolean>(DECK_MUTATION, context.getHandler()) === true;
    if (!mutation) return true;
    if (this.options.readOnly) {
      throw new ForbiddenException('The Deck is read-only: mutations are turned off.');
    }
    if (req.headers[DECK_CSRF_HEADER] === undefined) {
      throw new ForbiddenException(
        `A Deck mutation must carry the ${DECK_CSRF_HEADER} header (cross-site request protection).`,
      );
    }
    await this.runAll(this.options.destructiveGuards, context);
    return true;
  }

  private async runAll(guards: DeckGuard[], context: ExecutionContext): Promise<void> {
    for (const guard of guards) {
      const instance = await this.instance(guard);
      const verdict = instance.canActivate(context);
      const allowed = isObservable(verdict) ? await lastValueFrom(verdict) : await verdict;
      if (!allowed) throw new ForbiddenException('Forbidden resource');
    }
  }

  /** A guard class is taken from the app's injector when provided there, else created once here. */
  private instance(guard: DeckGuard): Promise<CanActivate> {
    if (typeof guard !== 'function') return Promise.resolve(guard);
    let found = this.instances.get(guard);
    if (!found) {
      found = this.resolve(guard);
      this.instances.set(guard, found);
    }
    return found;
  }

  private async resolve(guard: Type<CanActivate>): Promise<CanActivate> {
    try {
      return this.moduleRef.get(guard, { strict: false });
    } catch {
      return this.moduleRef.create(guard);
    }
  }
}
