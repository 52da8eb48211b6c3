import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS } from '../playwright.config.js';
import { startServer } from '../tests/e2e/server.js';
const server = await startServer({ listeners: 1 });
const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
try {
  const p = await b.newPage({ viewport: { width: 1400, height: 1000 } });
  p.on('console', (m) => console.log('console:', m.text()));
  p.on('pageerror', (e) => console.log('pageerror:', e));
  await p.goto(server.origins[0].replace('127.0.0.1', '127.0.0.1') + '/demo/index.html');
  await p.evaluate(() => window.demo.ready);
  await p.click('#ask');
  await p.waitForFunction(() => window.demo.history.length >= 1, null, { timeout: 20000 });
  await p.waitForTimeout(300);
  await p.screenshot({ path: 'scratch/demo.png', fullPage: true });
  console.log(JSON.stringify(await p.evaluate(() => Object.fromEntries(Object.entries(window.demo.history[0].records).map(([k, r]) => [k, { ttft: r.ttft, pt: r.perceivedTtft, ptot: r.perceivedTotal, st: r.stalls, q: r.serverTiming }])))));
} finally { await b.close(); await server.stop(); }
