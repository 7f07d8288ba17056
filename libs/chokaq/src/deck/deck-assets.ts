import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ChokaQDeckConfigError } from './deck-config.error';

/** One file the Deck serves. */
export interface DeckAsset {
  body: Buffer;
  contentType: string;
  etag: string;
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/**
 * Every file the Deck serves, by the name in its URL: a fixed map, so no part of a URL ever
 * reaches the file system. The vendor files are copied from their npm packages at build time
 * (`scripts/deck-assets.js`).
 */
export const DECK_ASSET_FILES: Readonly<Record<string, string>> = {
  'deck.css': CSS,
  'deck.js': JS,
  'api.js': JS,
  'format.js': JS,
  'router.js': JS,
  'ui.js': JS,
  'overview.js': JS,
  'queues.js': JS,
  'jobs.js': JS,
  'job.js': JS,
  'batch.js': JS,
  'dlq.js': JS,
  'errors.js': JS,
  'recurring.js': JS,
  'workers.js': JS,
  'audit.js': JS,
  'chart.js': JS,
  'favicon.svg': 'image/svg+xml',
  'vendor/preact-htm.js': JS,
  'vendor/uplot.js': JS,
  'vendor/uplot.css': CSS,
  'vendor/LICENSES.txt': 'text/plain; charset=utf-8',
};

/** Where the files are: beside this module, in source and in the built package alike. */
export const DECK_ASSET_DIR = join(__dirname, 'assets');

/** The Deck's files, read once when the module starts; a missing one fails the start. */
export class DeckAssets {
  private readonly files = new Map<string, DeckAsset>();
  readonly shell: string;

  constructor(dir: string = DECK_ASSET_DIR) {
    for (const [name, contentType] of Object.entries(DECK_ASSET_FILES)) {
      const body = read(dir, name);
      this.files.set(name, { body, contentType, etag: etagOf(body) });
    }
    this.shell = read(dir, 'index.html').toString('utf8');
  }

  /** The file of that name, or undefined when the name is not in the map. */
  get(name: string): DeckAsset | undefined {
    return Object.prototype.hasOwnProperty.call(DECK_ASSET_FILES, name)
      ? this.files.get(name)
      : undefined;
  }

  /** The page shell with its `<base href>` set to where the Deck is mounted. */
  page(basePath: string): DeckAsset {
    const body = Buffer.from(
      this.shell.replace('__DECK_BASE__', escapeAttribute(basePath)),
      'utf8',
    );
    return { body, contentType: 'text/html; charset=utf-8', etag: etagOf(body) };
  }
}

function read(dir: string, name: string): Buffer {
  try {
    return readFileSync(join(dir, name));
  } catch (error) {
    throw new ChokaQDeckConfigError(
      `ChokaQDeckModule: the Deck's file ${name} is missing from ${dir}. In a checkout of ChokaQ, ` +
        'run `node scripts/deck-assets.js vendor` (npm start and npm test do); in the package it is a packaging fault.',
      { cause: error },
    );
  }
}

function etagOf(body: Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
