import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppModule } from './app.module';
import { DEMO_DECK_TOKEN, deckToken } from './deck-login.guard';
import { registerPrometheusMetrics } from './metrics';
import { registerConsoleTracing } from './tracing';

async function bootstrap(): Promise<void> {
  // Before the app is created: ChokaQ binds its instruments to the MeterProvider registered then,
  // and its tracer to the TracerProvider (OTEL_TRACES=console prints every span).
  const prometheus = registerPrometheusMetrics();
  registerConsoleTracing();
  const app = await NestFactory.create(AppModule);
  app
    .getHttpAdapter()
    .get('/metrics', (req: IncomingMessage, res: ServerResponse) =>
      prometheus.getMetricsRequestHandler(req, res),
    );
  // ChokaQ installs no signal handlers: this lets SIGINT/SIGTERM run Nest's shutdown hooks, so
  // the worker drains and buffered jobs return to Pending before the process exits.
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  Logger.log(
    `Sample listening on http://localhost:${port} (POST /demo, GET /stats, GET /metrics, GET /health)`,
    'Sample',
  );
  const token = deckToken() === DEMO_DECK_TOKEN ? ` (token: ${DEMO_DECK_TOKEN})` : '';
  Logger.log(`The Deck: http://localhost:${port}/chokaq${token}`, 'Sample');
}

void bootstrap();
