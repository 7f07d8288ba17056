import { BatchCallbackBit, dueCallbacks, mapBatch } from './batches';

describe('dueCallbacks', () => {
  it('is complete and success or failure, less what fired before', () => {
    const { Complete, Success, Failure } = BatchCallbackBit;
    expect(dueCallbacks(0, 0)).toBe(Complete | Success);
    expect(dueCallbacks(2, 0)).toBe(Complete | Failure);
    expect(dueCallbacks(0, Complete | Failure)).toBe(Success);
    expect(dueCallbacks(1, Complete | Failure)).toBe(0);
  });
});

describe('mapBatch', () => {
  const row = {
    id: 'b',
    createdatutc: 1_700_000_000_000,
    createdby: null,
    total: '5',
    succeeded: 2,
    failed: '1',
    fired: 0,
    settledatutc: null,
  };

  it('reads counts (pending = total − succeeded − failed) and each callback with whether it fired', () => {
    const batch = mapBatch([
      { ...row, fired: 1, kind: 1, jobid: 'c1', queue: 'q', type: 't1' },
      { ...row, fired: 1, kind: 4, jobid: 'c4', queue: 'q', type: 't4' },
    ]);
    expect(batch).toEqual({
      id: 'b',
      createdAtUtc: new Date(1_700_000_000_000),
      createdBy: null,
      total: 5,
      succeeded: 2,
      failed: 1,
      pending: 2,
      settledAtUtc: null,
      callbacks: [
        { kind: 'complete', jobId: 'c1', queue: 'q', type: 't1', fired: true },
        { kind: 'failure', jobId: 'c4', queue: 'q', type: 't4', fired: false },
      ],
    });
  });

  it('is null without rows, and has no callbacks for a row without one', () => {
    expect(mapBatch([])).toBeNull();
    expect(mapBatch([{ ...row, kind: null, jobid: null }])?.callbacks).toEqual([]);
  });
});
