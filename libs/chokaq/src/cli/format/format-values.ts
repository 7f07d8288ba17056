/** A duration for people: `850ms`, `12.5s`, `4m 05s`, `3h 20m`, `2d 4h`. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  const abs = Math.abs(ms);
  const sign = ms < 0 ? '-' : '';
  if (abs < 1_000) return `${sign}${Math.round(abs)}ms`;
  if (abs < 60_000) return `${sign}${(abs / 1_000).toFixed(1).replace(/\.0$/, '')}s`;
  const two = (n: number) => String(n).padStart(2, '0');
  const s = Math.floor(abs / 1_000);
  if (abs < 3_600_000) return `${sign}${Math.floor(s / 60)}m ${two(s % 60)}s`;
  if (abs < 86_400_000) return `${sign}${Math.floor(s / 3_600)}h ${two(Math.floor(s / 60) % 60)}m`;
  return `${sign}${Math.floor(s / 86_400)}d ${Math.floor(s / 3_600) % 24}h`;
}

/** A rate per second with two decimals. */
export function formatRate(perSecond: number): string {
  return `${perSecond.toFixed(2)}/s`;
}

/** A fraction as a percentage (`0.5` → `50%`), `-` when there is none. */
export function formatPercent(fraction: number | null): string {
  return fraction === null ? '-' : `${Math.round(fraction * 100)}%`;
}
