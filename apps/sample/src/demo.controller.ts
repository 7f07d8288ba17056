import { Body, Controller, Get, Post } from '@nestjs/common';
import { DemoService } from './demo.service';

@Controller()
export class DemoController {
  constructor(private readonly demo: DemoService) {}

  /** `POST /demo {"count": 20}` enqueues `count` greetings plus a flaky, a broken and a slow job. */
  @Post('demo')
  async enqueue(@Body() body: { count?: number } = {}): Promise<{ ids: string[] }> {
    const count = Math.min(Math.max(Number(body?.count ?? 10) || 10, 1), 1_000);
    return { ids: await this.demo.enqueueBatch(count) };
  }

  /** `GET /stats`: live counts per pillar and per queue. */
  @Get('stats')
  stats(): Promise<unknown> {
    return this.demo.stats();
  }
}
