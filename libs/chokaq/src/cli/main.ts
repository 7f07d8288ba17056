#!/usr/bin/env node
/**
 * The `chokaq` binary: `npx chokaq <command>` in a project that has @chokaq/nestjs installed,
 * `npx @chokaq/nestjs <command>` anywhere else (npx runs a package's only binary). Writes through
 * `process.stdout` / `process.stderr`, never `console`, and sets the exit code instead of calling
 * `process.exit`, so buffered output is flushed; the process ends when the command closed its
 * database connection.
 */
import { processIo } from './cli-io';
import { runCli } from './run-cli';

void runCli(process.argv.slice(2), processIo()).then((code) => {
  process.exitCode = code;
});
