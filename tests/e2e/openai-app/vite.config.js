// Builds the openai + llm-rum test app into tests/e2e/pages/openai-app/, which the scripted
// server serves during the end-to-end tests. `llm-rum` resolves to this repository's package
// (its package.json `exports` → dist/), exactly as an installed dependency would.
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');

export default defineConfig({
  root: here,
  base: '/openai-app/',
  logLevel: 'warn',
  resolve: { alias: { 'llm-rum': root } },
  build: { outDir: path.join(root, 'tests/e2e/pages/openai-app'), emptyOutDir: true, target: 'es2022' },
});
