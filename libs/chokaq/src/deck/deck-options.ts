import type { CanActivate, Type } from '@nestjs/common';
import type { JobView } from '../interfaces/job-view.interface';
import { ChokaQDeckConfigError } from './deck-config.error';
import { normaliseOrigin } from './deck-origin';

/** A guard of the Deck: a guard class (resolved through Nest's injector) or an instance. @publicApi */
export type DeckGuard = Type<CanActivate> | CanActivate;

/** Options of `ChokaQDeckModule.forRoot` (and of the factory of `forRootAsync`). @publicApi */
export interface ChokaQDeckOptions {
  /**
   * The guards every Deck API and stream route runs, after the app's global guards (which do not
   * count as protection). Required, non-empty, unless `allowAnonymous` is true.
   */
  guards?: DeckGuard[];
  /** Guards run in addition on the routes that change something (pause, cancel, resurrect, purge, …). */
  destructiveGuards?: DeckGuard[];
  /** Refuse every mutation (403) and hide the controls. Default false. */
  readOnly?: boolean;
  /** Mount without guards; logs a warning at every start. Default false. */
  allowAnonymous?: boolean;
  /**
   * The actor recorded in the audit log for a mutation. Default: `req.user`'s `username`, `name`,
   * `email`, `id` or `sub` (the first that is set), else `'deck'`. At most 100 characters are kept.
   */
  actor?: (req: unknown) => string | null | undefined;
  /**
   * Applied to every full job the Deck sends to a browser (the inspector, which shows its payload,
   * error texts and, for an archived job, its stored `result`; lists carry no payload or result).
   */
  redact?: (job: JobView) => JobView;
  /** How often the shared snapshot is read while someone watches, in ms (250–60,000). Default 2,000. */
  refreshMs?: number;
  /** How often an idle stream sends a heartbeat event, in ms (1,000–120,000). Default 15,000. */
  heartbeatMs?: number;
  /**
   * Other origins (`scheme://host[:port]`) whose pages may call the Deck's API with the operator's
   * credentials, for a deliberate setup such as the Deck's API behind a separate front end.
   * Default none: the Deck refuses every API request a browser marks as coming from another
   * origin or site (403), whatever CORS the host app enables.
   */
  allowedOrigins?: string[];
}

/** The route of the Deck, given beside the options because Nest needs it before any provider runs. */
export interface ChokaQDeckMount {
  /** Where the Deck is served, relative to the app's global prefix. Default `'chokaq'`. */
  path?: string;
}

/** The options after defaults and checks. */
export interface ResolvedDeckOptions {
  guards: DeckGuard[];
  destructiveGuards: DeckGuard[];
  readOnly: boolean;
  allowAnonymous: boolean;
  actor: (req: unknown) => string;
  redact: (job: JobView) => JobView;
  refreshMs: number;
  heartbeatMs: number;
  allowedOrigins: string[];
}

const MAX_ACTOR = 100;

/** `req.user`'s name or id, else `'deck'`. */
export function defaultActor(req: unknown): string {
  const user = (req as { user?: Record<string, unknown> } | null)?.user;
  if (user && typeof user === 'object') {
    for (const key of ['username', 'name', 'email', 'id', 'sub']) {
      const value = user[key];
      if ((typeof value === 'string' && value.trim() !== '') || typeof value === 'number') {
        return String(value);
      }
    }
  }
  return 'deck';
}

/** Checks the mount path: URL path segments of safe characters, no `.` or `..` segment. */
export function resolveDeckPath(path: unknown = 'chokaq'): string {
  if (typeof path !== 'string') {
    throw new ChokaQDeckConfigError(`ChokaQDeckModule: path must be a string, got ${typeof path}.`);
  }
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  const segments = trimmed === '' ? [] : trimmed.split('/');
  if (segments.some((s) => !/^[A-Za-z0-9_~-][A-Za-z0-9._~-]*$/.test(s))) {
    throw new ChokaQDeckConfigError(
      `ChokaQDeckModule: path ${JSON.stringify(path)} must be URL path segments of letters, digits and . _ ~ - (no empty, '.' or '..' segment).`,
    );
  }
  return trimmed;
}

function isGuard(value: unknown): value is DeckGuard {
  return (
    typeof value === 'function' ||
    (value !== null &&
      typeof value === 'object' &&
      typeof (value as CanActivate).canActivate === 'function')
  );
}

function guardList(value: unknown, name: string): DeckGuard[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every(isGuard)) {
    throw new ChokaQDeckConfigError(
      `ChokaQDeckModule: ${name} must be an array of guard classes or guard instances (objects with canActivate).`,
    );
  }
  return [...value];
}

function intIn(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ChokaQDeckConfigError(
      `ChokaQDeckModule: ${name} must be a whole number of ms from ${min} to ${max}, got ${String(value)}.`,
    );
  }
  return value;
}

function optionalFunction<T>(value: unknown, name: string): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw new ChokaQDeckConfigError(`ChokaQDeckModule: ${name} must be a function.`);
  }
  return value as T;
}

/**
 * Applies the defaults and refuses what cannot run, above all a Deck without protection: no
 * `guards` and no `allowAnonymous: true` fails the start with a {@link ChokaQDeckConfigError}.
 */
export function resolveDeckOptions(options: ChokaQDeckOptions | undefined): ResolvedDeckOptions {
  if (options === null || typeof options !== 'object') {
    throw new ChokaQDeckConfigError('ChokaQDeckModule: options must be an object.');
  }
  const guards = guardList(options.guards, 'guards');
  const allowAnonymous = options.allowAnonymous === true;
  if (options.allowAnonymous !== undefined && typeof options.allowAnonymous !== 'boolean') {
    throw new ChokaQDeckConfigError('ChokaQDeckModule: allowAnonymous must be a boolean.');
  }
  if (options.readOnly !== undefined && typeof options.readOnly !== 'boolean') {
    throw new ChokaQDeckConfigError('ChokaQDeckModule: readOnly must be a boolean.');
  }
  if (guards.length === 0 && !allowAnonymous) {
    throw new ChokaQDeckConfigError(
      'ChokaQDeckModule is deny-by-default: pass `guards: [YourAuthGuard]` (the guards that prove who the operator is; ' +
        "the app's global guards apply too but do not count), or `allowAnonymous: true` to serve it unprotected " +
        '(for a local sandbox only; it logs a warning at every start).',
    );
  }
  const actor = optionalFunction<ChokaQDeckOptions['actor']>(options.actor, 'actor');
  const redact = optionalFunction<ChokaQDeckOptions['redact']>(options.redact, 'redact');
  return {
    guards,
    destructiveGuards: guardList(options.destructiveGuards, 'destructiveGuards'),
    readOnly: options.readOnly === true,
    allowAnonymous,
    actor: (req) => {
      const named = actor ? actor(req) : defaultActor(req);
      const text = typeof named === 'string' && named.trim() !== '' ? named.trim() : 'deck';
      return text.slice(0, MAX_ACTOR);
    },
    redact: redact ?? ((job) => job),
    refreshMs: intIn(options.refreshMs, 'refreshMs', 2_000, 250, 60_000),
    heartbeatMs: intIn(options.heartbeatMs, 'heartbeatMs', 15_000, 1_000, 120_000),
    allowedOrigins: originList(options.allowedOrigins),
  };
}

function originList(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new ChokaQDeckConfigError(
      'ChokaQDeckModule: allowedOrigins must be an array of origins.',
    );
  }
  return value.map((origin) => {
    try {
      return normaliseOrigin(String(origin));
    } catch (error) {
      throw new ChokaQDeckConfigError(
        `ChokaQDeckModule: allowedOrigins: ${(error as Error).message}.`,
      );
    }
  });
}
