const { chromium } = require('@playwright/test');
const http = require('http');
const srv = http.createServer((q, s) => { s.setHeader('content-type','text/html'); s.end('<!doctype html><body><div id=m></div></body>'); }).listen(0, '127.0.0.1');
(async () => {
  const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless','--no-sandbox',] });
  const p = await b.newPage();
  await p.goto('http://127.0.0.1:' + srv.address().port + '/');
  const r = await p.evaluate(async () => {
    const et = [], icp = [];
    new PerformanceObserver((l) => et.push(...l.getEntries().map(e=>e.toJSON()))).observe({ type: 'element', buffered: true });
    new PerformanceObserver((l) => icp.push(...l.getEntries().map(e=>e.toJSON()))).observe({ type: 'interaction-contentful-paint', buffered: true });
    const m = document.getElementById('m');
    const br = [];
    for (let i = 0; i < 3; i++) {
      await new Promise(r => setTimeout(r, 50));
      const s = document.createElement('span'); s.setAttribute('elementtiming', 'x' + i); s.textContent = 'hello world ' + i;
      m.append(s);
      const tm = performance.now();
      await new Promise(res => requestAnimationFrame(() => { const lo = performance.now(); const c = new MessageChannel(); c.port1.onmessage = () => { br.push({tm, lo, hi: performance.now()}); res(); }; c.port2.postMessage(0); }));
    }
    await new Promise(r => setTimeout(r, 300));
    return { et, icp, br };
  });
  console.log(JSON.stringify(r, null, 1));
  await b.close(); srv.close();
})();
