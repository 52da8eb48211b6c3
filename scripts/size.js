// Shipped size of the npm package's runtime files (wasm + glue + facade): raw, gzip, brotli.
// `node scripts/size.js [--check]`: with --check, exits 1 over the budget.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

// The target is 30 KB brotli (issue 2 shipped at 28.7 KB; issue 14's goal is 25 KB). EventSource
// (+2.0 KB), the beacon transport (+3.4 KB), paint observation (+6.5 KB) and id templating with
// `beforeSend` (+1.3 KB) took it to 42.4 KB. Issue 14 made the transport and paint observation
// chunks loaded on first use (41.2 KB; the wasm core alone is 33.2 KB of it); upstream buffering
// detection (issue 16: `delivery`, `upstreamBuffered`, `upstreamHints`) adds +1.4 KB of wasm.
// This guard stops further growth. Raise it only with a reason in the commit message.
export const TARGET_BROTLI = 30 * 1024;
// 45.55 KB: auto mode (issue 15: TextTail::claim, paintSource, the document observer; +1.6 KB)
// made paint observation load on every page by default, so its chunk counts as always loaded
// again; with issue 14's chunks and faster paths merged, 46 640 B measured (index.js 5 976,
// paint chunk 2 460, glue 2 330, wasm 35 874; main with auto mode alone: 46 630 B).
// 40.33 KB: issue 14's size pass dropped wasm-bindgen (raw numeric exports, src/wasm/abi.rs, and
// a hand-written glue, js/wasm/llm_rum.js; response headers cross as one string) and talc (a
// size-class allocator, src/wasm/runtime.rs): 41 218 B measured (index.js 5 976, paint chunk
// 2 460, glue 967, wasm 31 815).
// 40.2 KB: the glue bundled into index.js (issue 14, ready time): 41 029 B measured (index.js
// with the glue 6 791, paint chunk 2 460, wasm 31 778).
// 40.4 KB: init() resolves at once, what the app does meanwhile replayed once the core is in
// (issue 14, ready time: +0.6 KB), and the core's per-chunk path faster (SWAR string and
// line scans, one walk per choice: +0.3 KB), partly paid back by EventSource measurement as a
// chunk of its own and the transport's glue moved into its chunk (−0.5 KB): 41 317 B measured
// (index.js 6 809, paint chunk 2 460, wasm 32 048).
// 38.1 KB: the beacon queue moved from the wasm into the transport chunk (js/deliver/queue.js:
// wasm −2.5 KB, the transport chunk +0.9 KB, only with a collector), the loads deferred to the
// next task (+0.1 KB): 38 931 B measured (index.js 6 956, paint chunk 2 452, wasm 29 523).
// 39.6 KB: model and provider in every record (issue 31): the model read from each format's
// stream and bounded, the `models` option parsed and matched, the provider table of 20 API
// hosts (+0.3 KB of it the table's text), three record keys — wasm +1.48 KB; the option's
// validation, index.js +0.09 KB. 40 487 B measured (index.js 7 036, paint chunk 2 452, wasm
// 30 999). Measured and not kept: the table as one string (+0.04 KB), names built as bytes
// (+0.19 KB); `str::find`/`contains` and Unicode whitespace, which the first version used,
// cost +0.6 KB more (byte scans instead, util/url.rs `contains`).
export const BUDGET_BROTLI = Math.ceil(39.6 * 1024);

export function measure(dir = 'dist') {
  const files = [];
  const walk = (d) => {
    for (const f of fs.readdirSync(d)) {
      const p = path.join(d, f);
      if (fs.statSync(p).isDirectory()) walk(p);
      else if (/\.(wasm|js)$/.test(f)) files.push(p);
    }
  };
  walk(dir);
  // What every page loads: the facade, what it imports statically (a chunk the bundler split
  // off for code shared with an on-demand chunk would be one), and the wasm with its glue.
  const always = new Set(['index.js']);
  const entry = fs.readFileSync(path.join(dir, 'index.js'), 'utf8');
  for (const m of entry.matchAll(/(?:^|[;\s}])(?:import|export)\s*(?:[\w*{},\s$]*?from\s*)?["']\.\/([^"']+)["']/g)) always.add(m[1]);
  // Paint observation is a chunk, but `observe: 'auto'` is the default (issue 15): init()
  // imports it on every page (in parallel with the core) unless the app passes
  // `observe: false`, so it counts as always loaded.
  for (const f of fs.readdirSync(dir)) if (/^paint-[\w-]+\.js$/.test(f)) always.add(f);
  const rows = files.map((f) => {
    const b = fs.readFileSync(f);
    const file = path.relative(dir, f);
    return {
      file,
      // Loaded on demand only (the OTLP exporter, the beacon transport; the inline wasm copy
      // inline-wasm.js, loaded only where the .wasm file cannot be fetched): not part of what
      // every page loads. The wasm file (wasm/) always is.
      optional: !always.has(file) && !file.startsWith('wasm/'),
      raw: b.length,
      gzip: zlib.gzipSync(b, { level: 9 }).length,
      brotli: zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
    };
  });
  const total = rows
    .filter((r) => !r.optional)
    .reduce((t, r) => ({ raw: t.raw + r.raw, gzip: t.gzip + r.gzip, brotli: t.brotli + r.brotli }), { raw: 0, gzip: 0, brotli: 0 });
  return { rows, total };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const { rows, total } = measure();
  for (const r of [...rows, { file: 'total (always loaded)', ...total }]) {
    console.log(`${(r.file + (r.optional ? ' (on demand)' : '')).padEnd(30)} raw ${String(r.raw).padStart(7)}  gzip ${String(r.gzip).padStart(6)}  brotli ${String(r.brotli).padStart(6)}`);
  }
  console.log(`target: ${TARGET_BROTLI} B brotli → ${total.brotli <= TARGET_BROTLI ? 'within' : 'over by ' + (total.brotli - TARGET_BROTLI) + ' B'}`);
  console.log(`guard:  ${BUDGET_BROTLI} B brotli → ${total.brotli <= BUDGET_BROTLI ? 'within' : 'OVER'}`);
  if (process.argv.includes('--check') && total.brotli > BUDGET_BROTLI) process.exit(1);
}
