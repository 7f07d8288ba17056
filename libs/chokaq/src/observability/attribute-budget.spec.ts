import { AttributeBudget, OVERFLOW_ATTRIBUTE_VALUE } from './attribute-budget';

describe('AttributeBudget', () => {
  it('lets the first max distinct values through and turns later ones into "other", for good', () => {
    const budget = new AttributeBudget(3);
    expect(['a', 'b', 'a', 'c', 'd', 'b', 'e', 'c', 'd'].map((v) => budget.value(v))).toEqual([
      'a',
      'b',
      'a',
      'c',
      OVERFLOW_ATTRIBUTE_VALUE,
      'b',
      OVERFLOW_ATTRIBUTE_VALUE,
      'c',
      OVERFLOW_ATTRIBUTE_VALUE,
    ]);
  });

  it('holds its bound under many distinct values', () => {
    const budget = new AttributeBudget(100);
    const values = new Set<string>();
    for (let i = 0; i < 10_000; i++) values.add(budget.value(`queue-${i}`));
    expect(values.size).toBe(101);
    expect(values.has(OVERFLOW_ATTRIBUTE_VALUE)).toBe(true);
  });
});
