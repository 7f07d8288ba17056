import { writeFileSync } from 'node:fs';

/**
 * Writes Markdown formatted by the repository's Prettier config, so a regenerated file passes
 * `npm run lint` (`prettier --check .`) without a manual format step. Prettier is loaded here, not
 * at import: loading it under Jest fails (it needs dynamic imports), and the specs of the report
 * helpers import this module without writing anything.
 */
export async function writeMarkdown(path: string, text: string): Promise<void> {
  const prettier = await import('prettier');
  const config = (await prettier.resolveConfig(path)) ?? {};
  writeFileSync(path, await prettier.format(text, { ...config, filepath: path }));
}
