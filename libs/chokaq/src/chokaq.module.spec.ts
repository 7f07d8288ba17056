import { Injectable } from '@nestjs/common';
import { CHOKAQ_MIDDLEWARE } from './chokaq.constants';
import { ChokaQModule } from './chokaq.module';
import { CHOKAQ_MODULE_OPTIONS } from './chokaq.module-definition';
import { ChokaQMiddleware } from './interfaces/middleware.interface';

@Injectable()
class Mw implements ChokaQMiddleware {
  use(_ctx: unknown, _payload: unknown, next: () => Promise<unknown>): Promise<unknown> {
    return next();
  }
}

type ProviderLike = { provide?: unknown; useValue?: unknown; inject?: unknown[] };

describe('ChokaQModule definition', () => {
  it('forRoot is global by default and strips the extras from the options', () => {
    const def = ChokaQModule.forRoot({ retry: { maxAttempts: 5 }, middleware: [Mw] });
    expect(def.global).toBe(true);
    const providers = (def.providers ?? []) as ProviderLike[];
    const options = providers.find((p) => p.provide === CHOKAQ_MODULE_OPTIONS);
    expect(options?.useValue).toEqual({ retry: { maxAttempts: 5 } });
    expect(providers).toContain(Mw);
    expect(providers.find((p) => p.provide === CHOKAQ_MIDDLEWARE)?.inject).toEqual([Mw]);
  });

  it('forRoot() takes no argument at all: every default, the SQLite file', () => {
    const def = ChokaQModule.forRoot();
    expect(def.global).toBe(true);
    const providers = (def.providers ?? []) as ProviderLike[];
    expect(providers.find((p) => p.provide === CHOKAQ_MODULE_OPTIONS)?.useValue).toEqual({});
  });

  it('isGlobal: false makes it local', () => {
    expect(ChokaQModule.forRoot({ isGlobal: false }).global).toBe(false);
  });

  it('forRootAsync takes the extras at the top level', () => {
    const def = ChokaQModule.forRootAsync({
      useFactory: () => ({}),
      middleware: [Mw],
      isGlobal: false,
    });
    expect(def.global).toBe(false);
    expect(def.providers).toContain(Mw);
  });
});
