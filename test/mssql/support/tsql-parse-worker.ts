/**
 * Parses T-SQL texts for `preparse` (tsql-grammar.ts) in a plain Node process: the ANTLR parser
 * runs about four times faster outside Jest's module sandbox. Reads a JSON array of texts on
 * stdin and writes, in the same order, `{ errors, hints }` for each (`hints` null when the text
 * does not parse).
 */
import { parseForCache } from './tsql-grammar';

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => (input += chunk));
process.stdin.on('end', () => {
  const texts = JSON.parse(input) as string[];
  process.stdout.write(JSON.stringify(texts.map(parseForCache)));
});
