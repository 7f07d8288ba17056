import {
  DataPointType,
  MeterProvider,
  MetricReader,
  type Histogram,
} from '@opentelemetry/sdk-metrics';

/**
 * A metric reader that exports nowhere: a test calls `collect()` (what a Prometheus scrape or a
 * periodic export does) and reads the data points. The SDK's own in-memory reader path, without a
 * timer.
 */
export class CollectingMetricReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** One data point, flattened: counters, up-down counters and gauges by value, histograms by count. */
export interface MetricPoint {
  name: string;
  attributes: Record<string, unknown>;
  /** The sum or gauge value; for a histogram, how many values were recorded. */
  value: number;
  /** Histograms only: the recorded values' sum, min and max. */
  histogram?: { sum: number; min: number | undefined; max: number | undefined };
}

/** A `MeterProvider` with a collecting reader, as an application would register one. */
export function meterHarness(): {
  provider: MeterProvider;
  reader: CollectingMetricReader;
  collect: () => Promise<MetricPoint[]>;
} {
  const reader = new CollectingMetricReader();
  const provider = new MeterProvider({ readers: [reader] });
  return { provider, reader, collect: () => collectPoints(reader) };
}

/** Collects once and flattens every data point of every instrument (collection errors fail the test). */
export async function collectPoints(reader: MetricReader): Promise<MetricPoint[]> {
  const { resourceMetrics, errors } = await reader.collect();
  if (errors.length > 0) throw new AggregateError(errors, 'metric collection failed');
  const points: MetricPoint[] = [];
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      for (const point of metric.dataPoints) {
        const attributes = { ...point.attributes };
        if (metric.dataPointType === DataPointType.HISTOGRAM) {
          const h = point.value as Histogram;
          points.push({
            name: metric.descriptor.name,
            attributes,
            value: h.count,
            histogram: { sum: h.sum ?? 0, min: h.min, max: h.max },
          });
        } else {
          points.push({ name: metric.descriptor.name, attributes, value: point.value as number });
        }
      }
    }
  }
  return points;
}

/**
 * The points as sorted lines, `name{key=value,…} value`: what a test compares exactly. Histogram
 * lines carry the count (their sums are run times, not exact).
 */
export function pointLines(points: readonly MetricPoint[]): string[] {
  return points
    .map((p) => {
      const attributes = Object.entries(p.attributes)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(',');
      return `${p.name}{${attributes}} ${p.value}`;
    })
    .sort();
}
