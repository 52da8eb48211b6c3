// What the person saw (issue 3), in real headless Chromium: four renderers fed by the same
// scripted stream (demo/page/renderers.js, shared with the demo page), each answer element
// handed to rum.observe. Tolerances, stated per assertion, are in frames: headless Chromium
// paints at 60 Hz (16.7 ms), and a paint can only happen at a frame.
//
// Ground truth: arrivals are the SDK's own content marks (their accuracy against the server's
// send times is fetch-metrics.spec.js's job); paints are checked against what each renderer
// does by construction (streamed: next frame; buffered: nothing until the end; throttled:
// ≤ 200 ms), and against Chromium's own Long Animation Frame presentationTime as an independent
// reference (with the SDK's refinement from those entries switched off).
import { test, expect } from '@playwright/test';
import { openPage } from './util.js';

const FRAME = 1000 / 60;
const ONE_FRAME = 20; // one frame plus scheduling slack (issue 3's "≤ one frame (≤ 20 ms)")
// Painted in the next frame, as the screen shows it (issue 30): that frame (≤ ONE_FRAME away),
// displayed one vsync after it, reported half a vsync past that (js/capture/paint.js; held
// against the compositor in paint-compositor.spec.js).
const SHOWN = ONE_FRAME + 1.5 * FRAME;
const STREAM = 'prefill_ms=80&gap_ms=30&tokens=40';

async function setup(page, coi, opts = {}) {
  const errors = await openPage(page, { coi });
  expect(await page.evaluate(() => crossOriginIsolated)).toBe(coi);
  expect(await page.evaluate(async (o) => (await import('/helpers.js')).startRum(o), opts)).toBe(true);
  return errors;
}

const answer = (page, kind, query = STREAM, renderOpts = {}) =>
  page.evaluate(async ({ kind, query, renderOpts }) => (await import('/helpers.js')).renderAnswer(kind, query, { renderOpts }), { kind, query, renderOpts });

/** One line per answer for the accuracy figures (`grep '^paint '` over repeated runs). */
function report(kind, coi, rec, extra = {}) {
  const m = rec.marks;
  const f = (v) => (v == null ? 'null' : Number(v).toFixed(2));
  const kv = { 'fp-ft': m.firstPaint - m.firstToken, 'lp-lt': m.lastPaint - m.lastToken, ...rec.renderDelay, err: rec.paintErrorMs, ...extra };
  console.log(`paint ${kind} coi=${coi} ` + Object.entries(kv).map(([k, v]) => `${k}=${f(v)}`).join(' '));
}

// A frame preempted on this shared 2-core machine (engines.spec.js's SANITY: 97 ms seen once in
// Chromium while other builds ran) comes that much late.
const PREEMPTED = 150;

function sane(rec, maxErr = PREEMPTED) {
  expect(rec.outcome).toBe('ok');
  expect(rec.hidden).toBe(false);
  const m = rec.marks;
  for (const k of ['firstPaint', 'lastPaint']) expect(m[k], k).not.toBeNull();
  expect(m.firstPaint).toBeGreaterThanOrEqual(m.firstToken);
  expect(m.lastPaint).toBeGreaterThanOrEqual(m.lastToken);
  expect(rec.ttfp).toBe(m.firstPaint);
  const d = rec.renderDelay;
  for (const k of ['first', 'p50', 'p95', 'max']) expect(d[k], k).toBeGreaterThanOrEqual(0);
  expect(d.p50).toBeLessThanOrEqual(d.p95);
  expect(d.p95).toBeLessThanOrEqual(d.max);
  // The paint bracket (one vsync after the frame's time → the next frame's rAF callback plus
  // a frame), from the estimate to its far end: ~9–12 ms on a quiet machine; a next frame that
  // comes late widens it — the SDK then reports the wider error it really had (70–130 ms seen
  // with the machine's load at 7 on 2 cores). A preempted frame at most, unless the page itself
  // blocks (`maxErr`: the janky renderer). Whether the bound holds is paint-compositor.spec.js's.
  expect(rec.paintErrorMs).toBeGreaterThan(0);
  expect(rec.paintErrorMs).toBeLessThanOrEqual(maxErr);
}

for (const coi of [false, true]) {
  test.describe(coi ? 'cross-origin isolated page (5 µs clock)' : 'ordinary page (100 µs clock)', () => {
    test('streamed: first paint within a frame of the first token, no buffering', async ({ page }) => {
      const errors = await setup(page, coi);
      const { rec } = await answer(page, 'streamed');
      report('streamed', coi, rec);
      sane(rec);
      expect(rec.marks.firstPaint - rec.marks.firstToken).toBeLessThanOrEqual(SHOWN);
      // Each token is painted in the next frame: half of them within one frame. The tail is
      // left to the machine, as in the markdown test (a preempted page really does miss a
      // frame: CI read p95 27.9 ms with both cores busy); a matching error shifts every delay
      // by a token gap (30 ms) and fails the median.
      expect(rec.renderDelay.p50).toBeLessThanOrEqual(SHOWN);
      expect(rec.renderDelay.p95).toBeLessThanOrEqual(SHOWN + ONE_FRAME);
      expect(rec.buffered).toBe(false);
      expect(rec.stalls.count).toBe(0);
      // No interaction: perceived = from the request start.
      expect(rec.perceivedTtft).toBe(rec.ttfp);
      expect(errors).toEqual([]);
    });

    test('buffered: first paint after the last token, the whole answer waited', async ({ page }) => {
      await setup(page, coi);
      const { rec } = await answer(page, 'buffered');
      report('buffered', coi, rec, { 'first-(total-ttft)': rec.renderDelay.first - (rec.total - rec.ttft) });
      sane(rec);
      const m = rec.marks;
      expect(m.firstPaint - m.lastToken).toBeLessThanOrEqual(SHOWN);
      expect(Math.abs(rec.renderDelay.first - (rec.total - rec.ttft))).toBeLessThanOrEqual(SHOWN);
      expect(rec.buffered).toBe(true);
      expect(Math.abs(rec.perceivedTtft - rec.perceivedTotal)).toBeLessThanOrEqual(ONE_FRAME);
      // ~1.2 s of answer held back: the first char waited for all of it.
      expect(rec.renderDelay.first).toBeGreaterThan(1000);
    });

    test('throttled: text waits up to the 200 ms UI throttle', async ({ page }) => {
      await setup(page, coi);
      const { rec } = await answer(page, 'throttled');
      report('throttled', coi, rec);
      sane(rec);
      expect(rec.renderDelay.p50).toBeGreaterThanOrEqual(50);
      expect(rec.renderDelay.p50).toBeLessThanOrEqual(200);
      expect(rec.renderDelay.max).toBeLessThanOrEqual(200 + SHOWN);
      expect(rec.buffered).toBe(false);
    });

    test('janky: render stalls blamed on the script, the scripted network stall is network', async ({ page }) => {
      // 120 ms blocks every 10th token; threshold 100 ms so they count; a 600 ms server stall
      // at token 25. Refinement off: the LoAF presentationTime below is then an independent check.
      await setup(page, coi, { stallThresholdMs: 100, nativePaintTimes: false });
      const { rec, loafs, start } = await answer(page, 'janky', STREAM + '&stall_at=25&stall_ms=600');
      // A 120 ms block before the next frame widens that bracket by the block: the error the
      // SDK really had, so the bound is a block plus a preempted frame.
      sane(rec, 120 + PREEMPTED);
      expect(rec.stalls.render, JSON.stringify(rec.stallList)).toBeGreaterThanOrEqual(2);
      expect(rec.stalls.network, JSON.stringify(rec.stallList)).toBe(1);
      const net = rec.stallList.find((s) => s.cause === 'network');
      expect(net.dur).toBeGreaterThanOrEqual(600 - ONE_FRAME);
      expect(net.dur).toBeLessThanOrEqual(600 + 130 + ONE_FRAME); // a 120 ms block may adjoin it
      // Markdown shrinks the text unevenly; the 600 ms network pause must not be charged to
      // chars the screen already showed (text probes locate the screen's end in the raw text;
      // the proportional mapping alone reported ~690 ms here). The real worst: one 120 ms block.
      expect(rec.renderDelay.max).toBeLessThan(300);
      const render = rec.stallList.filter((s) => s.cause === 'render');
      for (const s of render) {
        expect(s.dur).toBeGreaterThanOrEqual(100);
        expect(s.blame, JSON.stringify(s)).not.toBeNull();
        // The heavy work ran in the app's chunk handler, inside the SDK's re-stream callback
        // (LoAF's entry point): reported as a stream read, not as the SDK's file.
        expect(s.blame.invoker).toBe('stream-read');
        expect(s.blame.source).toBe('');
        expect(s.blame.scriptMs).toBeGreaterThanOrEqual(100);
      }
      // Independent paint reference: token 0 is heavy, so the first paint's frame is a Long
      // Animation Frame whose presentationTime Chromium reports (coarsened to 4 ms where the
      // page is not cross-origin isolated). That is when the frame was handed to the display,
      // up to a vsync before the display time the compositor plans for it (Element Timing's
      // presentationTime read 5–11 ms before the screencast's frame in paint-compositor runs):
      // the SDK's bound, widened by a frame, must contain it.
      const fpAbs = start + rec.marks.firstPaint;
      const ref = loafs.find((l) => l.presentationTime > 0 && Math.abs(l.presentationTime - fpAbs) <= 50);
      expect(ref, JSON.stringify({ fpAbs, loafs })).toBeTruthy();
      report('janky', coi, rec, { 'fp-loafPresented': fpAbs - ref.presentationTime, render: rec.stalls.render, network: rec.stalls.network });
      const res = coi ? 0.005 : 4;
      expect(Math.abs(ref.presentationTime - fpAbs)).toBeLessThanOrEqual(rec.paintErrorMs + res + FRAME);
    });

    test('rAF-batched renderer: a known one-frame bias, bounded', async ({ page }) => {
      await setup(page, coi);
      const { rec } = await answer(page, 'raf');
      report('raf', coi, rec);
      sane(rec);
      // The app writes in its own rAF callback; the SDK learns of the write only then and
      // brackets the next frame, so each paint counts one frame late (README limitations):
      // within two frames, never more — but for a frame the machine itself delays (CI read
      // p95 43.7 ms under load): the median within two, the tail within three.
      expect(rec.marks.firstPaint - rec.marks.firstToken).toBeLessThanOrEqual(SHOWN + ONE_FRAME);
      expect(rec.renderDelay.p50).toBeLessThanOrEqual(SHOWN + ONE_FRAME);
      expect(rec.renderDelay.p95).toBeLessThanOrEqual(SHOWN + 2 * ONE_FRAME);
      expect(rec.buffered).toBe(false);
    });

    test('markdown re-render per token: rendered text shorter than the stream, delays sane', async ({ page }) => {
      await setup(page, coi);
      const { rec } = await answer(page, 'markdown', 'prefill_ms=80&gap_ms=20&tokens=120');
      report('markdown', coi, rec);
      sane(rec);
      // A well-behaved renderer: half the text on screen within a frame. The tail is left to
      // the machine (a page preempted on this shared 2-core box really does miss frames:
      // 69 ms seen with both cores saturated); a stall-sized delay would be a matching bug.
      expect(rec.renderDelay.p50).toBeLessThanOrEqual(SHOWN);
      expect(rec.renderDelay.max).toBeLessThan(250);
      expect(rec.buffered).toBe(false);
    });

    test('perceived TTFT counts from the click that caused the request', async ({ page }) => {
      await setup(page, coi);
      await page.evaluate(() => {
        const b = document.createElement('button');
        b.id = 'send';
        b.textContent = 'Send';
        document.body.append(b);
        b.addEventListener('click', (e) => {
          window.__clickTs = e.timeStamp;
          window.__run = import('/helpers.js').then((h) =>
            // The app waits 300 ms between the click and the request (validation, a spinner…).
            h.renderAnswer('streamed', 'prefill_ms=80&gap_ms=30&tokens=10', { beforeFetch: () => new Promise((r) => setTimeout(r, 300)) }),
          );
        });
      });
      await page.click('#send');
      const { rec, fetchAt } = await page.evaluate(() => window.__run);
      const clickTs = await page.evaluate(() => window.__clickTs);
      sane(rec);
      const delay = fetchAt - clickTs;
      report('click', coi, rec, { 'perceived-ttfp-delay': rec.perceivedTtft - rec.ttfp - delay });
      expect(delay).toBeGreaterThanOrEqual(300);
      expect(Math.abs(rec.perceivedTtft - rec.ttfp - delay)).toBeLessThanOrEqual(5);
      expect(Math.abs(rec.perceivedTotal - (rec.marks.lastPaint + delay))).toBeLessThanOrEqual(5);
      expect(rec.marks.interaction).toBeLessThan(-300 + 5);
    });
  });
}

test.describe('answer element association', () => {
  test('observe option: a chat container, the answer element created after the request starts, React-style whole-string updates', async ({ page }) => {
    await openPage(page);
    await page.evaluate(async () => {
      const chat = document.createElement('div');
      chat.id = 'chat';
      chat.innerHTML = '<p>earlier question</p><p>an earlier answer with plenty of text in it</p>';
      document.body.append(chat);
      await (await import('/helpers.js')).startRum({ observe: '#chat' });
    });
    const rec = await page.evaluate(async () => {
      const h = await import('/helpers.js');
      const { readDeltas } = await import('/demo/renderers.js');
      const chat = document.getElementById('chat');
      chat.insertAdjacentHTML('beforeend', '<p>new question</p>');
      const res = await fetch('/v1/chat/completions?prefill_ms=80&gap_ms=30&tokens=30', { method: 'POST', body: '{"stream":true}' });
      let text = '';
      let node = null;
      let side = null;
      await readDeltas(res, (d) => {
        text += d;
        // Mid-answer the app refreshes something else (JSON, not a stream): it must not take
        // the container's growth from the answer.
        if (text.length > 40 && !side) side = fetch('/plain?delay_ms=20').then((r) => r.json());
        if (!node) {
          // The answer bubble appears with the first token (after the request began).
          const p = document.createElement('p');
          node = document.createTextNode('');
          p.append(node);
          chat.append(p);
        }
        node.nodeValue = text; // a framework sets the whole string each time
      });
      await side;
      return h.waitRecord(() => true, 8000);
    });
    // What this test is about is association (the container's growth is this answer's, the
    // side fetch takes none of it): a wrong owner reads whole-stream delays (~900 ms) or no
    // paint. The typical delay is one frame; a late frame on a loaded machine is allowed at the
    // tail (CI once read p95 20.2 ms). Accuracy against LoAF is the renderer tests' job.
    expect(rec.marks.firstPaint - rec.marks.firstToken).toBeLessThanOrEqual(SHOWN + ONE_FRAME);
    expect(rec.renderDelay.p50).toBeLessThanOrEqual(SHOWN);
    expect(rec.renderDelay.p95).toBeLessThanOrEqual(SHOWN + ONE_FRAME);
    expect(rec.buffered).toBe(false);
    expect(rec.marks.lastPaint).toBeGreaterThanOrEqual(rec.marks.lastToken);
  });

  test('1000 answers in one page: every record painted, observers released, heap flat', async ({ page }) => {
    test.setTimeout(180_000);
    await openPage(page);
    await page.evaluate(async () => (await import('/helpers.js')).startRum());
    const cdp = await page.context().newCDPSession(page);
    const heap = async () => {
      await cdp.send('HeapProfiler.collectGarbage');
      return (await cdp.send('Runtime.getHeapUsage')).usedSize;
    };
    const run = (n) =>
      page.evaluate(async (n) => {
        const { readDeltas } = await import('/demo/renderers.js');
        let painted = 0;
        for (let i = 0; i < n; i++) {
          const el = document.createElement('div');
          document.body.append(el);
          const before = window.__records.length;
          window.__rum.observe(el);
          const res = await fetch('/v1/chat/completions?prefill_ms=0&gap_ms=0&tokens=3', { method: 'POST', body: '{"stream":true}' });
          await readDeltas(res, (d) => el.append(d));
          for (let k = 0; k < 200 && window.__records.length === before; k++) await new Promise((r) => setTimeout(r, 5));
          const rec = window.__records[before];
          if (rec && rec.marks.firstPaint !== null) painted++;
          el.remove();
          window.__records.length = 0; // the app drops them; only the SDK could keep them alive
        }
        return painted;
      }, n);
    expect(await run(200)).toBe(200);
    const h200 = await heap();
    expect(await run(800)).toBe(800);
    const h1000 = await heap();
    console.log(`heap after 200 answers ${(h200 / 1e6).toFixed(2)} MB, after 1000 ${(h1000 / 1e6).toFixed(2)} MB`);
    // Bounded: 800 more answers may not grow the heap by more than 0.5 MB (≈ 600 B each;
    // a leaked watch — MutationObserver, MessageChannel, element — is several KB).
    expect(h1000 - h200).toBeLessThan(500_000);
  });
});

test('EventSource answers get paint metrics too', async ({ page }) => {
  await openPage(page);
  await page.evaluate(async () => (await import('/helpers.js')).startRum());
  const rec = await page.evaluate(async () => {
    const el = document.createElement('div');
    document.body.append(el);
    window.__rum.observe(el);
    const before = window.__records.length;
    const es = new EventSource('/v1/stream?prefill_ms=80&gap_ms=30&tokens=30');
    await new Promise((resolve) => {
      es.onmessage = (e) => {
        if (e.data === '[DONE]') {
          es.close();
          resolve();
          return;
        }
        const j = JSON.parse(e.data);
        for (const c of j.choices || []) if (c.delta && c.delta.content) el.append(c.delta.content);
      };
    });
    return (await import('/helpers.js')).waitRecord((r, i) => i >= before && r.transport === 'eventsource', 8000);
  });
  report('eventsource', false, rec);
  sane(rec);
  expect(rec.marks.firstPaint - rec.marks.firstToken).toBeLessThanOrEqual(SHOWN);
  expect(rec.renderDelay.p50).toBeLessThanOrEqual(SHOWN);
  expect(rec.buffered).toBe(false);
});

test('a page hidden mid-answer reports the first paint it showed, not the rest', async ({ page }) => {
  await openPage(page);
  await page.evaluate(async () => (await import('/helpers.js')).startRum());
  const rec = await page.evaluate(async () => {
    const h = await import('/helpers.js');
    // Headless pages are never really hidden: fake the state change as the browser reports it.
    setTimeout(() => {
      Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
      document.dispatchEvent(new Event('visibilitychange'));
    }, 400);
    const { rec } = await h.renderAnswer('streamed', 'prefill_ms=80&gap_ms=30&tokens=30');
    return rec;
  });
  expect(rec.hidden).toBe(true);
  expect(rec.marks.firstPaint).not.toBeNull();
  expect(rec.marks.firstPaint).toBeLessThan(400);
  for (const k of ['lastPaint']) expect(rec.marks[k]).toBeNull();
  expect(rec.perceivedTotal).toBeNull();
  expect(rec.renderDelay).toBeNull();
  expect(rec.ttfp).toBe(rec.marks.firstPaint);
});

test('rum.observe before a non-stream request: the element waits for the answer stream', async ({ page }) => {
  await openPage(page);
  await page.evaluate(async () => (await import('/helpers.js')).startRum());
  const rec = await page.evaluate(async () => {
    const h = await import('/helpers.js');
    const el = document.createElement('div');
    document.body.append(el);
    window.__rum.observe(el);
    await (await fetch('/plain', { method: 'POST', body: '{}' })).json(); // saving the prompt
    const { readDeltas } = await import('/demo/renderers.js');
    const res = await fetch('/v1/chat/completions?prefill_ms=50&gap_ms=30&tokens=10', { method: 'POST', body: '{"stream":true}' });
    await readDeltas(res, (d) => el.append(d));
    return h.waitRecord(() => true, 8000);
  });
  expect(rec.url).toMatch(/\/v1\/chat\/completions$/);
  expect(rec.marks.firstPaint).not.toBeNull();
  expect(rec.marks.firstPaint - rec.marks.firstToken).toBeLessThanOrEqual(SHOWN);
});

test('rum.observe binds the current answer as the core decides it: the newest running stream whose element the app has not named yet', async ({ page }) => {
  await openPage(page);
  await page.evaluate(async () => (await import('/helpers.js')).startRum());
  const recs = await page.evaluate(async () => {
    const h = await import('/helpers.js');
    const { readDeltas } = await import('/demo/renderers.js');
    const [older, newer] = [document.createElement('div'), document.createElement('div')];
    document.body.append(older, newer);
    const ask = (tokens) => fetch(`/v1/chat/completions?prefill_ms=50&gap_ms=30&tokens=${tokens}`, { method: 'POST', body: '{"stream":true}' });
    // Two answers streaming at once, both with their response in, neither element named.
    const a = await ask(10);
    const b = await ask(20);
    window.__rum.observe(newer); // the current answer: the newest running stream (b)
    window.__rum.observe(older); // b's element is named now: the stream before it (a)
    await Promise.all([readDeltas(a, (d) => older.append(d)), readDeltas(b, (d) => newer.append(d))]);
    const of = (n) => h.waitRecord((r) => r.contentEvents === n, 8000);
    return [await of(10), await of(20)];
  });
  // Each element painted its own answer to the end (swapped, the 20-token answer's element
  // would never show its last token), each paint in the next frame — or the one after: two
  // streams are painted at once here, and a loaded machine can miss a frame (CI read a first
  // paint 21.15 ms after its token against one frame, 20 ms).
  for (const rec of recs) {
    expect(rec.marks.firstPaint - rec.marks.firstToken).toBeLessThanOrEqual(SHOWN + ONE_FRAME);
    expect(rec.marks.lastPaint).not.toBeNull();
    expect(rec.marks.lastPaint - rec.marks.lastToken).toBeLessThanOrEqual(SHOWN + ONE_FRAME);
  }
});

test('no credit before arrival: text that arrives after a frame began its rendering is credited to a later frame', async ({ page }) => {
  // The app's fetch is an in-page stream (the page's own fetch, as the SDK finds it at init),
  // so the first token can be timed exactly: a frame is set off by a text-less mutation of the
  // answer element, and the token is enqueued in a task right after that frame's rendering
  // update (a message posted from a rAF callback that runs before the SDK's) — before the
  // SDK's own next task and next frame. That frame read the element before the token came:
  // it may not be credited with it, however the SDK's report of it is timed.
  await page.addInitScript(() => {
    const native = window.fetch;
    window.fetch = function (input, init) {
      const url = typeof input === 'string' ? input : input.url;
      if (window.__body && url.includes('/v1/chat/')) return Promise.resolve(new Response(window.__body, { headers: { 'content-type': 'text/event-stream' } }));
      return native.call(this, input, init);
    };
  });
  await openPage(page);
  const out = await page.evaluate(async () => {
    const enc = new TextEncoder();
    let ctl;
    window.__body = new ReadableStream({ start: (c) => void (ctl = c) });
    const h = await import('/helpers.js');
    await h.startRum();
    const { readDeltas } = await import('/demo/renderers.js');
    const el = document.createElement('div');
    document.body.append(el);
    window.__rum.observe(el);
    const res = await fetch('/v1/chat/completions', { method: 'POST', body: '{"stream":true}' });
    const reading = readDeltas(res, (d) => el.append(d));
    await new Promise((r) => setTimeout(r, 50));
    const frames = [];
    const ch = new MessageChannel();
    const enqueued = new Promise((resolve) => {
      ch.port1.onmessage = () => {
        const t = performance.now();
        ctl.enqueue(enc.encode('data: {"choices":[{"delta":{"content":"Hello"}}]}\n\n'));
        resolve(t);
      };
    });
    // Ours first in the frame, then the SDK's (requested by the mutation below).
    requestAnimationFrame(() => {
      frames.push(performance.now());
      ch.port2.postMessage(0);
      const more = () => frames.length < 6 && requestAnimationFrame(() => (frames.push(performance.now()), more()));
      more();
    });
    el.append(document.createElement('span'));
    const at = await enqueued;
    await new Promise((r) => setTimeout(r, 150));
    ctl.enqueue(enc.encode('data: [DONE]\n\n'));
    ctl.close();
    await reading;
    const rec = await h.waitRecord(() => true, 8000);
    const start = rec.startEpochMs - performance.timeOrigin;
    return { rec, at: at - start, frames: frames.map((f) => f - start) };
  });
  const m = out.rec.marks;
  const why = JSON.stringify({ at: out.at, frames: out.frames, m, err: out.rec.paintErrorMs });
  // The token reached the SDK in the enqueueing task, after the first frame's rAF callbacks.
  // The record's marks are given to 0.1 ms: up to 0.05 ms before the page's own stamp (CI read
  // 55 against 55.00005).
  expect(m.firstToken, why).toBeGreaterThanOrEqual(out.at - 0.05);
  expect(m.firstToken, why).toBeGreaterThan(out.frames[0]);
  // The first frame that could show it began after it arrived; the screen showed it one vsync
  // after that frame at the earliest — never credited to the frame before (whose display, a
  // vsync after its own time, can be later than the arrival).
  const next = out.frames.find((f) => f >= m.firstToken);
  expect(m.firstPaint, why).toBeGreaterThanOrEqual(next);
  expect(m.firstPaint - m.firstToken, why).toBeLessThanOrEqual(SHOWN + ONE_FRAME);
});
