/**
 * The Deck under test: a real Nest app listening on a port, with ChokaQ on a test database and
 * the Deck mounted as the sample app mounts it, behind a test guard of the chosen kind (a bearer
 * token, a cookie session, or none). Express or Fastify, with or without a global prefix and
 * URI versioning. Handlers of the queue `deck` give the browser suites jobs that succeed, fail,
 * move their progress bar on the test's command, and record the payload they ran with.
 */
import {
  CanActivate,
  ExecutionContext,
  INestApplication,
  Injectable,
  Provider,
  Type,
  UnauthorizedException,
  VersioningType,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import {
  ChokaQAdmin,
  ChokaQModule,
  ChokaQModuleOptions,
  JobClient,
  JobContext,
  JobHandler,
  getJobStorageToken,
} from '../../../libs/chokaq/src';
import { ChokaQDeckModule, ChokaQDeckOptions } from '../../../libs/chokaq/src/deck';
import type { JobStorage } from '../../../libs/chokaq/src/storage';
import { Gate } from '../../support/wait-for';
import type { TestSchema } from '../../support/test-database';
import { FAST_OPTIONS, mergeOptions, quietLogger } from '../support/e2e-app';

export const BEARER_TOKEN = 'deck-test-token';
export const SESSION_COOKIE = 'deck_session=operator-1';

/** A bearer-token app's guard: `Authorization: Bearer deck-test-token`, else 401. */
@Injectable()
export class BearerGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string>; user?: unknown }>();
    if (req.headers.authorization !== `Bearer ${BEARER_TOKEN}`) {
      throw new UnauthorizedException('bearer token required');
    }
    req.user = { username: 'bearer-operator' };
    return true;
  }
}

/** A cookie-session app's guard: the session cookie, else 401. */
@Injectable()
export class CookieGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string>; user?: unknown }>();
    if (!(req.headers.cookie ?? '').split(/;\s*/).includes(SESSION_COOKIE)) {
      throw new UnauthorizedException('session required');
    }
    req.user = { username: 'cookie-operator' };
    return true;
  }
}

/** Refuses every request it sees (a destructive guard that denies). */
export class DenyGuard implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

/** A global guard that refuses requests carrying `x-blocked: 1` (a rate limiter stand-in). */
@Injectable()
export class BlockingGlobalGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string> }>();
    return req.headers['x-blocked'] !== '1';
  }
}

/** What the `deck` handlers share with the test. */
export class DeckJobs {
  /** Payloads the `record` type ran with. */
  readonly recorded: unknown[] = [];
  /** Opened by the test, one per step of the `progress` type. */
  readonly steps = [new Gate(), new Gate(), new Gate()];
}

@Injectable()
export class DeckHandlers {
  constructor(private readonly jobs: DeckJobs) {}

  @JobHandler('deck', { type: 'ok' })
  async ok(): Promise<void> {}

  @JobHandler('deck', { type: 'fail' })
  async fail(payload: { message?: string }): Promise<void> {
    throw new Error(payload?.message ?? 'deck failure');
  }

  /** A dependency that is down: its failures open the circuit of `outage/down`. */
  @JobHandler('outage', { type: 'down' })
  async down(): Promise<void> {
    throw new Error('partner API unavailable');
  }

  @JobHandler('deck', { type: 'record' })
  async record(payload: unknown): Promise<void> {
    if ((payload as { fail?: boolean } | null)?.fail) throw new Error('record refused: fail set');
    this.jobs.recorded.push(payload);
  }

  @JobHandler('deck', { type: 'progress' })
  async progress(_payload: unknown, ctx: JobContext): Promise<void> {
    await ctx.reportProgress(10);
    for (const [i, gate] of this.jobs.steps.entries()) {
      await gate.promise;
      await ctx.reportProgress(10 + (i + 1) * 30);
    }
  }
}

export interface DeckAppOptions {
  db: TestSchema;
  platform?: 'express' | 'fastify';
  auth?: 'bearer' | 'cookie' | 'anonymous';
  deck?: Partial<ChokaQDeckOptions> & { path?: string };
  globalPrefix?: string;
  versioning?: boolean;
  globalGuard?: Type<CanActivate>;
  /** Run a worker in the app (default false: a producer-only app, as a dashboard pod often is). */
  worker?: boolean;
  /** The host app enables permissive CORS: `enableCors({ origin: true, credentials: true })`. */
  cors?: boolean;
  /** The host app trusts its reverse proxy's `X-Forwarded-*` headers. */
  trustProxy?: boolean;
  chokaq?: ChokaQModuleOptions;
}

export interface DeckApp {
  app: INestApplication;
  /** The Deck's page, e.g. `http://127.0.0.1:41234/chokaq`. */
  url: string;
  admin: ChokaQAdmin;
  client: JobClient;
  jobs: DeckJobs;
  close(): Promise<void>;
}

/** Boots the app (and listens on a free port). */
export async function startDeckApp(options: DeckAppOptions): Promise<DeckApp> {
  const auth = options.auth ?? 'bearer';
  const guards = auth === 'bearer' ? [BearerGuard] : auth === 'cookie' ? [CookieGuard] : [];
  const providers: Provider[] = [DeckJobs, DeckHandlers];
  if (options.globalGuard) providers.push({ provide: APP_GUARD, useClass: options.globalGuard });
  const moduleRef = await Test.createTestingModule({
    imports: [
      ChokaQModule.forRoot(
        mergeOptions(
          FAST_OPTIONS,
          { storage: options.db.options },
          { worker: { enabled: options.worker === true } },
          { retry: { maxAttempts: 1 } },
          options.chokaq ?? {},
        ),
      ),
      ChokaQDeckModule.forRoot({
        path: 'chokaq',
        guards,
        allowAnonymous: auth === 'anonymous',
        refreshMs: 250,
        heartbeatMs: 1_000,
        ...options.deck,
      }),
    ],
    providers,
  }).compile();
  const logger = quietLogger();
  const app: INestApplication =
    options.platform === 'fastify'
      ? moduleRef.createNestApplication<NestFastifyApplication>(
          new FastifyAdapter({ trustProxy: options.trustProxy === true }),
          { logger },
        )
      : moduleRef.createNestApplication({ logger });
  if (options.trustProxy && options.platform !== 'fastify') {
    (app as NestExpressApplication).set('trust proxy', true);
  }
  if (options.cors) app.enableCors({ origin: true, credentials: true });
  if (options.globalPrefix) app.setGlobalPrefix(options.globalPrefix);
  if (options.versioning) app.enableVersioning({ type: VersioningType.URI, defaultVersion: '1' });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  const prefix = [
    options.globalPrefix,
    options.versioning ? 'v1' : undefined,
    options.deck?.path ?? 'chokaq',
  ]
    .filter((p) => p)
    .join('/');
  return {
    app,
    url: `http://127.0.0.1:${address.port}/${prefix}`,
    admin: app.get(ChokaQAdmin),
    client: app.get(JobClient),
    jobs: app.get(DeckJobs),
    close: () => app.close(),
  };
}

/** Headers of an authorised API call of the bearer app (and the CSRF header for a mutation). */
export function bearer(mutation = false): Record<string, string> {
  return {
    authorization: `Bearer ${BEARER_TOKEN}`,
    ...(mutation ? { 'x-chokaq-deck': '1', 'content-type': 'application/json' } : {}),
  };
}

/**
 * Claims and starts the one Pending job of `(queue, type)` as a worker of another process would,
 * through the app's storage; resolves to the ids it started.
 */
export async function startAsWorker(
  app: INestApplication,
  queue: string,
  type: string,
): Promise<string[]> {
  const storage = app.get<JobStorage>(getJobStorageToken());
  const started = await storage.fetchNextBatch({
    workerId: 'deck-test-worker',
    leaseId: randomUUID(),
    limit: 1,
    start: 1,
    handled: { queues: [], types: [{ queue, type }] },
  });
  return started.map((j) => j.id);
}
