// Benchmarks (figures, not pass/fail), in the system Chromium against the scripted server
// (demo/). Ratios are measured within one run (this machine is shared and noisy).
//
// 1. Side by side (issue 14): llm-rum against bare fetch and OpenTelemetry web
//    (@opentelemetry/instrumentation-fetch + the OTLP/HTTP exporter, pinned in package.json,
//    bundled and minified with esbuild like dist/index.js) in the same page, interleaved:
//    shipped size, import → ready on fresh loads (and → the wasm core in), the load's main-thread
//    task time, the first-token delay of an answer requested right after init() (issue 27),
//    main-thread CPU added per chunk of a 100 000-chunk stream from the server, first-token
//    delay to the app.
// 2. Where llm-rum's per-chunk time goes (in-page stream, no network), memory after a very long
//    stream, and the paint observer's cost per DOM mutation.
//
// 3. A long-lived chat tab (issue 28): 5 000 answers of 10 to 100 000 chunks in one page, the
//    SDK's wasm memory and the JS heap after each thousand.
//
//   node scripts/bench.js [--chunks 100000] [--long 1000000] [--loads 20] [--rounds 9] [--firsts 40] [--soak 5000]
//
// Noise: this machine is shared. Each timed drain starts from a collected heap (gc(), the page
// runs with --expose-gc), so one variant's garbage is not collected on another's clock; the
// figures are medians over interleaved rounds, printed with their interquartile range.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS } from '../playwright.config.js';
import { startServer } from '../tests/e2e/server.js';
import { measure } from './size.js';

const arg = (name, dflt) => {
  const i = process.argv.indexOf('--' + name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const CHUNKS = arg('chunks', 100_000);
const LONG = arg('long', 1_000_000);
const LOADS = arg('loads', 20);
const FIRSTS = arg('firsts', 40);
const ROUNDS = arg('rounds', 9);
const SOAK = arg('soak', 5000);
/** The soak's bound on the JS heap's movement past the first thousand answers. */
const SOAK_HEAP_KIB = 256;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The peer, bundled the way a page would ship it.
const benchDir = path.join(root, 'target/bench');
fs.mkdirSync(benchDir, { recursive: true });
execFileSync(path.join(root, 'node_modules/.bin/esbuild'), [
  path.join(root, 'scripts/bench/otel.js'), '--bundle', '--format=esm', '--minify',
  '--outfile=' + path.join(benchDir, 'otel.js'), '--log-level=warning',
]);
const brotli = (f) => zlib.brotliCompressSync(fs.readFileSync(f), { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
const kb = (b) => (b / 1024).toFixed(1) + ' KB';
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
/** The interquartile range, as "a–b". */
const iqr = (a, d = 1) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor((s.length - 1) / 4)].toFixed(d) + '–' + s[Math.ceil((3 * (s.length - 1)) / 4)].toFixed(d);
};
/** Interleaving: round `r` starts with a different variant, so none always goes first. */
const rotate = (a, r) => a.map((_, i) => a[(i + r + a.length) % a.length]);

const server = await startServer({ listeners: 1, extraArgs: ['--static', `/bench=${benchDir}`, '--static', `/glue=${path.join(root, 'js/wasm')}`] });
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: [...CHROMIUM_ARGS, '--enable-precise-memory-info', '--js-flags=--expose-gc'],
});
const origin = server.origins[0];
try {
  await sideBySide();
  await breakdown();
  await earlyMemory();
  await soak();
} finally {
  await browser.close();
  await server.stop();
}

async function sideBySide() {
  const VARIANTS = ['bare', 'llm-rum', 'otel'];
  // Import → ready: a fresh context per load (empty HTTP cache, no code cache), interleaved.
  // For llm-rum also import → `rum.ready` (the wasm core in): init() resolves before that,
  // with fetch and EventSource already measured (what the app made meanwhile is measured once
  // the core is in), so both are printed.
  // The floor, in the bare column: a module of dist/index.js's size that does nothing (its body
  // a string literal), through the same server: the browser's own share of a fresh load (the
  // first request in a new context, the module's fetch and evaluation), which no SDK can go
  // under. `started`: from the import's resolution to init() resolving / start() returning.
  const floorJs = 'export const s = ' + JSON.stringify('x'.repeat(fs.statSync(path.join(root, 'dist/index.js')).size - 40)) + ';\n';
  fs.writeFileSync(path.join(benchDir, 'floor.js'), floorJs);
  const ready = { bare: [], 'llm-rum': [], otel: [] };
  const started = { 'llm-rum': [], otel: [] };
  const coreIn = [];
  // Issue 27, per fresh load: an answer the page requests right after init() / start() (with
  // the bare floor: right after its import), fetch() called → its first content chunk in the
  // app's hands (a 3-token answer, 20 ms prefill) — what an SDK that holds early responses
  // delays — and the page's main-thread task time from navigation to 300 ms after everything
  // is in (CDP Performance.getMetrics TaskDuration: parse, compile, instantiate, the SDK's
  // setup, the answer), each paired against the floor of the same round.
  const earlyFirst = { bare: [], 'llm-rum': [], otel: [] };
  const loadCpu = { bare: [], 'llm-rum': [], otel: [] };
  const EARLY_URL = '/v1/stream?model=instant&tokens=3&prefill_ms=20';
  for (let i = 0; i < LOADS; i++) {
    for (const v of rotate(Object.keys(ready), i)) {
      const ctx = await browser.newContext();
      const page = await ctx.newPage();
      const cdp = await ctx.newCDPSession(page);
      await cdp.send('Performance.enable');
      await page.goto(origin + '/__health');
      const [ms, initMs, inMs, firstMs] = await page.evaluate(
        async ([v, url]) => {
          const t0 = performance.now();
          // fetch() right away → its first chunk with answer text.
          const early = async () => {
            const t = performance.now();
            const rd = (await fetch(url)).body.getReader();
            const dec = new TextDecoder();
            let first = null;
            for (;;) {
              const { done, value } = await rd.read();
              if (done) return first;
              if (first === null && /"content":"[^"]/.test(dec.decode(value))) first = performance.now() - t;
            }
          };
          const settle = () => new Promise((r) => setTimeout(r, 300));
          if (v === 'llm-rum') {
            const m = await import('/dist/index.js');
            const t = performance.now();
            const rum = await m.init();
            const t1 = performance.now();
            const firstMs = await early();
            if (!(await rum.ready)) throw new Error('llm-rum did not start');
            const inMs = performance.now() - t0;
            await settle();
            return [t1 - t0, t1 - t, inMs, firstMs];
          }
          if (v === 'bare') {
            await import('/bench/floor.js');
            const ms = performance.now() - t0;
            const firstMs = await early();
            await settle();
            return [ms, null, null, firstMs];
          }
          const m = await import('/bench/otel.js');
          const t = performance.now();
          m.start({ collector: '/otel-sink/v1/traces' });
          const t1 = performance.now();
          const firstMs = await early();
          await settle();
          return [t1 - t0, t1 - t, null, firstMs];
        },
        [v, EARLY_URL],
      );
      const { metrics } = await cdp.send('Performance.getMetrics');
      loadCpu[v].push(1000 * metrics.find((m) => m.name === 'TaskDuration').value);
      ready[v].push(ms);
      earlyFirst[v].push(firstMs);
      if (initMs !== null) started[v].push(initMs);
      if (inMs !== null) coreIn.push(inMs);
      await ctx.close();
    }
  }

  // One page with all three fetches: the native one, llm-rum's (not patched into the global),
  // and the global fetch as OpenTelemetry's instrumentation patched it. Per-chunk CPU is
  // measured on a replay: the server's 100 000-event stream is fetched once and cut where the
  // server wrote (one event per write), then served to all three from an in-page byte stream,
  // one chunk per pull — over loopback the browser would merge writes into far fewer reads,
  // differently for each variant, and network waits would hide the CPU. So each drain is pure
  // main-thread work: the stream machinery, the wrapper, the measurement.
  const page = await browser.newPage();
  await page.goto(origin + '/blank.html');
  await page.waitForFunction(() => window.llmRum);
  const events = await page.evaluate(async (url) => {
    const body = new Uint8Array(await (await window.__native(url)).arrayBuffer());
    const chunks = [];
    for (let i = 0, at = 0; i + 1 < body.length; i++) {
      if (body[i] === 10 && body[i + 1] === 10) {
        chunks.push(body.subarray(at, i + 2));
        at = i + 2;
      }
    }
    window.__replay = chunks;
    let n = 0;
    // The in-page "network": a byte stream like a real fetch body, one server write per pull.
    const replay = () => new ReadableStream({
      type: 'bytes',
      pull(c) {
        if (n < chunks.length) c.enqueue(chunks[n++].slice());
        else c.close();
      },
    });
    globalThis.fetch = async (input) => {
      if (String(input instanceof Request ? input.url : input).includes('/replay')) {
        n = 0;
        return new Response(replay(), { headers: { 'content-type': 'text/event-stream' } });
      }
      return window.__native(input);
    };
    const stream = globalThis.fetch;
    const rum = await window.llmRum.init({ patchGlobals: false });
    await rum.ready; // the steady state: the core in
    (await import('/bench/otel.js')).start({ collector: '/otel-sink/v1/traces' });
    window.__variants = { bare: stream, 'llm-rum': rum.fetch, otel: globalThis.fetch };
    window.__drain = async (v) => {
      gc(); // start from a collected heap: the previous variant's garbage is not ours
      const t0 = performance.now();
      const r = (await window.__variants[v]('/v1/chat/replay')).body.getReader();
      let reads = 0;
      while (!(await r.read()).done) reads++;
      if (reads !== chunks.length) throw new Error(v + ': chunks lost');
      return performance.now() - t0;
    };
    return chunks.length;
  }, `/v1/stream?model=instant&tokens=${CHUNKS}`);
  const cpu = { bare: [], 'llm-rum': [], otel: [] };
  for (let r = -1; r < ROUNDS; r++) {
    for (const v of rotate(VARIANTS, r)) {
      const ms = await page.evaluate((v) => window.__drain(v), v);
      if (r >= 0) cpu[v].push((ms * 1000) / events);
    }
  }
  // The native fetch again for the network runs below.
  await page.evaluate(() => {
    const own = (f) => (...a) => f.apply(globalThis, a);
    globalThis.fetch = window.__native;
    return window.llmRum.init({ patchGlobals: false }).then(async (rum) => {
      await rum.ready;
      const { start } = await import('/bench/otel.js');
      start({ collector: '/otel-sink/v1/traces' });
      window.__variants = { bare: own(window.__native), 'llm-rum': rum.fetch, otel: own(globalThis.fetch) };
    });
  });

  // First token: fetch() called → the first chunk carrying answer text in the app's hands
  // (after the role-only chunk), a 3-token answer with a 20 ms prefill; interleaved, p50.
  const firstUrl = '/v1/stream?model=instant&tokens=3&prefill_ms=20';
  const first = { bare: [], 'llm-rum': [], otel: [] };
  for (let r = -1; r < FIRSTS; r++) {
    for (const v of rotate(VARIANTS, r)) {
      const ms = await page.evaluate(
        async ([v, u]) => {
          const t0 = performance.now();
          const rd = (await window.__variants[v](u)).body.getReader();
          const dec = new TextDecoder();
          let t = null;
          for (;;) {
            const { done, value } = await rd.read();
            if (done) break;
            if (t === null && /"content":"[^"]/.test(dec.decode(value))) t = performance.now() - t0;
          }
          return t;
        },
        [v, firstUrl],
      );
      if (r >= 0) first[v].push(ms);
    }
  }
  await page.close();

  const size = measure(path.join(root, 'dist')).total.brotli;
  const otelSize = brotli(path.join(benchDir, 'otel.js'));
  const perChunk = Object.fromEntries(VARIANTS.map((v) => [v, median(cpu[v])]));
  const firstP50 = Object.fromEntries(VARIANTS.map((v) => [v, median(first[v])]));
  // "Added" is paired: the median over rounds (loads) of each round's difference, so a slow
  // round slows every variant in it and cancels out; its interquartile range in brackets.
  const added = (a, b) => a.map((x, i) => x - b[i]);
  const plus = (d, digits, unit) => (median(d) < 0 ? '' : '+') + median(d).toFixed(digits) + unit;
  const spread = (d, digits) => `(IQR ${iqr(d, digits)})`;
  const row = (label, a, b, c) => console.log(`  ${label.padEnd(56)}${String(a).padStart(12)}${String(b).padStart(26)}${String(c).padStart(26)}`);
  console.log(`side by side, same page run, interleaved (Chromium ${browser.version()}):`);
  row('', 'bare fetch', 'llm-rum', 'OpenTelemetry fetch');
  row('always-loaded, brotli', '–', kb(size), kb(otelSize));
  row(`import → init() resolved, median of ${LOADS} fresh loads`, median(ready.bare).toFixed(1) + ' ms', median(ready['llm-rum']).toFixed(1) + ' ms', median(ready.otel).toFixed(1) + ' ms');
  row('  its IQR', iqr(ready.bare), iqr(ready['llm-rum']), iqr(ready.otel));
  const overFloor = (v) => added(ready[v], ready.bare);
  row('  added over the floor, per load (bare: no-op module)', '–', plus(overFloor('llm-rum'), 1, ' ms') + ' ' + spread(overFloor('llm-rum'), 1), plus(overFloor('otel'), 1, ' ms') + ' ' + spread(overFloor('otel'), 1));
  row('  of which init() / start() itself', '–', median(started['llm-rum']).toFixed(1) + ' ms', median(started.otel).toFixed(1) + ' ms');
  row('  import → wasm core in (rum.ready); OpenTelemetry: ready', '–', median(coreIn).toFixed(1) + ' ms', median(ready.otel).toFixed(1) + ' ms');
  row('main-thread task time of the load (CDP TaskDuration)', median(loadCpu.bare).toFixed(1) + ' ms', median(loadCpu['llm-rum']).toFixed(1) + ' ms', median(loadCpu.otel).toFixed(1) + ' ms');
  const cpuOver = (v) => added(loadCpu[v], loadCpu.bare);
  row('  added over the floor, per load', '–', plus(cpuOver('llm-rum'), 1, ' ms') + ' ' + spread(cpuOver('llm-rum'), 1), plus(cpuOver('otel'), 1, ' ms') + ' ' + spread(cpuOver('otel'), 1));
  row('an answer requested right after init(): first token, p50', median(earlyFirst.bare).toFixed(2) + ' ms', median(earlyFirst['llm-rum']).toFixed(2) + ' ms', median(earlyFirst.otel).toFixed(2) + ' ms');
  const earlyOver = (v) => added(earlyFirst[v], earlyFirst.bare);
  row('  app-visible delay over bare fetch, per load', '–', plus(earlyOver('llm-rum'), 2, ' ms') + ' ' + spread(earlyOver('llm-rum'), 2), plus(earlyOver('otel'), 2, ' ms') + ' ' + spread(earlyOver('otel'), 2));
  row(`main-thread CPU per chunk (${events} server writes, ${ROUNDS} rounds)`, perChunk.bare.toFixed(2) + ' µs', perChunk['llm-rum'].toFixed(2) + ' µs', perChunk.otel.toFixed(2) + ' µs');
  const overBare = (v) => added(cpu[v], cpu.bare);
  row('  added over bare fetch, per round', '–', plus(overBare('llm-rum'), 2, ' µs') + ' ' + spread(overBare('llm-rum'), 2), plus(overBare('otel'), 2, ' µs') + ' ' + spread(overBare('otel'), 2));
  // The host's speed moves every absolute figure between runs (bare fetch's own per-chunk
  // time has read 4.3 to 6.6 µs here); the ratio of the two added costs, paired per round, is
  // what one run can tell about llm-rum against its peer.
  const share = overBare('llm-rum').map((d, i) => d / overBare('otel')[i]);
  row("  llm-rum's added cost over OpenTelemetry's, per round", '–', median(share).toFixed(2) + ' ' + spread(share, 2), '1');
  row(`first token to the app, p50 of ${FIRSTS}`, firstP50.bare.toFixed(2) + ' ms', firstP50['llm-rum'].toFixed(2) + ' ms', firstP50.otel.toFixed(2) + ' ms');
  row('  added over bare fetch', '–', '+' + (firstP50['llm-rum'] - firstP50.bare).toFixed(2) + ' ms', '+' + (firstP50.otel - firstP50.bare).toFixed(2) + ' ms');
  console.log("  (import → init(), bare: importing a no-op module of index.js's size, the browser's floor)");
}

async function breakdown() {
  const page = await browser.newPage();
  await page.goto(origin + '/blank.html');
  await page.waitForFunction(() => window.llmRum);
  const result = await page.evaluate(
    async ({ CHUNKS, LONG, ROUNDS }) => {
      const enc = new TextEncoder();
      const event = enc.encode('data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" token"}}]}\n\n');
      // An in-page SSE source: no network, so only the wrapper's own work differs.
      const source = (n) => {
        let i = 0;
        // A byte stream, like a real fetch body.
        return new ReadableStream({
          type: 'bytes',
          pull(c) {
            if (i++ < n) c.enqueue(event.slice());
            else c.close();
          },
        });
      };
      // Load the wasm first with the real fetch; the next init() then captures the fake
      // in-page fetch below as "native". Its instance (one per page, shared by every init())
      // is caught on the way, for its linear memory below.
      let rumMemory = null;
      const instantiate = { s: WebAssembly.instantiateStreaming, b: WebAssembly.instantiate };
      const catchMemory = (f) => async (...a) => {
        const r = await f.apply(WebAssembly, a);
        rumMemory ||= (r.instance || r).exports.memory;
        return r;
      };
      WebAssembly.instantiateStreaming = catchMemory(instantiate.s);
      WebAssembly.instantiate = catchMemory(instantiate.b);
      const first = await window.llmRum.init({ patchGlobals: false });
      await first.ready; // shutdown() before the core is in would not wait for it
      await first.shutdown();
      WebAssembly.instantiateStreaming = instantiate.s;
      WebAssembly.instantiate = instantiate.b;
      let n = CHUNKS;
      globalThis.fetch = async () => new Response(source(n), { headers: { 'content-type': 'text/event-stream' } });
      const fake = globalThis.fetch;
      const records = [];
      const rum = await window.llmRum.init({ patchGlobals: false, onRecord: (r) => records.push(r) });
      await rum.ready;
      const drain = async (res) => {
        const r = res.body.getReader();
        let count = 0;
        for (;;) {
          const { done } = await r.read();
          if (done) return count;
          count++;
        }
      };
      // Without any measurement, the two ways a wrapper can hand the body on: re-streaming (a
      // pull-based byte stream over the body's reader, what the wrapper's stream does for
      // pipes, BYOB and the rest), and a hooked read() that reads the body's reader directly
      // (the wrapper's path for default readers): the share of the cost that is stream machinery.
      const passThrough = async (u) => {
        const src = (await fake(u)).body.getReader();
        let ctl;
        return new Response(new ReadableStream({
          type: 'bytes',
          start: (c) => { ctl = c; },
          pull: () => src.read().then(({ done, value }) => (done ? ctl.close() : ctl.enqueue(value))),
          cancel: (r) => src.cancel(r),
        }));
      };
      const readHook = async (u) => {
        const src = (await fake(u)).body.getReader();
        const body = new ReadableStream({ pull: () => {}, cancel: (r) => src.cancel(r) }, { highWaterMark: 0 });
        const getReader = body.getReader;
        body.getReader = function () {
          const r = getReader.call(this);
          r.read = () => src.read().then((x) => x);
          return r;
        };
        return { body };
      };
      const time = async (f) => {
        gc();
        const t0 = performance.now();
        const count = await drain(await f('/v1/chat/completions'));
        if (count !== n) throw new Error('chunks lost: ' + count);
        return performance.now() - t0;
      };
      const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
      // The same SDK with auto mode off (`observe: false`): with it on (the default) a
      // measured stream nobody names also keeps the answer's text tail and arms the document
      // observer; the difference is auto mode's share of the per-chunk cost.
      const off = await window.llmRum.init({ patchGlobals: false, observe: false });
      await off.ready;
      const native = [], wrapped = [], piped = [], hooked = [], wrappedOff = [];
      await time(fake); await time(rum.fetch); await time(off.fetch); // warm up (JIT, wasm tier-up)
      // Interleaved, and each round starts with a different variant, so none always runs right
      // after another (GC debt and JIT state then fall on all of them alike).
      const runs = [[native, fake], [piped, passThrough], [hooked, readHook], [wrapped, rum.fetch], [wrappedOff, off.fetch]];
      for (let r = 0; r < ROUNDS; r++) {
        for (let i = 0; i < runs.length; i++) {
          const [out, f] = runs[(i + r) % runs.length];
          out.push(await time(f));
        }
      }
      await off.shutdown();
      // The generated glue on its own (js/wasm/llm_rum.js, scripts/build.sh): a second copy of
      // the module the SDK's chunk holds, so it makes an instance of its own from the same file.
      const glue = await import('/glue/llm_rum.js');
      await glue.default({ module_or_path: await WebAssembly.compileStreaming(window.__native('/dist/wasm/llm_rum_bg.wasm')) });
      // The core alone (no stream machinery): one 174-byte OpenAI chunk per call.
      const ev = new TextEncoder().encode('data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}\n\n');
      const core = new glue.Core(JSON.stringify({ pageOrigin: location.origin }));
      const FORGET = 4; // js/codes.js: end without a record
      const ch = core.begin(location.origin + '/x', 'POST', 0, 0, new Uint8Array(32), -1);
      core.response(ch, 0, 200, 'content-type:text/event-stream\n', false);
      const coreRuns = [];
      for (let r = 0; r < ROUNDS; r++) {
        const t0 = performance.now();
        for (let i = 0; i < CHUNKS; i++) core.chunk(ch, i, ev, i);
        coreRuns.push(performance.now() - t0);
      }
      core.end(ch, 0, FORGET);
      // One paint report of an observed answer (per frame, not per chunk): the text probe is
      // located in the answer's tail, the frame goes into the bounded paint buckets.
      const ph = core.begin(location.origin + '/x', 'POST', 0, 0, new Uint8Array(32), -1);
      core.observe(ph, 1); // js/codes.js PAINT_OBSERVED: a named element
      core.response(ph, 0, 200, 'content-type:text/event-stream\n', false);
      for (let i = 0; i < 600; i++) core.chunk(ph, i, ev, i);
      // Worst case: a probe that matches nowhere, so the whole 512-char tail is searched.
      const probe = ' nothing like the answer text here, not at all';
      const paintRuns = [];
      const PAINTS = 20000;
      for (let r = 0; r < ROUNDS; r++) {
        const t0 = performance.now();
        for (let i = 0; i < PAINTS; i++) core.paint(ph, 599 + i, 600 + i, 3600, 1, probe);
        paintRuns.push(performance.now() - t0);
      }
      core.end(ph, 0, FORGET);
      // Memory: the per-request state must not grow with the answer's length. The heap and
      // the SDK's wasm memory after a stream a tenth as long, then after the very long one
      // (each after GC; the first also warms up whatever a first stream allocates for good).
      n = LONG / 10;
      await drain(await rum.fetch('/v1/chat/completions'));
      await rum.flush();
      gc();
      gc(); // twice: what the first frees can hold more (weak maps, finalizers)
      const heap0 = performance.memory.usedJSHeapSize;
      const mem0 = rumMemory.buffer.byteLength;
      n = LONG;
      const tLong0 = performance.now();
      await drain(await rum.fetch('/v1/chat/completions'));
      const longMs = performance.now() - tLong0;
      await rum.flush();
      gc();
      gc();
      const heap1 = performance.memory.usedJSHeapSize;
      const mem1 = rumMemory.buffer.byteLength;
      // Its record as delivered: shown nowhere, auto mode holds it a few frames (flush above).
      const last = records[records.length - 1];

      // Paint observer: main-thread cost per DOM mutation of an observed answer element
      // (MutationObserver callback + one textContent.length read), against the same
      // mutations on an unobserved element. One microtask yield per mutation so each one gets
      // its own observer callback (the worst case: a renderer flushing per token).
      const MUT = 20000;
      const mutate = async (el) => {
        const t0 = performance.now();
        for (let i = 0; i < MUT; i++) {
          el.append('tok ');
          await null;
        }
        return performance.now() - t0;
      };
      let hold;
      globalThis.fetch = async () =>
        new Response(new ReadableStream({ start: (c) => { hold = c; c.enqueue(event.slice()); } }), { headers: { 'content-type': 'text/event-stream' } });
      const prum = await window.llmRum.init({ patchGlobals: false });
      await prum.ready;
      const plain = [], observed = [];
      for (let r = 0; r < ROUNDS; r++) {
        const a = document.body.appendChild(document.createElement('div'));
        plain.push(await mutate(a));
        a.remove();
        const b = document.body.appendChild(document.createElement('div'));
        prum.observe(b);
        const res = await prum.fetch('/v1/chat/completions');
        const rd = res.body.getReader();
        await rd.read(); // the answer's first text arrived: paints now count
        observed.push(await mutate(b));
        hold.close();
        await rd.read();
        b.remove();
      }
      await prum.shutdown();

      // Auto mode (no element named): the document-wide observer exists while a stream waits
      // for its element. A page making 10 000 unrelated mutations per second (167 per 60 Hz
      // frame over 100 elements, e.g. clocks and counters), timed with and without such a
      // stream waiting: the difference per mutation is what auto mode adds (the observer's
      // records and callback, and the frame's check of the changed elements).
      const decoys = Array.from({ length: 100 }, () => document.body.appendChild(document.createElement('span')));
      const busy = async () => {
        let t = 0;
        for (let f = 0; f < 60; f++) {
          const t0 = performance.now();
          for (let i = 0; i < 167; i++) {
            decoys[i % 100].textContent = 'tick ' + f + ':' + i;
            await null;
          }
          t += performance.now() - t0;
          // A frame goes by (the finder's callback in it is timed separately, below).
          await new Promise((r) => requestAnimationFrame(() => r()));
        }
        return t;
      };
      const arum = await window.llmRum.init({ patchGlobals: false });
      await arum.ready;
      const idle = [], armed = [];
      let frameWork = 0;
      const rafOrig = window.requestAnimationFrame;
      for (let r = 0; r < ROUNDS; r++) {
        idle.push(await busy());
        const res = await arum.fetch('/v1/chat/completions');
        const rd = res.body.getReader();
        await rd.read(); // answer text arrived, shown nowhere: auto mode is looking
        // The finder's frame callbacks, timed by wrapping rAF for this round.
        window.requestAnimationFrame = (cb) => rafOrig((ts) => { const t0 = performance.now(); cb(ts); frameWork += performance.now() - t0; });
        armed.push(await busy());
        window.requestAnimationFrame = rafOrig;
        hold.close();
        await rd.read();
      }
      await arum.shutdown();
      decoys.forEach((d) => d.remove());
      return {
        autoIdle: median(idle), autoArmed: median(armed), autoFrames: frameWork / ROUNDS, AUTO_MUT: 60 * 167,
        mutPlain: median(plain), mutObserved: median(observed), MUT,
        native: median(native), piped: median(piped), hooked: median(hooked), wrapped: median(wrapped), wrappedOff: median(wrappedOff), core: median(coreRuns), paint: median(paintRuns) / 20000,
        heap0, heap1, mem0, mem1, longMs, lastChunks: last.chunks, lastTokens: last.outputTokens,
      };
    },
    { CHUNKS, LONG, ROUNDS },
  );
  const us = (ms) => ((ms * 1000) / CHUNKS).toFixed(3);
  console.log(`per-chunk cost, ${CHUNKS} SSE chunks consumed in-page, median of ${ROUNDS} rounds:`);
  console.log(`  native stream          ${result.native.toFixed(1)} ms  (${us(result.native)} µs/chunk)`);
  console.log(`  bare re-stream         ${result.piped.toFixed(1)} ms  (${us(result.piped)} µs/chunk: a pull-based byte stream, no measurement)`);
  console.log(`  bare read() hook       ${result.hooked.toFixed(1)} ms  (${us(result.hooked)} µs/chunk: the body's reader read directly, no measurement)`);
  console.log(`  llm-rum wrapped fetch  ${result.wrapped.toFixed(1)} ms  (${us(result.wrapped)} µs/chunk)`);
  console.log(`  added by llm-rum       ${us(result.wrapped - result.native)} µs/chunk (ratio ${(result.wrapped / result.native).toFixed(2)}x)`);
  console.log(`  of which measurement   ${us(result.wrapped - result.hooked)} µs/chunk (beyond the bare read() hook)`);
  console.log(`  auto mode off          ${result.wrappedOff.toFixed(1)} ms  (${us(result.wrappedOff)} µs/chunk; auto mode's share ${us(result.wrapped - result.wrappedOff)} µs/chunk)`);
  console.log(`  core.chunk() alone     ${us(result.core)} µs per 174-byte OpenAI chunk (wasm parse + metrics)`);
  console.log(`  core.paint() alone     ${(result.paint * 1000).toFixed(3)} µs per painted frame of an observed answer (worst case: a probe found nowhere)`);
  console.log(`memory, after a ${LONG / 10}-chunk stream → after a ${LONG}-chunk one (${result.longMs.toFixed(0)} ms, record: ${result.lastChunks} chunks, ${result.lastTokens} tokens):`);
  const diff = (a, b) => `${b - a >= 0 ? '+' : ''}${b - a}`;
  console.log(`  SDK wasm memory        ${result.mem0} → ${result.mem1} bytes (${diff(result.mem0, result.mem1)})`);
  console.log(`  JS heap after GC       ${result.heap0} → ${result.heap1} bytes (${diff(result.heap0, result.heap1)})`);
  const per = (ms) => ((ms * 1000) / result.MUT).toFixed(3);
  console.log(`paint observer, ${result.MUT} mutations of an answer element (median of ${ROUNDS} rounds):`);
  console.log(`  unobserved element     ${per(result.mutPlain)} µs/mutation`);
  console.log(`  observed by llm-rum    ${per(result.mutObserved)} µs/mutation`);
  console.log(`  added by the observer  ${per(result.mutObserved - result.mutPlain)} µs/mutation`);
  const perA = (ms) => ((ms * 1000) / result.AUTO_MUT).toFixed(3);
  console.log(`auto mode, ${result.AUTO_MUT} unrelated mutations at 10 000/s while a stream waits for its element (median of ${ROUNDS} rounds):`);
  console.log(`  no stream waiting      ${perA(result.autoIdle)} µs/mutation`);
  console.log(`  a stream waiting       ${perA(result.autoArmed)} µs/mutation (+ ${perA(result.autoFrames)} µs/mutation in the frame checks)`);
  console.log(`  added by auto mode     ${perA(result.autoArmed - result.autoIdle + result.autoFrames)} µs/mutation`);
}

/**
 * What a held early answer costs (issue 27): a page whose core never comes (its wasm hangs)
 * reads a 200-chunk, ~240 KiB answer through the early tap, which keeps it for the core. The
 * page's JS heap plus array-buffer backing stores (CDP Runtime.getHeapUsage: the chunks live
 * outside the JS heap) after GC, before and after the read, and after shutdown() lets go.
 */
async function earlyMemory() {
  const page = await browser.newPage();
  const cdp = await page.context().newCDPSession(page);
  await page.goto(origin + '/blank.html');
  await page.waitForFunction(() => window.llmRum);
  const usage = async () => {
    await page.evaluate(async () => {
      for (let i = 0; i < 3; i++) {
        gc();
        await new Promise((res) => setTimeout(res, 20));
      }
    });
    const u = await cdp.send('Runtime.getHeapUsage');
    return u.usedSize + u.backingStorageSize;
  };
  const n = await page.evaluate(async () => {
    const chunk = new TextEncoder().encode('data: {"choices":[{"delta":{"content":"' + 'x'.repeat(1200) + '"}}]}\n\n');
    // The in-page answer; the SDK's own wasm request (init() takes this as the native fetch)
    // goes to the server, which holds it.
    globalThis.fetch = async (u) => {
      if (String(u).includes('.wasm')) return window.__native(u);
      let i = 0;
      const body = new ReadableStream({ type: 'bytes', pull: (c) => (i++ < 200 ? c.enqueue(chunk.slice()) : c.close()) });
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    };
    window.__read = async (f) => {
      const rd = (await f('/v1/chat/completions')).body.getReader();
      let n = 0;
      for (;;) {
        const { done, value } = await rd.read();
        if (done) return n;
        n += value.length;
      }
    };
    const warm = await window.llmRum.init({ patchGlobals: false, wasmUrl: '/dist/wasm/llm_rum_bg.wasm?hang=1' });
    await window.__read(warm.fetch); // the code paths compiled, not measured
    await warm.shutdown();
    window.__rum = await window.llmRum.init({ patchGlobals: false, wasmUrl: '/dist/wasm/llm_rum_bg.wasm?hang=1' });
    return window.__read(globalThis.fetch);
  });
  const base = await usage();
  await page.evaluate(() => window.__read(window.__rum.fetch));
  const held = await usage();
  await page.evaluate(() => window.__rum.shutdown());
  const released = await usage();
  await page.close();
  console.log(`an early answer held for a core that has not come (200 chunks, ${(n / 1024).toFixed(0)} KiB read by the app):`);
  console.log(`  page memory it keeps    +${((held - base) / 1024).toFixed(1)} KiB (JS heap + array buffers after GC: the chunks by reference where the app got them, a copy where a byte stream detached them)`);
  console.log(`  after shutdown()        ${released - base >= 0 ? '+' : ''}${((released - base) / 1024).toFixed(1)} KiB (let go)`);
}

/**
 * A long-lived chat tab (issue 28): SOAK answers in one page through rum.fetch, of lengths drawn
 * log-uniformly from 10 to 100 000 chunks (a fixed seed: the same answers every run), from an
 * in-page stream (no network: the work is the SDK's). After each thousand: the SDK's wasm memory
 * (its instance's linear memory, which never shrinks: growth would show) and the JS heap after
 * GC. `observe: false`: paint state is bounded per request like the rest, and rendering the text
 * of 50 million chunks would measure the DOM, not the SDK.
 */
async function soak() {
  const page = await browser.newPage();
  await page.goto(origin + '/blank.html');
  await page.waitForFunction(() => window.llmRum);
  const t0 = Date.now();
  const rows = await page.evaluate(async (SOAK) => {
    let memory = null;
    const { instantiate } = WebAssembly;
    WebAssembly.instantiate = async (...a) => {
      const r = await instantiate.apply(WebAssembly, a);
      memory ||= (r.instance || r).exports.memory;
      return r;
    };
    const event = new TextEncoder().encode('data: {"choices":[{"index":0,"delta":{"content":" token"}}]}\n\n');
    let n = 0;
    globalThis.fetch = async (u) => {
      if (String(u).includes('.wasm')) return window.__native(u);
      let i = 0;
      const body = new ReadableStream({ type: 'bytes', pull: (c) => (i++ < n ? c.enqueue(event.slice()) : c.close()) });
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    };
    let records = 0;
    const rum = await window.llmRum.init({ patchGlobals: false, observe: false, onRecord: () => records++ });
    await rum.ready;
    WebAssembly.instantiate = instantiate;
    // xorshift32, seeded: the answers' lengths, log-uniform in [10, 100 000].
    let x = 2463534242;
    const rand = () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), (x >>> 0) / 4294967296);
    const out = [];
    let chunks = 0;
    for (let a = 1; a <= SOAK; a++) {
      n = Math.round(10 * 10 ** (4 * rand()));
      chunks += n;
      const r = (await rum.fetch('/v1/chat/completions')).body.getReader();
      while (!(await r.read()).done);
      if (a % 1000 === 0) {
        for (let i = 0; i < 3; i++) {
          gc();
          await new Promise((res) => setTimeout(res, 20));
        }
        out.push({ answers: a, chunks, records, wasm: memory.buffer.byteLength, heap: performance.memory.usedJSHeapSize });
      }
    }
    return out;
  }, SOAK);
  await page.close();
  console.log(`a long-lived tab: ${SOAK} answers of 10–100 000 chunks in one page (${((Date.now() - t0) / 1000).toFixed(0)} s), after each thousand:`);
  for (const r of rows) console.log(`  ${String(r.answers).padStart(5)} answers (${(r.chunks / 1e6).toFixed(1)} M chunks, ${r.records} records)   wasm memory ${(r.wasm / 1024).toFixed(0)} KiB   JS heap ${(r.heap / 1024).toFixed(0)} KiB`);
  if (rows.length > 1) {
    const first = rows[0];
    const last = rows[rows.length - 1];
    console.log(`  past the first thousand: wasm memory ${last.wasm - first.wasm >= 0 ? '+' : ''}${((last.wasm - first.wasm) / 1024).toFixed(0)} KiB, JS heap ${last.heap - first.heap >= 0 ? '+' : ''}${((last.heap - first.heap) / 1024).toFixed(0)} KiB`);
    // Flat means: the wasm memory never grows again (it only grows by whole 64 KiB pages, and
    // every answer's state is freed), and the heap moves by less than SOAK_HEAP_KIB (GC timing,
    // V8's own caches), whatever the number of answers.
    const flat = last.wasm === first.wasm && Math.abs(last.heap - first.heap) <= SOAK_HEAP_KIB * 1024;
    console.log(`  bound: wasm +0 KiB, JS heap ±${SOAK_HEAP_KIB} KiB → ${flat ? 'flat' : 'GROWING'}`);
  }
}
