import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The fixture's node_modules (and the shared app/scenario.js) live one level up. The test
// builds with Turbopack and with webpack side by side (NEXT_DIST_DIR).
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export default {
  distDir: process.env.NEXT_DIST_DIR || '.next',
  turbopack: { root },
  outputFileTracingRoot: root,
};
