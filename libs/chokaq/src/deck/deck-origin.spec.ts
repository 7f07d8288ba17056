import { crossSiteRefusal, frameworkOrigin, normaliseOrigin } from './deck-origin';
import { resolveDeckOptions } from './deck-options';
import { ChokaQDeckConfigError } from './deck-config.error';

const OWN = 'http://deck.local:3000';
const refusal = (headers: Record<string, string>, allowed: string[] = []) =>
  crossSiteRefusal({ headers, ownOrigin: () => OWN }, allowed);

describe('the Deck’s cross-site check', () => {
  it('lets in what a browser marks as the same origin, or typed in', () => {
    expect(refusal({ 'sec-fetch-site': 'same-origin', origin: 'https://elsewhere' })).toBeNull();
    expect(refusal({ 'sec-fetch-site': 'none' })).toBeNull();
    expect(refusal({ 'sec-fetch-site': 'none', origin: 'https://elsewhere' })).toBeNull();
    expect(refusal({ 'sec-fetch-site': 'SAME-ORIGIN' })).toBeNull();
  });

  it('refuses another site and another origin of the same site, with or without Origin', () => {
    for (const site of ['cross-site', 'same-site']) {
      expect(refusal({ 'sec-fetch-site': site })).toBe(
        `The Deck refuses requests from another origin (Sec-Fetch-Site: ${site}).`,
      );
      expect(refusal({ 'sec-fetch-site': site, origin: OWN })).toBe(
        `The Deck refuses requests from another origin (Sec-Fetch-Site: ${site}, Origin: ${OWN}).`,
      );
    }
    expect(refusal({ 'sec-fetch-site': ['cross-site', 'same-origin'] as never })).not.toBeNull();
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

  it("reads the request's own origin as Express sees it: the forwarded host only under its proxy trust", () => {
    const express = (headers: Record<string, string>, trusted: boolean, protocol = 'http') => ({
      protocol,
      headers,
      socket: { remoteAddress: '10.0.0.1' },
      app: {
        get: (name: string) =>
          name === 'trust proxy fn' ? (addr: string) => trusted && addr === '10.0.0.1' : undefined,
      },
    });
    const forwarded = {
      host: 'internal:3000',
      'x-forwarded-host': 'deck.example.com, proxy.local',
    };
    expect(frameworkOrigin(express(forwarded, false))).toBe('http://internal:3000');
    expect(frameworkOrigin(express(forwarded, true, 'https'))).toBe('https://deck.example.com');
    expect(frameworkOrigin(express({ host: 'Deck.Local:80' }, false))).toBe('http://deck.local');
    expect(frameworkOrigin(express({ host: 'deck.local:443' }, false, 'https'))).toBe(
      'https://deck.local',
    );
    expect(frameworkOrigin(express({}, false))).toBeUndefined();
    expect(frameworkOrigin(express({ host: 'bad host' }, false))).toBeUndefined();
  });

  it("reads the request's own origin as Fastify sees it (host with its port, else hostname)", () => {
    expect(frameworkOrigin({ protocol: 'http', host: '127.0.0.1:8080', hostname: 'x' })).toBe(
      'http://127.0.0.1:8080',
    );
    expect(frameworkOrigin({ protocol: 'https', hostname: 'deck.local:8443' })).toBe(
      'https://deck.local:8443',
    );
    expect(frameworkOrigin({ protocol: 'http:', hostname: 'deck.local' })).toBe(
      'http://deck.local',
    );
    expect(frameworkOrigin({ hostname: 'deck.local' })).toBeUndefined();
    expect(frameworkOrigin({ protocol: 'http' })).toBeUndefined();
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
