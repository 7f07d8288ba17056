import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { ChokaQHealthIndicator } from '@chokaq/nestjs/health';

/**
 * `GET /health` through Terminus: 200 while every check is up, 503 otherwise, each check's data in
 * the body. A queue whose oldest due job waits 30 s is `degraded` (still up: a capacity signal to
 * alert on, not a reason to restart the process); 2 minutes is `unhealthy` (down).
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly chokaq: ChokaQHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([
      () => this.chokaq.storage(),
      () => this.chokaq.worker(),
      () => this.chokaq.queues({ lagDegradedMs: 30_000, lagUnhealthyMs: 120_000 }),
    ]);
  }
}
