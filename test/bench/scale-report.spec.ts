import { defaultScaleArchived, defaultScalePending, parseArgs } from '../../bench/lib/args';
import { lineChartSvg } from '../../bench/lib/svg-chart';
import {
  type ArchivePoint,
  type ScalePoint,
  scaleArchiveTable,
  scaleClaimTable,
} from '../../bench/scenarios/scale.scenario';

const point = (pending: number, p50: number): ScalePoint => ({
  dialect: 'postgres',
  pending,
  p50,
  p95: p50 * 2,
  rows: 50,
  drainJobs: 20_000,
  drainJobsPerSecond: 10_000 / p50,
  sizeMb: pending / 1_000,
  seedSeconds: 1,
  load: [0.5, 0.7],
});

const archivePoint = (archived: number, archiveP50: number): ArchivePoint => ({
  dialect: 'sqlite',
  archived,
  sizeMb: archived / 1_000,
  seedSeconds: 2,
  enqueueSingle: 2_000,
  enqueueBulk: 50_000,
  archiveP50,
  archiveP95: archiveP50 * 2,
  drainJobsPerSecond: 20_000 / archiveP50,
  load: [0.4, 0.6],
});

function args(argv: string[]) {
  const parsed = parseArgs(argv);
  if (parsed === 'help') throw new Error('help');
  return parsed;
}

describe('the scale scenario: its sizes, table and chart', () => {
  it('reads --scale-pending, and defaults per dialect', () => {
    expect(args(['--scenarios=scale', '--scale-pending=10000,50000']).scalePending).toEqual([
      10_000, 50_000,
    ]);
    expect(args(['--scenarios=scale']).scalePending).toBeUndefined();
    expect(() => args(['--scale-pending=10000,x'])).toThrow(/--scale-pending/);
    expect(defaultScalePending('postgres', false).at(-1)).toBe(5_000_000);
    expect(defaultScalePending('sqlite', false).at(-1)).toBe(1_000_000);
    expect(defaultScalePending('postgres', true)).toEqual([10_000, 100_000]);
  });

  it('reads --scale-archived (0 skips the archive curve), and defaults per dialect', () => {
    expect(args(['--scale-archived=10000,20000']).scaleArchived).toEqual([10_000, 20_000]);
    expect(args(['--scale-archived=0']).scaleArchived).toEqual([]);
    expect(args([]).scaleArchived).toBeUndefined();
    expect(() => args(['--scale-archived=-1'])).toThrow(/--scale-archived/);
    expect(defaultScaleArchived('postgres', false).at(-1)).toBe(10_000_000);
    expect(defaultScaleArchived('sqlite', false).at(-1)).toBe(5_000_000);
  });

  it('tables each size against the smallest of its dialect', () => {
    const table = scaleClaimTable([point(10_000, 2), point(1_000_000, 3)]);
    expect(table.split('\n')).toHaveLength(4);
    expect(table).toContain(
      '| postgres | 10,000 | 10 | 1 | 50 | 2.00 | 4.00 | 1.00× | 5000 (20,000 jobs) | 1.00× | 0.5–0.7 |',
    );
    expect(table).toContain(
      '| postgres | 1,000,000 | 1000 | 1 | 50 | 3.00 | 6.00 | 1.50× | 3333 (20,000 jobs) | 0.67× |',
    );
  });

  it('tables the archive curve, each figure against the smallest size of its dialect', () => {
    const table = scaleArchiveTable([archivePoint(10_000, 4), archivePoint(5_000_000, 5)]);
    expect(table.split('\n')).toHaveLength(4);
    expect(table).toContain(
      '| sqlite | 10,000 | 10 | 2 | 2000 | 50000 | 4.00 | 8.00 | 5000 | 1.00× / 1.00× / 1.00× / 1.00× | 0.4–0.6 |',
    );
    expect(table).toContain(
      '| sqlite | 5,000,000 | 5000 | 2 | 2000 | 50000 | 5.00 | 10.00 | 4000 | 1.00× / 1.00× / 1.25× / 0.80× |',
    );
  });

  it('draws each series as a line, x on a log scale, y from zero, names escaped', () => {
    const svg = lineChartSvg({
      title: 'a < b',
      xLabel: 'x',
      yLabel: 'y',
      logX: true,
      series: [
        {
          name: 'p50',
          points: [
            [10, 1],
            [100, 2],
            [1_000, 4],
          ],
        },
      ],
    });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('a &lt; b');
    const line = /<polyline[^>]* points="([^"]+)"/.exec(svg)![1];
    const xy = line.split(' ').map((p) => p.split(',').map(Number));
    // Decades are equally spaced on a log axis; a larger y is higher up (a smaller SVG y).
    expect(Math.abs(xy[1][0] - xy[0][0] - (xy[2][0] - xy[1][0]))).toBeLessThan(0.2);
    expect(xy[0][1]).toBeGreaterThan(xy[1][1]);
    expect(xy[1][1]).toBeGreaterThan(xy[2][1]);
  });
});
