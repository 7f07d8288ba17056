import { describePartition } from './postgres-partitions';

const day = (iso: string) => new Date(`${iso}T00:00:00.000Z`);

describe('describePartition (what a partition name says)', () => {
  it('reads the default, a kept old table and a period by their names', () => {
    expect(describePartition('jobs_dlq', 'jobs_dlq_default')).toEqual({
      name: 'jobs_dlq_default',
      kind: 'default',
      range: null,
    });
    expect(describePartition('jobs_archive', 'jobs_archive_min_20261214')).toEqual({
      name: 'jobs_archive_min_20261214',
      kind: 'legacy',
      range: { from: null, to: day('2026-12-14') },
    });
    expect(describePartition('jobs_archive', 'jobs_archive_20261207_20261208')).toEqual({
      name: 'jobs_archive_20261207_20261208',
      kind: 'period',
      range: { from: day('2026-12-07'), to: day('2026-12-08') },
    });
  });

  it('calls every other name another partition, which ChokaQ never touches', () => {
    for (const name of [
      'jobs_dlq_20261207_20261208', // another table's
      'archive_20261207_20261208', // no table prefix
      'jobs_archive_20261208_20261207', // an empty range
      'jobs_archive_20261207_20261207',
      'jobs_archive_20261207_20261340', // not a day
      'jobs_archive_20261207', // one bound
      'jobs_archive_20261207_20261208_x', // three parts
      'jobs_archive_min_2026121', // a short stamp
      'jobs_archive_max_20261214',
      'jobs_archive_manual',
    ]) {
      expect(describePartition('jobs_archive', name)).toEqual({ name, kind: 'other', range: null });
    }
  });
});
