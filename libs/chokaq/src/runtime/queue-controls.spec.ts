import type { QueueInfo } from '../interfaces/job.interface';
import { QueueControls } from './queue-controls';

function queue(name: string, patch: Partial<QueueInfo> = {}): QueueInfo {
  return {
    name,
    isPaused: false,
    isActive: true,
    maxWorkers: null,
    zombieTimeoutSeconds: null,
    executionTimeoutMs: null,
    retryZombies: false,
    rateLimit: null,
    groupConcurrency: null,
    groupRateLimit: null,
    lastUpdatedUtc: new Date(0),
    ...patch,
  };
}

describe('QueueControls.budgetedQueues', () => {
  it('names the queues whose claims are serialised: a budget, a rate limit or a group limit', async () => {
    const rate = { max: 1, perMs: 1_000 };
    const controls = new QueueControls({
      getQueues: async () => [
        queue('plain'),
        queue('budget', { maxWorkers: 3 }),
        queue('rate', { rateLimit: rate }),
        queue('groups', { groupConcurrency: 2 }),
        queue('group-rate', { groupRateLimit: rate }),
      ],
    });
    expect(controls.budgetedQueues()).toEqual([]);
    await controls.refresh();
    expect(controls.budgetedQueues()).toEqual(['budget', 'rate', 'groups', 'group-rate']);
  });
});
