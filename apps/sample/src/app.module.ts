import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { TerminusModule } from '@nestjs/terminus';
import { ChokaQModule } from '@chokaq/nestjs';
import { ChokaQDeckModule } from '@chokaq/nestjs/deck';
import { ChokaQHealthModule } from '@chokaq/nestjs/health';
import { DeckLoginGuard } from './deck-login.guard';
import { DemoController } from './demo.controller';
import { DemoEvents } from './demo.events';
import { DemoHandlers } from './demo.handlers';
import { DemoService } from './demo.service';
import { HealthController } from './health.controller';
import { PartnerApi } from './partner-api';

@Module({
  imports: [
    // Lists ChokaQ's recurring timers in SchedulerRegistry (named chokaq:NAME) beside the app's own.
    ScheduleModule.forRoot(),
    // No storage option: the embedded SQLite default (./chokaq.db). Short intervals so the demo
    // moves within seconds; production keeps the defaults.
    ChokaQModule.forRoot({
      retry: { maxAttempts: 3, baseDelayMs: 1_000, jitterMs: 250 },
      worker: { pollIntervalMs: 250, concurrency: 4 },
      heartbeat: { intervalMs: 2_000 },
      rescue: { intervalMs: 5_000 },
    }),
    // The Deck at /chokaq, behind the sample's login guard (a bearer token; see deck-login.guard.ts).
    ChokaQDeckModule.forRoot({ path: 'chokaq', guards: [DeckLoginGuard] }),
    // GET /health: Terminus' HealthCheckService over ChokaQ's storage, worker and queue-lag checks.
    TerminusModule,
    ChokaQHealthModule,
  ],
  controllers: [DemoController, HealthController],
  providers: [DemoHandlers, DemoEvents, DemoService, PartnerApi],
})
export class AppModule {}
