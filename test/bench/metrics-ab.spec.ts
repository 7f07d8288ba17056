import { spliceSection } from '../../bench/lib/admin-reads-report';
import { metricsAbTable, spliceMetricsAb } from '../../bench/lib/metrics-ab-report';
import {
  ADMIN_READS_HEADING,
  METRICS_AB_HEADING,
  PROFILE_HEADING,
  mergeResults,
} from '../../bench/lib/report';
import { ResultSet } from '../../bench/lib/results';
import { METRICS_VARIANTS, chokaqSystem } from '../../bench/systems/chokaq.system';

describe('metrics A/B section of RESULTS.md', () => {
  const suite = '# ChokaQ benchmark results\n\n_Generated…_\n\n## Results\n\n| a |\n';
  const reads = `${ADMIN_READS_HEADING}\n\nReads.\n`;
  const profile = `${PROFILE_HEADING}\n\nHand-written.\n`;
  const section = (text: string) => `${METRICS_AB_HEADING}\n\n${text}\n`;

  it('goes after the suite, before the admin reads and the profile, then replaces only itself', () => {
    const first = spliceMetricsAb(`${suite}\n${reads}\n${profile}`, section('one'));
    expect(first).toBe(`${suite}\n${section('one')}\n${reads}\n${profile}`);
    const second = spliceMetricsAb(first, section('two'));
    expect(second).toBe(`${suite}\n${section('two')}\n${reads}\n${profile}`);
    expect(spliceMetricsAb(`${suite}\n${profile}`, section('x'))).toBe(
      `${suite}\n${section('x')}\n${profile}`,
    );
  });

  it('is kept, with the admin reads, when the suite rewrites its part or the admin reads rewrite theirs', () => {
    const previous = spliceMetricsAb(`${suite}\n${reads}\n${profile}`, section('kept'));
    expect(mergeResults(previous, '# ChokaQ benchmark results\n\nnew tables')).toBe(
      `# ChokaQ benchmark results\n\nnew tables\n\n${section('kept')}\n${reads}\n${profile}`,
    );
    expect(spliceSection(previous, `${ADMIN_READS_HEADING}\n\nNew reads.\n`)).toBe(
      `${suite}\n${section('kept')}\n${ADMIN_READS_HEADING}\n\nNew reads.\n\n${profile}`,
    );
  });

  it('tabulates each variant with its ratio to metrics off', () => {
    const systems = METRICS_VARIANTS.map(({ variant }) => chokaqSystem('postgres', '', variant));
    const results = new ResultSet();
    const runs: Record<string, number[]> = {
      'chokaq-metrics-off': [1_000, 1_100, 900],
      'chokaq-metrics-api': [1_010, 990, 1_000],
      'chokaq-metrics-sdk': [950, 940, 960],
    };
    for (const [id, values] of Object.entries(runs)) {
      for (const v of values) results.add('postgres', 'drain-c10', 'jobs/s', true, id, v);
    }
    const [header, , row] = metricsAbTable(results, systems).split('\n');
    expect(header).toBe(
      '| Scenario | ChokaQ, metrics off | ChokaQ, API, no SDK | ChokaQ, SDK registered | ChokaQ, API, no SDK ÷ off | ChokaQ, SDK registered ÷ off | load 1m |',
    );
    expect(row).toMatch(
      /^\| drain-c10 \(jobs\/s ↑\) \| \*\*1,000\*\* \(900–1,100\) \| \*\*1,000\*\* \(990–1,010\) \| \*\*950\*\* \(940–960\) \| 1\.00 \| 0\.95 \| /,
    );
  });
});
