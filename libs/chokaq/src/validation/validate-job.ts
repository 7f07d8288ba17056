import { encodeTags } from '../common/tags';
import { isUuid, uuidv7 } from '../common/uuid';
import {
  ChokaQJobNotPendingError,
  ChokaQResultError,
  ChokaQValidationError,
  ValidationIssue,
} from '../errors';
import type { BatchCallbackKind, BatchCallbacks, NewBatch } from '../interfaces/batch.interface';
import {
  DedupeOption,
  DedupeState,
  DependencyPolicy,
  NewJob,
  PendingUpdate,
  PendingUpdateResult,
  ResurrectEdits,
} from '../interfaces/job.interface';
import {
  LIMITS,
  MAX_DEPENDENCIES,
  MAX_ENQUEUE_MANY,
  TRAILING_WHITESPACE,
  endsWithWhitespace,
} from './limits';
import { isPayloadVersion, PAYLOAD_VERSION_RULE } from './payload-version';
import { checkTraceContext } from './trace-context';

/** Default `payload.maxBytes`: 1,000,000 UTF-8 bytes of serialised JSON. */
export const DEFAULT_PAYLOAD_MAX_BYTES = 1_000_000;

/** Default job priority. */
export const DEFAULT_PRIORITY = 10;

/** Default queue name. */
export const DEFAULT_QUEUE = 'default';

const QUEUE_NAME = /^[A-Za-z0-9._:-]+$/;

/** A job that passed validation, ready for SQL parameters. */
export interface ValidatedJob {
  id: string;
  /**
   * Whether the caller gave the id (`NewJob.id`). An id the library made at validation is a new
   * UUIDv7 that no pillar can hold unless an earlier attempt of this very enqueue stored it.
   */
  idGiven: boolean;
  queue: string;
  type: string;
  /** Serialised JSON payload. */
  payload: string;
  priority: number;
  /** Milliseconds to add to the database clock, or null. */
  delayMs: number | null;
  /** Absolute eligibility instant, or null. */
  runAt: Date | null;
  idempotencyKey: string | null;
  /** The job's group key, or null. */
  group: string | null;
  /** Encoded tags (`,a,b,`) or null. */
  tags: string | null;
  createdBy: string | null;
  /** The producer's trace context as JSON text (`{"traceparent":"…"}`), or null. */
  traceContext: string | null;
  /** The payload's version (1 when the job gave none). */
  payloadVersion: number;
  /** The dedupe key and its window, or null. A debounced job's `delayMs` is its window. */
  dedupe: ValidatedDedupe | null;
  /** The batch the job belongs to (`enqueueBatch`), or null. */
  batchId: string | null;
  /** The jobs it waits on (`dependsOn`), each once, or null for none. */
  dependsOn: ValidatedDependency[] | null;
}

/** One dependency of a job once checked. */
export interface ValidatedDependency {
  /** The id of the job waited on. */
  id: string;
  policy: DependencyPolicy;
}

const DEPENDENCY_POLICIES: readonly DependencyPolicy[] = ['block', 'ignore', 'cancel'];

/** Checks `job.dependsOn` (see `NewJob.dependsOn`); undefined after recording an issue. */
function validateDependsOn(
  issues: Issues,
  path: string,
  job: NewJob,
): ValidatedDependency[] | null | undefined {
  const list = job.dependsOn as unknown;
  if (list === undefined || list === null) return null;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_DEPENDENCIES) {
    issues.add(path, `must be an array of 1 to ${MAX_DEPENDENCIES} job ids`, list);
    return undefined;
  }
  const before = issues.list.length;
  if (job.dedupe !== undefined && job.dedupe !== null) {
    issues.add(path, 'cannot be combined with dedupe', list);
  }
  const seen = new Set<string>();
  const out: ValidatedDependency[] = [];
  list.forEach((entry: unknown, i) => {
    const at = `${path}[${i}]`;
    const object = entry !== null && typeof entry === 'object';
    const id = object ? (entry as Record<string, unknown>).jobId : entry;
    const policy = (object ? (entry as Record<string, unknown>).onFailure : undefined) ?? 'block';
    if (typeof id !== 'string' || !isUuid(id)) {
      issues.add(object ? `${at}.jobId` : at, 'must be a job id (a UUID string)', id);
      return;
    }
    if (!DEPENDENCY_POLICIES.includes(policy as DependencyPolicy)) {
      issues.add(`${at}.onFailure`, `must be one of ${DEPENDENCY_POLICIES.join(', ')}`, policy);
      return;
    }
    if (seen.has(id)) {
      issues.add(at, 'names a dependency already listed', id);
      return;
    }
    if (id === job.id) {
      issues.add(at, 'names the job itself', id);
      return;
    }
    seen.add(id);
    out.push({ id, policy: policy as DependencyPolicy });
  });
  return issues.list.length > before ? undefined : out;
}

/**
 * Refuses a cycle among jobs enqueued together (`enqueueMany`, `enqueueFlow`): a job can only
 * wait on one enqueued before or with it, so a cycle can only form inside one call. Records one
 * issue per job on a cycle, at its `dependsOn`.
 */
function refuseCycles(issues: Issues, jobs: readonly ValidatedJob[], prefix: string): void {
  const index = new Map(jobs.map((j, i) => [j.id, i]));
  const state = new Uint8Array(jobs.length); // 0 unseen, 1 on the path, 2 done
  const onCycle = new Set<number>();
  for (let root = 0; root < jobs.length; root++) {
    if (state[root] !== 0) continue;
    // Iterative depth-first search: a flow of 10,000 jobs in a chain would overflow a recursion.
    const stack: { node: number; next: number }[] = [{ node: root, next: 0 }];
    state[root] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const deps = jobs[top.node].dependsOn ?? [];
      if (top.next >= deps.length) {
        state[top.node] = 2;
        stack.pop();
        continue;
      }
      const to = index.get(deps[top.next++].id);
      if (to === undefined || state[to] === 2) continue;
      if (state[to] === 1) {
        for (let k = stack.length - 1; k >= 0; k--) {
          onCycle.add(stack[k].node);
          if (stack[k].node === to) break;
        }
        continue;
      }
      state[to] = 1;
      stack.push({ node: to, next: 0 });
    }
  }
  for (const i of [...onCycle].sort((a, b) => a - b)) {
    issues.add(
      join(`${prefix}[${i}]`, 'dependsOn'),
      'forms a cycle: a job cannot wait on itself',
      jobs[i].id,
    );
  }
}

/** `NewJob.dedupe` once checked: `windowMs` null for `unique` without `finished`. */
export interface ValidatedDedupe {
  key: string;
  mode: DedupeOption['mode'];
  /** `unique` only (empty for the other modes), in the order pending, running, finished. */
  states: readonly DedupeState[];
  windowMs: number | null;
}

const DEDUPE_MODES: readonly string[] = ['throttle', 'debounce', 'unique'];
const DEDUPE_STATES: readonly DedupeState[] = ['pending', 'running', 'finished'];
const WINDOW_RULE = `must be an integer from 1 to ${LIMITS.maxDelayMs} (10 years)`;

/** Checks `job.dedupe` (see `DedupeOption`); undefined after recording an issue. */
function validateDedupe(
  issues: Issues,
  path: string,
  job: NewJob,
): ValidatedDedupe | null | undefined {
  const d = job.dedupe as unknown;
  if (d === undefined || d === null) return null;
  if (typeof d !== 'object' || Array.isArray(d)) {
    issues.add(path, 'must be an object', d);
    return undefined;
  }
  const { key, mode, windowMs, states } = d as Record<string, unknown>;
  const before = issues.list.length;
  checkString(issues, join(path, 'key'), key, LIMITS.idempotencyKey, { min: 1, key: true });
  if (job.idempotencyKey !== undefined && job.idempotencyKey !== null) {
    issues.add(path, 'cannot be combined with idempotencyKey', d);
  }
  if (typeof mode !== 'string' || !DEDUPE_MODES.includes(mode)) {
    issues.add(join(path, 'mode'), `must be one of ${DEDUPE_MODES.join(', ')}`, mode);
    return undefined;
  }
  const chosen = new Set<unknown>();
  if (mode === 'unique') {
    if (!Array.isArray(states) || states.length === 0) {
      issues.add(
        join(path, 'states'),
        `must be a non-empty array of ${DEDUPE_STATES.join(', ')}`,
        states,
      );
    } else {
      states.forEach((state: unknown, i) => {
        if (!DEDUPE_STATES.includes(state as DedupeState) || chosen.has(state)) {
          issues.add(
            join(path, `states[${i}]`),
            `must be one of ${DEDUPE_STATES.join(', ')}, each once`,
            state,
          );
        }
        chosen.add(state);
      });
    }
  } else if (states !== undefined) {
    issues.add(join(path, 'states'), "applies to mode 'unique' only", states);
  }
  const needsWindow = mode !== 'unique' || chosen.has('finished');
  if (windowMs === undefined) {
    if (needsWindow) issues.add(join(path, 'windowMs'), WINDOW_RULE, windowMs);
  } else if (!needsWindow) {
    issues.add(
      join(path, 'windowMs'),
      "applies to 'unique' only with the state 'finished'",
      windowMs,
    );
  } else if (
    typeof windowMs !== 'number' ||
    !Number.isInteger(windowMs) ||
    windowMs < 1 ||
    windowMs > LIMITS.maxDelayMs
  ) {
    issues.add(join(path, 'windowMs'), WINDOW_RULE, windowMs);
  }
  if (mode === 'debounce' && (job.delayMs !== undefined || job.runAt !== undefined)) {
    issues.add(
      path,
      "mode 'debounce' sets the run time: it cannot be combined with delayMs or runAt",
      d,
    );
  }
  if (issues.list.length > before) return undefined;
  return {
    key: key as string,
    mode: mode as DedupeOption['mode'],
    states: DEDUPE_STATES.filter((state) => chosen.has(state)),
    windowMs: needsWindow ? (windowMs as number) : null,
  };
}

/** Collects issues, so a call reports every problem at once. */
class Issues {
  readonly list: ValidationIssue[] = [];
  add(path: string, message: string, value: unknown): void {
    this.list.push({ path, message, value });
  }
  throwIfAny(): void {
    if (this.list.length > 0) throw new ChokaQValidationError(this.list);
  }
}

function join(prefix: string, field: string): string {
  return prefix ? `${prefix}.${field}` : field;
}

function hasNul(value: string): boolean {
  return value.includes('\u0000');
}

function checkString(
  issues: Issues,
  path: string,
  value: unknown,
  max: number,
  { min = 0, pattern, key = false }: { min?: number; pattern?: RegExp; key?: boolean } = {},
): value is string {
  if (typeof value !== 'string') {
    issues.add(path, 'must be a string', value);
    return false;
  }
  if (value.length < min || value.length > max) {
    issues.add(path, `must be ${min}–${max} characters long`, value);
    return false;
  }
  if (hasNul(value)) {
    issues.add(path, 'must not contain NUL characters', value);
    return false;
  }
  // A lone surrogate has no UTF-8 form: drivers store U+FFFD (one or three of them, depending on
  // the dialect), so the value would neither round-trip nor match the same rows on every dialect.
  if (!value.isWellFormed()) {
    issues.add(path, 'must be well-formed Unicode (no lone surrogates)', value);
    return false;
  }
  if (pattern && !pattern.test(value)) {
    issues.add(path, `must match ${pattern.source}`, value);
    return false;
  }
  if (key && endsWithWhitespace(value)) {
    issues.add(path, TRAILING_WHITESPACE, value);
    return false;
  }
  return true;
}

/** Validates a queue name (1–255 chars of `[A-Za-z0-9._:-]`). Throws `ChokaQValidationError`. */
export function assertQueueName(name: unknown, path = 'queue'): string {
  const issues = new Issues();
  checkString(issues, path, name, LIMITS.queueName, { min: 1, pattern: QUEUE_NAME });
  issues.throwIfAny();
  return name as string;
}

function validateTags(issues: Issues, path: string, tags: unknown): void {
  if (tags === undefined || tags === null) return;
  if (!Array.isArray(tags)) {
    issues.add(path, 'must be an array of strings', tags);
    return;
  }
  if (tags.length > LIMITS.tags) issues.add(path, `must have at most ${LIMITS.tags} tags`, tags);
  tags.forEach((tag, i) => {
    if (checkString(issues, `${path}[${i}]`, tag, LIMITS.tag, { min: 1 }) && tag.includes(',')) {
      issues.add(`${path}[${i}]`, 'must not contain commas', tag);
    }
  });
}

function validatePriority(issues: Issues, path: string, priority: unknown): void {
  if (priority === undefined) return;
  if (
    typeof priority !== 'number' ||
    !Number.isInteger(priority) ||
    Math.abs(priority) > LIMITS.priority
  ) {
    issues.add(path, `must be an integer within ±${LIMITS.priority}`, priority);
  }
}

/**
 * Serialises a payload and checks its size. Returns the JSON text, or undefined after recording an
 * issue (BigInt, cycles, a top-level function or undefined, too large).
 */
function serializePayload(
  issues: Issues,
  path: string,
  payload: unknown,
  maxBytes: number,
): string | undefined {
  let json: string | undefined;
  try {
    json = JSON.stringify(payload === undefined ? null : payload);
  } catch (error) {
    issues.add(
      path,
      `must be JSON-serialisable (${error instanceof Error ? error.message : String(error)})`,
      payload,
    );
    return undefined;
  }
  if (json === undefined) {
    issues.add(path, 'must be JSON-serialisable', payload);
    return undefined;
  }
  // NUL characters inside payload strings are fine: JSON escapes them as \u0000 and the payload is
  // stored as text, not jsonb (which would reject them). Only the string columns forbid NUL.
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) {
    issues.add(path, `must be at most ${maxBytes} bytes of JSON (was ${bytes})`, payload);
    return undefined;
  }
  return json;
}

function validateInto(
  issues: Issues,
  job: NewJob,
  prefix: string,
  payloadMaxBytes: number,
): ValidatedJob | undefined {
  const before = issues.list.length;
  if (job === null || typeof job !== 'object') {
    issues.add(prefix || 'job', 'must be an object', job);
    return undefined;
  }
  const queue = job.queue ?? DEFAULT_QUEUE;
  checkString(issues, join(prefix, 'queue'), queue, LIMITS.queueName, {
    min: 1,
    pattern: QUEUE_NAME,
  });
  const type = job.type ?? queue;
  // A defaulted type is the queue name, already checked (and reported) above.
  if (job.type !== undefined)
    checkString(issues, join(prefix, 'type'), type, LIMITS.type, { min: 1, key: true });
  if (job.id !== undefined && !isUuid(job.id)) {
    issues.add(join(prefix, 'id'), 'must be a UUID string', job.id);
  }
  validatePriority(issues, join(prefix, 'priority'), job.priority);
  if (job.delayMs !== undefined) {
    const d = job.delayMs;
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 0 || d > LIMITS.maxDelayMs) {
      issues.add(
        join(prefix, 'delayMs'),
        `must be an integer from 0 to ${LIMITS.maxDelayMs} (10 years)`,
        d,
      );
    }
  }
  if (job.runAt !== undefined) {
    validateRunAt(issues, join(prefix, 'runAt'), job.runAt);
    if (job.delayMs !== undefined) {
      issues.add(join(prefix, 'runAt'), 'cannot be combined with delayMs', job.runAt);
    }
  }
  if (job.idempotencyKey !== undefined && job.idempotencyKey !== null) {
    checkString(issues, join(prefix, 'idempotencyKey'), job.idempotencyKey, LIMITS.idempotencyKey, {
      min: 1,
      key: true,
    });
  }
  if (job.group !== undefined && job.group !== null) {
    checkString(issues, join(prefix, 'group'), job.group, LIMITS.groupKey, { min: 1, key: true });
  }
  if (job.createdBy !== undefined && job.createdBy !== null) {
    checkString(issues, join(prefix, 'createdBy'), job.createdBy, LIMITS.createdBy);
  }
  validateTags(issues, join(prefix, 'tags'), job.tags);
  const traceContext = checkTraceContext(
    issues.list,
    join(prefix, 'traceContext'),
    job.traceContext,
  );
  if (job.payloadVersion !== undefined && !isPayloadVersion(job.payloadVersion)) {
    issues.add(join(prefix, 'payloadVersion'), PAYLOAD_VERSION_RULE, job.payloadVersion);
  }
  const dedupe = validateDedupe(issues, join(prefix, 'dedupe'), job);
  const dependsOn = validateDependsOn(issues, join(prefix, 'dependsOn'), job);
  const payload = serializePayload(issues, join(prefix, 'payload'), job.payload, payloadMaxBytes);
  if (
    issues.list.length > before ||
    payload === undefined ||
    dedupe === undefined ||
    dependsOn === undefined
  )
    return undefined;
  return {
    id: job.id ?? uuidv7(),
    idGiven: job.id !== undefined,
    queue,
    type,
    payload,
    priority: job.priority ?? DEFAULT_PRIORITY,
    // A debounced job runs its window after the enqueue that made (or last moved) it.
    delayMs: dedupe?.mode === 'debounce' ? dedupe.windowMs : (job.delayMs ?? null),
    runAt: job.runAt ?? null,
    idempotencyKey: job.idempotencyKey ?? null,
    group: job.group ?? null,
    tags: encodeTags(job.tags),
    createdBy: job.createdBy ?? null,
    traceContext,
    payloadVersion: job.payloadVersion ?? 1,
    dedupe,
    batchId: null,
    dependsOn,
  };
}

/**
 * The JSON text of a handler's return value, to store with its archive row (`recordResult`): the
 * rules and the size cap of a payload (`undefined` is stored as null). Throws
 * `ChokaQResultError` (fatal) naming the problem when the value cannot be stored whole.
 */
export function serializeResult(
  queue: string,
  type: string,
  value: unknown,
  maxBytes: number,
): string {
  const issues = new Issues();
  const json = serializePayload(issues, 'result', value, maxBytes);
  if (json === undefined) throw new ChokaQResultError(queue, type, issues.list[0].message);
  return json;
}

/** Validates one job (SPEC §6 limits); throws `ChokaQValidationError` naming every bad field. */
export function validateNewJob(
  job: NewJob,
  payloadMaxBytes = DEFAULT_PAYLOAD_MAX_BYTES,
): ValidatedJob {
  const issues = new Issues();
  const validated = validateInto(issues, job, '', payloadMaxBytes);
  issues.throwIfAny();
  return validated!;
}

/**
 * Validates a batch before anything is written; a bad item fails the whole call and its path
 * names the index (`items[12].priority`).
 */
export function validateNewJobs(
  jobs: readonly NewJob[],
  payloadMaxBytes = DEFAULT_PAYLOAD_MAX_BYTES,
): ValidatedJob[] {
  const issues = new Issues();
  if (!Array.isArray(jobs)) {
    issues.add('items', 'must be an array', jobs);
    issues.throwIfAny();
  }
  if (jobs.length > MAX_ENQUEUE_MANY) {
    issues.add('items', `must have at most ${MAX_ENQUEUE_MANY} items`, jobs);
    issues.throwIfAny();
  }
  const out: ValidatedJob[] = [];
  jobs.forEach((job, i) => {
    const v = validateInto(issues, job, `items[${i}]`, payloadMaxBytes);
    if (v) out.push(v);
  });
  issues.throwIfAny();
  if (out.some((j) => j.dependsOn !== null)) {
    refuseCycles(issues, out, 'items');
    issues.throwIfAny();
  }
  return out;
}

/** A batch after validation ({@link validateNewBatch}). */
export interface ValidatedBatch {
  id: string;
  createdBy: string | null;
  /** The jobs, each with {@link ValidatedJob.batchId} set. */
  jobs: ValidatedJob[];
  /** The callbacks given, each a job of the batch's own (with no `batchId`: it is not a member). */
  callbacks: { kind: BatchCallbackKind; job: ValidatedJob }[];
}

/** The callbacks' kinds in the order they are stored, with the option that names each. */
export const BATCH_CALLBACKS: readonly { kind: BatchCallbackKind; option: keyof BatchCallbacks }[] =
  [
    { kind: 'complete', option: 'onComplete' },
    { kind: 'success', option: 'onSuccess' },
    { kind: 'failure', option: 'onFailure' },
  ];

/**
 * Validates a batch before anything is written: 1 to 10,000 jobs, each as `enqueueMany` checks
 * it (paths `jobs[3].priority`), none with an id, an idempotency key or a dedupe key (a batch's
 * jobs are new and belong to it alone); each callback as a job without those or a delay
 * (`callbacks.onFailure.queue`). Throws one `ChokaQValidationError` naming every bad field.
 */
export function validateNewBatch(
  batch: NewBatch,
  payloadMaxBytes = DEFAULT_PAYLOAD_MAX_BYTES,
): ValidatedBatch {
  const issues = new Issues();
  if (batch === null || typeof batch !== 'object') {
    issues.add('batch', 'must be an object', batch);
    issues.throwIfAny();
  }
  const { jobs, callbacks = {}, createdBy } = batch;
  if (!Array.isArray(jobs)) {
    issues.add('jobs', 'must be an array', jobs);
    issues.throwIfAny();
  }
  if (jobs.length === 0 || jobs.length > MAX_ENQUEUE_MANY) {
    issues.add('jobs', `must have 1 to ${MAX_ENQUEUE_MANY} items`, jobs.length);
    issues.throwIfAny();
  }
  if (createdBy !== undefined && createdBy !== null) {
    checkString(issues, 'createdBy', createdBy, LIMITS.createdBy);
  }
  const id = uuidv7();
  const refuse = (job: object, path: string, fields: readonly string[], why: string) => {
    for (const field of fields) {
      const value = (job as Record<string, unknown>)[field];
      if (value !== undefined) issues.add(join(path, field), why, value);
    }
  };
  const valid: ValidatedJob[] = [];
  jobs.forEach((job, i) => {
    const path = `jobs[${i}]`;
    if (job !== null && typeof job === 'object') {
      refuse(
        job,
        path,
        ['id', 'idempotencyKey', 'dedupe', 'dependsOn'],
        'is not allowed on a batch job',
      );
    }
    const v = validateInto(issues, job as NewJob, path, payloadMaxBytes);
    if (v) valid.push({ ...v, batchId: id, createdBy: v.createdBy ?? createdBy ?? null });
  });
  const made: ValidatedBatch['callbacks'] = [];
  if (callbacks === null || typeof callbacks !== 'object') {
    issues.add('callbacks', 'must be an object', callbacks);
  } else {
    const known = new Set<string>(BATCH_CALLBACKS.map((c) => c.option));
    for (const key of Object.keys(callbacks)) {
      if (!known.has(key)) {
        issues.add(`callbacks.${key}`, 'is not a callback (onComplete, onSuccess, onFailure)', key);
      }
    }
    for (const { kind, option } of BATCH_CALLBACKS) {
      const job = callbacks[option];
      if (job === undefined) continue;
      const path = `callbacks.${option}`;
      if (job !== null && typeof job === 'object') {
        refuse(
          job,
          path,
          ['id', 'idempotencyKey', 'dedupe', 'delayMs', 'runAt', 'dependsOn'],
          'is not allowed on a batch callback',
        );
      }
      const v = validateInto(issues, job as NewJob, path, payloadMaxBytes);
      if (v) made.push({ kind, job: { ...v, createdBy: v.createdBy ?? createdBy ?? null } });
    }
  }
  issues.throwIfAny();
  return { id, createdBy: createdBy ?? null, jobs: valid, callbacks: made };
}

/** Resurrect edits after validation. */
export interface ValidatedEdits {
  payload: string | null;
  tags: string | null | undefined;
  priority: number | null;
}

/** Validates resurrect edits with the same limits as enqueue. */
export function validateEdits(
  edits: ResurrectEdits | undefined,
  payloadMaxBytes = DEFAULT_PAYLOAD_MAX_BYTES,
): ValidatedEdits {
  const issues = new Issues();
  if (!edits) return { payload: null, tags: undefined, priority: null };
  let payload: string | null = null;
  if ('payload' in edits) {
    payload = serializePayload(issues, 'edits.payload', edits.payload, payloadMaxBytes) ?? null;
  }
  validateTags(issues, 'edits.tags', edits.tags);
  validatePriority(issues, 'edits.priority', edits.priority);
  issues.throwIfAny();
  return {
    payload,
    tags: edits.tags === undefined ? undefined : encodeTags(edits.tags),
    priority: edits.priority ?? null,
  };
}

/** A `runAt` instant: a valid Date from year 1 to before year 9000. */
function validateRunAt(issues: Issues, path: string, runAt: unknown): void {
  const t = runAt instanceof Date ? runAt.getTime() : NaN;
  if (!Number.isFinite(t) || t >= LIMITS.maxRunAt || t < LIMITS.minRunAt) {
    issues.add(path, 'must be a valid Date from year 1 to before year 9000', runAt);
  }
}

/** What `updatePending` may change. */
const PENDING_EDIT_FIELDS = ['payload', 'tags', 'priority', 'runAt'] as const;

/** `updatePending`'s edits after validation: null (or undefined for tags and `runAt`) keeps a field. */
export interface ValidatedPendingUpdate {
  /** Serialised JSON payload, or null to keep it. */
  payload: string | null;
  /** The version a new payload is stored under; null keeps the job's own. */
  payloadVersion: number | null;
  /** Encoded tags (`,a,b,`), null to clear them, undefined to keep them. */
  tags: string | null | undefined;
  priority: number | null;
  /** A new eligibility instant, null to make the job due at once ("run now"), undefined to keep it. */
  runAt: Date | null | undefined;
  /** The `(queue, type)` the job must have, or null. */
  expect: { queue: string; type: string } | null;
}

/**
 * Validates `updatePending`'s edits with the limits of an enqueue: at least one field to change,
 * and a payload version only with a payload (the version says how that payload is shaped).
 */
export function validatePendingUpdate(
  update: PendingUpdate,
  payloadMaxBytes = DEFAULT_PAYLOAD_MAX_BYTES,
): ValidatedPendingUpdate {
  const issues = new Issues();
  if (typeof update !== 'object' || update === null || Array.isArray(update)) {
    issues.add('edits', 'must be an object', update);
    issues.throwIfAny();
  }
  if (!PENDING_EDIT_FIELDS.some((field) => update[field] !== undefined)) {
    issues.add('edits', `must change at least one of ${PENDING_EDIT_FIELDS.join(', ')}`, update);
  }
  let payload: string | null = null;
  if (update.payload !== undefined) {
    payload = serializePayload(issues, 'edits.payload', update.payload, payloadMaxBytes) ?? null;
  }
  if (update.payloadVersion !== undefined) {
    if (!isPayloadVersion(update.payloadVersion)) {
      issues.add('edits.payloadVersion', PAYLOAD_VERSION_RULE, update.payloadVersion);
    } else if (update.payload === undefined) {
      issues.add('edits.payloadVersion', 'needs a payload to describe', update.payloadVersion);
    }
  }
  validateTags(issues, 'edits.tags', update.tags);
  if (update.tags === null) issues.add('edits.tags', 'must be an array of strings', update.tags);
  validatePriority(issues, 'edits.priority', update.priority);
  if (update.runAt !== undefined && update.runAt !== 'now') {
    validateRunAt(issues, 'edits.runAt', update.runAt);
  }
  const expect = update.expect;
  if (expect !== undefined) {
    checkString(issues, 'edits.expect.queue', expect?.queue, LIMITS.queueName, { min: 1 });
    checkString(issues, 'edits.expect.type', expect?.type, LIMITS.type, { min: 1 });
  }
  issues.throwIfAny();
  return {
    payload,
    payloadVersion: update.payloadVersion ?? null,
    tags: update.tags === undefined ? undefined : encodeTags(update.tags),
    priority: update.priority ?? null,
    runAt: update.runAt === undefined ? undefined : update.runAt === 'now' ? null : update.runAt,
    expect: expect === undefined ? null : { queue: expect.queue, type: expect.type },
  };
}

/** Validates a list of job ids (each must be a UUID string); at most `max` of them. */
export function assertIds(ids: readonly string[], path = 'ids', max = MAX_ENQUEUE_MANY): string[] {
  const issues = new Issues();
  if (!Array.isArray(ids)) {
    issues.add(path, 'must be an array of job ids', ids);
  } else {
    if (ids.length > max) issues.add(path, `must have at most ${max} ids`, ids);
    ids.forEach((id, i) => {
      if (!isUuid(id)) issues.add(`${path}[${i}]`, 'must be a UUID string', id);
    });
  }
  issues.throwIfAny();
  return [...new Set(ids)];
}

/** Validates a progress percentage (a finite number from 0 to 100) and rounds it to an integer. */
export function assertProgress(percent: unknown): number {
  if (typeof percent !== 'number' || !Number.isFinite(percent) || percent < 0 || percent > 100) {
    throw new ChokaQValidationError([
      { path: 'percent', message: 'must be a number from 0 to 100', value: percent },
    ]);
  }
  return Math.round(percent);
}

/** Validates a non-negative integer argument (limits, timeouts, delays). */
export function assertNonNegativeInt(
  value: unknown,
  path: string,
  max = Number.MAX_SAFE_INTEGER,
): number {
  return assertIntInRange(value, path, 0, max);
}

/** Validates an integer argument from `min` to `max`. */
export function assertIntInRange(value: unknown, path: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ChokaQValidationError([
      { path, message: `must be an integer from ${min} to ${max}`, value },
    ]);
  }
  return value;
}

/**
 * Turns a refused `updatePending` into its error: `ChokaQValidationError` when the job is not of
 * the `expect`ed queue and type (a typed caller's definition), else `ChokaQJobNotPendingError`
 * with the state the job is in (null: no such job).
 */
export function assertPendingUpdated(
  id: string,
  result: PendingUpdateResult,
  expect?: { queue: string; type: string },
): void {
  if (result.updated) return;
  if (
    expect !== undefined &&
    result.status !== null &&
    (result.queue !== expect.queue || result.type !== expect.type)
  ) {
    throw new ChokaQValidationError([
      {
        path: 'id',
        message: `names a job of ${result.queue}/${result.type}, not of the definition's ${expect.queue}/${expect.type}`,
        value: id,
      },
    ]);
  }
  throw new ChokaQJobNotPendingError(id, result.status);
}
