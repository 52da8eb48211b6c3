const { chromium } = require('@playwright/test');
(async () => {
  const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless','--no-sandbox','--disable-gpu'] });
  const p = await b.newPage();
  await p.setContent('<div id=m></div>');
  const r = await p.evaluate(async () => {
    const types = PerformanceObserver.supportedEntryTypes;
    const out = { types, loafProps: [], etProps: [] };
    const got = [];
    new PerformanceObserver((l) => got.push(...l.getEntries())).observe({ type: 'long-animation-frame', buffered: true });
    const et = [];
    new PerformanceObserver((l) => et.push(...l.getEntries())).observe({ type: 'element', buffered: true });
    const m = document.getElementById('m');
    const s = document.createElement('span'); s.setAttribute('elementtiming', 'x'); s.textContent = 'hello world';
    m.append(s);
    const t0 = performance.now(); while (performance.now() - t0 < 120);
    await new Promise(r => setTimeout(r, 300));
    if (got[0]) { const e = got[0].toJSON(); out.loaf = e; }
    if (et[0]) out.et = et[0].toJSON();
    return out;
  });
  console.log(JSON.stringify(r, null, 1));
  await b.close();
})();
