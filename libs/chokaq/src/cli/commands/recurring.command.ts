import { CommandGroup, defineCommand } from '../args/command-definition';
import { ACTOR_OPTIONS, readActor } from '../args/shared-options';
import { table, text } from '../format/view';
import { statusName } from './jobs.command';

const list = defineCommand({
  name: 'recurring list',
  summary: 'Every recurring job: schedule, paused, last and next slot, where its last run is',
  synopsis: '',
  options: {},
  positionals: { min: 0, max: 0 },
  database: 'current',
  parse: () => ({}),
  async run(_args, { admin }) {
    const recurringJobs = await admin.getRecurringJobs();
    return {
      data: { recurringJobs },
      view: [
        table(
          [
            { header: 'NAME' },
            { header: 'CRON' },
            { header: 'TIME ZONE' },
            { header: 'QUEUE' },
            { header: 'TYPE' },
            { header: 'PAUSED' },
            { header: 'SOURCE' },
            { header: 'LAST SLOT' },
            { header: 'NEXT SLOT' },
            { header: 'LAST RUN' },
          ],
          recurringJobs.map((r) => [
            r.name,
            r.cron,
            r.timeZone,
            r.queue,
            r.type,
            r.isPaused,
            r.source,
            r.lastSlotUtc,
            r.nextSlotUtc,
            r.lastRun ? `${r.lastRun.id} ${statusName(r.lastRun.status)}` : null,
          ]),
        ),
      ],
      nothingMatched: recurringJobs.length === 0 ? 'No recurring job yet.' : undefined,
    };
  },
});

/** `recurring pause` and `recurring resume`. */
function pauseCommand(paused: boolean) {
  const verb = paused ? 'pause' : 'resume';
  return defineCommand({
    name: `recurring ${verb}`,
    summary: paused
      ? 'Stop enqueuing the slots of a recurring job (audited)'
      : 'Enqueue the slots of a paused recurring job again (audited)',
    synopsis: '<name>',
    options: ACTOR_OPTIONS,
    positionals: { min: 1, max: 1 },
    database: 'current',
    parse: (line, io) => ({ name: line.positionals[0], actor: readActor(line, io) }),
    async run({ name, actor }, { admin }) {
      // A name no recurring job has: ChokaQRecurringJobNotFoundError, exit 3.
      if (paused) await admin.pauseRecurringJob(name, actor);
      else await admin.resumeRecurringJob(name, actor);
      return {
        data: { name, paused },
        view: [text(`Recurring job '${name}' ${paused ? 'paused' : 'resumed'}.`)],
      };
    },
  });
}

const trigger = defineCommand({
  name: 'recurring trigger',
  summary: 'Enqueue one run of a recurring job now, outside its schedule (audited)',
  synopsis: '<name>',
  options: ACTOR_OPTIONS,
  positionals: { min: 1, max: 1 },
  database: 'current',
  parse: (line, io) => ({ name: line.positionals[0], actor: readActor(line, io) }),
  async run({ name, actor }, { admin }) {
    const jobId = await admin.triggerRecurringJob(name, actor);
    return {
      data: { name, jobId },
      view: [text(`Recurring job '${name}' enqueued job ${jobId}.`)],
    };
  },
});

/** `chokaq recurring list|pause|resume|trigger`. */
export const recurringCommands: CommandGroup = {
  name: 'recurring',
  summary: 'List, pause, resume and trigger recurring jobs',
  commands: [list, pauseCommand(true), pauseCommand(false), trigger],
};
