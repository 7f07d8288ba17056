import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { schemaDdl } from './schema-command';

/**
 * The real `chokaq` process (the TypeScript entry point through @swc-node/register): what a shell
 * sees is the exit code and the two streams, so those are asserted here, not `runCli`'s return.
 */
function chokaq(...args: string[]) {
  const result = spawnSync(
    process.execPath,
    ['-r', '@swc-node/register', join(__dirname, 'main.ts'), ...args],
    { cwd: join(__dirname, '../../../..'), encoding: 'utf8', timeout: 60_000 },
  );
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('the chokaq process', () => {
  it('prints the DDL and exits 0', () => {
    expect(chokaq('schema', '--dialect', 'sqlite', '--schema', 'q_')).toEqual({
      status: 0,
      stdout: schemaDdl('sqlite', 'q_'),
      stderr: '',
    });
  });

  it('exits 2 on a misspelt option, naming it on stderr, and prints no DDL', () => {
    const { status, stdout, stderr } = chokaq('schema', '--dialect', 'postgres', '--schmea', 'x');
    expect({ status, stdout }).toEqual({ status: 2, stdout: '' });
    expect(stderr).toContain("unknown option '--schmea'");
    expect(stderr).toContain('Usage: chokaq');
  });
});
