import type { ValidatedBatch } from '../../validation/validate-job';
import {
  BatchCallbackBit,
  batchEnqueued,
  dueCallbacks,
  mapBatch,
  mapBatchResults,
} from './batches';

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
    // A driver that leaves out a NULL column (the LEFT JOIN found no callback) reads the same.
    expect(mapBatch([{ ...row }])?.callbacks).toEqual([]);
  });

  it('reads who created it', () => {
    expect(mapBatch([{ ...row, createdby: 'ops' }])?.createdBy).toBe('ops');
    expect(mapBatch([{ ...row, createdby: undefined }])?.createdBy).toBeNull();
  });
});

describe('batchEnqueued', () => {
  it('answers the batch id, the jobs in input order and each callback id by kind', () => {
    const job = (id: string) => ({ id }) as ValidatedBatch['jobs'][number];
    const batch = {
      id: 'b',
      createdBy: null,
      jobs: [job('j2'), job('j1')],
      callbacks: [{ kind: 'failure', job: job('cf') }],
    } as ValidatedBatch;
    expect(batchEnqueued(batch)).toEqual({
      batchId: 'b',
      jobIds: ['j2', 'j1'],
      callbacks: { failure: 'cf' },
    });
  });
});

describe('mapBatchResults', () => {
  it('parses each result (NULL: none), and gives the last id as the cursor when a row more was read', () => {
    const rows = [
      { id: 'a', result: '{"n":1}' },
      { Id: 'b', Result: null },
      { id: 'c', result: '"x"' },
    ];
    // A column a driver left out reads as no result.
    expect(mapBatchResults([{ id: 'z' }], 1).items).toEqual([{ id: 'z', result: null }]);
    expect(mapBatchResults(rows, 2)).toEqual({
      items: [
        { id: 'a', result: { n: 1 } },
        { id: 'b', result: null },
      ],
      nextCursor: 'b',
    });
    expect(mapBatchResults(rows, 3)).toEqual({
      items: [
        { id: 'a', result: { n: 1 } },
        { id: 'b', result: null },
        { id: 'c', result: 'x' },
      ],
      nextCursor: null,
    });
    expect(mapBatchResults([], 5)).toEqual({ items: [], nextCursor: null });
  });
});
