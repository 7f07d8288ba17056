import { queueInfo as queue } from '../../../../test/runtime/support/queue-info';
import { QueueControls } from './queue-controls';

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
