// The SDK's numbers against ground truth, in real Chromium over loopback, in two layers:
// 1. the SDK's own error: its stamps and statistics vs the app's own reads of the same chunks
//    (never later than the app; within 3 ms, +1 % for the ITL histogram — typically 0.1 ms);
// 2. the whole pipeline vs the scripted server's recorded send times, on the shared wall
//    clock: median delivery lag within 3 ms (-0.5 ms allows the 100 µs clock grain), ttft and
//    gap statistics within 3 ms (+1 %) unless the machine visibly delayed single deliveries,
//    in which case within the observed spread (this 2-core machine is shared: one delivery
//    can wait several ms for scheduling; that is the environment, not the measurement).
import { test, expect } from '@playwright/test';
import { ORIGIN, OTHER, testId, truth, openPage, percentile, contentWrites, gaps, lag } from './util.js';

const TOL = 3;
// The SDK's stamps vs the app's own reads of the same chunks. The SDK stamps first (causal:
// it sees the chunk before the app's read resolves), typically 0.05–0.3 ms earlier; a single
// pair can be further apart when the OS preempts the page between the two on a loaded
// machine, so the bound is the 3 ms, and the order is checked strictly.
const SDK_TOL = 3;
// Single-delivery bounds in the secondary tests (formats, late headers): a sanity bound only,
// since one delivery can be preempted on a loaded machine; accuracy is checked statistically
// in the first test.
// 150 ms: a single delivery 66 ms late was seen in a clean-clone CI run on this shared
// 2-core machine while every statistical bound held.
const SANITY = 150;

/**
 * Streams one chat completion through the patched global fetch, as an app would (the shared
 * app side, pages/scenarios.js `chat`): the record, the app's reads carrying answer text
 * (`reads`: offset from the record's start and content events completed — chunks can merge
 * when the machine is busy), what the app received, and the server's ground truth.
 */
async function chat(page, query, { url = '/v1/chat/completions', id = testId('chat') } = {}) {
  const out = await page.evaluate(({ url, query, id }) => window.__scenario('chat', { url, query, id }).then(JSON.parse), { url, query, id });
  const app = out.reads.map((r) => r.t);
  return { ...out, app, appFirst: app.length ? app[0] : null, truth: await truth(id) };
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
      const { rec, app, reads, truth: t, chars, fnv, n } = await chat(
        page,
        'prefill_ms=300&gap_ms=30&jitter_ms=8&seed=7&tokens=40&stall_at=20&stall_ms=400&usage=1',
      );
      const writes = contentWrites(t);
      expect(writes.length).toBe(40);
      // Arrival of each token as the app saw it: the time of the read that carried it.
      const arrival = reads.flatMap((r) => Array(r.n).fill(r.t));
      expect(arrival.length).toBe(40);
      const last = app.length - 1;

      expect(rec.outcome).toBe('ok');
      expect(rec.format).toBe('openai-chat');
      expect(rec.complete).toBe(true);

      // 1. The SDK's own error: its stamps against the app's own reads of the same
      //    chunks (the SDK stamps as a chunk passes through, just before the read resolves).
      expect(rec.ttft).toBeLessThanOrEqual(app[0] + 0.2);
      expect(Math.abs(rec.ttft - app[0])).toBeLessThan(SDK_TOL);
      expect(Math.abs(rec.total - app[last])).toBeLessThan(SDK_TOL);
      const appGaps = gaps(app);
      expect(rec.itl.n).toBe(last); // arrivals − 1 (39 unless the machine merged chunks)
      for (const [k, q] of [['p50', 0.5], ['p95', 0.95], ['p99', 0.99]]) {
        const exact = percentile(appGaps, q);
        expect(Math.abs(rec.itl[k] - exact), `itl.${k}: ${rec.itl[k]} vs the app's ${exact}`).toBeLessThan(SDK_TOL + 0.01 * exact);
      }
      expect(Math.abs(rec.itl.max - Math.max(...appGaps))).toBeLessThan(SDK_TOL);

      // 2. Against the server's recorded send times (shared wall clock), per token. Delivery
      //    to the page takes 0.6–1 ms here, but a single token can wait several ms more for
      //    Chromium's processes to be scheduled on this shared 2-core machine (seen: 5.8 ms
      //    under load). So: the median lag within 3 ms, every token within 50 ms, and the
      //    ttft and gap statistics within 3 ms of the server's (+1 % histogram bound) unless
      //    that single token was one of the delayed ones (then within its own lag).
      const lags = writes.map((w, i) => rec.startEpochMs + arrival[i] - w.epoch);
      expect(Math.min(...lags)).toBeGreaterThan(-0.5);
      expect(percentile(lags, 0.5)).toBeLessThan(TOL);
      expect(Math.max(...lags)).toBeLessThan(SANITY); // one delivery can be preempted; the median is the check
      const slack = (i) => Math.max(TOL, lags[i] + 0.5);
      expect(lag(rec, rec.ttft, writes[0])).toBeGreaterThan(-0.5);
      expect(lag(rec, rec.ttft, writes[0])).toBeLessThan(slack(0));
      expect(lag(rec, rec.total, writes[39])).toBeLessThan(slack(39));
      const sent = writes.map((w) => w.t_ms);
      const g = gaps(sent);
      const jitter = Math.max(...lags) - Math.min(...lags); // bounds any gap's delivery error
      for (const [k, q] of [['p50', 0.5], ['p95', 0.95], ['p99', 0.99]]) {
        const exact = percentile(g, q);
        expect(Math.abs(rec.itl[k] - exact), `itl.${k}: ${rec.itl[k]} vs the server's ${exact}`).toBeLessThan(Math.max(TOL, jitter) + 0.01 * exact);
      }

      // The one scripted stall, found with its real duration and position.
      const stallGap = g[19];
      // The margins, printed: a failure on a loaded machine says which bound and by how much
      // (ms; SDK − app's read, SDK − server where both are given, and the lags with their slack).
      {
        const f2 = (x) => (x == null || Number.isNaN(x) ? 'null' : x.toFixed(2));
        const s0 = rec.stallList[0];
        const qs = [['p50', 0.5], ['p95', 0.95], ['p99', 0.99]];
        console.log(
          `margins ${coi ? 'coi' : 'plain'}: ttft ${f2(rec.ttft - app[0])}, total ${f2(rec.total - app[last])}, itl.max ${f2(rec.itl.max - Math.max(...appGaps))}, ` +
            qs.map(([k, q]) => `itl.${k} ${f2(rec.itl[k] - percentile(appGaps, q))}/${f2(rec.itl[k] - percentile(g, q))}`).join(', ') +
            `; lags median ${f2(percentile(lags, 0.5))} min ${f2(Math.min(...lags))} max ${f2(Math.max(...lags))}` +
            `; stall dur ${f2(s0 && s0.dur - stallGap)}, start ${f2(s0 && s0.start - arrival[19])}` +
            `; ttft lag ${f2(lag(rec, rec.ttft, writes[0]))} of ${f2(slack(0))}, total lag ${f2(lag(rec, rec.total, writes[39]))} of ${f2(slack(39))}`,
        );
      }
      expect(stallGap).toBeGreaterThan(400);
      expect(rec.stalls.count).toBe(1);
      expect(rec.stalls.network).toBe(1);
      expect(rec.stallList).toHaveLength(1);
      const stallRead = app.indexOf(arrival[20]); // the read that ended the stall
      expect(Math.abs(rec.stallList[0].dur - appGaps[stallRead - 1])).toBeLessThan(SDK_TOL);
      expect(Math.abs(rec.stallList[0].dur - stallGap)).toBeLessThan(Math.max(TOL, jitter));
      // The stall starts at the last token before the gap (writes[19]).
      expect(Math.abs(rec.stallList[0].start - arrival[19])).toBeLessThan(SDK_TOL);
      expect(Math.abs(lag(rec, rec.stallList[0].start, writes[19]))).toBeLessThan(slack(19));
      expect(Math.abs(rec.stalls.longestMs - rec.stallList[0].dur)).toBeLessThan(0.01);

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
      const { rec, app, reads, appFirst, truth: t } = await chat(page, 'prefill_ms=200&gap_ms=40&jitter_ms=15&seed=3&tokens=30&headers=late');
      const writes = contentWrites(t);
      expect(rec.stalls.count).toBe(0);
      expect(rec.stallList).toEqual([]);
      expect(Math.max(...gaps(writes.map((w) => w.t_ms)))).toBeLessThan(250);
      // The first token rides with the headers here, so the page sees it only after Chromium
      // has processed the response head (measured 4–7 ms here, for native fetch too): the SDK
      // must agree with the app's own read, and can only be later than the server's send.
      expect(rec.ttft).toBeLessThanOrEqual(appFirst + 0.2);
      expect(Math.abs(rec.ttft - appFirst)).toBeLessThan(SDK_TOL);
      expect(lag(rec, rec.ttft, writes[0])).toBeGreaterThan(-0.5);
      expect(lag(rec, rec.ttft, writes[0])).toBeLessThan(SANITY);
      // Later tokens flow on the open stream: the SDK agrees with the app's last read, and the
      // median delivery lag is back under 3 ms.
      expect(Math.abs(rec.total - app[app.length - 1])).toBeLessThan(SDK_TOL);
      const arrival = reads.flatMap((r) => Array(r.n).fill(r.t));
      const lags = writes.map((w, i) => rec.startEpochMs + arrival[i] - w.epoch);
      expect(percentile(lags, 0.5)).toBeLessThan(TOL);
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

// The model the server names, odd and oversized: kept as 128 chars of letters, digits and
// `-._:/@+` (src/core/util/text.rs `name`), the rest `_`.
const ODD_MODEL = 'gpt-4o <b>' + 'é'.repeat(3) + 'x'.repeat(200);
const ODD_MODEL_KEPT = 'gpt-4o__b____' + 'x'.repeat(115);

// Each provider's event shapes, from the same server: format detection, content events,
// multi-byte characters split across chunks (split=1), keep-alive pings not counted, the
// model the stream names (where the format names one).
for (const format of ['openai-chat', 'openai-responses', 'anthropic', 'ai-sdk-ui', 'ndjson', 'text']) {
  test(`format ${format}: detected, content counted, timed against the server`, async ({ page }) => {
    await openPage(page);
    await page.evaluate(async () => (await import('/helpers.js')).startRum({ match: '/v1/' }));
    await chat(page, 'prefill_ms=5&gap_ms=5&tokens=5'); // warm-up
    const { rec, truth: t, textChars: chars } = await chat(page, `format=${format}&prefill_ms=100&gap_ms=25&tokens=24&split=1&pings=1&served_model=${encodeURIComponent(ODD_MODEL)}`);
    // With split=1 an event goes out in two writes; an event is complete (and counted) with
    // its second part. Plain text is content as soon as one character decodes, which may be
    // the first part: its ttft lies between the two.
    const writes = contentWrites(t);
    expect(rec.format).toBe(format);
    expect(rec.outcome).toBe('ok');
    expect(rec.bytes).toBe(t.body_bytes);
    // The app's own backend (no `models` rule): no provider, whatever format it relays.
    const names = !['ai-sdk-ui', 'text'].includes(format);
    expect(t.model).toBe(names ? ODD_MODEL : null);
    expect([rec.model, rec.modelSource, rec.provider]).toEqual(names ? [ODD_MODEL_KEPT, 'stream', null] : [null, null, null]);
    expect(rec.stalls.count).toBe(0);
    // A single first token can wait for scheduling on this machine (see the main test):
    // the bound here is a sanity bound; accuracy is the main test's job.
    expect(lag(rec, rec.ttft, writes[0])).toBeLessThan(SANITY);
    if (format === 'text') {
      const firstWrite = t.writes.find((w) => w.kind === 'content');
      expect(lag(rec, rec.ttft, { epoch: t.received_unix_ms + firstWrite.t_ms })).toBeGreaterThan(-0.5);
      expect(rec.chars).toBe(chars);
    } else {
      expect(lag(rec, rec.ttft, writes[0])).toBeGreaterThan(-0.5);
      expect(rec.contentEvents).toBe(t.content_tokens);
      // One arrival per token unless chunks merged in delivery (a busy machine): never more.
      expect(rec.itl.n).toBeLessThanOrEqual(writes.length - 1);
      expect(rec.itl.n).toBeGreaterThanOrEqual(Math.floor((writes.length - 1) / 2));
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
