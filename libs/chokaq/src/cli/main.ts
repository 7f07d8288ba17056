#!/usr/bin/env node
/**
 * The `chokaq` binary (`npx chokaq schema --dialect <mssql|postgres|sqlite> [--schema NAME]`).
 * Writes through `process.stdout` / `process.stderr`, never `console`, and sets the exit code
 * instead of calling `process.exit`, so buffered output is flushed.
 */
import { runCli } from './schema-command';

process.exitCode = runCli(process.argv.slice(2), process.stdout, process.stderr);
