// The SDK's numbers against the scripted server's recorded send times (ground truth), in real
// Chromium over loopback. Tolerances: first/last token within 3 ms after the server sent it
// (on the shared wall clock; -0.5 ms allows for the 100 µs clock grain and wall-clock
// conversion), each gap statistic within 3 ms of the server's gaps plus the ITL histogram's
// documented 1 % relative error.
import { test, expect } from '@playwright/test';
import { ORIGIN, OTHER, testId, truth, openPage, percentile, contentWrites, gaps, lag } from './util.js';

const TOL = 3;
// The format tests interleave keep-alive pings and split writes (2–3 writes per token), which
// keeps this 2-core machine busier; their timing bound is looser, their counts exact.
const TOL_BUSY = 5;
const TOL_WAKE = 5;

/** Streams one chat completion through the patched global fetch, as an app would. */
async function chat(page, query, { url = '/v1/chat/completions', id = testId('chat') } = {}) {
  const out = await page.evaluate(
    async ({ url, query, id }) => {
      const h = await import('/helpers.js');
      const res = await fetch(`${url}?${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-test-id': id },
        body: JSON.stringify({ model: 'default', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] }),
      });
      const { bytes, times, parts } = await h.readAll(res);
      const rid = res.headers.get('x-request-id');
      const rec = await h.waitRecord((r) => r.correlation['x-request-id'] === rid);
      // The app's own view: when its first read carrying answer text resolved (same clock).
      const dec = new TextDecoder();
      const i = parts.findIndex((p) => /"(content|delta|text|response)":"[^"]/.test(dec.decode(p)));
      const appFirst = i < 0 ? null : performance.timeOrigin + times[i] - rec.startEpochMs;
      const textChars = [...new TextDecoder().decode(bytes)].length;
      return { rec, appFirst, chars: h.openAiChars(bytes), textChars, fnv: h.fnv1a64(bytes), n: bytes.length };
    },
    { url, query, id },
  );
  return { ...out, truth: await truth(id) };
}

for (const coi of [false, true]) {
  test.describe(coi ? 'cross-origin isolated page (5 µs clock)' : 'ordinary page (100 µs clock)', () => {
    test.beforeEach(async ({ page }) => {
      const errors = await openPage(page, { coi });
      expect(await page.evaluate(() => crossOriginIsolated)).toBe(coi);
      expect(await page.evaluate(async () => (await import('/helpers.js')).startRum())).toBe(true);
      // Warm-up: opens the keep-alive connection and tiers up the wasm; not measured.
      await chat(page, 'prefill_ms=5&gap_ms=5&tokens=5');
      expect(errors).toEqual([]);
    });

    test('ttft, gaps, the scripted stall, usage tokens and trace ids match the ground truth', async ({ page }) => {
      const { rec, appFirst, truth: t, chars, fnv, n } = await chat(
        page,
        'prefill_ms=300&gap_ms=30&jitter_ms=8&seed=7&tokens=40&stall_at=20&stall_ms=400&usage=1',
      );
      const writes = contentWrites(t);
      expect(writes.length).toBe(40);
      const sent = writes.map((w) => w.t_ms);

      expect(rec.outcome).toBe('ok');
      expect(rec.format).toBe('openai-chat');
      expect(rec.complete).toBe(true);
      // The SDK's own error: its firstToken stamp vs the app's read of that chunk (the stamp
      // is taken as the chunk passes through, just before the app's read resolves).
      expect(Math.abs(rec.ttft - appFirst)).toBeLessThan(1);
      // First and last token against the server's send. Typical lag here is 0.6–1 ms (a
      // 30-run probe: p50 0.8, max 2.1), but the first token after an idle prefill can wait
      // 3–4 ms for Chromium's processes to wake on this shared 2-core machine; that is
      // delivery, not measurement (the line above bounds the SDK's own error), so the
      // per-token bound is TOL_WAKE.
      for (const [offset, w] of [[rec.ttft, writes[0]], [rec.total, writes[writes.length - 1]]]) {
        expect(lag(rec, offset, w)).toBeGreaterThan(-0.5);
        expect(lag(rec, offset, w)).toBeLessThan(TOL_WAKE);
      }

      const g = gaps(sent);
      expect(rec.itl.n).toBe(g.length);
      for (const [k, q] of [['p50', 0.5], ['p95', 0.95], ['p99', 0.99]]) {
        const exact = percentile(g, q);
        expect(Math.abs(rec.itl[k] - exact), `itl.${k}: ${rec.itl[k]} vs ${exact}`).toBeLessThan(TOL + 0.01 * exact);
      }
      expect(Math.abs(rec.itl.max - Math.max(...g))).toBeLessThan(TOL);

      // The one scripted stall, found with its real duration and position.
      const stallGap = g[19];
      expect(stallGap).toBeGreaterThan(400);
      expect(rec.stalls.count).toBe(1);
      expect(rec.stalls.network).toBe(1);
      expect(rec.stallList).toHaveLength(1);
      expect(Math.abs(rec.stallList[0].dur - stallGap)).toBeLessThan(TOL);
      // The stall starts at the last token before the gap (writes[19]).
      expect(Math.abs(lag(rec, rec.stallList[0].start, writes[19]))).toBeLessThan(TOL);
      expect(Math.abs(rec.stalls.longestMs - stallGap)).toBeLessThan(TOL);

      // tpot from the same marks and the usage count.
      expect(rec.outputTokens).toBe(t.content_tokens);
      expect(rec.outputTokensSource).toBe('usage');
      expect(rec.tpot).toBeCloseTo((rec.marks.lastToken - rec.marks.firstToken) / (rec.outputTokens - 1), 2);

      // Counts: what the app decoded, and what the server sent.
      expect(rec.chars).toBe(chars);
      expect(rec.bytes).toBe(t.body_bytes);
      expect(n).toBe(t.body_bytes);
      expect(fnv).toBe(t.body_fnv1a64);

      // Trace correlation: the server saw our traceparent and reported the same trace.
      expect(t.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      expect(rec.traceSource).toBe('propagated');
      expect(rec.traceId).toBe(t.trace_id);
      expect(rec.spanId).toBe(t.parent_span_id);
      expect(t.traceparent).toBe(`00-${rec.traceId}-${rec.spanId}-01`);
      const names = rec.serverTiming.map((e) => e.name);
      expect(names).toContain('queue');
      expect(names).toContain('trace');
      expect(rec.serverTiming.find((e) => e.name === 'trace').desc).toContain(rec.traceId);
      expect(rec.correlation['x-request-id']).toBe(t.id);
      expect(rec.url).toBe(`${ORIGIN()}/v1/chat/completions`);
      expect(rec.method).toBe('POST');
      expect(rec.status).toBe(200);
    });

    test('a steady stream reports no stall, and late headers split ttft by server stages', async ({ page }) => {
      const { rec, appFirst, truth: t } = await chat(page, 'prefill_ms=200&gap_ms=40&jitter_ms=15&seed=3&tokens=30&headers=late');
      const writes = contentWrites(t);
      expect(rec.stalls.count).toBe(0);
      expect(rec.stallList).toEqual([]);
      expect(Math.max(...gaps(writes.map((w) => w.t_ms)))).toBeLessThan(250);
      // The first token rides with the headers here, so the page sees it only after Chromium
      // has processed the response head (measured 4–7 ms here, for native fetch too): the SDK
      // must agree with the app's own read, and can only be later than the server's send.
      expect(Math.abs(rec.ttft - appFirst)).toBeLessThan(1);
      expect(lag(rec, rec.ttft, writes[0])).toBeGreaterThan(-0.5);
      expect(lag(rec, rec.ttft, writes[0])).toBeLessThan(20);
      // Later tokens flow on the open stream: back to the 3 ms bound.
      expect(lag(rec, rec.total, writes[writes.length - 1])).toBeLessThan(TOL);
      // Headers came with the first token: Server-Timing carried queue and prefill.
      const prefill = rec.serverTiming.find((e) => e.name === 'prefill');
      expect(prefill && prefill.dur).toBeGreaterThan(150);
      expect(rec.ttftSplit.server).toBeGreaterThan(150);
      expect(rec.ttftSplit.network).toBeGreaterThan(-0.5);
      expect(rec.ttftSplit.server + rec.ttftSplit.network).toBeCloseTo(rec.ttft, 2);
      expect(rec.marks.headers).toBeGreaterThan(150);
    });
  });
}

// Each provider's event shapes, from the same server: format detection, content events,
// multi-byte characters split across chunks (split=1), keep-alive pings not counted.
for (const format of ['openai-chat', 'openai-responses', 'anthropic', 'ai-sdk-ui', 'ndjson', 'text']) {
  test(`format ${format}: detected, content counted, ttft within ${TOL_BUSY} ms`, async ({ page }) => {
    await openPage(page);
    await page.evaluate(async () => (await import('/helpers.js')).startRum({ match: '/v1/' }));
    await chat(page, 'prefill_ms=5&gap_ms=5&tokens=5'); // warm-up
    const { rec, truth: t, textChars: chars } = await chat(page, `format=${format}&prefill_ms=100&gap_ms=25&tokens=24&split=1&pings=1`);
    // With split=1 an event goes out in two writes; an event is complete (and counted) with
    // its second part. Plain text is content as soon as one character decodes, which may be
    // the first part: its ttft lies between the two.
    const writes = contentWrites(t);
    expect(rec.format).toBe(format);
    expect(rec.outcome).toBe('ok');
    expect(rec.bytes).toBe(t.body_bytes);
    expect(rec.stalls.count).toBe(0);
    expect(lag(rec, rec.ttft, writes[0])).toBeLessThan(TOL_BUSY);
    if (format === 'text') {
      const firstWrite = t.writes.find((w) => w.kind === 'content');
      expect(lag(rec, rec.ttft, { epoch: t.received_unix_ms + firstWrite.t_ms })).toBeGreaterThan(-0.5);
      expect(rec.chars).toBe(chars);
    } else {
      expect(lag(rec, rec.ttft, writes[0])).toBeGreaterThan(-0.5);
      expect(rec.contentEvents).toBe(t.content_tokens);
      expect(rec.itl.n).toBe(writes.length - 1);
    }
  });
}

test('cross-origin: no traceparent and no preflight unless allow-listed', async ({ page }) => {
  await openPage(page);
  const other = OTHER();
  await fetch(`${ORIGIN()}/__reset`, { method: 'POST' });
  const run = (opts, id) =>
    page.evaluate(
      async ({ other, opts, id }) => {
        const h = await import('/helpers.js');
        if (window.__rum) await window.__rum.shutdown();
        await h.startRum(opts);
        // A simple GET: the app's own request needs no preflight, so any preflight is ours.
        const res = await fetch(`${other}/v1/stream?tokens=5&gap_ms=5&test_id=${id}`);
        await h.readAll(res);
        return h.waitRecord((r) => r.url.startsWith(other));
      },
      { other, opts, id },
    );
  const plain = testId('xo-plain');
  const rec = await run({}, plain);
  const t = await truth(plain);
  expect(t.traceparent).toBeNull();
  const log = await (await fetch(`${ORIGIN()}/__log`)).json();
  const entries = (log.requests || log).filter((e) => e.test_id === plain || (e.path || '').startsWith('/v1/stream'));
  expect(entries.map((e) => e.method)).toEqual(['GET']);
  // Nothing was propagated, but the server's trace;desc links the record anyway.
  expect(rec.traceSource).toBe('server');
  expect(rec.traceId).toBe(t.trace_id);

  const listed = testId('xo-listed');
  const rec2 = await run({ propagateTraceUrls: [other] }, listed);
  const t2 = await truth(listed);
  expect(t2.traceparent).toBe(`00-${rec2.traceId}-${rec2.spanId}-01`);
  expect(rec2.traceSource).toBe('propagated');
});
