// Lints in-memory sources at chosen paths with the repository's own ESLint configuration, and
// reports the `no-restricted-imports` configuration of chosen paths. It runs as its own process
// because ESLint loads eslint.config.mjs with import(), which Jest's module system cannot run.
// Input on stdin: { texts: [{ filePath, text }], configFor: [filePath] }; output: JSON on stdout.
import { ESLint } from 'eslint';

let raw = '';
for await (const chunk of process.stdin) raw += chunk;
const input = JSON.parse(raw);
const eslint = new ESLint({ cwd: process.cwd() });

const lint = [];
for (const { filePath, text } of input.texts) {
  const [result] = await eslint.lintText(text, { filePath });
  lint.push({
    filePath,
    text,
    messages: result.messages.map((m) => ({ ruleId: m.ruleId, message: m.message })),
  });
}
const configs = [];
for (const filePath of input.configFor) {
  const config = await eslint.calculateConfigForFile(filePath);
  configs.push({ filePath, rule: config?.rules?.['no-restricted-imports'] ?? null });
}
process.stdout.write(JSON.stringify({ lint, configs }));
