/**
 * The most starts found in any window `[a, a + perMs)` of the given start times (epoch ms): the
 * property a queue's rate limit promises (at most `max`). Each window worth checking begins at a
 * start, so one pass over the sorted times with a trailing index is enough.
 */
export function busiestWindow(startTimesMs: readonly number[], perMs: number): number {
  const times = [...startTimesMs].sort((a, b) => a - b);
  let busiest = 0;
  let end = 0;
  for (let i = 0; i < times.length; i++) {
    if (end < i) end = i;
    while (end < times.length && times[end] < times[i] + perMs) end += 1;
    busiest = Math.max(busiest, end - i);
  }
  return busiest;
}
