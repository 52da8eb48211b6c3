import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS } from '../playwright.config.js';
const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
try {
  const p = await b.newPage({ viewport: { width: 1280, height: 900 } });
  p.on('console', (m) => m.type() !== 'log' && console.log('console:', m.text()));
  await p.goto('http://127.0.0.1:8080/');
  await p.evaluate(() => window.demo.ready);
  await p.selectOption('#scenario', { index: 1 });
  await p.click('#ask');
  await p.waitForFunction(() => window.demo.history.length >= 1, null, { timeout: 20000 });
  await p.waitForTimeout(2500);
  await p.screenshot({ path: 'scratch/live.png', fullPage: true });
  const s = await (await fetch('http://127.0.0.1:4319/api/summary')).json();
  console.log('collector count', s.count, 'stallCauses', JSON.stringify(s.stallCauses));
} finally { await b.close(); }
