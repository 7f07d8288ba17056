import { createHmac } from 'node:crypto';
import { ConfirmationClaims, readConfirmation, signConfirmation } from './confirmation-token';

const SECRET = 'a secret the processes share';
const CLAIMS: ConfirmationClaims = {
  action: 'resurrect',
  filter: '{"queue":"emails"}',
  matched: 12,
  max: 100,
  expiresAtMs: 1_800_000_000_000,
};

/** A token over any JSON body, correctly signed (what a forger with the secret could write). */
function signed(json: unknown, secret = SECRET): string {
  const body = Buffer.from(JSON.stringify(json), 'utf8').toString('base64url');
  return `${body}.${createHmac('sha256', secret).update(body, 'utf8').digest('base64url')}`;
}

const VALID_JSON = { v: 1, a: 'purge', f: '{}', n: 1, m: 10, e: 2_000 };

describe('confirmation tokens', () => {
  it('round-trips the claims of both actions under the secret', () => {
    expect(readConfirmation(SECRET, signConfirmation(SECRET, CLAIMS))).toEqual(CLAIMS);
    const purge = { ...CLAIMS, action: 'purge' as const };
    expect(readConfirmation(SECRET, signConfirmation(SECRET, purge))).toEqual(purge);
    expect(readConfirmation(SECRET, signed(VALID_JSON))).toEqual({
      action: 'purge',
      filter: '{}',
      matched: 1,
      max: 10,
      expiresAtMs: 2_000,
    });
  });

  it('refuses what is not a token: another type, too long, a part missing or one too many', () => {
    const token = signConfirmation(SECRET, CLAIMS);
    const [body, mac] = token.split('.');
    for (const bad of [
      undefined,
      42,
      '',
      body,
      `${body}.`,
      `.${mac}`,
      `${token}.x`,
      `${token}.`,
      'x'.repeat(20_001),
    ]) {
      expect([bad, readConfirmation(SECRET, bad)]).toEqual([bad, null]);
    }
  });

  it('reads a token of exactly 20,000 characters and refuses one longer', () => {
    // Pad the filter until the token is exactly the limit.
    const base = signed({ ...VALID_JSON, f: '' }).length;
    let f = 'x'.repeat(Math.floor(((20_000 - base) * 3) / 4));
    while (signed({ ...VALID_JSON, f }).length < 20_000) f += 'x';
    while (signed({ ...VALID_JSON, f }).length > 20_000) f = f.slice(0, -1);
    const exact = signed({ ...VALID_JSON, f });
    expect(exact.length).toBe(20_000);
    expect(readConfirmation(SECRET, exact)?.filter).toBe(f);
    const over = signed({ ...VALID_JSON, f: `${f}xxxx` });
    expect(over.length).toBeGreaterThan(20_000);
    expect(readConfirmation(SECRET, over)).toBeNull();
  });

  it('refuses a token signed with another secret, a MAC cut short, lengthened or altered', () => {
    const token = signConfirmation(SECRET, CLAIMS);
    const [body, mac] = token.split('.');
    const bytes = Buffer.from(mac, 'base64url');
    const flipped = Buffer.from(bytes);
    flipped[5] ^= 0x01;
    for (const bad of [
      signConfirmation('another secret', CLAIMS),
      `${body}.${bytes.subarray(0, 31).toString('base64url')}`,
      `${body}.${Buffer.concat([bytes, Buffer.from([0])]).toString('base64url')}`,
      `${body}.${flipped.toString('base64url')}`,
    ]) {
      expect(readConfirmation(SECRET, bad)).toBeNull();
    }
    // The same MAC bytes in another spelling: 32 bytes are 43 base64url characters, whose last
    // one carries two unused low bits; setting one gives other text for the same bytes.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const respelled = `${mac.slice(0, -1)}${alphabet[alphabet.indexOf(mac.at(-1)!) ^ 1]}`;
    expect(Buffer.from(respelled, 'base64url').equals(bytes)).toBe(true);
    expect(readConfirmation(SECRET, `${body}.${respelled}`)).toBeNull();
  });

  it('refuses signed claims of another version, action or shape', () => {
    for (const json of [
      { ...VALID_JSON, v: 2 },
      { ...VALID_JSON, a: 'delete' },
      { ...VALID_JSON, f: {} },
      { ...VALID_JSON, n: 1.5 },
      { ...VALID_JSON, m: '10' },
      { ...VALID_JSON, e: null },
      'not an object',
    ]) {
      expect([json, readConfirmation(SECRET, signed(json))]).toEqual([json, null]);
    }
    const body = Buffer.from('{not json', 'utf8').toString('base64url');
    const mac = createHmac('sha256', SECRET).update(body, 'utf8').digest('base64url');
    expect(readConfirmation(SECRET, `${body}.${mac}`)).toBeNull();
  });
});
