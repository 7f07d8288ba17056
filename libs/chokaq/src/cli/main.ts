#!/usr/bin/env node
/**
 * The `chokaq` binary: `npx chokaq schema --dialect <mssql|postgres|sqlite> [--schema NAME]` in a
 * project that has @chokaq/nestjs installed, `npx @chokaq/nestjs schema …` anywhere else (npx runs
 * a package's only binary). Arguments are parsed strictly (an unknown option exits 2). Writes
 * through `process.stdout` / `process.stderr`, never `console`, and sets the exit code instead of
 * calling `process.exit`, so buffered output is flushed.
 */
import { runCli } from './schema-command';

process.exitCode = runCli(process.argv.slice(2), process.stdout, process.stderr);
