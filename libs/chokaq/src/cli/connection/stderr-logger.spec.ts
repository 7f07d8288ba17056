import { StderrLogger } from './stderr-logger';

describe('StderrLogger', () => {
  function logger(): { lines: string[]; log: StderrLogger } {
    const lines: string[] = [];
    return { lines, log: new StderrLogger({ write: (text: string) => lines.push(text) }, 'Ctx') };
  }

  it('writes warnings and errors with their level and where they come from', () => {
    const { lines, log } = logger();
    log.warn('a retry');
    log.error({ toString: () => 'a failed read' });
    expect(lines).toEqual([
      'chokaq: warn [Ctx]: a retry\n',
      'chokaq: error [Ctx]: a failed read\n',
    ]);
  });

  it('keeps routine lines out of the command output', () => {
    const { lines, log } = logger();
    log.log();
    expect(lines).toEqual([]);
  });
});
