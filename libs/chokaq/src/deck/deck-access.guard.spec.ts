import { ForbiddenException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { ModuleRef, Reflector } from '@nestjs/core';
import { of } from 'rxjs';
import { DeckAccessGuard } from './deck-access.guard';
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
