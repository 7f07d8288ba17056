import { readFileSync } from 'node:fs';

/** A frame of a V8 profile (CPU or sampling heap), as the inspector reports it. */
export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Where a frame's code lives, coarse enough to read as "where the time goes". */
function category(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === '(idle)') return '(idle: waiting for I/O)';
    if (functionName === '(garbage collector)') return '(garbage collector)';
    if (functionName === '(program)') return '(program: V8/native, unattributed)';
    return '(native builtins)';
  }
  if (url.startsWith('node:')) return 'node core (net, streams, timers…)';
  if (url.includes('/libs/chokaq/src/storage/'))
    return 'chokaq storage (SQL building, row mapping)';
  if (url.includes('/libs/chokaq/src/runtime/'))
    return 'chokaq runtime (loops, processor, batcher)';
  if (url.includes('/libs/chokaq/src/')) return 'chokaq other';
  if (url.includes('/bench/')) return 'bench harness';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg === 'pg' || pkg === 'pg-protocol' || pkg === 'pg-pool' || pkg === 'pg-types')
    return 'pg driver';
  if (pkg) return `package ${pkg}`;
  return url;
}

function shortUrl(url: string): string {
  return url.replace(/^.*\/(node_modules|libs|bench)\//, '$1/').replace(/^file:\/\//, '');
}

/** A frame as the profile tables name it: function, its file below the repository, 1-based line. */
export function frameLabel(frame: CallFrame): string {
  return `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
}

/** Self time by category and the hottest functions (self and inclusive), as Markdown. */
export function summarizeCpuProfile(file: string): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) =>
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)),
  );
  const totalUs = profile.endTime - profile.startTime;

  // Inclusive time per node (post-order over the call tree).
  const inclusive = new Map<number, number>();
  const visit = (id: number, depth: number): number => {
    if (depth > 10_000) return 0; // bound: a malformed profile must not recurse forever
    const node = byId.get(id)!;
    let sum = self.get(id) ?? 0;
    for (const child of node.children ?? []) sum += visit(child, depth + 1);
    inclusive.set(id, sum);
    return sum;
  };
  visit(profile.nodes[0].id, 0);

  const categories = new Map<string, number>();
  const selfByFn = new Map<string, number>();
  const inclByFn = new Map<string, number>();
  for (const node of profile.nodes) {
    const key = frameLabel(node.callFrame);
    const cat = category(node.callFrame);
    categories.set(cat, (categories.get(cat) ?? 0) + (self.get(node.id) ?? 0));
    selfByFn.set(key, (selfByFn.get(key) ?? 0) + (self.get(node.id) ?? 0));
    // Inclusive per function, counted once per call-tree path root (skip nested recursion).
    if (
      node.callFrame.url.includes('/libs/chokaq/src/') ||
      node.callFrame.url.includes('/typeorm/')
    ) {
      inclByFn.set(key, Math.max(inclByFn.get(key) ?? 0, 0) + (inclusive.get(node.id) ?? 0));
    }
  }
  const pct = (us: number) => `${((us / totalUs) * 100).toFixed(1)} %`;
  const ms = (us: number) => (us / 1000).toFixed(0);
  const lines = [
    `Profile span ${ms(totalUs)} ms (whole worker process life, including start-up and shutdown).`,
    '',
    '| self time by category | ms | share |',
    '|---|---:|---:|',
    ...[...categories.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([c, us]) => `| ${c} | ${ms(us)} | ${pct(us)} |`),
    '',
    '| hottest functions (self) | ms | share |',
    '|---|---:|---:|',
    ...[...selfByFn.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 25)
      .map(([f, us]) => `| \`${f}\` | ${ms(us)} | ${pct(us)} |`),
    '',
    '| chokaq / typeorm functions (inclusive, summed over call paths) | ms | share |',
    '|---|---:|---:|',
    ...[...inclByFn.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 25)
      .map(([f, us]) => `| \`${f}\` | ${ms(us)} | ${pct(us)} |`),
  ];
  return lines.join('\n');
}
