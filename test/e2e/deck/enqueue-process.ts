/**
 * Another process that enqueues: boots a producer-only ChokaQ app context on the database in
 * CHOKAQ_DECK_ENQUEUE (JSON `{ storage, queue, type, count }`), enqueues, prints the ids, exits.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ChokaQModule, JobClient, StorageOptions } from '../../../libs/chokaq/src';

const input = JSON.parse(process.env.CHOKAQ_DECK_ENQUEUE ?? '{}') as {
  storage: StorageOptions;
  queue: string;
  type: string;
  count: number;
};

@Module({
  imports: [
    ChokaQModule.forRoot({
      storage: { ...input.storage, autoCreateSchema: false },
      worker: { enabled: false },
    }),
  ],
})
class EnqueueModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(EnqueueModule, { logger: ['error'] });
  const client = app.get(JobClient);
  const ids: string[] = [];
  for (let i = 0; i < input.count; i++) {
    ids.push(
      await client.enqueue(input.queue, { from: 'another process', i }, { type: input.type }),
    );
  }
  await app.close();
  process.stdout.write(JSON.stringify(ids));
}

main().catch((error: unknown) => {
  process.stderr.write(String(error instanceof Error ? error.stack : error));
  process.exit(1);
});
