// Shipped size of the npm package's runtime files (wasm + glue + facade): raw, gzip, brotli.
// `node scripts/size.js [--check]`: with --check, exits 1 over the budget.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

// The target is 30 KB brotli (issue 2 shipped at 28.7 KB; issue 14's goal was 25 KB, which its
// size pass could not reach with every metric kept: 38.0 KB always loaded, with a hand-written
// boundary — raw numeric exports, a hand-written glue, its own allocator).
// Issue 28 put the boundary back on the parts the Rust–wasm field trusts — wasm-bindgen's
// generated glue (a chunk of its own, loaded while the wasm compiles), talc, no `static mut` —
// and issue 27 made early requests reach the app at once (the tap). The guard is on what a
// typical page loads: `init({ collector })` with auto paint — the facade, the glue, the wasm,
// paint observation and the beacon transport. It stops growth; it is never a reason to go back
// to a hand-written boundary. Raise it only with a reason in the commit message.
// 45.5 KB: issue 28's bar was 45 KB; measured 46 538 B (wasm 33 082, facade 7 057, glue 1 951,
// paint 2 269, transport 2 035 — terser's second pass included, −640 B): the wasm-bindgen
// boundary costs +3.6 KB of wasm (per-export shims, strings passed through malloc/free, the
// RefCell around `Core`; talc +0.4 KB of it) and the generated glue 1.9 KB, issue 27's tap
// +0.6 KB of facade. What was tried and measured is in the README (Cost and size).
export const TARGET_BROTLI = 30 * 1024;
// 47.6 KB: model and provider in every record (issue 31): the model read from each format's
// stream and bounded, the `models` option parsed and matched, the provider table of 20 API
// hosts (+0.3 KB of it the table's text), three record keys — wasm +1.48 KB measured on the
// hand-written boundary, +1.9 KB on wasm-bindgen's; the option's validation, index.js +0.09
// KB; with issue 27's stepped arrival of the core (+0.2 KB): 48 725 B measured (wasm 35 007,
// facade 7 343, glue 1 986, paint 2 314, transport 2 075). Measured and not kept: the
// table as one string (+0.04 KB), names built as bytes (+0.19 KB); `str::find`/`contains` and
// Unicode whitespace, which the first version used, cost +0.6 KB more (byte scans instead,
// util/url.rs `contains`).
// 47.8 KB: the core's arrival in background-priority tasks (scheduler.postTask, issue 27)
// grew the facade by 20 B (48 745 B: CI's 2 B over 47.6 KB), and `itl.buckets` (issue 31: the answer's gaps per
// OpenTelemetry GenAI bucket, which the collector's `time_per_output_chunk` histogram is
// made of) +134 B of wasm — 48 879 B measured; with the bounds read from a table it was
// +210 B (the 14 doubles' bytes), hence the doubling loop.
// 49.0 KB: zero-config paint in real chat UIs (issue 29): the text probes and auto mode's claim
// see through markdown that renders as no text (a fence's language, list numbers, link
// destinations: core/stream/markdown.rs) and tell "not yet" from "no" (Claim::Maybe) — wasm
// +652 B; auto mode remembers the frames while a stream waits and reports the found element's
// earlier ones as its paints, and climbs to the answer's own container — paint +479 B.
// Measured 50 142 B (wasm 35 917, facade 7 371, glue 1 986, paint 2 793, transport 2 075)
// against 48 879 B without it on the same build. Measured and not kept: the held list numbers
// released through a clone of the tail for a match (+234 B of wasm).
// Issue 30 (paint times as the screen showed them) within it: +15 B — 50 157 B measured (wasm
// 35 928, facade 7 364, glue 1 985, paint 2 805, transport 2 075). Measured and not kept: a
// read-time argument on the wasm boundary for an asymmetric bracket (+158 B: wasm +138, glue
// +20), a vsync estimate from rAF timestamps (~+60 B), a MessageChannel message per frame
// (~+100 B: it matched engine entries by the paint step, now by the next frame), the final-
// paint rule's probe kept in a field of its own (+87 B of wasm; read off the stored paint: +11).
// 49.1 KB: the log-histogram sketch in a crate of its own (issue 32: sketch/, llm-rum-sketch,
// which the SDK core and the collector's rollups both depend on, rather than the collector
// reaching into the browser crate): +78 B — 50 235 B measured (wasm 36 006) against 50 157 B
// with the sketch inside the core, built side by side; one copy of its math either way
// (core/util/math.rs re-exports the crate's).
// 50.0 KB: issue 29's rest. Auto mode re-binds an answer whose element a re-render replaced,
// keeps two answers in one container apart (ambiguity, fences, splitting a too-wide element)
// and places a re-created node's frames by its replacement: paint chunk +763 B (3 568 vs
// 2 805 B, the old paint.js built beside it); a frame showing only the UI's chrome (a " ●"
// dot) is no first paint (core/stream/tail.rs chrome_only, wasm ~+100 B). Measured 51 093 B
// (wasm 36 104, facade 7 364, glue 1 985, paint 3 568, transport 2 075).
// 50.1 KB: paint times from the next frame's rAF timestamp with an honest bound (the three-frame
// cap failed on a saturated machine; README "Paint times"): the core takes the frame's read time
// apart from the bound (one f64 more through core.paint, wasm +51 B) and auto mode's remembered
// frames keep the frame that times them (paint chunk +46 B). Measured 51 216 B (wasm 36 155,
// paint 3 614).
export const BUDGET_BROTLI = Math.ceil(50.1 * 1024);

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
  // `observe: false`, so it counts as always loaded. So does the wasm-bindgen glue, a chunk
  // every init() imports while the wasm compiles.
  for (const f of fs.readdirSync(dir)) if (/^(paint|glue)-[\w-]+\.js$/.test(f)) always.add(f);
  // The beacon transport: loaded by every page that has a collector (the typical one).
  const withCollector = (f) => /^transport-[\w-]+\.js$/.test(f);
  const rows = files.map((f) => {
    const b = fs.readFileSync(f);
    const file = path.relative(dir, f);
    return {
      file,
      // Loaded on demand only (the OTLP exporter, EventSource measurement, the beacon transport
      // — with a collector; the inline wasm copy inline-wasm.js, loaded only where the .wasm
      // file cannot be fetched): not part of what every page loads. The wasm file (wasm/) is.
      optional: !always.has(file) && !file.startsWith('wasm/'),
      collector: withCollector(file),
      raw: b.length,
      gzip: zlib.gzipSync(b, { level: 9 }).length,
      brotli: zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
    };
  });
  const sum = (keep) => rows.filter(keep).reduce((t, r) => ({ raw: t.raw + r.raw, gzip: t.gzip + r.gzip, brotli: t.brotli + r.brotli }), { raw: 0, gzip: 0, brotli: 0 });
  // `total`: every page; `typical`: a page with a collector (what the guard is on).
  return { rows, total: sum((r) => !r.optional), typical: sum((r) => !r.optional || r.collector) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const { rows, total, typical } = measure();
  const tag = (r) => (r.collector ? ' (with collector)' : r.optional ? ' (on demand)' : '');
  for (const r of [...rows, { file: 'total (always loaded)', ...total }, { file: 'typical page (with collector)', ...typical }]) {
    console.log(`${(r.file + tag(r)).padEnd(38)} raw ${String(r.raw).padStart(7)}  gzip ${String(r.gzip).padStart(6)}  brotli ${String(r.brotli).padStart(6)}`);
  }
  console.log(`target: ${TARGET_BROTLI} B brotli always loaded → ${total.brotli <= TARGET_BROTLI ? 'within' : 'over by ' + (total.brotli - TARGET_BROTLI) + ' B'}`);
  console.log(`guard:  ${BUDGET_BROTLI} B brotli for a typical page → ${typical.brotli <= BUDGET_BROTLI ? 'within' : 'OVER by ' + (typical.brotli - BUDGET_BROTLI) + ' B'}`);
  if (process.argv.includes('--check') && typical.brotli > BUDGET_BROTLI) process.exit(1);
}
