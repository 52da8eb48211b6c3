import { chromium } from 'playwright-core';
const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless','--no-sandbox','--js-flags=--expose-gc'] });
const p = await b.newPage(); const cdp = await p.context().newCDPSession(p);
console.log(await cdp.send('Runtime.getHeapUsage'));
await p.evaluate(() => { window.x = new Uint8Array(1 << 20); gc(); });
console.log(await cdp.send('Runtime.getHeapUsage'));
await b.close();
