import { CanActivate, ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';

/** The demo token when CHOKAQ_DECK_TOKEN is not set; the startup log prints it. */
export const DEMO_DECK_TOKEN = 'chokaq-demo';

/** The token the Deck's API wants as `Authorization: Bearer <token>`. */
export function deckToken(): string {
  return process.env.CHOKAQ_DECK_TOKEN || DEMO_DECK_TOKEN;
}

/**
 * The sample's stand-in for a real login: a bearer token from the environment. The Deck asks for
 * it once per browser tab. A real app passes its own auth guard (JWT, session, …) instead.
 */
@Injectable()
export class DeckLoginGuard implements CanActivate {
  private readonly expected = Buffer.from(deckToken());

  canActivate(context: ExecutionContext): boolean {
    const header = context.switchToHttp().getRequest<{ headers: Record<string, string> }>()
      .headers.authorization;
    const given = Buffer.from(/^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '');
    if (given.length !== this.expected.length || !timingSafeEqual(given, this.expected)) {
      throw new UnauthorizedException('The Deck needs the sample token (see the startup log).');
    }
    (context.switchToHttp().getRequest() as { user?: unknown }).user = {
      username: 'demo-operator',
    };
    return true;
  }
}
