// The demo page (issue 6) as a person uses it: open it, click Ask, read the four panes. The
// numbers are the panes' llm-rum records; the assertions are the point the page makes:
// buffering makes the person wait for the whole answer, streaming shows the first word a frame
// after it arrives, a janky renderer stalls the answer itself, and background load grows the
// server queue while the per-token time stays put. Beacons reach the real collector. The
// screenshot is kept as a test artifact (test-results/playwright/…/demo.png).
import { test, expect } from '@playwright/test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ORIGIN } from './util.js';
import { startCollector } from './server.js';

const FRAME_TOL = 20; // one 60 Hz frame + scheduling slack

let dir;
let col;
test.beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llm-rum-demo-'));
  const alt = ORIGIN().replace('127.0.0.1', 'localhost');
  col = await startCollector(['--db', path.join(dir, 'rum.db'), '--allow-origin', ORIGIN(), '--allow-origin', alt, '--rate-limit', '0']);
});
test.afterAll(async () => {
  await col.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const asks = (page) => page.evaluate(() => window.demo.history.length);
async function askAndWait(page) {
  const before = await asks(page);
  await page.click('#ask');
  await page.waitForFunction((n) => window.demo.history.length > n, before, { timeout: 30_000 });
  return page.evaluate(() => window.demo.history[window.demo.history.length - 1]);
}
const queueOf = (r) => (r.serverTiming.find((e) => e.name === 'queue') || {}).dur;

/** Opens the demo page with its records going to the test's collector; returns the page errors. */
async function openDemo(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.setViewportSize({ width: 1400, height: 1000 });
  const c = col.origins[0];
  await page.goto(`${ORIGIN()}/demo/index.html?collector=${encodeURIComponent(c + '/v1/rum')}&dashboard=${encodeURIComponent(c + '/')}`);
  // demo.js is a module with a top-level await: the load event can come before it has run.
  await page.waitForFunction(() => window.demo);
  await page.evaluate(() => window.demo.ready);
  return errors;
}

test('the demo makes its point: buffered waits for everything, streamed paints a frame after the token, janky stalls, load grows the queue only', async ({ page }, testInfo) => {
  test.setTimeout(90_000);
  const errors = await openDemo(page);
  const c = col.origins[0];

  // Warm up once (cold frames: first fetch, first layout, wasm tier-up), then measure.
  await askAndWait(page);
  const quiet = await askAndWait(page);
  const { streamed, buffered, throttled, janky } = quiet.records;
  for (const r of [streamed, buffered, throttled, janky]) {
    expect(r.outcome).toBe('ok');
    // The click, handed to the pane (to frames on the shared epoch clock): before the request
    // start, within the SDK's 1 s window. Typically 0.2–20 ms (a cross-process message hop);
    // 66 ms seen on a cold first ask in CI; 0 at the 100 µs clock grain.
    expect(r.marks.interaction).not.toBeNull();
    expect(r.marks.interaction).toBeLessThanOrEqual(0);
    expect(r.marks.interaction).toBeGreaterThan(-1000);
    expect(r.marks.firstPaint).not.toBeNull();
    expect(queueOf(r)).toBeLessThan(50); // 4 panes, 4 generation slots: nobody queues
    // The scenario's model, as the stream names it; the provider from the page's `models`.
    expect([r.model, r.modelSource, r.provider]).toEqual(['demo-steady', 'stream', 'llm-rum-demo']);
  }
  // Buffered: the first word appears with the last, so perceived TTFT ≈ perceived total.
  expect(Math.abs(buffered.perceivedTtft - buffered.perceivedTotal)).toBeLessThanOrEqual(FRAME_TOL);
  expect(buffered.buffered).toBe(true);
  expect(buffered.perceivedTtft).toBeGreaterThan(buffered.ttft + 2000);
  // Streamed: perceived TTFT = click→request + ttft + at most a frame to paint, and the frame
  // the screen shows it in (paint times are when the screen showed the frame: issue 30).
  const clickToRequest = -streamed.marks.interaction;
  const overTtft = streamed.perceivedTtft - clickToRequest - streamed.ttft;
  expect(overTtft).toBeGreaterThanOrEqual(0);
  expect(overTtft).toBeLessThanOrEqual(FRAME_TOL + 1000 / 60);
  expect(streamed.stalls.count).toBe(0);
  // Janky: the answer itself stalls, and the page is to blame.
  expect(janky.stalls.render).toBeGreaterThanOrEqual(1);
  expect(janky.stallList.some((s) => s.cause === 'render' && s.blame)).toBe(true);
  expect(throttled.renderDelay.p50).toBeGreaterThanOrEqual(50);
  // Nothing upstream buffers the steady stream — not even where the janky page's blocking
  // made the text pile up between its reads (its own doing, not the network's).
  for (const [kind, r] of Object.entries(quiet.records)) {
    expect(r.upstreamBuffered, kind).toBe(false);
    expect(r.upstreamHints, kind).toEqual([]);
  }
  expect(janky.delivery.eventsPerArrival.max).toBeGreaterThan(1);

  // The figure: the state after a quiet ask. Looked at by a person; kept as an artifact.
  await page.waitForTimeout(300);
  const shot = testInfo.outputPath('demo.png');
  await page.screenshot({ path: shot, fullPage: true });
  await testInfo.attach('demo', { path: shot, contentType: 'image/png' });

  // Background load: 8 requests keep the 4 generation slots busy; the panes queue behind them.
  await page.fill('#loadN', '8');
  await page.click('#load');
  await page.waitForTimeout(400);
  const loaded = await askAndWait(page);
  await page.click('#load'); // stop
  for (const kind of ['streamed', 'buffered', 'throttled', 'janky']) {
    const q0 = queueOf(quiet.records[kind]);
    const q1 = queueOf(loaded.records[kind]);
    expect(q1, `${kind} queue under load`).toBeGreaterThan(q0 + 300);
    const t0 = quiet.records[kind].tpot;
    const t1 = loaded.records[kind].tpot;
    expect(Math.abs(t1 - t0) / t0, `${kind} tpot ${t0} → ${t1}`).toBeLessThanOrEqual(0.2);
    // The queue shows up in what the person waited for.
    expect(loaded.records[kind].perceivedTtft).toBeGreaterThan(quiet.records[kind].perceivedTtft + 300);
  }
  await page.screenshot({ path: testInfo.outputPath('demo-under-load.png'), fullPage: true });

  // The collector got the panes' records (beacons from both loopback origins).
  await page.evaluate(() => new Promise((r) => setTimeout(r, 1500))); // past the 1 s batch delay
  let summary;
  for (let i = 0; i < 50; i++) {
    summary = await (await fetch(`${c}/api/summary`)).json();
    if (summary.count >= 12) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  expect(summary.count).toBeGreaterThanOrEqual(12);
  expect(summary.metrics.perceivedTtft.count).toBeGreaterThanOrEqual(12);
  expect(summary.stallCauses.render).toBeGreaterThanOrEqual(2);
  // Buffering per route: the buffered pane's UI (a quarter of the answers), nothing upstream.
  const route = summary.routes.find((r) => r.route === '/v1/chat/completions');
  expect(route.count).toBe(summary.count);
  expect(route.bufferedRate).toBeCloseTo(0.25, 5);
  expect(route.upstreamBufferedRate).toBe(0);
  expect(summary.upstreamBufferedRate).toBe(0);
  expect(errors).toEqual([]);
});

test('behind a buffering proxy: the bursts on the arrival timeline, and what to change', async ({ page }, testInfo) => {
  test.setTimeout(60_000);
  const since = Date.now();
  const errors = await openDemo(page);
  const c = col.origins[0];
  await page.selectOption('#scenario', { label: 'behind a buffering proxy' });
  const { records } = await askAndWait(page);
  for (const [kind, r] of Object.entries(records)) {
    expect(r.outcome, kind).toBe('ok');
    // ~22 KB through a 4 KB buffer: a handful of bursts of ~17 events each.
    expect(r.delivery.arrivals, kind).toBeGreaterThanOrEqual(4);
    expect(r.delivery.arrivals, kind).toBeLessThanOrEqual(8);
    expect(r.delivery.eventsPerArrival.p50, kind).toBeGreaterThanOrEqual(8);
    // The janky pane blocks its read loop for 300 ms (twice in some bursts) inside gaps of
    // ~500 ms: the time the page itself was busy is never counted as the network's silence,
    // so whether its bursts still show depends on how the blocks fell. The others: always.
    if (kind === 'janky') expect(typeof r.upstreamBuffered, kind).toBe('boolean');
    else expect(r.upstreamBuffered, kind).toBe(true);
  }
  // Two different fixes, side by side: the buffered pane's UI buffers too.
  expect(records.buffered.buffered).toBe(true);
  expect(records.streamed.buffered).toBe(false);
  await page.waitForTimeout(300);
  const streamed = page.locator('section.pane').first();
  expect(await streamed.locator('svg.tl rect.burst').count()).toBeGreaterThanOrEqual(4);
  await expect(streamed.locator('.advice')).toContainText('X-Accel-Buffering: no');
  await expect(page.locator('section.pane').nth(1).locator('.advice')).toContainText('render text as it arrives');
  const shot = testInfo.outputPath('demo-buffering-proxy.png');
  await page.screenshot({ path: shot, fullPage: true });
  await testInfo.attach('demo-buffering-proxy', { path: shot, contentType: 'image/png' });
  expect(await page.evaluate(() => window.demoErrors)).toEqual([]);
  // At the collector, per route, the two fixes side by side: the answers upstream-buffered,
  // and a quarter (the buffered pane) buffered by its UI as well.
  let route;
  for (let i = 0; i < 50 && !(route && route.count >= 4); i++) {
    await new Promise((r) => setTimeout(r, 200));
    const s = await (await fetch(`${c}/api/summary?from=${since}`)).json();
    route = s.routes.find((r) => r.route === '/v1/chat/completions');
  }
  expect(route.count).toBe(4);
  const upstream = Object.values(records).filter((r) => r.upstreamBuffered).length / 4;
  expect([route.upstreamBufferedRate, route.bufferedRate]).toEqual([upstream, 0.25]);
  // And the dashboard shows it.
  await page.goto(`${c}/`);
  await expect(page.locator('#routes tbody tr').first()).toContainText('/v1/chat/completions');
  await expect(page.locator('#tiles')).toContainText('upstream buffered');
  // The per-model table: the model the demo's stream named, its answers, upstream buffering.
  const model = page.locator('#models tbody tr', { hasText: 'demo-steady' });
  await expect(model).toHaveCount(1);
  const s = await (await fetch(`${c}/api/summary`)).json();
  const m = s.models.find((x) => x.model === 'demo-steady');
  await expect(model.locator('td').nth(1)).toHaveText(String(m.count));
  expect(m.count).toBeGreaterThanOrEqual(4);
  expect(m.ttft.p95).toBeGreaterThan(0);
  await page.screenshot({ path: testInfo.outputPath('dashboard-buffering.png'), fullPage: true });
  expect(errors).toEqual([]);
});
