import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  // ChokaQ installs no signal handlers: this lets SIGINT/SIGTERM run Nest's shutdown hooks, so
  // the worker drains and buffered jobs return to Pending before the process exits.
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  Logger.log(`Sample listening on http://localhost:${port} (POST /demo, GET /stats)`, 'Sample');
}

void bootstrap();
