import { chromium } from 'playwright-core';
import { startServer } from '/work/main/tests/e2e/server.js';
const server = await startServer({ listeners: 1 });
const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless','--no-sandbox','--js-flags=--expose-gc'] });
const p = await b.newPage();
p.on('console', m => console.log('page:', m.text()));
await p.goto(server.origins[0] + '/blank.html'); await p.waitForFunction(() => window.llmRum);
console.log(await p.evaluate(async () => {
  const chunk = new TextEncoder().encode('data: {"choices":[{"delta":{"content":"' + 'x'.repeat(1200) + '"}}]}\n\n');
  globalThis.fetch = async () => { let i = 0; return new Response(new ReadableStream({ type: 'bytes', pull: (c) => (i++ < 200 ? c.enqueue(chunk.slice()) : c.close()) }), { headers: { 'content-type': 'text/event-stream' } }); };
  const rum = await window.llmRum.init({ patchGlobals: false, wasmUrl: '/dist/wasm/llm_rum_bg.wasm?hang=1' });
  const res = await rum.fetch('/x');
  const rd = res.body.getReader(); const got = [];
  for (;;) { const { done, value } = await rd.read(); if (done) break; got.push(value); }
  return JSON.stringify({ n: got.length, ctor: res.constructor.name, own: Object.getOwnPropertyNames(res.body) });
}));
await b.close(); await server.stop();
