import { Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { SchedulerRegistryAdapter } from './scheduler-registry.adapter';

describe('SchedulerRegistryAdapter', () => {
  const timers: NodeJS.Timeout[] = [];
  const timer = () => {
    const t = setTimeout(() => undefined, 60_000);
    timers.push(t);
    return t;
  };
  afterEach(() => {
    for (const t of timers.splice(0)) clearTimeout(t);
    jest.restoreAllMocks();
  });

  it('lists a timer as chokaq:<name> and replaces it when re-armed', () => {
    const registry = new SchedulerRegistry();
    const adapter = new SchedulerRegistryAdapter(registry);
    const first = timer();
    adapter.set('nightly', first);
    expect(registry.getTimeouts()).toEqual(['chokaq:nightly']);
    const second = timer();
    adapter.set('nightly', second);
    expect(registry.getTimeouts()).toEqual(['chokaq:nightly']);
    expect(registry.getTimeout('chokaq:nightly')).toBe(second);
    adapter.delete('nightly');
    expect(registry.getTimeouts()).toEqual([]);
  });

  it('never removes an entry it did not add, and says once why a job is not listed', () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const registry = new SchedulerRegistry();
    const foreign = timer();
    registry.addTimeout('chokaq:nightly', foreign);
    const adapter = new SchedulerRegistryAdapter(registry);
    adapter.set('nightly', timer());
    adapter.set('nightly', timer());
    adapter.delete('nightly');
    adapter.clear();
    expect(registry.getTimeout('chokaq:nightly')).toBe(foreign);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0][0])).toContain("'chokaq:nightly'");
  });

  it('tolerates entries already deleted by the application or by ScheduleModule at shutdown', () => {
    const registry = new SchedulerRegistry();
    const adapter = new SchedulerRegistryAdapter(registry);
    adapter.set('nightly', timer());
    adapter.set('hourly', timer());
    registry.deleteTimeout('chokaq:nightly');
    expect(() => adapter.clear()).not.toThrow();
    expect(registry.getTimeouts()).toEqual([]);
  });
});
