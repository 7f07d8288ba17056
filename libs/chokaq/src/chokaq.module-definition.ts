import {
  ConfigurableModuleAsyncOptions,
  ConfigurableModuleBuilder,
  Provider,
  Type,
} from '@nestjs/common';
import { CHOKAQ_MIDDLEWARE } from './chokaq.constants';
import { ChokaQMiddleware } from './interfaces/middleware.interface';
import { ChokaQModuleExtras, ChokaQModuleOptions } from './interfaces/module-options.interface';

/**
 * `forRoot` / `forRootAsync` come from Nest's `ConfigurableModuleBuilder` (as in
 * nestjs/cache-manager). `middleware` and `isGlobal` are "extras": they decide providers and the
 * module's scope, so they are given at the top level and never returned by an async factory.
 */
export const {
  ConfigurableModuleClass: ConfigurableChokaQModule,
  MODULE_OPTIONS_TOKEN: CHOKAQ_MODULE_OPTIONS,
  OPTIONS_TYPE: CHOKAQ_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: CHOKAQ_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<ChokaQModuleOptions>({ moduleName: 'ChokaQ' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createChokaQOptions')
  // Both keys must be present in the defaults: the builder strips exactly these keys from the
  // options it provides, so `middleware` never reaches `resolveChokaQOptions` as an unknown key.
  .setExtras<ChokaQModuleExtras>({ isGlobal: true, middleware: [] }, (definition, extras) => {
    const middleware = extras.middleware ?? [];
    return {
      ...definition,
      global: extras.isGlobal ?? true,
      providers: [...(definition.providers ?? []), ...middleware, middlewareProvider(middleware)],
    };
  })
  .build();

/** Resolves the listed middleware classes through DI, keeping their order. */
function middlewareProvider(middleware: Type<ChokaQMiddleware>[]): Provider {
  return {
    provide: CHOKAQ_MIDDLEWARE,
    useFactory: (...instances: ChokaQMiddleware[]) => instances,
    inject: middleware,
  };
}

/**
 * What `ChokaQModule.forRoot()` accepts: the options plus the extras (the builder's
 * `OPTIONS_TYPE`, spelled out so the API report names it; a typecheck spec keeps them equal).
 * @publicApi
 */
export type ChokaQForRootOptions = ChokaQModuleOptions & Partial<ChokaQModuleExtras>;

/** What `ChokaQModule.forRootAsync()` accepts (the builder's `ASYNC_OPTIONS_TYPE`). @publicApi */
export type ChokaQForRootAsyncOptions = ConfigurableModuleAsyncOptions<
  ChokaQModuleOptions,
  'createChokaQOptions'
> &
  Partial<ChokaQModuleExtras>;
