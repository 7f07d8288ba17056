import { defineJob } from '@chokaq/nestjs';

/** The demo's job kinds: each binds queue + type + payload type once. */
export const Greet = defineJob<{ name: string }>('demo', 'greet.v1');
export const Flaky = defineJob<{ n: number; failTimes: number }>('demo', 'flaky.v1');
export const Broken = defineJob<{ n: number }>('demo', 'broken.v1');
export const Sync = defineJob<{ n: number }>('demo', 'partner-sync.v1');
export const Report = defineJob<{ n: number; steps: number }>('reports', 'render.v1');
/** The callback of each round's greetings, a batch: enqueued when its last greeting finished. */
export const GreetingsDone = defineJob<{ n: number }>('demo', 'greetings-done.v1');
