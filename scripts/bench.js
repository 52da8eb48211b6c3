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
        return new ReadableStream({
          pull(c) {
            if (i++ < n) c.enqueue(event.slice());
            else c.close();
          },
        }, { highWaterMark: 0 });
      };
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
      // A bare pass-through TransformStream: the share of the cost that is the stream
      // machinery itself, not the measurement.
      const passThrough = async (u) => {
        const res = await fake(u);
        return new Response(res.body.pipeThrough(new TransformStream({ transform: (c, ctl) => ctl.enqueue(c) })));
      };
      const time = async (f) => {
        const t0 = performance.now();
        const count = await drain(await f('/v1/chat/completions'));
        if (count !== n) throw new Error('chunks lost: ' + count);
        return performance.now() - t0;
      };
      const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
      const native = [], wrapped = [], piped = [];
      await time(fake); await time(rum.fetch); // warm up (JIT, wasm tier-up)
      for (let r = 0; r < ROUNDS; r++) {
        native.push(await time(fake));
        piped.push(await time(passThrough));
        wrapped.push(await time(rum.fetch));
      }
      const wasm = await (await import('/dist/wasm/llm_rum.js')).default();
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
      const last = records[records.length - 1];
      return {
        native: median(native), piped: median(piped), wrapped: median(wrapped),
        heap0, heap1, mem0, mem1, longMs, lastChunks: last.chunks, lastTokens: last.outputTokens,
      };
    },
    { CHUNKS, LONG, ROUNDS },
  );
  const us = (ms) => ((ms * 1000) / CHUNKS).toFixed(3);
  console.log(`per-chunk cost, ${CHUNKS} SSE chunks consumed in-page, median of ${ROUNDS} rounds:`);
  console.log(`  native stream          ${result.native.toFixed(1)} ms  (${us(result.native)} µs/chunk)`);
  console.log(`  bare TransformStream   ${result.piped.toFixed(1)} ms  (${us(result.piped)} µs/chunk)`);
  console.log(`  llm-rum wrapped fetch  ${result.wrapped.toFixed(1)} ms  (${us(result.wrapped)} µs/chunk)`);
  console.log(`  added by llm-rum       ${us(result.wrapped - result.native)} µs/chunk (ratio ${(result.wrapped / result.native).toFixed(2)}x)`);
  console.log(`  of which measurement   ${us(result.wrapped - result.piped)} µs/chunk (beyond a bare pass-through)`);
  console.log(`memory, one ${LONG}-chunk stream (${result.longMs.toFixed(0)} ms, record: ${result.lastChunks} chunks, ${result.lastTokens} tokens):`);
  console.log(`  wasm linear memory     ${result.mem0} → ${result.mem1} bytes`);
  console.log(`  JS heap after GC       ${result.heap0} → ${result.heap1} bytes (${result.heap1 - result.heap0 >= 0 ? '+' : ''}${result.heap1 - result.heap0})`);
} finally {
  await browser.close();
  await server.stop();
}
