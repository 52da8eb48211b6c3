// The npm package as shipped: size budget, exports map, and import safety (no globals touched
// at import time, e.g. under SSR in Node). Runs in Node, no browser.
import { test, expect } from '@playwright/test';
import fs from 'node:fs';
import { measure, BUDGET_BROTLI } from '../../scripts/size.js';

test('what a typical page loads (facade, glue, wasm, paint, transport) stays within the size guard (50.1 KB brotli)', () => {
  const { rows, total, typical } = measure('dist');
  console.log(rows.map((r) => `${r.file}: ${r.raw} B raw, ${r.gzip} B gzip, ${r.brotli} B brotli`).join('\n'));
  console.log(`always loaded ${total.brotli} B brotli, a page with a collector ${typical.brotli} B`);
  // Paint observation is a chunk loaded by every init() unless `observe: false` (auto mode is
  // the default), the wasm-bindgen glue one loaded by every init() while the wasm compiles:
  // both always loaded.
  expect(rows.filter((r) => !r.optional).map((r) => r.file.split('-')[0]).sort()).toEqual(['glue', 'index.js', 'paint', 'wasm/llm_rum_bg.wasm']);
  // On demand only: the OTLP exporter, the beacon transport (with a collector) and EventSource
  // measurement (each loaded only when used: chunks.spec.js), and the inline wasm copy (loaded
  // where the file is not).
  expect(rows.filter((r) => r.optional).map((r) => r.file.split('-')[0]).sort()).toEqual(['es', 'inline', 'otlp', 'transport']);
  expect(rows.filter((r) => r.collector).map((r) => r.file.split('-')[0])).toEqual(['transport']);
  const inline = rows.find((r) => r.file === 'inline-wasm.js');
  const wasm = rows.find((r) => r.file === 'wasm/llm_rum_bg.wasm');
  console.log(`inline copy: ${inline.brotli} B brotli vs the file's ${wasm.brotli} B (+${(100 * (inline.brotli / wasm.brotli - 1)).toFixed(0)} %)`);
  expect(typical.brotli).toBeLessThanOrEqual(BUDGET_BROTLI);
});

test('package.json: exports map with types first, files, sideEffects false', () => {
  const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8'));
  expect(Object.keys(pkg.exports['.'])[0]).toBe('types');
  expect(pkg.exports['.'].default).toBe('./dist/index.js');
  // The wasm reachable by a package specifier, for a copy step or a bundler's file loader.
  expect(pkg.exports['./llm_rum_bg.wasm']).toBe('./dist/wasm/llm_rum_bg.wasm');
  expect(pkg.files).toEqual(['dist/']);
  expect(pkg.sideEffects).toBe(false);
  for (const f of ['dist/index.js', 'dist/index.d.ts', 'dist/wasm/llm_rum_bg.wasm', 'dist/inline-wasm.js']) expect(fs.existsSync(f)).toBe(true);
  // dist/wasm/ holds the wasm file alone: what a page fetches, nothing it never loads.
  expect(fs.readdirSync('dist/wasm')).toEqual(['llm_rum_bg.wasm']);
});

test('importing the package in Node (SSR) touches no browser global and loads no wasm', async () => {
  const before = Object.keys(globalThis).sort();
  const fetchBefore = globalThis.fetch;
  const mod = await import('../../dist/index.js');
  expect(typeof mod.init).toBe('function');
  expect(mod.VERSION).toBe(JSON.parse(fs.readFileSync('package.json', 'utf8')).version);
  expect(Object.keys(globalThis).sort()).toEqual(before);
  expect(globalThis.fetch).toBe(fetchBefore);
});
