import { chromium } from '@playwright/test';
import { startServer } from '/work/main/tests/e2e/server.js';
const server = await startServer({ listeners: 1 });
const O = server.origins[0];
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless','--no-sandbox','--disable-gpu','--disable-quic','--no-first-run','--disable-background-networking','--disable-component-update','--disable-sync'] });
const page = await browser.newPage();
for (const mode of ['native','sdk','native','sdk','sdk-nopaint']) {
  await page.goto(`${O}/blank.html`);
  await page.waitForFunction(() => window.llmRum !== undefined);
  const id = 'probe-' + mode + Date.now();
  const out = await page.evaluate(async ({mode, id}) => {
    const tasks = [];
    const po = new PerformanceObserver((l) => tasks.push(...l.getEntries().map(e => [e.entryType, +e.startTime.toFixed(1), +e.duration.toFixed(1)])));
    po.observe({ type: 'long-animation-frame', buffered: false });
    let rum = null;
    if (mode.startsWith('sdk')) rum = await window.llmRum.init({ wasmUrl: '/dist/wasm/llm_rum_bg.wasm', observe: mode === 'sdk' ? 'auto' : false });
    const t0 = performance.now();
    const res = await fetch('/v1/chat/completions?prefill_ms=150&tokens=3', { method: 'POST', headers: { 'content-type': 'application/json', 'x-test-id': id }, body: '{"stream":true}' });
    const th = performance.now();
    await res.text();
    let readyAt = null;
    if (rum) { await rum.ready; readyAt = performance.now(); }
    await new Promise(r => setTimeout(r, 100));
    return { t0, th, readyAt, tasks, origin: performance.timeOrigin };
  }, {mode, id});
  const t = await (await fetch(`${O}/__truth?test_id=${id}&wait_ms=5000`)).json();
  const headLag = out.origin + out.th - (t.received_unix_ms + t.headers_ms);
  console.log(mode, 'headLag', headLag.toFixed(1), 'call→headers', (out.th - out.t0).toFixed(1), 'ready', out.readyAt && (out.readyAt - out.t0).toFixed(1), JSON.stringify(out.tasks));
}
await browser.close(); await server.stop();
