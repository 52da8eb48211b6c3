// Rollup 4 + node-resolve, nothing else: `rollup -c` (OUT = output folder). A folder output,
// as Rollup requires for code that has dynamic imports.
import { nodeResolve } from '@rollup/plugin-node-resolve';

export default {
  input: 'app/main.js',
  output: { dir: process.env.OUT, format: 'es' },
  plugins: [nodeResolve({ browser: true })],
};
