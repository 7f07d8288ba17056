import { userInfo } from 'node:os';

/** Where the CLI writes; `process.stdout` / `process.stderr` in the real binary, buffers in tests. */
export interface CliWriter {
  write(text: string): unknown;
}

/** What the CLI takes from its process: its two streams, its environment and its clock. */
export interface CliIo {
  readonly out: CliWriter;
  readonly err: CliWriter;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The clock relative times (`--since 1h`) count back from, in epoch ms. */
  now(): number;
  /** Who runs the command, for the audit log: `cli:<os user>` unless `--actor` says otherwise. */
  defaultActor(): string;
}

/**
 * The actor an audited action records when `--actor` is not given: `cli:` and the operating
 * system's user name (`os.userInfo()`), else `$USER` / `$USERNAME` (a container may run as a uid
 * with no passwd entry, where `userInfo()` throws), else `cli:unknown`.
 */
export function osActor(env: Readonly<Record<string, string | undefined>>): string {
  let name: string | undefined;
  try {
    name = userInfo().username;
  } catch {
    name = undefined;
  }
  name ||= env.USER || env.USERNAME || 'unknown';
  return `cli:${name}`;
}

/** The real process's I/O. */
export function processIo(): CliIo {
  return {
    out: process.stdout,
    err: process.stderr,
    env: process.env,
    now: () => Date.now(),
    defaultActor: () => osActor(process.env),
  };
}
