/**
 * `@chokaq/nestjs/health`: ChokaQ's health checks for `@nestjs/terminus`, an optional peer
 * dependency. The core (`@chokaq/nestjs`) never imports this entry point, so an application
 * without Terminus loads none of it; `index.spec.ts` pins the names exported here.
 */

// First: a missing @nestjs/terminus fails with ChokaQ's explanation, before the files below load it.
import './terminus-peer';

export { ChokaQHealthModule } from './chokaq-health.module';
export { ChokaQHealthIndicator, DEFAULT_HEALTH_KEYS } from './chokaq-health.indicator';
export type {
  QueueLagLevel,
  QueuesCheckOptions,
  StorageCheckOptions,
  WorkerCheckOptions,
} from '../interfaces/health-check.interface';
