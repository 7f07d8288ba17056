import { createHmac, timingSafeEqual } from 'node:crypto';
import type { BulkDlqAction } from '../interfaces/audit.interface';

/*
 * Confirmation tokens of bulk DLQ actions by filter. A preview issues one; the action refuses to
 * run without it. A token is `<claims>.<mac>`: the claims (action, the filter's canonical JSON,
 * the matched count, the preview's `max`, the expiry in epoch ms by the database clock) as
 * base64url JSON, and their HMAC-SHA256 under the secret every process reads from the database,
 * so a token issued by one process is verified by any other. It is not encrypted (the claims
 * hold nothing secret); it cannot be altered or made up without the secret.
 */

/** What a token says. */
export interface ConfirmationClaims {
  action: BulkDlqAction;
  /** The filter as `canonicalFilter` writes it. */
  filter: string;
  matched: number;
  max: number;
  expiresAtMs: number;
}

interface ClaimsJson {
  v: 1;
  a: BulkDlqAction;
  f: string;
  n: number;
  m: number;
  e: number;
}

function mac(secret: string, body: string): Buffer {
  return createHmac('sha256', secret).update(body, 'utf8').digest();
}

/** The token of `claims`, signed with `secret`. */
export function signConfirmation(secret: string, claims: ConfirmationClaims): string {
  const json: ClaimsJson = {
    v: 1,
    a: claims.action,
    f: claims.filter,
    n: claims.matched,
    m: claims.max,
    e: claims.expiresAtMs,
  };
  const body = Buffer.from(JSON.stringify(json), 'utf8').toString('base64url');
  return `${body}.${mac(secret, body).toString('base64url')}`;
}

/**
 * The claims of `token` when `secret` signed it, else null (not a token, altered, or signed with
 * another secret). The MAC is compared in constant time.
 */
export function readConfirmation(secret: string, token: unknown): ConfirmationClaims | null {
  if (typeof token !== 'string' || token.length > 20_000) return null;
  const [body, signature, extra] = token.split('.');
  if (!body || !signature || extra !== undefined) return null;
  const expected = mac(secret, body);
  const given = Buffer.from(signature, 'base64url');
  // Only the one spelling ChokaQ writes: base64url decoding ignores unused low bits of the last
  // character, so several texts decode to the same MAC; a token is not malleable that way.
  if (given.toString('base64url') !== signature) return null;
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  let json: Partial<ClaimsJson>;
  try {
    json = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Partial<ClaimsJson>;
  } catch {
    return null;
  }
  if (
    json.v !== 1 ||
    (json.a !== 'resurrect' && json.a !== 'purge') ||
    typeof json.f !== 'string' ||
    !Number.isSafeInteger(json.n) ||
    !Number.isSafeInteger(json.m) ||
    !Number.isSafeInteger(json.e)
  ) {
    return null;
  }
  return {
    action: json.a,
    filter: json.f,
    matched: json.n!,
    max: json.m!,
    expiresAtMs: json.e!,
  };
}
