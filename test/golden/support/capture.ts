import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** One statement as the storage handed it to the driver. */
export interface CapturedStatement {
  /** Driver method: `query` (pg), `run` / `all` / `get` / `iterate` / `exec` (better-sqlite3). */
  readonly method: string;
  /** The SQL text, byte for byte (after the schema name was normalised, see the recorders). */
  readonly sql: string;
  /** A stable description of each bound value (never the value itself: ids and times vary). */
  readonly params: ParamShape[];
}

/** What a bound value looked like: enough to see a changed parameter list, nothing run-specific. */
export interface ParamShape {
  /** `$1`… (pg, positional) or `@name` (better-sqlite3, named; sorted by name). */
  readonly param: string;
  /** JS type: string, integer, number, boolean, null, undefined, Date, array, object, … */
  readonly type: string;
  /** Arrays: their length. JSON text: the length of a JSON array. */
  readonly length?: number;
  /** Arrays: the distinct JS types of their elements, sorted. */
  readonly elements?: string[];
  /** Strings that hold a JSON document: `array` or `object`. */
  readonly json?: 'array' | 'object';
  /** JSON text: the (sorted) keys of the object, or the union of the keys of the array's objects. */
  readonly keys?: string[];
}

/** JS type of one value, as the golden files spell it. */
export function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (value instanceof Date) return 'Date';
  if (Array.isArray(value)) return 'array';
  if (Buffer.isBuffer(value)) return 'Buffer';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function jsonDocument(text: string): unknown {
  const first = text.trimStart()[0];
  if (first !== '[' && first !== '{') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function keysOf(values: readonly unknown[]): string[] {
  const keys = new Set<string>();
  for (const v of values) {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      for (const k of Object.keys(v)) keys.add(k);
    }
  }
  return [...keys].sort();
}

/** The stable description of one bound value. */
export function describeValue(param: string, value: unknown): ParamShape {
  const type = typeOf(value);
  if (Array.isArray(value)) {
    return {
      param,
      type,
      length: value.length,
      elements: [...new Set(value.map(typeOf))].sort(),
    };
  }
  if (typeof value === 'string') {
    const doc = jsonDocument(value);
    if (Array.isArray(doc)) {
      const keys = keysOf(doc);
      return { param, type, json: 'array', length: doc.length, ...(keys.length ? { keys } : {}) };
    }
    if (doc !== null && typeof doc === 'object') {
      return { param, type, json: 'object', keys: keysOf([doc]) };
    }
  }
  return { param, type };
}

/** Positional parameters (`$1`…) as pg receives them. */
export function describePositional(values: readonly unknown[] | undefined): ParamShape[] {
  return (values ?? []).map((v, i) => describeValue(`$${i + 1}`, v));
}

/**
 * Bind arguments as better-sqlite3 receives them: one plain object of named parameters (`@name`,
 * listed sorted, since binding by name does not depend on key order), or positional values.
 */
export function describeBindArgs(args: readonly unknown[]): ParamShape[] {
  if (
    args.length === 1 &&
    args[0] !== null &&
    typeof args[0] === 'object' &&
    !Array.isArray(args[0]) &&
    !(args[0] instanceof Date) &&
    !Buffer.isBuffer(args[0])
  ) {
    const named = args[0] as Record<string, unknown>;
    return Object.keys(named)
      .sort()
      .map((k) => describeValue(`@${k}`, named[k]));
  }
  return args.map((v, i) => describeValue(`?${i + 1}`, v));
}

/** The `.sql` golden: every statement of the operation in the order sent, each text verbatim. */
export function renderSql(statements: readonly CapturedStatement[]): string {
  return statements
    .map((s, i) => `-- [${i + 1}/${statements.length}] ${s.method}\n${s.sql}\n`)
    .join('\n');
}

/** The `.params.json` golden: the parameter list of every statement, in the same order. */
export function renderParams(statements: readonly CapturedStatement[]): unknown {
  return statements.map((s, i) => ({ statement: i + 1, method: s.method, params: s.params }));
}

/** Whether this run rewrites the golden files instead of comparing with them. */
export const UPDATE_GOLDEN = process.env.CHOKAQ_UPDATE_GOLDEN === '1';

/**
 * Compares (or, with CHOKAQ_UPDATE_GOLDEN=1, writes) `<dir>/<file>.sql` byte for byte and
 * `<dir>/<file>.params.json` as parsed JSON (Prettier reformats JSON files; the content is what
 * is pinned).
 */
export function expectGolden(
  dir: string,
  file: string,
  statements: readonly CapturedStatement[],
): void {
  const sqlFile = join(dir, `${file}.sql`);
  const paramsFile = join(dir, `${file}.params.json`);
  const sql = renderSql(statements);
  const params = renderParams(statements);
  if (UPDATE_GOLDEN) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(sqlFile, sql);
    writeFileSync(paramsFile, `${JSON.stringify(params, null, 2)}\n`);
    return;
  }
  if (!existsSync(sqlFile) || !existsSync(paramsFile)) {
    throw new Error(
      `Missing golden ${sqlFile}; create it with CHOKAQ_UPDATE_GOLDEN=1 (see the spec header).`,
    );
  }
  expect(sql).toBe(readFileSync(sqlFile, 'utf8'));
  expect(params).toEqual(JSON.parse(readFileSync(paramsFile, 'utf8')));
}
