// The instrumented EventSource against the scripted server's GET SSE endpoint (its recorded
// send times are the ground truth), in real Chromium over loopback. Tolerances as in
// fetch-metrics.spec.js (read its comments): a token within 3 ms after the server sent it on
// the shared wall clock, the first token after an idle prefill within 5 ms (Chromium's
// processes waking on this 2-core machine), gap statistics within 3 ms plus the histogram's
// 1 % relative error; format runs with split writes and pings within 5 ms.
import { test, expect } from '@playwright/test';
import { ORIGIN, OTHER, testId, truth, openPage, percentile, contentWrites, gaps, lag } from './util.js';

const TOL = 3;
// The SDK's stamps vs the app's own onmessage of the same messages. The SDK's listener runs
// first (causal), typically 0.05–0.3 ms earlier: the bound is the 3 ms, plus, for the
// messages a figure depends on, how long each sat between its creation (Event.timeStamp) and
// the app's handler — the SDK stamped it inside that window. That window is ~0.1 ms unless
// the machine held the page between the two listeners: a clean-clone CI run saw one message
// 8.6 ms apart (its gap, itl.max, 8.6 ms over the app's), which a fixed bound turned into a
// flaky failure. The windows' median is checked to be small, so the allowance stays rare.
const SDK_TOL = 3;
// Single-message lags in the secondary tests: a sanity bound only (one delivery can wait for
// scheduling on this shared machine); accuracy is the first test's job, with statistics.
// 150 ms: a single delivery 66 ms late was seen in a clean-clone CI run on this shared
// 2-core machine while every statistical bound held.
const TOL_ONE = 150;
// Event data carrying non-empty answer text, in the formats used here (the app's own view).
const CONTENT = /"(content|delta|text)":"[^"]/;

/** One EventSource stream from the page, as an app would read it; with the server's truth. */
async function stream(page, query, opts = {}) {
  const id = testId('es');
  const url = `${opts.origin || ''}/v1/stream?${query}&test_id=${id}`;
  const out = await page.evaluate(
    async ({ url, opts }) => {
      const h = await import('/helpers.js');
      const { events, rec } = await h.esStream(url, opts);
      // The app's onmessage times of content messages, as offsets from the record's start.
      const content = events.filter((e) => CONTENT_RE.test(e.data));
      const app = content.map((e) => performance.timeOrigin + e.t - rec.startEpochMs);
      // Per content message: from its creation to the app's handler (see SDK_TOL).
      const waits = content.map((e) => e.t - e.ts);
      return { rec, events, app, waits, appFirst: app.length ? app[0] : null };
    },
    { url, opts },
  );
  return { ...out, truth: await truth(id) };
}

test.beforeEach(async ({ page }) => {
  page.__errors = await openPage(page);
  await page.evaluate(async (re) => {
    window.CONTENT_RE = new RegExp(re);
    window.__NativeES = window.EventSource;
    await (await import('/helpers.js')).startRum();
  }, CONTENT.source);
  // Warm-up: the connection, the wasm tier-up; not measured.
  await stream(page, 'prefill_ms=5&gap_ms=5&tokens=5');
});
test.afterEach(async ({ page }) => {
  expect(page.__errors, 'no uncaught errors in the page').toEqual([]);
});

test('ttft, gaps, the scripted stall and the server trace match the ground truth', async ({ page }) => {
  const { rec, app, waits, appFirst, events, truth: t } = await stream(page, 'prefill_ms=300&gap_ms=30&jitter_ms=8&seed=7&tokens=40&stall_at=20&stall_ms=400');
  const writes = contentWrites(t);
  expect(writes.length).toBe(40);

  expect(rec.transport).toBe('eventsource');
  expect(rec.reconnectOf).toBeNull();
  expect(rec.url).toBe(`${ORIGIN()}/v1/stream`);
  expect(rec.method).toBe('GET');
  expect(rec.status).toBe(200);
  // The app closed at [DONE]: the answer was complete, so `ok`.
  expect(rec.outcome).toBe('ok');
  expect(rec.complete).toBe(true);
  expect(rec.format).toBe('openai-chat');
  expect(rec.contentEvents).toBe(40);
  // Every message counted (role chunk, 40 deltas, finish chunk, [DONE]).
  expect(rec.chunks).toBe(events.length);
  const appChars = events.reduce((n, e) => n + (e.data === '[DONE]' ? 0 : [...(JSON.parse(e.data).choices[0]?.delta?.content || '')].length), 0);
  expect(rec.chars).toBe(appChars);
  // `open` is the headers mark; the first token is the first content message, not `open`.
  expect(rec.marks.headers).toBeLessThan(rec.ttft - 200);
  expect(lag(rec, rec.marks.headers, { epoch: t.received_unix_ms + t.headers_ms })).toBeGreaterThan(-0.5);

  // 1. The SDK's own error: its stamps vs the app's own onmessage of the same
  //    messages (the SDK's listener runs first).
  expect(app).toHaveLength(40);
  expect(waits).toHaveLength(40);
  // The windows are real: the event was made before the app's handler ran (a clock step of
  // slack), and usually just before (a handful of ms for half the messages would mean the
  // allowance below carries the check).
  expect(Math.min(...waits)).toBeGreaterThan(-0.2);
  expect(percentile(waits, 0.5)).toBeLessThan(1);
  const win = waits.map((x) => Math.max(0, x));
  console.log(`eventsource handler waits: median ${percentile(waits, 0.5).toFixed(2)} ms, max ${Math.max(...waits).toFixed(2)} ms`);
  expect(rec.ttft).toBeLessThanOrEqual(appFirst + 0.2);
  expect(Math.abs(rec.ttft - appFirst)).toBeLessThan(SDK_TOL + win[0]);
  expect(Math.abs(rec.total - app[39])).toBeLessThan(SDK_TOL + win[39]);
  const appGaps = gaps(app);
  // Gap i (message i to i+1) as the SDK stamped it lies in [app − win[i+1], app + win[i]]; a
  // quantile is monotone in every sample, so the SDK's lies between the quantiles of those
  // bounds (plus the histogram's 1 % relative error and SDK_TOL).
  const lo = appGaps.map((g, i) => g - win[i + 1]);
  const hi = appGaps.map((g, i) => g + win[i]);
  expect(rec.itl.n).toBe(39);
  for (const [k, q] of [['p50', 0.5], ['p95', 0.95], ['p99', 0.99]]) {
    const exact = percentile(appGaps, q);
    const msg = `itl.${k}: ${rec.itl[k]} vs the app's ${exact} (window ${percentile(lo, q)}..${percentile(hi, q)})`;
    expect(rec.itl[k], msg).toBeGreaterThan(percentile(lo, q) - SDK_TOL - 0.01 * exact);
    expect(rec.itl[k], msg).toBeLessThan(percentile(hi, q) + SDK_TOL + 0.01 * exact);
  }
  expect(rec.itl.max).toBeGreaterThan(Math.max(...lo) - SDK_TOL);
  expect(rec.itl.max).toBeLessThan(Math.max(...hi) + SDK_TOL);
  expect(rec.stalls.count).toBe(1);
  expect(rec.stallList[0].dur).toBeGreaterThan(lo[19] - SDK_TOL);
  expect(rec.stallList[0].dur).toBeLessThan(hi[19] + SDK_TOL);

  // 2. Against the server's send times (wall clock): the median delivery lag within 3 ms,
  //    every message within 50 ms, the gap statistics within 3 ms (+1 %) or, when the machine
  //    delayed some deliveries, within the observed lag spread (see fetch-metrics.spec.js).
  const lags = writes.map((w, i) => rec.startEpochMs + app[i] - w.epoch);
  expect(Math.min(...lags)).toBeGreaterThan(-0.5);
  expect(percentile(lags, 0.5)).toBeLessThan(TOL);
  expect(Math.max(...lags)).toBeLessThan(TOL_ONE); // one delivery can be preempted; the median is the check
  const jitter = Math.max(...lags) - Math.min(...lags);
  const g = gaps(writes.map((w) => w.t_ms));
  for (const [k, q] of [['p50', 0.5], ['p95', 0.95], ['p99', 0.99]]) {
    const exact = percentile(g, q);
    expect(Math.abs(rec.itl[k] - exact), `itl.${k}: ${rec.itl[k]} vs the server's ${exact}`).toBeLessThan(Math.max(TOL, jitter) + 0.01 * exact);
  }
  expect(Math.abs(rec.stallList[0].dur - g[19])).toBeLessThan(Math.max(TOL, jitter));

  // No headers are visible to an EventSource: Server-Timing and the trace come from the
  // stream's Resource Timing entry at its end.
  expect(rec.serverTiming.map((e) => e.name)).toEqual(['queue', 'trace']);
  expect(Math.abs(rec.serverTiming[0].dur - t.queue_ms)).toBeLessThan(0.01);
  expect(rec.traceSource).toBe('server');
  expect(rec.traceId).toBe(t.trace_id);
  expect(t.traceparent).toBeNull();
  expect(rec.ttftSplit.server).toBeCloseTo(t.queue_ms, 2);
});

// Named events reach only the listeners for their type (never onmessage): the SDK sees the
// types the app subscribes to. ai-sdk-ui sends unnamed events (onmessage only).
for (const [format, types, closeOn] of [
  ['anthropic', ['message_start', 'content_block_delta', 'message_stop'], 'message_stop'],
  ['openai-responses', ['response.output_text.delta', 'response.completed'], 'response.completed'],
  ['ai-sdk-ui', [], null],
]) {
  test(`format ${format}: ${types.length ? 'named events' : 'onmessage'} counted, timed against the server`, async ({ page }) => {
    const { rec, events, truth: t } = await stream(page, `format=${format}&prefill_ms=100&gap_ms=25&tokens=24&split=1&pings=1&ids=1`, { types, closeOn });
    const writes = contentWrites(t);
    expect(rec.format).toBe(format);
    expect(rec.outcome).toBe('ok');
    expect(rec.complete).toBe(true);
    expect(rec.contentEvents).toBe(t.content_tokens);
    // The model the stream names (as asked: `default`; AI SDK UI names none).
    expect(t.model).toBe(format === 'ai-sdk-ui' ? null : 'default');
    expect(rec.model).toBe(t.model);
    expect(rec.chunks).toBe(events.length);
    expect(rec.itl.n).toBe(writes.length - 1);
    expect(rec.stalls.count).toBe(0);
    expect(lag(rec, rec.ttft, writes[0])).toBeGreaterThan(-0.5);
    expect(lag(rec, rec.ttft, writes[0])).toBeLessThan(TOL_ONE);
    expect(lag(rec, rec.total, writes[writes.length - 1])).toBeLessThan(TOL_ONE);
    // `id: 0, 1, ...` are not trace ids: the trace still comes from Server-Timing.
    expect(rec.traceId).toBe(t.trace_id);
  });
}

test('the app receives every event byte-for-byte as with the native EventSource', async ({ page }) => {
  const q = 'format=anthropic&prefill_ms=20&gap_ms=3&tokens=30&split=1&pings=1&ids=1';
  const types = ['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop', 'error'];
  const out = await page.evaluate(
    async ({ q, types }) => {
      const h = await import('/helpers.js');
      const Rum = window.EventSource;
      const run = async (Ctor) => {
        // Two listeners per type, one added before and one after onmessage: the order of
        // delivery must be the native one too.
        const log = [];
        const es = new Ctor(`/v1/stream?${q}`);
        const shape = { url: es.url, withCredentials: es.withCredentials, readyState: es.readyState, instance: es instanceof window.__NativeES };
        await new Promise((resolve) => {
          let seen = null;
          for (const ty of types) {
            es.addEventListener(ty, (ev) => {
              seen = ev;
              log.push(['a', ev.type, ev.data, ev.lastEventId, ev.origin, ev.isTrusted, ev.constructor.name, es.readyState]);
            });
          }
          es.onmessage = (ev) => log.push(['on', ev.type, ev.data, ev.lastEventId, ev.isTrusted]);
          es.onopen = (ev) => log.push(['open', ev.type, ev.isTrusted, es.readyState]);
          for (const ty of types) {
            es.addEventListener(ty, (ev) => {
              log.push(['b', ev.type, ev === seen]);
              if (ty === 'message_stop') {
                es.close();
                resolve();
              }
            });
          }
        });
        shape.closed = es.readyState;
        return { log, shape };
      };
      const nat = await run(window.__NativeES);
      const ours = await run(Rum);
      const rec = await h.waitRecord((r) => r.transport === 'eventsource' && r.format === 'anthropic');
      const statics = [Rum.CONNECTING, Rum.OPEN, Rum.CLOSED, Rum.name, Rum.prototype instanceof window.__NativeES, Rum !== window.__NativeES];
      // Bad arguments fail as natively (and do not turn measurement off).
      const errors = (C) => {
        const out = [];
        for (const f of [() => new C(), () => new C('http://[bad'), () => new C('/x').addEventListener('message')]) {
          try {
            f();
            out.push('none');
          } catch (e) {
            out.push(e.name + ': ' + e.message);
          }
        }
        return out;
      };
      return { nat, ours, rec, statics, errors: [errors(window.__NativeES), errors(Rum)], active: window.__rum.active };
    },
    { q, types },
  );
  // Request ids differ between the two requests (msg_req-N); everything else is identical.
  const norm = (log) => JSON.parse(JSON.stringify(log).replace(/req-\d+/g, 'req-N'));
  expect(out.ours.log.length).toBeGreaterThan(60);
  expect(norm(out.ours.log)).toEqual(norm(out.nat.log));
  expect(out.ours.log.every((e) => e[0] !== 'b' || e[2] === true)).toBe(true);
  expect(out.ours.shape).toEqual(out.nat.shape);
  expect(out.ours.shape).toEqual({ url: `${ORIGIN()}/v1/stream?${q}`, withCredentials: false, readyState: 0, instance: true, closed: 2 });
  expect(out.statics).toEqual([0, 1, 2, 'EventSource', true, true]);
  expect(out.errors[1]).toEqual(out.errors[0]);
  expect(out.errors[0].every((e) => e !== 'none')).toBe(true);
  expect(out.active).toBe(true);
  // And the SDK measured it: the named content events it saw through the app's listeners.
  expect(out.rec.contentEvents).toBe(30);
  expect(out.rec.complete).toBe(true);
});

test('a server-closed stream reconnects: two records, linked, each timed against its own request', async ({ page }) => {
  const id = testId('es-reconnect');
  // The app ignores [DONE] the first time: the server ends the response, the browser
  // reconnects (about 3 s later), and the app closes after the second answer (the same app
  // code as every engine runs: pages/scenarios.js `reconnect`).
  const out = await page.evaluate((id) => window.__scenario('reconnect', { id }).then(JSON.parse), id);
  expect(out.log).toEqual(['open 1', 'error 0', 'open 2']);
  const [a, b] = out.recs;
  expect(out.recs).toHaveLength(2);
  expect(a.reconnectOf).toBeNull();
  expect(b.reconnectOf).toBe(a.id);
  expect(b.id).not.toBe(a.id);
  // The first ended when the server closed it, after its end marker: ok. The second: closed
  // by the app after [DONE]: ok.
  expect([a.outcome, a.complete, b.outcome, b.complete]).toEqual(['ok', true, 'ok', true]);
  const truths = await (await fetch(`${ORIGIN()}/__truth?test_id=${id}&all=1&wait_ms=5000`)).json();
  expect(truths).toHaveLength(2);
  for (const [i, rec, t] of [[0, a, truths[0]], [1, b, truths[1]]]) {
    const writes = contentWrites(t);
    expect(rec.contentEvents).toBe(10);
    expect(rec.traceId).toBe(t.trace_id);
    // Each record starts before its own request reached the server: the first at the
    // construction, the reconnect at its request's start from Resource Timing (not at its
    // `open`, which comes after the server sent the head).
    const sentBefore = t.received_unix_ms - rec.startEpochMs;
    expect(sentBefore, `attempt ${i}: start → server receipt`).toBeGreaterThan(-0.5);
    if (i === 1) expect(sentBefore, 'reconnect: request start → server receipt').toBeLessThan(100);
    // Each attempt timed against its own server writes (sanity bound; see TOL_ONE).
    expect(lag(rec, rec.ttft, writes[0]), `attempt ${i}: first token`).toBeGreaterThan(-0.5);
    expect(lag(rec, rec.ttft, writes[0]), `attempt ${i}: first token`).toBeLessThan(TOL_ONE);
    expect(lag(rec, rec.total, writes[writes.length - 1]), `attempt ${i}: last token`).toBeLessThan(TOL_ONE);
  }
  expect(b.marks.headers).toBeGreaterThan(0);
  expect(b.startEpochMs - a.startEpochMs).toBeGreaterThan(1000);
});

test('cross-origin: serverTiming and trace id via Timing-Allow-Origin; opt-in traceparent query parameter', async ({ page }) => {
  const { rec, truth: t } = await stream(page, 'prefill_ms=20&gap_ms=5&tokens=10', { origin: OTHER() });
  expect(rec.url).toBe(`${OTHER()}/v1/stream`);
  expect(rec.serverTiming.find((e) => e.name === 'trace').desc).toContain(t.trace_id);
  expect(rec.traceSource).toBe('server');
  expect(rec.traceId).toBe(t.trace_id);

  // Opted in: the traceparent goes out as a query parameter (same origin); `url` stays the
  // app's own. (The scripted server reads traceparent only from headers: checked in its log.)
  const id = testId('es-param');
  const out = await page.evaluate(async (id) => {
    const h = await import('/helpers.js');
    await window.__rum.shutdown();
    await h.startRum({ traceparentQueryParam: 'traceparent' });
    const es = new EventSource(`/v1/stream?tokens=5&gap_ms=2&test_id=${id}`);
    const shown = es.url;
    await new Promise((resolve) => {
      es.onmessage = (ev) => ev.data === '[DONE]' && resolve(es.close());
    });
    return { shown, rec: await h.waitRecord((r) => r.transport === 'eventsource' && r.traceSource === 'propagated') };
  }, id);
  expect(out.shown).toBe(`${ORIGIN()}/v1/stream?tokens=5&gap_ms=2&test_id=${id}`);
  const log = await (await fetch(`${ORIGIN()}/__log?test_id=${id}`)).json();
  const queries = (log.requests || log).map((e) => e.query);
  expect(queries.length).toBeGreaterThanOrEqual(1);
  const sent = new URLSearchParams(queries[queries.length - 1]).get('traceparent');
  expect(out.rec.traceSource).toBe('propagated');
  expect(sent).toBe(`00-${out.rec.traceId}-${out.rec.spanId}-01`);
});

test('fail-open: a throwing core leaves a working EventSource; shutdown restores the native class', async ({ page }) => {
  // A fresh document, whose core is loaded with its exports open to fault injection.
  page.__errors = await openPage(page);
  const out = await page.evaluate(async () => {
    const h = await import('/helpers.js');
    window.__NativeES = window.EventSource;
    const core = h.hookCoreExports();
    await h.startRum();
    const warn = console.warn;
    const warnings = [];
    console.warn = (...a) => warnings.push(a.join(' '));
    const q = '/v1/stream?format=anthropic&tokens=20&gap_ms=2&ids=1';
    const opts = { types: ['content_block_delta', 'message_stop'], closeOn: 'message_stop', record: false };
    const nat = await h.esStream(q, { ...opts, Ctor: window.__NativeES });
    const res = {};
    // Mid-stream: the first failure turns measurement off; every event still arrives.
    const message = core.core_es_message;
    core.core_es_message = () => {
      throw new Error('simulated core failure');
    };
    res.mid = await h.esStream(q, opts);
    res.midActive = window.__rum.active;
    core.core_es_message = message;
    await window.__rum.shutdown();
    res.restored = window.EventSource === window.__NativeES;
    // At construction: the app gets a working EventSource.
    await h.startRum();
    const begin = core.core_es_begin;
    core.core_es_begin = () => {
      throw new Error('simulated core failure');
    };
    res.ctor = await h.esStream(q, opts);
    core.core_es_begin = begin;
    await window.__rum.shutdown();
    console.warn = warn;
    const strip = (evs) => evs.map((e) => [e.type, e.data.replace(/req-\d+/g, 'req-N'), e.lastEventId]);
    return { nat: strip(nat.events), mid: strip(res.mid.events), ctor: strip(res.ctor.events), midActive: res.midActive, restored: res.restored, warnings };
  });
  expect(out.nat.length).toBe(21);
  expect(out.mid).toEqual(out.nat);
  expect(out.ctor).toEqual(out.nat);
  expect(out.midActive).toBe(false);
  expect(out.restored).toBe(true);
  expect(out.warnings.length).toBeGreaterThanOrEqual(2);
});
