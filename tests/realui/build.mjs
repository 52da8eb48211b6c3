// Bundles each real-UI page (pages/<name>.js) with esbuild into OUT/<name>.js and writes its HTML
// page (OUT/<name>.html): run by tests/e2e/realui.spec.js after it installed the packed llm-rum
// into node_modules/llm-rum. NLUX gets React 18 (its peer range), the others React 19.
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const PAGES = ['react-markdown', 'streamdown', 'vue', 'assistant-ui', 'nlux', 'virtuoso', 'assistant-ui-smooth', 'react-keyed'];

export async function buildPages(dir, names = PAGES) {
  const out = path.resolve(dir);
  fs.mkdirSync(out, { recursive: true });
  for (const name of names) {
    await build({
      entryPoints: [path.join(here, 'pages', `${name}.js`)],
      absWorkingDir: here, // aliases resolve from here
      bundle: true,
      splitting: true,
      format: 'esm',
      outdir: path.join(out, name),
      define: { 'process.env.NODE_ENV': '"production"', __VUE_OPTIONS_API__: 'false', __VUE_PROD_DEVTOOLS__: 'false', __VUE_PROD_HYDRATION_MISMATCH_DETAILS__: 'false' },
      alias: name === 'nlux' ? { react: 'react18', 'react-dom': 'react-dom18' } : {},
      loader: { '.wasm': 'file', '.css': 'empty' },
      logLevel: 'error',
    });
    fs.writeFileSync(
      path.join(out, `${name}.html`),
      `<!doctype html><meta charset="utf-8"><title>${name} chat</title>
<style>body{font:15px/1.4 sans-serif;margin:0}.app{max-width:760px;margin:0 auto;padding:8px}.msg{margin:8px 0}
.cursor{display:inline-block;width:.5em;height:1em;background:#333;animation:blink 1s steps(2) infinite}@keyframes blink{50%{opacity:0}}
textarea{width:80%;height:3em}pre{background:#f4f4f4;padding:8px}</style>
<div id="root"></div><script type="module" src="${name}/${name}.js"></script>\n`,
    );
  }
}

if (path.resolve(process.argv[1] || "") === fileURLToPath(import.meta.url)) await buildPages(process.argv[2] || path.join(here, 'out'));
