import type { ValidationIssue } from '../errors';
import type { PayloadUpgradeStep } from '../interfaces/handler.interface';

/*
 * The rules of versioned payloads (`defineJob(…, { version, upgrade })`), in one place: what a
 * version is, what an upgrade chain must look like, and which stored versions a definition can run.
 * Used by `defineJob`, by the handler registry (a handler registered without the decorator may
 * carry anything) and by the storage edge (`NewJob.payloadVersion`).
 */

/** The highest payload version: the storage column is a 32-bit signed integer. */
export const MAX_PAYLOAD_VERSION = 2_147_483_647;

/** What a payload version must be, in the words of an issue. */
export const PAYLOAD_VERSION_RULE = 'must be an integer from 1 to 2147483647';

/** True for an integer payload version from 1 to {@link MAX_PAYLOAD_VERSION}. */
export function isPayloadVersion(value: unknown): value is number {
  return (
    typeof value === 'number' &&
    Number.isInteger(value) &&
    value >= 1 &&
    value <= MAX_PAYLOAD_VERSION
  );
}

/**
 * Every problem of a `version` and its `upgrade` map: the version an integer from 1 to 2^31-1
 * (undefined reads as 1), each key an integer from 1 to version − 1, each value a function, and
 * the steps contiguous up to version − 1 (upgrade[3] without upgrade[4] below a version 5 is a gap,
 * and named as one). `at(key)` names a field in an issue's path.
 */
export function payloadVersionIssues(
  version: unknown,
  upgrade: unknown,
  at: (key: string) => string,
): ValidationIssue[] {
  if (version !== undefined && !isPayloadVersion(version)) {
    return [{ path: at('version'), message: PAYLOAD_VERSION_RULE, value: version }];
  }
  const top = version ?? 1;
  if (upgrade === undefined) return [];
  if (upgrade === null || typeof upgrade !== 'object' || Array.isArray(upgrade)) {
    return [
      {
        path: at('upgrade'),
        message: 'must be an object mapping each earlier version to a function',
        value: upgrade,
      },
    ];
  }
  const issues: ValidationIssue[] = [];
  const steps: number[] = [];
  for (const [key, step] of Object.entries(upgrade as Record<string, unknown>)) {
    const from = Number(key);
    if (!/^[1-9][0-9]*$/.test(key) || from >= top) {
      issues.push({
        path: `${at('upgrade')}[${key}]`,
        message: `must be keyed by an integer version from 1 to ${top - 1} (below version ${top})`,
        value: step,
      });
      continue;
    }
    if (typeof step !== 'function') {
      issues.push({
        path: `${at('upgrade')}[${key}]`,
        message: `must be a function from the version ${from} payload to the version ${from + 1} payload`,
        value: step,
      });
      continue;
    }
    steps.push(from);
  }
  if (issues.length > 0 || steps.length === 0) return issues;
  // The chain must reach version − 1 without a hole: every v from the lowest key up.
  const present = new Set(steps);
  for (let v = Math.min(...steps); v < top; v++) {
    if (!present.has(v)) {
      issues.push({
        path: `${at('upgrade')}[${v}]`,
        message: `is missing: the chain from version ${Math.min(...steps)} to ${top} has a gap at ${v} → ${v + 1}`,
        value: undefined,
      });
    }
  }
  return issues;
}

/**
 * The stored versions a definition can run: from the lowest v such that `upgrade` has every step
 * v … version − 1, to `version`. Both 1 for an unversioned definition.
 */
export function runnableVersions(
  version: number | undefined,
  upgrade: Readonly<Record<number, PayloadUpgradeStep>> | undefined,
): { minVersion: number; maxVersion: number } {
  const maxVersion = version ?? 1;
  let minVersion = maxVersion;
  while (minVersion > 1 && typeof upgrade?.[minVersion - 1] === 'function') minVersion--;
  return { minVersion, maxVersion };
}
