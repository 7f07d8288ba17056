/** One line of a chart: its name in the legend and its points (x, y). */
export interface ChartSeries {
  name: string;
  points: ReadonlyArray<readonly [number, number]>;
}

export interface LineChart {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly ChartSeries[];
  /** A logarithmic x axis (decades), for sizes that grow tenfold. */
  logX?: boolean;
  /** Where the x axis has ticks; default: at every x of a point. */
  xTicks?: readonly number[];
}

const WIDTH = 720;
const HEIGHT = 420;
const PAD = { left: 70, right: 190, top: 40, bottom: 60 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];

/** `n` with thousands separators, or as 10k / 1M for axis ticks. */
function tick(n: number): string {
  if (n >= 1_000_000) return `${n / 1_000_000}M`;
  if (n >= 1_000) return `${n / 1_000}k`;
  return String(n);
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * A line chart as a standalone SVG document (no script, no external font), y from zero, so a
 * curve that stays flat reads as flat. Written beside bench/RESULTS.md and linked from it.
 */
export function lineChartSvg(chart: LineChart): string {
  const xs = chart.series.flatMap((s) => s.points.map(([x]) => x));
  const ys = chart.series.flatMap((s) => s.points.map(([, y]) => y));
  const fx = chart.logX ? Math.log10 : (x: number) => x;
  const [x0, x1] = [Math.min(...xs.map(fx)), Math.max(...xs.map(fx))];
  const yMax = niceMax(Math.max(...ys));
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const px = (x: number) => PAD.left + ((fx(x) - x0) / (x1 - x0 || 1)) * plotW;
  const py = (y: number) => PAD.top + plotH - (y / yMax) * plotH;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#fff"/>`,
    `<text x="${PAD.left}" y="24" font-size="15" font-weight="bold">${escape(chart.title)}</text>`,
  ];
  for (let i = 0; i <= 5; i++) {
    const y = (yMax * i) / 5;
    out.push(
      `<line x1="${PAD.left}" x2="${PAD.left + plotW}" y1="${py(y)}" y2="${py(y)}" stroke="#e5e5e5"/>`,
      `<text x="${PAD.left - 8}" y="${py(y) + 4}" text-anchor="end">${+y.toFixed(2)}</text>`,
    );
  }
  for (const x of chart.xTicks ?? [...new Set(xs)].sort((a, b) => a - b)) {
    out.push(
      `<line x1="${px(x)}" x2="${px(x)}" y1="${PAD.top}" y2="${PAD.top + plotH}" stroke="#f0f0f0"/>`,
      `<text x="${px(x)}" y="${PAD.top + plotH + 18}" text-anchor="middle">${tick(x)}</text>`,
    );
  }
  out.push(
    `<line x1="${PAD.left}" x2="${PAD.left + plotW}" y1="${PAD.top + plotH}" y2="${PAD.top + plotH}" stroke="#333"/>`,
    `<line x1="${PAD.left}" x2="${PAD.left}" y1="${PAD.top}" y2="${PAD.top + plotH}" stroke="#333"/>`,
    `<text x="${PAD.left + plotW / 2}" y="${HEIGHT - 18}" text-anchor="middle">${escape(chart.xLabel)}</text>`,
    `<text transform="translate(18 ${PAD.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escape(chart.yLabel)}</text>`,
  );
  chart.series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const path = s.points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ');
    out.push(`<polyline fill="none" stroke="${colour}" stroke-width="2" points="${path}"/>`);
    for (const [x, y] of s.points) {
      out.push(
        `<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3" fill="${colour}"/>`,
      );
    }
    const ly = PAD.top + 10 + i * 20;
    out.push(
      `<line x1="${WIDTH - PAD.right + 16}" x2="${WIDTH - PAD.right + 40}" y1="${ly}" y2="${ly}" stroke="${colour}" stroke-width="2"/>`,
      `<text x="${WIDTH - PAD.right + 46}" y="${ly + 4}">${escape(s.name)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

/** The smallest of 1, 2, 2.5, 5 × 10^k at or above `v` (an axis that ends on a round number). */
function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const base = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * base) return m * base;
  return 10 * base;
}
