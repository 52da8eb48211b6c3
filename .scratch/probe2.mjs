import { chromium } from '@playwright/test';
import { startServer } from '/work/main/tests/e2e/server.js';
const server = await startServer({ listeners: 1 });
const O = server.origins[0];
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless','--no-sandbox','--disable-gpu','--disable-quic','--no-first-run','--disable-background-networking','--disable-component-update','--disable-sync'] });
const page = await browser.newPage();
for (let i = 0; i < 4; i++) {
  await page.goto(`${O}/blank.html`);
  await page.waitForFunction(() => window.llmRum !== undefined);
  const out = await page.evaluate(async () => {
    const marks = [];
    const { instantiateStreaming } = WebAssembly;
    WebAssembly.instantiateStreaming = async (...a) => { marks.push(['iS-start', performance.now()]); const r = await instantiateStreaming(...a); marks.push(['iS-end', performance.now()]); return r; };
    const t0 = performance.now();
    const rum = await window.llmRum.init({});
    marks.push(['init-resolved', performance.now()]);
    await rum.ready;
    marks.push(['ready', performance.now()]);
    const res = performance.getEntriesByType('resource').filter(e => /dist/.test(e.name)).map(e => [e.name.split('/').pop().slice(0, 20), +(e.startTime - t0).toFixed(1), +(e.responseEnd - t0).toFixed(1)]);
    return { marks: marks.map(([k, t]) => [k, +(t - t0).toFixed(1)]), res };
  });
  console.log(JSON.stringify(out));
}
await browser.close(); await server.stop();
