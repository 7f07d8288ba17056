/**
 * `ms` spread by ±`fraction` (0.2 → 80 %–120 %), so the loops of many processes started together
 * do not hit the database in lock step.
 */
export function jittered(ms: number, fraction: number, random: () => number = Math.random): number {
  if (ms <= 0) return 0;
  return Math.max(0, Math.round(ms * (1 - fraction + 2 * fraction * random())));
}
