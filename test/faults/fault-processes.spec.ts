import {
  type FaultDatabase,
  type FaultWorker,
  killAllFaultWorkers,
  openFaultDatabase,
  startFaultWorker,
} from './support/fault-processes';

/**
 * The fault suites' process harness itself: a request to a worker that has died must fail the
 * request, not the test process (a send on a closed IPC channel is otherwise an 'error' event of
 * the child process that nothing handles, which kills the whole suite).
 */
describe('fault worker processes [sqlite]', () => {
  let db: FaultDatabase | undefined;
  let worker: FaultWorker | undefined;

  afterAll(async () => {
    await killAllFaultWorkers();
    await db?.close();
  });

  it('a request to a worker that was killed rejects with the channel error', async () => {
    db = await openFaultDatabase('sqlite');
    worker = await startFaultWorker({
      ...db.record,
      workerId: 'harness',
      options: { storage: db.options, worker: { concurrency: 1 } },
    });
    expect(await worker.stats()).toBeDefined();
    await worker.kill();
    await expect(worker.stats(2_000)).rejects.toThrow(/channel closed/i);
    await expect(worker.enqueue('faults', {})).rejects.toThrow(/channel closed/i);
  });
});
