// core.chunk() alone in V8 (Node), for quick A/B of the wasm's per-chunk path: each wasm given
// (default: dist/wasm) through its own instance of the shipped glue, one 174-byte OpenAI event
// per call, auto mode (PAINT_NONE) as the page's default; the variants interleaved in one
// process, rounds rotating which goes first, so machine noise falls on all of them alike.
//   node scripts/bench/corechunk.mjs [a.wasm b.wasm ...] [--n 200000] [--rounds 9]
import fs from 'node:fs';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf('--' + name);
  return i >= 0 ? Number(args.splice(i, 2)[1]) : dflt;
};
const N = opt('n', 200000);
const ROUNDS = opt('rounds', 9);
const files = args.length ? args : [new URL('../../dist/wasm/llm_rum_bg.wasm', import.meta.url).pathname];
const ev = new TextEncoder().encode('data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}\n\n');
const hdrs = new Map([['content-type', 'text/event-stream']]);

const variants = [];
for (const [k, file] of files.entries()) {
  // A module instance of the glue per variant (it holds one wasm instance).
  const glue = await import(new URL('../../js/wasm/llm_rum.js?' + k, import.meta.url).href);
  await glue.default({ module_or_path: fs.readFileSync(file) });
  variants.push({ file, core: new glue.Core(JSON.stringify({ pageOrigin: 'https://x.test' })), us: [] });
}
const run = (v) => {
  const h = v.core.begin('https://x.test/v1/chat/completions', 'POST', 0, 0, new Uint8Array(32), -1);
  v.core.observe(h, 0); // js/codes.js PAINT_NONE: auto mode looking for the answer
  v.core.response(h, 0, 200, hdrs, false);
  const t0 = performance.now();
  for (let i = 0; i < N; i++) v.core.chunk(h, i, ev, i);
  const us = ((performance.now() - t0) * 1000) / N;
  v.core.end(h, N, 4); // FORGET
  return us;
};
for (const v of variants) run(v); // warm up: tier-up
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < variants.length; i++) {
    const v = variants[(i + r) % variants.length];
    v.us.push(run(v));
  }
}
for (const v of variants) {
  const s = [...v.us].sort((a, b) => a - b);
  console.log(`core.chunk ${s[s.length >> 1].toFixed(3)} µs median, ${s[0].toFixed(3)} min (${N} × ${ROUNDS}) ${v.file}`);
}
