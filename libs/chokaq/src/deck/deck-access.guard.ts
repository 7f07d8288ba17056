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

/** Marks a Deck route as a mutation: read-only refuses it; it needs the CSRF header and the destructive guards. */
export const DeckMutation = (): MethodDecorator => SetMetadata(DECK_MUTATION, true);

/**
 * The Deck's access policy, in the order a request meets it (after the app's global guards, which
 * Nest runs first): the configured `guards`; then, on a mutation route, `readOnly`, the CSRF
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
    await this.runAll(this.options.guards, context);
    const mutation = this.reflector.get<boolean>(DECK_MUTATION, context.getHandler()) === true;
    if (!mutation) return true;
    if (this.options.readOnly) {
      throw new ForbiddenException('The Deck is read-only: mutations are turned off.');
    }
    const request = context.switchToHttp().getRequest<{ headers: Record<string, unknown> }>();
    if (request.headers[DECK_CSRF_HEADER] === undefined) {
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
