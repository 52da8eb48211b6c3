// Benchmarks (figures, not pass/fail): per-chunk main-thread cost of the wrapper and memory
// after a very long stream. Runs in the system Chromium against pages served by the scripted
// server. Ratios are measured within one run (this machine is shared and noisy).
//
//   node scripts/bench.js [--chunks 100000] [--long 1000000]
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS } from '../playwright.config.js';
import { startServer } from '../tests/e2e/server.js';

const arg = (name, dflt) => {
  const i = process.argv.indexOf('--' + name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const CHUNKS = arg('chunks', 100_000);
const LONG = arg('long', 1_000_000);
const ROUNDS = 5;

const server = await startServer({ listeners: 1 });
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: [...CHROMIUM_ARGS, '--enable-precise-memory-info', '--js-flags=--expose-gc'],
});
try {
  const page = await browser.newPage();
  await page.goto(server.origins[0] + '/blank.html');
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
      // in-page fetch below as "native".
      await (await window.llmRum.init({ patchGlobals: false })).shutdown();
      let n = CHUNKS;
      globalThis.fetch = async () => new Response(source(n), { headers: { 'content-type': 'text/event-stream' } });
      const fake = globalThis.fetch;
      const records = [];
      const rum = await window.llmRum.init({ patchGlobals: false, onRecord: (r) => records.push(r) });
      const drain = async (res) => {
        const r = res.body.getReader();
        let count = 0;
        for (;;) {
          const { done } = await r.read();
          if (done) return count;
          count++;
        }
      };
      // The same re-streaming the wrapper does (a pull-based byte stream over the body's
      // reader) without any measurement: the share of the cost that is stream machinery.
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
      const time = async (f) => {
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
      const native = [], wrapped = [], piped = [], wrappedOff = [];
      await time(fake); await time(rum.fetch); await time(off.fetch); // warm up (JIT, wasm tier-up)
      for (let r = 0; r < ROUNDS; r++) {
        native.push(await time(fake));
        piped.push(await time(passThrough));
        wrapped.push(await time(rum.fetch));
        wrappedOff.push(await time(off.fetch));
      }
      await off.shutdown();
      const glue = await import('/dist/wasm/llm_rum.js');
      const wasm = await glue.default();
      // The core alone (no stream machinery): one 174-byte OpenAI chunk per call.
      const ev = new TextEncoder().encode('data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}\n\n');
      const core = new glue.Core(JSON.stringify({ pageOrigin: location.origin }));
      const FORGET = 4; // js/codes.js: end without a record
      const ch = core.begin(location.origin + '/x', 'POST', 0, 0, new Uint8Array(32), -1);
      core.response(ch, 0, 200, new Headers({ 'content-type': 'text/event-stream' }), false);
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
      core.response(ph, 0, 200, new Headers({ 'content-type': 'text/event-stream' }), false);
      for (let i = 0; i < 600; i++) core.chunk(ph, i, ev, i);
      // Worst case: a probe that matches nowhere, so the whole 512-char tail is searched.
      const probe = ' nothing like the answer text here, not at all';
      const paintRuns = [];
      const PAINTS = 20000;
      for (let r = 0; r < ROUNDS; r++) {
        const t0 = performance.now();
        for (let i = 0; i < PAINTS; i++) core.paint(ph, 600 + i, 3600, 1, probe);
        paintRuns.push(performance.now() - t0);
      }
      core.end(ph, 0, FORGET);
      // Memory: one very long stream; the per-request state must not grow with length.
      gc();
      const heap0 = performance.memory.usedJSHeapSize;
      const mem0 = wasm.memory.buffer.byteLength;
      n = LONG;
      const tLong0 = performance.now();
      await drain(await rum.fetch('/v1/chat/completions'));
      const longMs = performance.now() - tLong0;
      gc();
      const heap1 = performance.memory.usedJSHeapSize;
      const mem1 = wasm.memory.buffer.byteLength;
      // Its record as delivered: shown nowhere, auto mode holds it a few frames (flush: now).
      await rum.flush();
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
        native: median(native), piped: median(piped), wrapped: median(wrapped), wrappedOff: median(wrappedOff), core: median(coreRuns), paint: median(paintRuns) / 20000,
        heap0, heap1, mem0, mem1, longMs, lastChunks: last.chunks, lastTokens: last.outputTokens,
      };
    },
    { CHUNKS, LONG, ROUNDS },
  );
  const us = (ms) => ((ms * 1000) / CHUNKS).toFixed(3);
  console.log(`per-chunk cost, ${CHUNKS} SSE chunks consumed in-page, median of ${ROUNDS} rounds:`);
  console.log(`  native stream          ${result.native.toFixed(1)} ms  (${us(result.native)} µs/chunk)`);
  console.log(`  bare re-stream        ${result.piped.toFixed(1)} ms  (${us(result.piped)} µs/chunk)`);
  console.log(`  llm-rum wrapped fetch  ${result.wrapped.toFixed(1)} ms  (${us(result.wrapped)} µs/chunk)`);
  console.log(`  added by llm-rum       ${us(result.wrapped - result.native)} µs/chunk (ratio ${(result.wrapped / result.native).toFixed(2)}x)`);
  console.log(`  of which measurement   ${us(result.wrapped - result.piped)} µs/chunk (beyond a bare pass-through)`);
  console.log(`  auto mode off          ${result.wrappedOff.toFixed(1)} ms  (${us(result.wrappedOff)} µs/chunk; auto mode's share ${us(result.wrapped - result.wrappedOff)} µs/chunk)`);
  console.log(`  core.chunk() alone     ${us(result.core)} µs per 174-byte OpenAI chunk (wasm parse + metrics)`);
  console.log(`  core.paint() alone     ${(result.paint * 1000).toFixed(3)} µs per painted frame of an observed answer (worst case: a probe found nowhere)`);
  console.log(`memory, one ${LONG}-chunk stream (${result.longMs.toFixed(0)} ms, record: ${result.lastChunks} chunks, ${result.lastTokens} tokens):`);
  console.log(`  wasm linear memory     ${result.mem0} → ${result.mem1} bytes`);
  console.log(`  JS heap after GC       ${result.heap0} → ${result.heap1} bytes (${result.heap1 - result.heap0 >= 0 ? '+' : ''}${result.heap1 - result.heap0})`);
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
} finally {
  await browser.close();
  await server.stop();
}
