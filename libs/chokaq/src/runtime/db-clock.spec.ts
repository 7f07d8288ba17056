import { DbClock } from './db-clock';

describe('DbClock', () => {
  it("follows the database's now from the newest claimed row, and ages jobs against it", () => {
    let host = 1_000_000;
    const clock = new DbClock(() => host);
    expect(clock.now()).toBe(host); // no claim yet: the host's clock

    // The database is 60 s ahead of this host.
    clock.observe([
      { lastUpdatedUtc: new Date(host + 59_000) },
      { lastUpdatedUtc: new Date(host + 60_000) },
    ]);
    host += 5_000;
    expect(clock.now()).toBe(host + 60_000);
    expect(clock.ageMs(new Date(host))).toBe(60_000);
    expect(clock.ageMs(new Date(host + 120_000))).toBe(0); // never negative
  });

  it('keeps its estimate when a claim brings no usable timestamp', () => {
    const host = 1_000_000;
    const clock = new DbClock(() => host);
    clock.observe([{ lastUpdatedUtc: new Date(host - 2_000) }]);
    clock.observe([]);
    clock.observe([{ lastUpdatedUtc: new Date(Number.NaN) }]);
    clock.observe([{ lastUpdatedUtc: null }]);
    expect(clock.now()).toBe(host - 2_000);
  });
});
