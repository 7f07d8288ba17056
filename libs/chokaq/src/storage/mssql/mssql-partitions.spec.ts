import {
  boundariesAhead,
  boundedPartitions,
  expiredPartitions,
  missingAhead,
  partitionLabel,
  readLayout,
} from './mssql-partitions';

const DAY = 86_400_000;
const at = (iso: string) => new Date(`${iso}T00:00:00.000Z`);
const iso = (dates: readonly Date[]) => dates.map((d) => d.toISOString().slice(0, 10));

describe('boundariesAhead', () => {
  const now = new Date('2026-01-07T15:30:00.000Z'); // a Wednesday

  it('a day: today and each of the seven days after it start a partition, and the eighth ends the last', () => {
    expect(iso(boundariesAhead(now, 'day'))).toEqual([
      '2026-01-07',
      '2026-01-08',
      '2026-01-09',
      '2026-01-10',
      '2026-01-11',
      '2026-01-12',
      '2026-01-13',
      '2026-01-14',
      '2026-01-15',
    ]);
  });

  it('a week starts on Monday; a month on the 1st, across the year', () => {
    expect(iso(boundariesAhead(now, 'week'))).toEqual([
      '2026-01-05',
      '2026-01-12',
      '2026-01-19',
      '2026-01-26',
      '2026-02-02',
      '2026-02-09',
    ]);
    expect(iso(boundariesAhead(new Date('2025-11-30T23:59:59.999Z'), 'month'))).toEqual([
      '2025-11-01',
      '2025-12-01',
      '2026-01-01',
      '2026-02-01',
    ]);
  });

  it('at the first instant of a period, that period is the current one', () => {
    expect(iso(boundariesAhead(at('2026-01-07'), 'day')).slice(0, 2)).toEqual([
      '2026-01-07',
      '2026-01-08',
    ]);
  });
});

describe('missingAhead', () => {
  const wanted = [at('2026-01-07'), at('2026-01-08'), at('2026-01-09'), at('2026-01-10')];

  it('only the wanted boundaries above the last one the function has', () => {
    expect(iso(missingAhead([at('2026-01-01'), at('2026-01-08')], wanted))).toEqual([
      '2026-01-09',
      '2026-01-10',
    ]);
    expect(missingAhead([at('2026-01-10')], wanted)).toEqual([]);
    expect(missingAhead([at('2026-01-11')], wanted)).toEqual([]);
  });

  it('never one below the last (a hole there would split a partition with rows)', () => {
    const withHole = [at('2026-01-07'), at('2026-01-09')];
    expect(iso(missingAhead(withHole, wanted))).toEqual(['2026-01-10']);
  });

  it('none for a function without boundaries (not a table ChokaQ partitioned)', () => {
    expect(missingAhead([], wanted)).toEqual([]);
  });
});

describe('partition numbers of a RANGE RIGHT function', () => {
  const boundaries = [at('2026-01-01'), at('2026-01-02'), at('2026-01-03'), at('2026-01-04')];

  it('partition k + 1 is [bk, bk+1): the bounded ones are 2…n, the first and last are unbounded', () => {
    expect(boundedPartitions(boundaries).map((s) => [s.number, ...iso([s.from, s.to])])).toEqual([
      [2, '2026-01-01', '2026-01-02'],
      [3, '2026-01-02', '2026-01-03'],
      [4, '2026-01-03', '2026-01-04'],
    ]);
    expect(boundedPartitions([at('2026-01-01')])).toEqual([]);
    expect(boundedPartitions([])).toEqual([]);
  });

  it('the expired ones oldest first, each renumbered for the merges before it', () => {
    // Cutoff Jan 3 12:00: [Jan 1, Jan 2) and [Jan 2, Jan 3) are wholly older; [Jan 3, Jan 4) is not.
    const now = new Date(at('2026-01-05').getTime() + 12 * 3_600_000);
    const slots = expiredPartitions(boundaries, now, 2 * DAY);
    expect(slots.map((s) => [s.number, ...iso([s.from, s.to])])).toEqual([
      [2, '2026-01-01', '2026-01-02'],
      // Partition 3 when read; 2 once the first removal merged Jan 1 away.
      [2, '2026-01-02', '2026-01-03'],
    ]);
  });

  it('a partition whose end is exactly the cutoff is expired; one instant later it is not', () => {
    const now = new Date(at('2026-01-04').getTime() + 2 * DAY);
    expect(expiredPartitions(boundaries, now, 2 * DAY)).toHaveLength(3);
    expect(expiredPartitions(boundaries, new Date(now.getTime() - 1), 2 * DAY)).toHaveLength(2);
  });

  it('none when nothing is old enough', () => {
    expect(expiredPartitions(boundaries, at('2026-01-02'), DAY)).toEqual([]);
  });
});

describe('readLayout', () => {
  const NOW = '2026-01-07T15:30:00.123Z';

  it('reads a partitioned table’s boundaries in order and a plain table as plain, with the clock', () => {
    const layout = readLayout([
      {
        Pillar: 'archive',
        Partitioned: 1,
        Unaligned: 0,
        Blocked: 0,
        BoundaryId: 2,
        Boundary: '2026-01-08T00:00:00.000Z',
        NowUtc: NOW,
      },
      {
        Pillar: 'archive',
        Partitioned: 1,
        Unaligned: 0,
        Blocked: 0,
        BoundaryId: 1,
        Boundary: '2026-01-07T00:00:00.000Z',
        NowUtc: NOW,
      },
      {
        Pillar: 'dlq',
        Partitioned: 0,
        Unaligned: 0,
        Blocked: 0,
        BoundaryId: null,
        Boundary: null,
        NowUtc: NOW,
      },
    ]);
    expect(layout.now).toEqual(new Date(NOW));
    expect(layout.tables.archive).toEqual({
      partitioned: true,
      unaligned: 0,
      blocked: false,
      boundaries: [at('2026-01-07'), at('2026-01-08')],
    });
    expect(layout.tables.dlq).toEqual({
      partitioned: false,
      unaligned: 0,
      blocked: false,
      boundaries: [],
    });
  });

  it('carries what forbids truncation', () => {
    const layout = readLayout([
      {
        Pillar: 'archive',
        Partitioned: 1,
        Unaligned: '2',
        Blocked: 1,
        BoundaryId: 1,
        Boundary: '2026-01-07T00:00:00.000Z',
        NowUtc: NOW,
      },
    ]);
    expect(layout.tables.archive).toMatchObject({ unaligned: 2, blocked: true });
  });
});

describe('partitionLabel', () => {
  it('names a range as PostgreSQL names its partition: the table and its YYYYMMDD bounds', () => {
    expect(partitionLabel('dlq', at('2026-01-07'), at('2026-01-14'))).toBe(
      'JobsDLQ_20260107_20260114',
    );
  });
});
