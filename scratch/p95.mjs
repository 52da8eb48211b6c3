import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS } from '../playwright.config.js';
import { startServer } from '../tests/e2e/server.js';
const server = await startServer({ listeners: 1 });
const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
try {
  const p = await b.newPage();
  await p.goto(server.origins[0] + '/blank.html');
  await p.waitForFunction(() => window.llmRum);
  await p.evaluate(async () => (await import('/helpers.js')).startRum());
  for (const q of ['headers=late&prefill_ms=400&gap_ms=30&jitter_ms=8&tokens=90', 'prefill_ms=80&gap_ms=30&tokens=40', 'prefill_ms=80&gap_ms=30&tokens=90']) {
    const r = await p.evaluate(async (q) => (await import('/helpers.js')).renderAnswer('streamed', q), q);
    console.log(q, JSON.stringify(r.rec.renderDelay), r.rec.chars, r.rec.paintErrorMs);
  }
} finally { await b.close(); await server.stop(); }
