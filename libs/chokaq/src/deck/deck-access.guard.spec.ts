import { ForbiddenException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { ModuleRef, Reflector } from '@nestjs/core';
import 'reflect-metadata';
import { of } from 'rxjs';
import { DeckAccessGuard, DeckMutation } from './deck-access.guard';
import { DECK_CSRF_HEADER, DECK_MUTATION } from './deck.constants';
import type { ResolvedDeckOptions } from './deck-options';

/** The guard with one configured guard answering `verdict`, on a read route. */
function guardAnswering(verdict: unknown): DeckAccessGuard {
  const configured: CanActivate = { canActivate: () => verdict as boolean };
  const options = {
    guards: [configured],
    destructiveGuards: [],
    readOnly: false,
    allowedOrigins: [],
  } as unknown as ResolvedDeckOptions;
  const reflector = { get: () => undefined } as unknown as Reflector;
  return new DeckAccessGuard(options, {} as ModuleRef, reflector);
}

const context = {
  switchToHttp: () => ({ getRequest: () => ({ headers: {} }), getResponse: () => ({}) }),
  getHandler: () => () => undefined,
} as unknown as ExecutionContext;

describe('DeckAccessGuard: what a configured guard answers', () => {
  it.each<[string, unknown]>([
    ['undefined', undefined],
    ['a promise of undefined', Promise.resolve(undefined)],
    ['an observable of undefined', of(undefined)],
    ['0', 0],
    ['false', false],
    ['an observable of false', of(false)],
    ['null', null],
  ])('refuses a guard answering %s', async (_name, verdict) => {
    await expect(guardAnswering(verdict).canActivate(context)).rejects.toBeInstanceOf(
      ForbiddenException,
    );
  });

  it.each<[string, unknown]>([
    ['true', true],
    ['a promise of true', Promise.resolve(true)],
    ['an observable of true', of(true)],
  ])('lets in a guard answering %s', async (_name, verdict) => {
    await expect(guardAnswering(verdict).canActivate(context)).resolves.toBe(true);
  });
});

/** A request to a Deck route, its response spies, and the guard's collaborators. */
function setup({
  headers = {},
  mutation = false,
  readOnly = false,
  guards = [] as unknown[],
  destructiveGuards = [] as unknown[],
  allowedOrigins = [] as string[],
  moduleRef = {} as Partial<ModuleRef>,
} = {}) {
  const removed: string[] = [];
  const rawRemoved: string[] = [];
  const response = {
    removeHeader: (name: string) => removed.push(name),
    raw: { removeHeader: (name: string) => rawRemoved.push(name) },
  };
  // A Fastify-5-like request: its own origin is http://deck.example:3000.
  const request = { headers, protocol: 'http', host: 'deck.example:3000' };
  const ctx = {
    switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }),
    getHandler: () => () => undefined,
  } as unknown as ExecutionContext;
  const options = {
    guards,
    destructiveGuards,
    readOnly,
    allowedOrigins,
  } as unknown as ResolvedDeckOptions;
  const reflector = {
    get: (key: string) => (key === DECK_MUTATION && mutation ? true : undefined),
  } as unknown as Reflector;
  const guard = new DeckAccessGuard(options, moduleRef as ModuleRef, reflector);
  return { guard, ctx, removed, rawRemoved };
}

const allow = (): CanActivate => ({ canActivate: () => true });
const deny = (): CanActivate => ({ canActivate: () => false });

describe('DeckAccessGuard: the access policy', () => {
  it('lets a read through after the configured guards; the destructive guards are for mutations', async () => {
    const { guard, ctx } = setup({ guards: [allow()], destructiveGuards: [deny()] });
    await expect(guard.canActivate(ctx)).resolves.toBe(true);
  });

  it('refuses every mutation of a read-only Deck, with its reason', async () => {
    const { guard, ctx } = setup({
      mutation: true,
      readOnly: true,
      headers: { [DECK_CSRF_HEADER]: '1' },
    });
    await expect(guard.canActivate(ctx)).rejects.toThrow(
      'The Deck is read-only: mutations are turned off.',
    );
  });

  it('refuses a mutation without the CSRF header; with it, the destructive guards decide', async () => {
    const bare = setup({ mutation: true });
    await expect(bare.guard.canActivate(bare.ctx)).rejects.toThrow(
      `A Deck mutation must carry the ${DECK_CSRF_HEADER} header (cross-site request protection).`,
    );
    const headers = { [DECK_CSRF_HEADER]: '1' };
    const denied = setup({ mutation: true, headers, destructiveGuards: [deny()] });
    await expect(denied.guard.canActivate(denied.ctx)).rejects.toThrow('Forbidden resource');
    const allowed = setup({ mutation: true, headers, destructiveGuards: [allow()] });
    await expect(allowed.guard.canActivate(allowed.ctx)).resolves.toBe(true);
  });

  it('refuses another origin before any guard runs, and strips the CORS headers of its answer', async () => {
    let ran = false;
    const watching: CanActivate = { canActivate: () => (ran = true) };
    const { guard, ctx, removed, rawRemoved } = setup({
      headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      guards: [watching],
    });
    await expect(guard.canActivate(ctx)).rejects.toBeInstanceOf(ForbiddenException);
    expect(ran).toBe(false);
    const cors = [
      'access-control-allow-origin',
      'access-control-allow-credentials',
      'access-control-expose-headers',
    ];
    expect(removed).toEqual(cors);
    expect(rawRemoved).toEqual(cors);
  });

  it("lets in the Deck's own origin (CORS headers stripped) and an allowed one (CORS headers kept)", async () => {
    const own = setup({ headers: { origin: 'http://deck.example:3000' } });
    await expect(own.guard.canActivate(own.ctx)).resolves.toBe(true);
    expect(own.removed).toHaveLength(3);
    const listed = setup({
      headers: { origin: 'https://admin.example', 'sec-fetch-site': 'cross-site' },
      allowedOrigins: ['https://admin.example'],
    });
    await expect(listed.guard.canActivate(listed.ctx)).resolves.toBe(true);
    expect(listed.removed).toEqual([]);
    expect(listed.rawRemoved).toEqual([]);
  });

  it("takes a guard class from the app's injector (non-strict), else creates it once", async () => {
    class AppGuard implements CanActivate {
      canActivate(): boolean {
        return true;
      }
    }
    const fromApp = new AppGuard();
    const get = jest.fn((_type: unknown, opts: { strict: boolean }) => {
      expect(opts).toEqual({ strict: false });
      return fromApp;
    });
    const provided = setup({ guards: [AppGuard], moduleRef: { get } as never });
    await expect(provided.guard.canActivate(provided.ctx)).resolves.toBe(true);
    expect(get).toHaveBeenCalledTimes(1);

    const create = jest.fn(async () => new AppGuard());
    const missing = setup({
      guards: [AppGuard],
      moduleRef: {
        get: () => {
          throw new Error('not provided');
        },
        create,
      } as never,
    });
    await missing.guard.canActivate(missing.ctx);
    await missing.guard.canActivate(missing.ctx);
    expect(create).toHaveBeenCalledTimes(1);
  });

  it('DeckMutation marks a route as a mutation', () => {
    class Routes {
      @DeckMutation()
      act(): void {}
    }
    expect(Reflect.getMetadata(DECK_MUTATION, Routes.prototype.act)).toBe(true);
  });
});
