// @ts-check
// The throughput chart: uPlot, loaded only when the Overview first draws a chart.
import { html, useEffect, useRef } from './vendor/preact-htm.js';

/**
 * The uPlot class, once loaded. The vendored module is uplot's own ESM build, so its package's
 * declarations describe it (the checker would otherwise infer a shape from the built code).
 * @typedef {typeof import('uplot')} UPlot
 */

/** @type {Promise<UPlot> | null} */
let loading = null;

function loadUplot() {
  if (!loading) {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = 'assets/vendor/uplot.css';
    document.head.appendChild(link);
    loading = import('./vendor/uplot.js').then(
      (m) => /** @type {UPlot} */ (/** @type {unknown} */ (m.default)),
    );
  }
  return loading;
}

/**
 * Succeeded and failed per step, and the failure rate, over the points of a series.
 * @param {{ points: import('./api.js').ThroughputPoint[], label: string }} props
 */
export function ThroughputChart({ points, label }) {
  /** @type {{ current: HTMLDivElement | null }} */
  const box = useRef(null);
  /** @type {{ current: import('uplot') | null }} */
  const plot = useRef(null);
  useEffect(() => {
    let live = true;
    loadUplot().then((uPlot) => {
      if (!live || !box.current) return;
      /** @type {import('uplot').AlignedData} */
      const data = [
        points.map((p) => new Date(p.at).getTime() / 1000),
        points.map((p) => p.succeeded),
        points.map((p) => p.failed),
      ];
      const width = Math.max(320, box.current.clientWidth || 640);
      if (plot.current) {
        plot.current.setData(data);
        return;
      }
      plot.current = new uPlot(
        {
          width,
          height: 220,
          series: [
            {},
            { label: 'Succeeded', stroke: '#2f9e44', width: 2 },
            { label: 'Failed', stroke: '#e03131', width: 2 },
          ],
          axes: [{}, { label: 'jobs / step' }],
        },
        data,
        box.current,
      );
    });
    return () => {
      live = false;
    };
  }, [points]);
  useEffect(
    () => () => {
      if (plot.current) plot.current.destroy();
      plot.current = null;
    },
    [],
  );
  return html`<figure class="chart">
    <div ref=${box} role="img" aria-label=${label}></div>
    <figcaption>${label}</figcaption>
  </figure>`;
}
