import { Session } from 'node:inspector';
import { type CallFrame, frameLabel } from '../lib/cpu-profile';

/** Bytes allocated at one place, summed over the sampled allocations. */
export interface AllocationSite {
  /** `function file:line`, then the two callers above it. */
  site: string;
  bytes: number;
}

/** What the sampler saw between {@link startAllocationSampling} and its stop. */
export interface AllocationSample {
  /** Every sampled byte, the collected ones included (an estimate of all bytes allocated). */
  totalBytes: number;
  /** The largest sites, most bytes first. */
  sites: AllocationSite[];
}

interface ProfileNode {
  callFrame: CallFrame;
  selfSize: number;
  children: ProfileNode[];
}

/** Sample one allocation per this many bytes on average (V8's default is 32 KiB). */
const SAMPLING_INTERVAL = 4_096;

/**
 * Starts V8's sampling heap profiler in this process, counting allocations whether or not they
 * are collected before the stop (`includeObjectsCollectedBy…GC`): a drain's allocation rate, not
 * what is still alive at its end. Resolves to the stop, which returns the sample (top `top` sites).
 */
export function startAllocationSampling(top = 30): () => Promise<AllocationSample> {
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.startSampling', {
    samplingInterval: SAMPLING_INTERVAL,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
  return () =>
    new Promise((resolve, reject) => {
      session.post('HeapProfiler.stopSampling', (error, result) => {
        session.disconnect();
        if (error) return reject(error);
        const bySite = new Map<string, number>();
        let totalBytes = 0;
        const walk = (node: ProfileNode, callers: string[]): void => {
          const name = frameLabel(node.callFrame);
          if (node.selfSize > 0) {
            const site = [name, ...callers.slice(-2).reverse()].join(' ← ');
            bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
            totalBytes += node.selfSize;
          }
          for (const child of node.children) walk(child, [...callers, name]);
        };
        walk((result as unknown as { profile: { head: ProfileNode } }).profile.head, []);
        const sites = [...bySite]
          .map(([site, bytes]) => ({ site, bytes }))
          .sort((a, b) => b.bytes - a.bytes)
          .slice(0, top);
        resolve({ totalBytes, sites });
      });
    });
}
