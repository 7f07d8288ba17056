import { escapeLike } from './escape-like';

describe('escapeLike', () => {
  it('escapes %, _, [ and the escape character itself', () => {
    expect(escapeLike('50%_off[x]\\')).toBe('50\\%\\_off\\[x]\\\\');
  });
});
