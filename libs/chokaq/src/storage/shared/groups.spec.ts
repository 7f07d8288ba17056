import { groupVisits, mapQueueGroupRow } from './groups';

describe('groupVisits', () => {
  it('is four per row to start, at least 64 and at most 1,000', () => {
    expect(groupVisits(1)).toBe(64);
    expect(groupVisits(16)).toBe(64);
    expect(groupVisits(17)).toBe(68);
    expect(groupVisits(250)).toBe(1_000);
    expect(groupVisits(251)).toBe(1_000);
  });
});

describe('mapQueueGroupRow', () => {
  it('reads the key as text and the counts as numbers (drivers return bigint counts as text)', () => {
    expect(mapQueueGroupRow({ group_key: 'acme', pending: '3', running: 2 })).toEqual({
      group: 'acme',
      pending: 3,
      running: 2,
    });
  });
});
