import {
  ClaimTurn,
  claimTurns,
  groupVisits,
  mapQueueGroupRow,
  takeTurnsSync,
  typesOfQueue,
} from './groups';

describe('groupVisits', () => {
  it('is four per row to start, at least 64 and at most 1,000', () => {
    expect(groupVisits(1)).toBe(64);
    expect(groupVisits(16)).toBe(64);
    expect(groupVisits(17)).toBe(68);
    expect(groupVisits(250)).toBe(1_000);
    expect(groupVisits(251)).toBe(1_000);
  });
});

describe('mapQueueGroupRow', () => {
  it('reads the key as text and the counts as numbers (drivers return bigint counts as text)', () => {
    expect(mapQueueGroupRow({ group_key: 'acme', pending: '3', running: 2 })).toEqual({
      group: 'acme',
      pending: 3,
      running: 2,
    });
  });
});

describe('claimTurns', () => {
  type Row = { queue: string; started: boolean };
  /** Runs the turns against fixed answers; returns the turns asked and the rows taken. */
  function run(
    grouped: string[],
    options: { groupsFirst: boolean; skipOrdinary?: boolean },
    answers: Record<string, Row[]>,
    request = { limit: 5, start: 4 },
  ) {
    const asked: ClaimTurn[] = [];
    const rows = takeTurnsSync(
      claimTurns<Row>(request, grouped, { ...options, started: (r) => r.started }),
      (turn) => {
        asked.push(turn);
        const key = turn.kind === 'ordinary' ? 'ordinary' : turn.queue;
        return (answers[key] ?? []).slice(0, turn.kind === 'ordinary' ? turn.limit : turn.start);
      },
    );
    return { asked, rows };
  }
  const row = (queue: string, started = true): Row => ({ queue, started });

  it('without grouped queues asks the ordinary claim alone, with the whole limit and start', () => {
    expect(run([], { groupsFirst: true }, {}).asked).toEqual([
      { kind: 'ordinary', limit: 5, start: 4 },
    ]);
  });

  it('grouped queues last share what the ordinary claim left to start', () => {
    const { asked, rows } = run(
      ['a', 'b'],
      { groupsFirst: false },
      {
        ordinary: [row('o'), row('o', false)],
        a: [row('a'), row('a')],
        b: [row('b'), row('b')],
      },
    );
    expect(asked).toEqual([
      { kind: 'ordinary', limit: 5, start: 4 },
      { kind: 'grouped', queue: 'a', start: 3 },
      { kind: 'grouped', queue: 'b', start: 1 },
    ]);
    expect(rows.map((r) => r.queue)).toEqual(['o', 'o', 'a', 'a', 'b']);
  });

  it('grouped queues first leave the ordinary claim what is left of the limit and the start', () => {
    const { asked } = run(['a'], { groupsFirst: true }, { a: [row('a')] });
    expect(asked).toEqual([
      { kind: 'grouped', queue: 'a', start: 4 },
      { kind: 'ordinary', limit: 4, start: 3 },
    ]);
    // Grouped rows that fill the limit leave nothing to the ordinary claim.
    const full = Array.from({ length: 5 }, () => row('a'));
    expect(run(['a'], { groupsFirst: true }, { a: full }, { limit: 5, start: 5 }).asked).toEqual([
      { kind: 'grouped', queue: 'a', start: 5 },
    ]);
  });

  it('skips the ordinary claim when every handled queue is grouped', () => {
    expect(run(['a'], { groupsFirst: false, skipOrdinary: true }, {}).asked).toEqual([
      { kind: 'grouped', queue: 'a', start: 4 },
    ]);
  });
});

describe('typesOfQueue', () => {
  it('is null for a queue-wide handler, else the pairs of the queue', () => {
    const handled = {
      queues: ['wide'],
      types: [
        { queue: 'q', type: 't1' },
        { queue: 'other', type: 't2' },
      ],
    };
    expect(typesOfQueue(handled, 'wide')).toBeNull();
    expect(typesOfQueue(handled, 'q')).toEqual([{ queue: 'q', type: 't1' }]);
  });
});
