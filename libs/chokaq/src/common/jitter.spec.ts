import { jittered } from './jitter';

describe('jittered', () => {
  it('stays within ±fraction', () => {
    expect(jittered(1_000, 0.2, () => 0)).toBe(800);
    expect(jittered(1_000, 0.2, () => 1)).toBe(1_200);
    expect(jittered(0, 0.2)).toBe(0);
  });
});
