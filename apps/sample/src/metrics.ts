import { metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

/**
 * OpenTelemetry metrics for the sample, in Prometheus format. The application owns the SDK (here
 * `@opentelemetry/sdk-metrics` and `@opentelemetry/exporter-prometheus`); ChokaQ only records
 * through `@opentelemetry/api` into whatever `MeterProvider` is registered globally. Register it
 * before `NestFactory.create`: ChokaQ binds its instruments when the module's providers are
 * created.
 *
 * The exporter runs no server of its own (`preventServerStart`): `main.ts` serves its handler at
 * `GET /metrics` on the app's port. Each scrape is one collection, so ChokaQ's queue gauges read
 * the database once per scrape.
 */
export function registerPrometheusMetrics(): PrometheusExporter {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }));
  return exporter;
}
