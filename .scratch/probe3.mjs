// WebKit/Firefox: early fetch headers lag, SDK vs native, repeated.
import { openWebDriver } from '/work/main/tests/e2e/engines.js';
import { startServer } from '/work/main/tests/e2e/server.js';
const server = await startServer({ listeners: 1 });
const O = server.origins[0];
const engine = process.argv[2] || 'webkit';
const b = await openWebDriver(engine);
try {
  for (let i = 0; i < 12; i++) {
    const mode = ['native', 'sdk', 'sdk-nowasm'][i % 3];
    await b.goto(`${O}/blank.html`);
    await b.waitFor('window.llmRum !== undefined && window.__scenario !== undefined');
    const id = `p3-${i}-${Date.now()}`;
    const out = JSON.parse(await b.evaluate(`(async () => {
      const mode = ${JSON.stringify(mode)};
      const marks = [];
      let rum = null;
      const t0 = performance.now();
      if (mode === 'sdk') rum = await window.llmRum.init({ wasmUrl: '/dist/wasm/llm_rum_bg.wasm' });
      if (mode === 'sdk-nowasm') rum = await window.llmRum.init({ wasmUrl: '/dist/wasm/llm_rum_bg.wasm?hang=1' });
      const tc = performance.now();
      const res = await fetch('/v1/chat/completions?prefill_ms=150&tokens=3', { method: 'POST', headers: { 'content-type': 'application/json', 'x-test-id': '${id}' }, body: '{"stream":true}' });
      const th = performance.now();
      await res.text();
      let readyAt = null;
      if (mode === 'sdk') { await rum.ready; readyAt = performance.now(); }
      if (rum) await rum.shutdown();
      return JSON.stringify({ tc, th, readyAt, o: performance.timeOrigin, t0 });
    })()`));
    const t = await (await fetch(`${O}/__truth?test_id=${id}&wait_ms=5000`)).json();
    console.log(engine, mode, 'headLag', (out.o + out.th - (t.received_unix_ms + t.headers_ms)).toFixed(1), 'ready', out.readyAt && (out.readyAt - out.t0).toFixed(1));
  }
} finally { await b.quit(); await server.stop(); }
