// The `openai` npm client (bundled with Vite together with the llm-rum package, as an app
// would) streams from the scripted server through rum.fetch, and the record is right.
import { test, expect } from '@playwright/test';
import { ORIGIN, contentWrites, lag } from './util.js';

test('openai-node with fetch: rum.fetch streams unchanged and is measured against ground truth', async ({ page }) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.goto(`${ORIGIN()}/openai-app/index.html`);
  await page.waitForFunction(() => window.ready && document.getElementById('status').textContent !== 'loading');
  expect(await page.textContent('#status')).toBe('ready');
  // The client cannot add query parameters: the scenario rides in the model name.
  await page.evaluate(() => window.ready.then(() => window.ask('default?prefill_ms=5&gap_ms=5&tokens=5'))); // warm-up
  // With the core in: a request made before it goes out without our traceparent (the core
  // decides that: issue 27), and this one checks the trace link.
  expect(await page.evaluate(() => window.rum.ready)).toBe(true);
  const out = await page.evaluate(() => window.ask('default?prefill_ms=150&gap_ms=25&tokens=30&stall_at=15&stall_ms=300'));
  // The record is finished when the body ends, which may be just after the client's loop.
  await page.waitForFunction((n) => window.records.length >= n, 2, { timeout: 5000 });
  const rec = await page.evaluate(() => window.records[window.records.length - 1]);
  out.requestId = rec && rec.correlation['x-request-id'];
  expect(rec, 'a record for the request').toBeTruthy();
  const res = await fetch(`${ORIGIN()}/__truth?id=${encodeURIComponent(out.requestId)}&wait_ms=5000`);
  expect(res.status).toBe(200);
  const t = await res.json();
  // The app got its whole answer through the instrumented fetch.
  expect(out.text.length).toBeGreaterThan(50);
  expect(out.usage.completion_tokens).toBe(30);
  // The record: format, usage, counts, stall, trace link.
  expect(rec.format).toBe('openai-chat');
  expect(rec.outcome).toBe('ok');
  expect(rec.outputTokens).toBe(30);
  expect(rec.outputTokensSource).toBe('usage');
  expect(rec.chars).toBe([...out.text].length);
  expect(rec.stalls.count).toBe(1);
  expect(rec.traceSource).toBe('propagated');
  const w = contentWrites(t);
  // The stall sits on the server's scripted gap: it starts at the write before the gap and ends
  // at the one after, each reaching the page no earlier than sent and within a sanity bound
  // (a loaded 2-core host delivered the chunk before the gap 56 ms late once, which shortens
  // the stall by as much; accuracy against the app's own reads: fetch-metrics.spec.js).
  const after = w.findIndex((x, i) => i > 0 && x.t_ms - w[i - 1].t_ms > 250);
  expect(after, 'the scripted stall in the ground truth').toBeGreaterThan(0);
  const s = rec.stallList[0];
  for (const [at, write] of [[s.start, w[after - 1]], [s.start + s.dur, w[after]]]) {
    expect(lag(rec, at, write)).toBeGreaterThan(-0.5);
    expect(lag(rec, at, write)).toBeLessThan(100);
  }
  expect(rec.traceId).toBe(t.trace_id);
  expect(t.traceparent).toBe(`00-${rec.traceId}-${rec.spanId}-01`);
  expect(rec.contentEvents).toBe(w.length);
  expect(lag(rec, rec.ttft, w[0])).toBeGreaterThan(-0.5);
  expect(lag(rec, rec.ttft, w[0])).toBeLessThan(20); // sanity; accuracy: fetch-metrics.spec.js
  expect(errors).toEqual([]);
});

test('openai-node meets an in-band error event: the client throws and aborts; the record says error', async ({ page }) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.goto(`${ORIGIN()}/openai-app/index.html`);
  await page.waitForFunction(() => window.ready && document.getElementById('status').textContent !== 'loading');
  const out = await page.evaluate(() => window.ready.then(() => window.askCatching('default?prefill_ms=20&gap_ms=5&tokens=40&error_at=10')));
  // The client surfaced the server's error to the app (openai-node throws APIError on an
  // `{"error": …}` event) and, leaving its SSE loop early, aborted the fetch.
  expect(out.error, JSON.stringify(out)).toBe('APIError');
  expect(out.text.length).toBeGreaterThan(0);
  await page.waitForFunction(() => window.records.length >= 1, null, { timeout: 5000 });
  const rec = await page.evaluate(() => window.records[window.records.length - 1]);
  const t = await (await fetch(`${ORIGIN()}/__truth?id=${encodeURIComponent(rec.correlation['x-request-id'])}&wait_ms=5000`)).json();
  expect(t.outcome).toBe('client_gone'); // the client ended it, not the server
  expect(rec.outcome).toBe('error');
  expect(rec.contentEvents).toBe(10);
  expect(errors).toEqual([]);
});
