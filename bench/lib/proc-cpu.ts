import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

/** The kernel's clock ticks per second (`getconf CLK_TCK`; 100 on Linux unless configured). */
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    } catch {
      ticksPerSecond = 100;
    }
    if (!Number.isFinite(ticksPerSecond) || ticksPerSecond <= 0) ticksPerSecond = 100;
  }
  return ticksPerSecond;
}

/**
 * The CPU time (user + system, in ms) a process has used so far, from `/proc/<pid>/stat` (fields
 * 14 `utime` and 15 `stime`, in clock ticks: 10 ms resolution on a default kernel); undefined when
 * the process is gone or `/proc` is not readable (not Linux, another user's process).
 */
export function processCpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: count from after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state), so field n is fields[n - 3].
  const utime = Number(fields[14 - 3]);
  const stime = Number(fields[15 - 3]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
  return ((utime + stime) * 1_000) / clockTicks();
}

/**
 * CPU time (ms) a process has run so far, to the nanosecond: the first field of Linux's
 * `/proc/<pid>/schedstat` (what the bench reads of a PostgreSQL backend serving one statement at
 * a time, where `/proc/<pid>/stat`'s 10 ms ticks are too coarse). Undefined where it cannot be
 * read (another host, not Linux, the process gone).
 */
export function scheduledCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined || pid === 0) return undefined;
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return undefined;
  }
}

/** CPU time of several processes at one moment, by pid (those that could be read). */
export function cpuSnapshot(pids: Iterable<number>): Map<number, number> {
  const snapshot = new Map<number, number>();
  for (const pid of pids) {
    const ms = processCpuMs(pid);
    if (ms !== undefined) snapshot.set(pid, ms);
  }
  return snapshot;
}

/**
 * The CPU used between two snapshots: for a pid in both, the difference; for a pid only in
 * `after` (a process or backend started meanwhile), all of its CPU. Pids that ended meanwhile are
 * lost (their CPU after `before` is not counted), which `missing` reports.
 */
export function cpuBetween(
  before: Map<number, number>,
  after: Map<number, number>,
): { ms: number; missing: number } {
  let ms = 0;
  for (const [pid, now] of after) ms += now - (before.get(pid) ?? 0);
  let missing = 0;
  for (const pid of before.keys()) if (!after.has(pid)) missing++;
  return { ms, missing };
}
