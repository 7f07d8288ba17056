import { Module } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { ChokaQHealthIndicator } from './chokaq-health.indicator';

/**
 * Provides {@link ChokaQHealthIndicator} to the module that imports it:
 *
 * ```ts
 * @Module({
 *   imports: [ChokaQModule.forRoot(), TerminusModule, ChokaQHealthModule],
 *   controllers: [HealthController], // HealthCheckService + ChokaQHealthIndicator
 * })
 * ```
 *
 * It provides Terminus' `HealthIndicatorService` itself (a stateless helper) rather than importing
 * `TerminusModule`, so the application's own `TerminusModule.forRoot(…)` stays the only one. It
 * reads ChokaQ through `ChokaQAdmin`, which `ChokaQModule` exports globally by default; with
 * `isGlobal: false`, register `ChokaQModule` in a global module of your own.
 *
 * @publicApi
 */
@Module({
  providers: [HealthIndicatorService, ChokaQHealthIndicator],
  exports: [ChokaQHealthIndicator],
})
export class ChokaQHealthModule {}
