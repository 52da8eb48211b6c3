// A second minification pass over the bundles esbuild wrote into dist/ (scripts/build.sh):
// terser, the field's standard JS minifier, compressing twice over each ES module with its
// top-level names mangled (exports keep theirs: the chunks import each other by them). Measured
// on this package: −640 B brotli on what a typical page loads (facade 7.3 → 7.1 KB, glue, paint
// and transport chunks ~0.1–0.2 KB each) over esbuild's --minify alone. Source maps are chained
// (esbuild's map is terser's input map), so they still point at js/.
import fs from 'node:fs';
import path from 'node:path';
import { minify } from 'terser';

const dir = process.argv[2] || 'dist';
for (const f of fs.readdirSync(dir)) {
  // The inline wasm copy is one base64 literal: nothing to minify.
  if (!f.endsWith('.js') || f === 'inline-wasm.js') continue;
  const file = path.join(dir, f);
  const map = fs.existsSync(file + '.map') ? fs.readFileSync(file + '.map', 'utf8') : null;
  const code = fs.readFileSync(file, 'utf8').replace(/\n\/\/# sourceMappingURL=.*\n?$/, '\n');
  const out = await minify(code, {
    module: true,
    ecma: 2020,
    compress: { passes: 2 },
    mangle: { toplevel: true },
    sourceMap: map ? { content: map, url: f + '.map', includeSources: true } : false,
  });
  fs.writeFileSync(file, out.code + '\n');
  if (map) fs.writeFileSync(file + '.map', out.map);
}
