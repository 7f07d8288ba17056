import { firstValueFrom, take, toArray } from 'rxjs';
import type { JobEvent, JobEventName } from '../interfaces/job-event.interface';
import { JobStatus } from '../interfaces/job-status.enum';
import type { JobView } from '../interfaces/job-view.interface';
import { JobEvents } from './job-events';

function ev(name: JobEventName, queue = 'q', type = 't', id = 'j1'): JobEvent {
  const job = { id, queue, type, status: JobStatus.Processing, pillar: 'hot' } as JobView;
  return { name, job, pillar: 'hot', attempt: 1, at: new Date() };
}

function logger() {
  return { log: jest.fn(), warn: jest.fn(), error: jest.fn() };
}

/** Resolves once every listener queue has been handed its events (they drain on setImmediate). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('JobEvents', () => {
  it('hands a listener only the events, queue and type it asked for', async () => {
    const events = new JobEvents({ maxQueuedPerListener: 10 }, logger());
    const heard: string[] = [];
    events.listen((e) => heard.push(`${e.name}:${e.job.queue}/${e.job.type}`), {
      events: ['dead', 'succeeded'],
      queue: 'emails',
    });
    events.emit(ev('dead', 'emails', 'welcome'));
    events.emit(ev('dead', 'sms', 'welcome'));
    events.emit(ev('started', 'emails', 'welcome'));
    events.emit(ev('succeeded', 'emails', 'bye'));
    await turn();
    expect(heard).toEqual(['dead:emails/welcome', 'succeeded:emails/bye']);
  });

  it('never calls a listener from the emitter: emit returns before any listener runs', () => {
    const events = new JobEvents({ maxQueuedPerListener: 10 }, logger());
    const listener = jest.fn();
    events.listen(listener);
    events.emit(ev('started'));
    expect(listener).not.toHaveBeenCalled();
  });

  it('a listener that throws is counted and logged, and the others still hear every event', async () => {
    const log = logger();
    const events = new JobEvents({ maxQueuedPerListener: 10 }, log);
    events.listen(
      () => {
        throw new Error('boom');
      },
      { name: 'Bad.listener' },
    );
    const good: string[] = [];
    events.listen((e) => good.push(e.job.id), { name: 'Good.listener' });
    events.emit(ev('started', 'q', 't', 'a'));
    events.emit(ev('started', 'q', 't', 'b'));
    await turn();
    expect(good).toEqual(['a', 'b']);
    const bad = events.listenerStats().find((s) => s.name === 'Bad.listener');
    expect(bad).toMatchObject({ failed: 2, dropped: 0, queued: 0 });
    // The first failure is logged with its stack; the second falls in the same interval.
    expect(log.error).toHaveBeenCalledTimes(1);
    expect(String(log.error.mock.calls[0][0])).toContain(
      'Bad.listener threw on started of job a: boom',
    );
    expect({ ...log.error.mock.calls[0][0] }).toMatchObject({
      event: 'EventListenerFailed',
      listener: 'Bad.listener',
      jobEvent: 'started',
      jobId: 'a',
      error: 'boom',
    });
  });

  it('a slow listener backs up only its own bounded queue: drops are counted and logged once', async () => {
    const log = logger();
    const events = new JobEvents({ maxQueuedPerListener: 2 }, log);
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    const slow: string[] = [];
    events.listen(
      async (e) => {
        await blocked;
        slow.push(e.job.id);
      },
      { name: 'Slow.listener' },
    );
    const fast: string[] = [];
    events.listen((e) => fast.push(e.job.id), { name: 'Fast.listener' });

    events.emit(ev('started', 'q', 't', '1'));
    await turn(); // the slow listener is now inside event 1, its queue empty
    for (const id of ['2', '3', '4', '5']) {
      events.emit(ev('started', 'q', 't', id));
      await turn(); // the fast listener keeps up; the slow one's queue fills
    }
    expect(fast).toEqual(['1', '2', '3', '4', '5']);
    expect(events.listenerStats().find((s) => s.name === 'Slow.listener')).toMatchObject({
      queued: 2,
      dropped: 2,
    });
    expect(log.warn).toHaveBeenCalledTimes(1);
    expect(String(log.warn.mock.calls[0][0])).toContain('Slow.listener is 2 events behind');

    release();
    await blocked;
    await turn();
    expect(slow).toEqual(['1', '2', '3']);
  });

  it('on() is an Observable; unsubscribing removes its listener', async () => {
    const events = new JobEvents({ maxQueuedPerListener: 10 }, logger());
    const two = firstValueFrom(
      events.on(['succeeded', 'dead'], { type: 't' }).pipe(take(2), toArray()),
    );
    expect(events.hasListeners('succeeded')).toBe(true);
    expect(events.hasListeners('started')).toBe(false);
    events.emit(ev('started'));
    events.emit(ev('succeeded', 'q', 't', 'a'));
    events.emit(ev('succeeded', 'q', 'other', 'x'));
    events.emit(ev('dead', 'q', 't', 'b'));
    const got = await two;
    expect(got.map((e) => `${e.name}:${e.job.id}`)).toEqual(['succeeded:a', 'dead:b']);
    // take(2) completed the subscription, which removed the listener.
    expect(events.hasListeners('succeeded')).toBe(false);
    expect(events.listenerStats()).toEqual([]);
  });

  it("'*' hears every event name", async () => {
    const events = new JobEvents({ maxQueuedPerListener: 10 }, logger());
    const all = firstValueFrom(events.on('*').pipe(take(2), toArray()));
    events.emit(ev('stalled'));
    events.emit(ev('progress'));
    expect((await all).map((e) => e.name)).toEqual(['stalled', 'progress']);
  });
});
