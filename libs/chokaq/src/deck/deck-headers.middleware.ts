import { Injectable, NestMiddleware } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { DECK_CSP } from './deck.constants';

/**
 * Security headers on every Deck response, set before the guards run so that a refusal carries
 * them too. Works on Express and on Fastify (whose middleware sees the raw Node response).
 */
@Injectable()
export class DeckHeadersMiddleware implements NestMiddleware {
  use(_req: unknown, res: ServerResponse, next: () => void): void {
    res.setHeader('Content-Security-Policy', DECK_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cache-Control', 'no-store');
    next();
  }
}
