// Ready time (issue 14): init() resolves at once — fetch and EventSource are wrapped, the
// wasm core is on its way — and `rum.ready` resolves when the core is in. What the app does
// meanwhile is measured once the core is in, from the moment the app did it: a fetch goes out
// as the app made it (no traceparent of ours: the core decides that, and it was not there yet)
// and its response waits for the core at most 1 s; an EventSource keeps its events;
// rum.observe() and rum.mark() are applied. If the core fails to load, all of it goes through
// untouched and the globals are the native ones again.
import { test, expect } from '@playwright/test';
import { openPage, testId, truth, contentWrites, lag } from './util.js';

/** Holds the wasm's response `ms` (the page's first load of it: a fresh context). */
const slowWasm = (page, ms) =>
  page.route('**/llm_rum_bg.wasm', async (route) => {
    await new Promise((r) => setTimeout(r, ms));
    await route.continue();
  });

test('init() resolves before the core is in; a stream requested then is measured from its start; nothing was added to it', async ({ page }) => {
  // A fresh context: the wasm is fetched and compiled after init() resolved (no delay added:
  // its response waits for the core, which must come within the 1 s hold).
  await openPage(page);
  const id = testId('early');
  const out = await page.evaluate(async (id) => {
    const h = await import('/helpers.js');
    window.__records = [];
    let coreIn = false;
    const t0 = performance.now();
    const rum = await window.llmRum.init({ onRecord: (r) => window.__records.push(r) });
    const initMs = performance.now() - t0;
    rum.ready.then(() => (coreIn = true));
    const before = { coreIn, active: rum.active, patched: window.fetch !== window.__native };
    const calledAt = performance.now();
    const sent = fetch(`/v1/stream?tokens=8&gap_ms=10&prefill_ms=100&test_id=${id}`);
    const sentAt = performance.now();
    const ok = await rum.ready;
    const { bytes } = await h.readAll(await sent);
    const rec = await h.waitRecord((r) => r.url.endsWith('/v1/stream'));
    const start = rec.startEpochMs - performance.timeOrigin;
    return { initMs, before, ok, calledAt, sentAt, start, rec, chars: h.openAiChars(bytes) };
  }, id);
  // Resolved before the wasm could be in, measuring already.
  expect(out.before).toEqual({ coreIn: false, active: true, patched: true });
  expect(out.ok).toBe(true);
  expect(out.rec.outcome).toBe('ok');
  // Begun when the app called fetch, not when the core came: inside that call, to the
  // epoch's microsecond rounding.
  expect(out.start).toBeGreaterThanOrEqual(out.calledAt - 0.002);
  expect(out.start).toBeLessThanOrEqual(out.sentAt + 0.002);
  expect(out.rec.chars).toBe(out.chars);
  expect(out.rec.contentEvents).toBe(8);
  const t = await truth(id);
  // The request went out before the core could decide: no traceparent, and the record says so.
  expect(t.traceparent).toBeNull();
  expect(out.rec.traceSource).not.toBe('propagated');
  // First token against the server's send time (loopback): never before it was sent; after
  // it by no more than fetch-metrics' sanity bound (150 ms) — the 100 ms prefill usually
  // outlasts the core's load, but on a loaded machine the response may still be held for it,
  // and then the app (and the record) see the first token when it is handed over.
  const first = contentWrites(t)[0];
  expect(lag(out.rec, out.rec.ttft, first)).toBeGreaterThan(-0.5);
  expect(lag(out.rec, out.rec.ttft, first)).toBeLessThan(150);
});

test('a response never waits more than 1 s for a core that is late: it goes to the app unmeasured', async ({ page }) => {
  test.setTimeout(20_000);
  await slowWasm(page, 2500);
  await openPage(page);
  const id = testId('held');
  const out = await page.evaluate(async (id) => {
    const h = await import('/helpers.js');
    window.__records = [];
    const rum = await window.llmRum.init({ onRecord: (r) => window.__records.push(r) });
    // The same request natively, sent at the same moment: when its response came is when
    // the wrapped one's did (the reference the hold is measured against).
    const at = (p) => p.then((r) => [r, performance.now()]);
    const [[res, wrappedAt], [own, nativeAt]] = await Promise.all([
      at(fetch(`/v1/stream?tokens=3&gap_ms=1&test_id=${id}`)),
      at(window.__native('/v1/stream?tokens=3&gap_ms=1')),
    ]);
    const { bytes } = await h.readAll(res);
    const ref = await h.readAll(own);
    const ok = await rum.ready;
    await new Promise((r) => setTimeout(r, 100));
    return { held: wrappedAt - nativeAt, fnv: h.fnv1a64(bytes), refN: ref.bytes.length, ok, records: window.__records.length };
  }, id);
  // Held the 1 s (a timer: not less), not until the core came (2.5 s): within 400 ms of
  // scheduling slack (a loaded machine fires timers late) and the two responses' own
  // difference.
  expect(out.held).toBeGreaterThanOrEqual(990);
  expect(out.held).toBeLessThan(1000 + 400);
  expect(out.fnv).toBe((await truth(id)).body_fnv1a64);
  expect(out.refN).toBeGreaterThan(0);
  expect(out.ok).toBe(true);
  expect(out.records).toBe(0);
});

test('an EventSource made before the core is in is measured from its construction; observe() and mark() made then apply', async ({ page }) => {
  // The wasm held past the whole stream (12 tokens, 20 ms apart): everything is caught up from
  // kept events, and the observe() made before the EventSource binds to it (CI once ran the
  // catch-up before the observe, and the ended stream took no element).
  await slowWasm(page, 600);
  await openPage(page);
  const id = testId('early-es');
  const out = await page.evaluate(async (id) => {
    window.__records = [];
    const rum = await window.llmRum.init({ onRecord: (r) => window.__records.push(r) });
    const el = document.body.appendChild(document.createElement('div'));
    const undo = rum.observe(el);
    const madeAt = performance.now();
    // Prefill 0: the stream's first events arrive while the wasm is still held.
    const es = new EventSource(`/v1/stream?tokens=12&gap_ms=20&prefill_ms=0&test_id=${id}`);
    const builtAt = performance.now();
    const isOurs = es instanceof rum.EventSource && es instanceof window.__NativeES;
    const marked = rum.mark('early_mark'); // no fetch is in flight: false, but the mark applies
    let text = '';
    let firstSeen = null;
    await new Promise((resolve) => {
      es.onmessage = (ev) => {
        if (ev.data === '[DONE]') return es.close(), resolve();
        const d = JSON.parse(ev.data).choices[0].delta.content;
        if (d) {
          if (firstSeen === null) firstSeen = performance.now();
          text += d;
          el.textContent = text;
        }
      };
    });
    const ok = await rum.ready;
    const h = await import('/helpers.js');
    const rec = await h.waitRecord((r) => r.transport === 'eventsource', 5000);
    undo();
    return { isOurs, marked, ok, madeAt, builtAt, firstSeen, start: rec.startEpochMs - performance.timeOrigin, rec };
  }, id);
  expect(out.isOurs).toBe(true);
  expect(out.ok).toBe(true);
  expect(out.marked).toBe(false);
  expect(out.rec.outcome).toBe('ok');
  // Begun inside the constructor call (its first use in a page can take a millisecond or more
  // of the engine's own): within that call, to the epoch's microsecond.
  expect(out.start).toBeGreaterThanOrEqual(out.madeAt - 0.002);
  expect(out.start).toBeLessThanOrEqual(out.builtAt + 0.002);
  expect(out.rec.contentEvents).toBe(12);
  // The first token as the page got it (its own listener stamped it after ours).
  expect(Math.abs(out.rec.marks.firstToken - (out.firstSeen - out.start))).toBeLessThan(3);
  expect(out.rec.paintSource).toBe('observed');
  expect(out.rec.marks.firstPaint).toBeGreaterThanOrEqual(out.rec.marks.firstToken);
  const t = await truth(id);
  expect(t.content_tokens).toBe(12);
});

test('shutdown() before the core is in: the globals are native and stay so', async ({ page }) => {
  await slowWasm(page, 150);
  await openPage(page);
  const out = await page.evaluate(async () => {
    const rum = await window.llmRum.init();
    const patched = window.fetch !== window.__native && window.EventSource !== window.__NativeES;
    const down = rum.shutdown();
    const restoredAtOnce = window.fetch === window.__native && window.EventSource === window.__NativeES;
    await down;
    await rum.ready;
    await new Promise((r) => setTimeout(r, 50));
    return { patched, restoredAtOnce, stillNative: window.fetch === window.__native && window.EventSource === window.__NativeES };
  });
  expect(out).toEqual({ patched: true, restoredAtOnce: true, stillNative: true });
});

test('an early request whose core fails to load gets its response untouched, and fetch is native again', async ({ page }) => {
  await openPage(page);
  const out = await page.evaluate(async () => {
    const h = await import('/helpers.js');
    const rum = await window.llmRum.init({ wasmUrl: '/nope.wasm' });
    const sent = fetch('/v1/stream?tokens=5&gap_ms=5');
    const ok = await rum.ready;
    const res = await sent;
    const { bytes } = await h.readAll(res);
    return { ok, active: rum.active, native: window.fetch === window.__native, n: bytes.length, type: res.headers.get('content-type') };
  });
  expect(out.ok).toBe(false);
  expect(out.active).toBe(false);
  expect(out.native).toBe(true);
  expect(out.n).toBeGreaterThan(0);
  expect(out.type).toMatch(/event-stream/);
});
