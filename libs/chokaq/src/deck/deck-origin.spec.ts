import { crossSiteRefusal, normaliseOrigin } from './deck-origin';
import { resolveDeckOptions } from './deck-options';
import { ChokaQDeckConfigError } from './deck-config.error';

const OWN = 'http://deck.local:3000';
const refusal = (headers: Record<string, string>, allowed: string[] = []) =>
  crossSiteRefusal({ headers, ownOrigin: () => OWN }, allowed);

describe('the Deck’s cross-site check', () => {
  it('lets in what a browser marks as the same origin, or typed in', () => {
    expect(refusal({ 'sec-fetch-site': 'same-origin', origin: 'https://elsewhere' })).toBeNull();
    expect(refusal({ 'sec-fetch-site': 'none' })).toBeNull();
    expect(refusal({ 'sec-fetch-site': 'SAME-ORIGIN' })).toBeNull();
  });

  it('refuses another site and another origin of the same site, with or without Origin', () => {
    for (const site of ['cross-site', 'same-site']) {
      expect(refusal({ 'sec-fetch-site': site })).toMatch(/another origin/);
      expect(refusal({ 'sec-fetch-site': site, origin: OWN })).toMatch(/another origin/);
    }
  });

  it('without fetch metadata, judges Origin against its own; no header at all is no cross-site request', () => {
    expect(refusal({ origin: OWN })).toBeNull();
    expect(refusal({ origin: 'http://deck.local:3001' })).toMatch(
      /Origin: http:\/\/deck.local:3001/,
    );
    expect(refusal({ origin: 'null' })).toMatch(/another origin/);
    expect(
      crossSiteRefusal({ headers: { origin: 'null' }, ownOrigin: () => 'null' }, []),
    ).not.toBeNull();
    expect(refusal({})).toBeNull();
  });

  it('lets in an origin of the allow-list, whatever the site', () => {
    const allowed = ['https://ops.example.com'];
    expect(
      refusal({ 'sec-fetch-site': 'cross-site', origin: 'https://ops.example.com' }, allowed),
    ).toBeNull();
    expect(
      refusal({ 'sec-fetch-site': 'cross-site', origin: 'https://ops.example.co' }, allowed),
    ).not.toBeNull();
  });

  it('normalises allow-list entries as browsers serialise Origin, and refuses anything else', () => {
    expect(normaliseOrigin('HTTPS://Ops.Example.com:443')).toBe('https://ops.example.com');
    expect(normaliseOrigin('http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080');
    for (const bad of [
      'ops.example.com',
      'https://ops.example.com/admin',
      'ftp://x',
      'https://u:p@x',
      'https://x?q',
    ]) {
      expect(() => normaliseOrigin(bad)).toThrow(TypeError);
    }
    expect(() =>
      resolveDeckOptions({ allowAnonymous: true, allowedOrigins: ['https://x/y'] }),
    ).toThrow(ChokaQDeckConfigError);
    expect(() =>
      resolveDeckOptions({ allowAnonymous: true, allowedOrigins: 'https://x' as never }),
    ).toThrow(ChokaQDeckConfigError);
    expect(
      resolveDeckOptions({ allowAnonymous: true, allowedOrigins: ['https://X.io'] }).allowedOrigins,
    ).toEqual(['https://x.io']);
  });
});
