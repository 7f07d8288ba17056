import {
  DynamicModule,
  Inject,
  Logger,
  MiddlewareConsumer,
  Module,
  ModuleMetadata,
  NestModule,
  OnModuleInit,
  Provider,
} from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { DECK_OPTIONS } from './deck.constants';
import { DeckAccessGuard } from './deck-access.guard';
import { DeckApiController } from './deck-api.controller';
import { DeckAssets } from './deck-assets';
import { DeckAssetsController } from './deck-assets.controller';
import { DeckErrorFilter } from './deck-error.filter';
import { DeckHeadersMiddleware } from './deck-headers.middleware';
import { DeckJobsController } from './deck-jobs.controller';
import {
  ChokaQDeckMount,
  ChokaQDeckOptions,
  ResolvedDeckOptions,
  resolveDeckOptions,
  resolveDeckPath,
} from './deck-options';
import { DeckSnapshotService } from './deck-snapshot.service';

/** `forRootAsync`: the path now, the other options from a factory (config service, secrets, …). */
export interface ChokaQDeckAsyncOptions extends ChokaQDeckMount, Pick<ModuleMetadata, 'imports'> {
  useFactory: (...args: never[]) => ChokaQDeckOptions | Promise<ChokaQDeckOptions>;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- the injection tokens Nest accepts
  inject?: Array<string | symbol | Function>;
}

const CONTROLLERS = [DeckAssetsController, DeckApiController, DeckJobsController];

/**
 * The Deck: ChokaQ's operator dashboard, served by your Nest app. Needs `ChokaQModule` (it reads
 * and acts through `ChokaQAdmin`). Deny by default: give it `guards`, or `allowAnonymous: true`.
 *
 * @example
 * ChokaQDeckModule.forRoot({ path: 'chokaq', guards: [AdminGuard] })
 *
 * @publicApi
 */
@Module({})
export class ChokaQDeckModule implements NestModule, OnModuleInit {
  private readonly logger = new Logger('ChokaQDeck');

  constructor(@Inject(DECK_OPTIONS) private readonly options: ResolvedDeckOptions) {}

  static forRoot(options: ChokaQDeckOptions & ChokaQDeckMount): DynamicModule {
    const resolved = resolveDeckOptions(options);
    return ChokaQDeckModule.build(options?.path, [], { provide: DECK_OPTIONS, useValue: resolved });
  }

  static forRootAsync(options: ChokaQDeckAsyncOptions): DynamicModule {
    return ChokaQDeckModule.build(options.path, options.imports ?? [], {
      provide: DECK_OPTIONS,
      inject: options.inject ?? [],
      useFactory: async (...args: never[]) => resolveDeckOptions(await options.useFactory(...args)),
    });
  }

  private static build(
    path: string | undefined,
    imports: NonNullable<ModuleMetadata['imports']>,
    optionsProvider: Provider,
  ): DynamicModule {
    return {
      module: ChokaQDeckModule,
      imports: [
        ...imports,
        RouterModule.register([{ path: resolveDeckPath(path), module: ChokaQDeckModule }]),
      ],
      controllers: CONTROLLERS,
      providers: [
        optionsProvider,
        { provide: DeckAssets, useFactory: () => new DeckAssets() },
        DeckSnapshotService,
        DeckAccessGuard,
        DeckErrorFilter,
      ],
    };
  }

  onModuleInit(): void {
    if (this.options.allowAnonymous && this.options.guards.length === 0) {
      this.logger.warn(
        'The Deck is mounted with allowAnonymous: true and no guards: anyone who reaches this app can read and change ChokaQ. ' +
          'Give it guards before exposing it.',
      );
    }
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(DeckHeadersMiddleware).forRoutes(...CONTROLLERS);
  }
}
