import { writeFileSync } from 'node:fs';
import * as prettier from 'prettier';

/**
 * Writes Markdown formatted by the repository's Prettier config, so a regenerated file passes
 * `npm run lint` (`prettier --check .`) without a manual format step.
 */
export async function writeMarkdown(path: string, text: string): Promise<void> {
  const config = (await prettier.resolveConfig(path)) ?? {};
  writeFileSync(path, await prettier.format(text, { ...config, filepath: path }));
}
