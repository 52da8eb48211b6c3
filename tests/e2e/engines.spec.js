// Every engine: the scenarios that matter, run in Chromium (Playwright), Firefox ESR
// (geckodriver) and WebKitGTK — Safari's engine — (WebKitWebDriver under Xvfb) against the
// scripted server. One scenario set: the app side is tests/e2e/pages/scenarios.js, called the
// same way through every driver (tests/e2e/engines.js); the checks below run here, against the
// server's recorded send times, with the per-engine tolerances stated in ENGINE.
//
// Figures: one `engine <name> …` line per check (grep '^engine ' in the run's output), and
// test-results/engines.json with the per-engine summary (ttft/total error vs the server,
// first-paint error, render delay p95, the support facts).
import { test, expect } from '@playwright/test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ORIGIN, NGINX, testId, truth, percentile, contentWrites, gaps, lag } from './util.js';
import { startCollector } from './server.js';
import { openWebDriver, playwrightEngine, missing } from './engines.js';

const FRAME = 1000 / 60;
// Per engine: `step` the performance.now() tick a page sees (Chromium coarsens to 100 µs on a
// page that is not cross-origin isolated; Firefox and WebKit to 1 ms), asserted against what
// the page measures; `lag` the bound on the median delivery lag (server write → the page's
// read), one step more where marks are floored to 1 ms; `frame` the bound on "painted in the
// next frame": one 60 Hz frame plus scheduling slack (20 ms, paint.spec.js) plus the two clock
// readings of a 1 ms clock. WebKitGTK (under Xvfb) paints on a 60 Hz timer and a newly inserted
// answer element was seen to take a second frame (first paint 23 ms after its token, once in
// several runs): two frames there. `tail` bounds the median of an answer's p95 render delay:
// `frame`, but in WebKitGTK three frames — its software rendering under Xvfb drops frames on
// a loaded machine (CI read a median p95 of 37.5 ms over 5 answers where a quiet machine
// reads 17 ms; its first paints stayed within two frames).
// `early`: how far a page's wall time (`performance.timeOrigin + performance.now()`, the
// records' `startEpochMs + offset`) may read before the server's exact one: a step for now()'s
// floor and a step for timeOrigin's, which is coarsened too (WebKit's Performance::timeOrigin
// applies reduceTimeResolution: whole ms in WebKitGTK and Firefox here, their sum minus
// Date.now() seen in [−1, 0] ms in WebKit and [−2, +2] in Firefox with its jittered clock;
// CI failed a one-step bound in WebKit), plus 0.5 ms for the two processes' clock readings.
const ENGINE = {
  chromium: { step: 0.1, lag: 3, frame: 20, tail: 20 },
  firefox: { step: 1, lag: 4, frame: 22, tail: 22 },
  webkit: { step: 1, lag: 4, frame: 2 * FRAME + 2, tail: 3 * FRAME + 2 },
};
for (const t of Object.values(ENGINE)) t.early = 2 * t.step + 0.5;
// A single delivery can wait for scheduling (fetch-metrics.spec.js: 66 ms seen once in CI).
const SANITY = 150;
const ENGINES = (process.env.RUM_ENGINES || 'chromium,firefox,webkit').split(',');

const summary = {};
const note = (engine, key, value) => {
  (summary[engine] ||= {})[key] = value;
  console.log(`engine ${engine} ${key}=${JSON.stringify(value)}`);
};
test.afterAll(() => {
  fs.mkdirSync('test-results', { recursive: true });
  const file = 'test-results/engines.json';
  const old = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
  fs.writeFileSync(file, JSON.stringify({ ...old, ...summary }, null, 1));
});
/**
 * The SDK's timing against the server's content writes on the shared wall clock: each event's
 * arrival (the app's read that carried it) minus its send time — never early beyond a page
 * clock floored to `step`, median under `tol.lag`, each under SANITY — and itl p50/p95 against
 * the server's own gaps within the delivery jitter seen (or `tol.lag`), 1 % and a step.
 */
function expectOnTime(rec, reads, writes, tol, medianLag = tol.lag) {
  const arrival = reads.flatMap((r) => Array(r.n).fill(r.t));
  expect(arrival).toHaveLength(writes.length);
  const lags = writes.map((w, i) => rec.startEpochMs + arrival[i] - w.epoch);
  expect(Math.min(...lags)).toBeGreaterThan(-tol.early);
  expect(percentile(lags, 0.5)).toBeLessThan(medianLag);
  expect(Math.max(...lags)).toBeLessThan(SANITY);
  const jitter = Math.max(...lags) - Math.min(...lags);
  const sent = gaps(writes.map((w) => w.t_ms));
  for (const [k, q] of [['p50', 0.5], ['p95', 0.95]]) {
    const exact = percentile(sent, q);
    expect(Math.abs(rec.itl[k] - exact), `itl.${k} ${rec.itl[k]} vs the server's ${exact}`).toBeLessThan(Math.max(tol.lag, jitter) + 0.01 * exact + tol.step);
  }
  return { lags, jitter, sent };
}

/** Content events per arrival of the app's reads `{t, n}`: reads within `window` ms of the arrival's first. */
/** An auto-mode record painted in step with its own stream: found from its first paint to its
 * last, no render delay past a sanity bound. A record bound to another answer's element (one
 * scripted apart in time) fails it. */
function saneAuto(r, what) {
  expect(r.paintSource, what).toBe('auto');
  expect(r.marks.firstPaint, what).toBeGreaterThanOrEqual(r.marks.firstToken);
  expect(r.marks.firstPaint - r.marks.firstToken, what).toBeLessThanOrEqual(SANITY);
  expect(r.marks.lastPaint, what).toBeGreaterThanOrEqual(r.marks.lastToken);
  expect(r.marks.lastPaint - r.marks.lastToken, what).toBeLessThanOrEqual(SANITY);
  expect(r.renderDelay.p95, what).toBeLessThanOrEqual(SANITY);
}

function arrivalsOf(reads, window) {
  const events = [];
  let first = -Infinity;
  for (const r of reads) {
    if (r.t - first <= window) events[events.length - 1] += r.n;
    else {
      events.push(r.n);
      first = r.t;
    }
  }
  return events;
}
const stat = (xs) => ({ median: +percentile(xs, 0.5).toFixed(2), min: +Math.min(...xs).toFixed(2), max: +Math.max(...xs).toFixed(2), maxAbs: +Math.max(...xs.map(Math.abs)).toFixed(2), n: xs.length });

for (const engine of ENGINES) {
  test.describe(engine, () => {
    // In order, one browser per engine (a failure restarts the worker, and with it the browser).
    test.describe.configure({ timeout: 120_000 });
    const tol = ENGINE[engine];
    let b;
    let collector;
    let dir;

    /** A fresh blank page (from `origin`) with the SDK started; nothing in its console afterwards. */
    async function fresh(opts = {}, origin = ORIGIN()) {
      await b.goto(`${origin}/blank.html`);
      await b.waitFor('window.llmRum !== undefined && window.__scenario !== undefined');
      expect(await b.scenario('start', opts)).toBe(true);
    }
    const consoleOf = () => b.evaluate('window.__console || []');

    test.beforeAll(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), `llm-rum-${engine}-`));
      const alt = ORIGIN().replace('127.0.0.1', 'localhost');
      collector = await startCollector(['--db', path.join(dir, 'rum.db'), '--allow-origin', ORIGIN(), '--allow-origin', alt, '--rate-limit', '0']);
    });
    if (engine === 'chromium') {
      test.beforeAll(async ({ browser }) => {
        b = playwrightEngine(await browser.newPage());
      });
    } else {
      test.beforeAll(async () => {
        // A missing engine is a failure, not a skip: scripts/setup.sh installs all three.
        expect(missing(engine), `${engine} is installed (scripts/setup.sh)`).toEqual([]);
        b = await openWebDriver(engine);
      });
    }
    test.afterAll(async () => {
      if (b) await b.quit();
      if (collector) await collector.stop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });
    test.afterEach(async () => {
      // Nothing in the page's console: no uncaught error, unhandled rejection or warning.
      if (b) expect(await consoleOf().catch(() => [])).toEqual([]);
    });

    test('the engine: clock step, byte streams, entry types (the support table)', async () => {
      await fresh();
      const env = await b.scenario('env');
      note(engine, 'env', { ua: env.ua, step: +env.step.toFixed(3), byteStreams: env.byteStreams, loaf: env.loaf, entryTypes: env.entryTypes });
      expect(env.step).toBeGreaterThan(tol.step * 0.5);
      expect(env.step).toBeLessThan(tol.step * 1.5);
      if (engine !== 'webkit') expect(env.byteStreams).toBe(true);
      expect(env.loaf).toBe(engine === 'chromium');
    });

    // Issue 27: a stream the page requests right after init(), with the core in at once,
    // mid-answer, after the whole answer, never, or failing: the app gets its headers and every
    // chunk when the network delivers them (within 15 ms of the server's writes: each answer's
    // median chunk, and the headers and first chunk over the five answers — one of them may be
    // preempted on a loaded machine, never past SANITY), the text intact; exactly one record
    // whenever the core comes, equal to the same answer measured with the core in (ttft within
    // 15 ms of the server, gaps and the stall as the server wrote them); none otherwise, and
    // nothing but the one warning of a failed core.
    test('an answer requested right after init() reaches the app on time whatever the core does, and is measured once it is in', async () => {
      const query = 'prefill_ms=150&gap_ms=20&jitter_ms=5&seed=1&tokens=40&stall_at=20&stall_ms=300';
      const cases = [
        { wasm: 'delay_ms=0', arrives: true },
        { wasm: 'delay_ms=600', arrives: true },
        { wasm: 'delay_ms=1500', arrives: true },
        { wasm: 'hang=1', arrives: false },
        { wasm: 'status=500', arrives: false },
      ];
      const delays = {};
      const heads = [];
      const firsts = [];
      for (const c of cases) {
        await b.goto(`${ORIGIN()}/blank.html`);
        await b.waitFor('window.llmRum !== undefined && window.__scenario !== undefined');
        const ids = [testId(`${engine}-early`), testId(`${engine}-early-warm`)];
        const out = await b.scenario('early', { wasm: c.wasm, query, ids, waitMs: c.arrives ? 6000 : 2000 });
        const t = await truth(ids[0]);
        const writes = contentWrites(t);
        const o = out.timeOrigin;
        const app = out.first;
        // What the app got, when: its headers against the server's response head, each content
        // read against the write that carried it (the shared wall clock, util.js `lag`).
        const headLag = o + app.headersAt - (t.received_unix_ms + t.headers_ms);
        const arrival = app.reads.flatMap((r) => Array(r.n).fill(r.t));
        expect(arrival).toHaveLength(writes.length);
        const lags = writes.map((w, i) => o + arrival[i] - w.epoch);
        delays[c.wasm] = { headers: +headLag.toFixed(1), firstChunk: +lags[0].toFixed(1), medianChunk: +percentile(lags, 0.5).toFixed(1), init: +out.initMs.toFixed(2) };
        heads.push(headLag);
        firsts.push(lags[0]);
        expect(headLag).toBeGreaterThan(-tol.early);
        expect(headLag, `${c.wasm}: headers`).toBeLessThan(SANITY);
        expect(Math.min(...lags)).toBeGreaterThan(-tol.early);
        expect(percentile(lags, 0.5), `${c.wasm}: chunks`).toBeLessThan(15);
        expect(Math.max(...lags)).toBeLessThan(SANITY);
        expect(app.fnv).toBe(t.body_fnv1a64);
        // Sent as the app made it: the core, not in yet, could not decide on a traceparent.
        expect(t.traceparent).toBeNull();
        if (!c.arrives) {
          expect(out.count).toBe(0);
          if (c.wasm === 'hang=1') {
            expect(out.ready).toBe('pending');
            expect(out.console).toEqual([]);
          } else {
            expect(out.ready).toBe(false);
            expect(out.active).toBe(false);
            expect(out.console.map((m) => m.kind)).toEqual(['console.warn']);
          }
          continue;
        }
        expect(out.ready).toBe(true);
        expect(out.console).toEqual([]);
        expect(out.count).toBe(1);
        const { rec, warm } = out;
        for (const r of [rec, warm]) {
          expect([r.outcome, r.format, r.complete, r.understood]).toEqual(['ok', 'openai-chat', true, true]);
          expect(r.contentEvents).toBe(40);
          expect(r.stalls.count).toBe(1);
          expect(r.stalls.network).toBe(1);
        }
        // No traceparent of ours went out; the server's own trace came back in Server-Timing.
        expect(rec.traceSource).toBe('server');
        expect(rec.traceId).toBe(t.trace_id);
        expect(rec.chars).toBe(app.chars);
        expect(rec.chars).toBe(warm.chars);
        expect(rec.bytes).toBe(t.body_bytes);
        expect(rec.serverTiming.map((e) => e.name)).toEqual(warm.serverTiming.map((e) => e.name));
        expect(rec.correlation['x-request-id']).toBe(app.rid);
        // ttft against the server's first content write, as the warm one's against its own.
        const wt = await truth(ids[1]);
        for (const [r, w] of [[rec, writes[0]], [warm, contentWrites(wt)[0]]]) {
          expect(lag(r, r.ttft, w)).toBeGreaterThan(-tol.early);
          expect(lag(r, r.ttft, w), `${c.wasm}: ttft`).toBeLessThan(15);
        }
        // Every gap and the scripted stall as the server wrote them (the same check as any
        // answer's), from the times the tap kept.
        const reads = app.reads.map((r) => ({ t: o + r.t - rec.startEpochMs, n: r.n }));
        const { sent } = expectOnTime(rec, reads, writes, tol, 15);
        // The stall as the person saw it (between paints, a frame's rounding either end) where
        // paints were seen, else between arrivals.
        const stallTol = rec.marks.lastPaint !== null ? 15 + tol.frame : 15;
        expect(Math.abs(rec.stallList[0].dur - sent[19])).toBeLessThan(stallTol);
        // Paint: measured when the text came after paint observation; else unknown, and said
        // so — never a later frame passed off as the first paint.
        const first = arrival[0];
        if (rec.unseen.includes('firstPaint')) {
          expect([rec.marks.firstPaint, rec.ttfp, rec.renderDelay, rec.buffered]).toEqual([null, null, null, null]);
          expect(out.readyAt).toBeGreaterThan(first);
        } else {
          expect(rec.unseen).toEqual([]);
        }
        if (out.readyAt > arrival[arrival.length - 1]) expect(rec.unseen).toEqual(['firstPaint']);
        if (out.readyAt < first - 5 && rec.paintSource !== 'none') expect(rec.marks.firstPaint).not.toBeNull();
        expect(warm.unseen).toEqual([]);
      }
      note(engine, 'earlyDelayMs', delays);
      for (const [what, xs] of [['headers', heads], ['first chunk', firsts]]) {
        expect(percentile(xs, 0.5), `${what}: median over the answers`).toBeLessThan(15);
        expect(xs.filter((x) => x >= 15).length, `${what}: late more than once ${JSON.stringify(xs)}`).toBeLessThanOrEqual(1);
      }
    });

    test('ttft, total, itl and the scripted stall against the server send times', async () => {
      await fresh();
      // Warm-up: the keep-alive connection, the wasm tier-up; not measured.
      await b.scenario('chat', { query: 'prefill_ms=5&gap_ms=5&tokens=5', id: testId(`${engine}-warm`) });
      const ttftErr = [];
      const totalErr = [];
      const tokenLag = [];
      // Six answers: the medians below are the check, and on a loaded 2-core machine one or
      // two answers' last write can reach the page late (CI read a 3.66 ms median of four).
      for (let run = 0; run < 6; run++) {
        const id = testId(`${engine}-chat`);
        const out = await b.scenario('chat', { query: `prefill_ms=150&gap_ms=20&jitter_ms=5&seed=${run + 1}&tokens=40&stall_at=20&stall_ms=300&usage=1`, id });
        const t = await truth(id);
        const { rec, reads } = out;
        const writes = contentWrites(t);
        expect(writes).toHaveLength(40);
        expect([rec.outcome, rec.format, rec.complete]).toEqual(['ok', 'openai-chat', true]);
        expect(out.n).toBe(t.body_bytes);
        expect(out.fnv).toBe(t.body_fnv1a64);
        expect(rec.bytes).toBe(t.body_bytes);
        expect(rec.chars).toBe(out.chars);
        expect(rec.outputTokens).toBe(t.content_tokens);
        expect(rec.traceId).toBe(t.trace_id);

        // The SDK's stamps against the app's own reads of the same chunks: never later (it
        // stamps as the chunk passes through; one clock step of rounding), within 3 ms.
        const app = reads.map((r) => r.t);
        expect(rec.ttft).toBeLessThanOrEqual(app[0] + tol.step + 0.01);
        expect(Math.abs(rec.ttft - app[0])).toBeLessThan(3);
        expect(Math.abs(rec.total - app[app.length - 1])).toBeLessThan(3);

        const { lags, jitter, sent } = expectOnTime(rec, reads, writes, tol);
        tokenLag.push(...lags);
        ttftErr.push(lag(rec, rec.ttft, writes[0]));
        totalErr.push(lag(rec, rec.total, writes[39]));
        expect(rec.stalls.count).toBe(1);
        expect(rec.stalls.network).toBe(1);
        expect(Math.abs(rec.stallList[0].dur - sent[19])).toBeLessThan(Math.max(tol.lag, jitter) + tol.step);
      }
      note(engine, 'ttftError', stat(ttftErr));
      note(engine, 'totalError', stat(totalErr));
      note(engine, 'tokenLag', stat(tokenLag));
      for (const e of [...ttftErr, ...totalErr]) expect(e).toBeGreaterThan(-tol.early);
      expect(percentile(ttftErr, 0.5)).toBeLessThan(tol.lag);
      expect(percentile(totalErr, 0.5)).toBeLessThan(tol.lag);
    });

    test('upstream buffering: a real nginx in front (four configurations), and the scripted server on its own', async () => {
      // One answer through the patched fetch; the record's delivery against the app's own reads.
      const answer = async (url, query) => {
        const id = testId(`${engine}-upstream`);
        const out = await b.scenario('chat', { url, query, id });
        const t = await truth(id);
        const { rec, reads } = out;
        const events = t.writes.reduce((n, w) => n + w.events, 0);
        expect([rec.outcome, rec.complete, rec.contentEvents]).toEqual(['ok', true, events]);
        expect(out.fnv).toBe(t.body_fnv1a64); // nginx in between, the bytes are the server's
        // Truthful: the record's arrivals are the app's own content-bearing reads grouped as the
        // record defines an arrival (within 16 ms of its first read). The app stamps its reads
        // a little after the SDK does, so reads near the window's edge may group either way:
        // the record lies between the app's grouping with a 4 ms narrower and a 4 ms wider
        // window; an event split across two reads may count one read later in the parser than
        // in the app's regex (±1).
        const [narrow, wide] = [arrivalsOf(reads, 12), arrivalsOf(reads, 20)];
        const d = rec.delivery;
        const why = JSON.stringify({ reads, d });
        expect(d.arrivals, why).toBeGreaterThanOrEqual(wide.length - 1);
        expect(d.arrivals, why).toBeLessThanOrEqual(narrow.length + 1);
        expect(d.eventsPerArrival.max, why).toBeGreaterThanOrEqual(Math.max(...narrow) - 1);
        expect(d.eventsPerArrival.max, why).toBeLessThanOrEqual(Math.max(...wide) + 1);
        return { rec, t, reads, writes: contentWrites(t) };
      };
      const figures = {};
      const keep = (name, rec) => (figures[name] = { ...rec.delivery, upstreamBuffered: rec.upstreamBuffered, upstreamHints: rec.upstreamHints });

      // Behind nginx. The page comes from nginx's origin, so the response headers are
      // same-origin and visible (hints).
      await fresh({}, NGINX());
      await b.scenario('chat', { query: 'prefill_ms=5&gap_ms=5&tokens=5', id: testId(`${engine}-nginx-warm`) });
      // 1. Default proxy_buffering, an answer smaller than the buffer: one burst at the end.
      let { rec, writes } = await answer('/v1/chat/completions', 'prefill_ms=100&gap_ms=20&tokens=12');
      keep('nginxBufferedShort', rec);
      expect([rec.delivery.arrivals, rec.delivery.largestArrivalShare, rec.upstreamBuffered]).toEqual([1, 1, true]);
      expect(rec.upstreamHints).toEqual([]);
      // The first token reached the page when nginx let the answer go: after the server's last write.
      expect(lag(rec, rec.ttft, writes[writes.length - 1])).toBeGreaterThan(-tol.early);
      expect(lag(rec, rec.ttft, writes[writes.length - 1])).toBeLessThan(SANITY);
      // 2. A long answer through 4 KB buffers: several bursts.
      ({ rec } = await answer('/buffers-4k/v1/chat/completions', 'prefill_ms=100&gap_ms=10&tokens=120'));
      keep('nginxBuffers4k', rec);
      expect(rec.delivery.arrivals).toBeGreaterThanOrEqual(4);
      expect(rec.delivery.eventsPerArrival.p50).toBeGreaterThanOrEqual(8);
      expect(rec.upstreamBuffered).toBe(true);
      // 3. The server says X-Accel-Buffering: no: streamed, on time (nginx keeps the header).
      let reads;
      ({ rec, writes, reads } = await answer('/v1/chat/completions', 'prefill_ms=100&gap_ms=20&jitter_ms=5&seed=3&tokens=40&accel_buffering=no'));
      keep('nginxAccelBufferingNo', rec);
      expect(rec.upstreamBuffered).toBe(false);
      expect(rec.delivery.eventsPerArrival.p50).toBe(1);
      expect(rec.upstreamHints).toEqual([]);
      expectOnTime(rec, reads, writes, tol);
      expect(lag(rec, rec.ttft, writes[0])).toBeGreaterThan(-tol.early);
      expect(lag(rec, rec.ttft, writes[0])).toBeLessThan(SANITY);
      // 4. gzip on text/event-stream: what the page sees, and the encoding named.
      ({ rec } = await answer('/gzip/v1/chat/completions', 'prefill_ms=100&gap_ms=10&tokens=120'));
      keep('nginxGzip', rec);
      expect(rec.upstreamHints).toEqual(['content-encoding: gzip']);
      expect(rec.upstreamBuffered).toBe(true);
      // A long one: WebKit hands the decompressed body over in pieces a few ms apart.
      ({ rec } = await answer('/gzip/v1/chat/completions', 'prefill_ms=100&gap_ms=5&tokens=600'));
      keep('nginxGzipLong', rec);
      expect([rec.delivery.arrivals, rec.upstreamBuffered]).toEqual([1, true]);
      ({ rec } = await answer('/gzip/v1/chat/completions', 'prefill_ms=100&gap_ms=20&tokens=40&accel_buffering=no'));
      keep('nginxGzipAccelBufferingNo', rec);
      expect(rec.upstreamHints).toEqual(['content-encoding: gzip']);
      expect(rec.upstreamBuffered).toBe(false);

      // The scripted server on its own: streams a real server produces are never flagged.
      await fresh();
      for (const [name, query, p50] of [
        ['serverClean', 'prefill_ms=100&gap_ms=20&tokens=40', 1],
        ['serverStall', 'prefill_ms=100&gap_ms=20&tokens=40&stall_at=20&stall_ms=1000', 1],
        ['serverMultiEventWrites', 'prefill_ms=100&gap_ms=20&tokens=48&events_per_write=4', 4],
        ['serverBurstPreset', 'prefill_ms=100&gap_ms=12.5&per_chunk=8&tokens=96', 1],
      ]) {
        ({ rec } = await answer('/v1/chat/completions', query));
        keep(name, rec);
        expect(rec.upstreamBuffered, name).toBe(false);
        expect(rec.delivery.eventsPerArrival.p50, name).toBe(p50);
        expect(rec.upstreamHints, name).toEqual([]);
      }
      // Straight from the server, its X-Accel-Buffering reaches the page: no nginx read it.
      ({ rec } = await answer('/v1/chat/completions', 'prefill_ms=50&gap_ms=10&tokens=10&accel_buffering=no'));
      expect([rec.upstreamBuffered, rec.upstreamHints]).toEqual([false, ['x-accel-buffering: no']]);
      note(engine, 'delivery', figures);
    });

    test('bytes identical through the wrapper and its clone(); BYOB readers where the engine has them', async () => {
      await fresh({ match: ['/bytes', '/v1/'] });
      const ids = [testId(`${engine}-bytes`), testId(`${engine}-sse`), testId(`${engine}-clone`)];
      const out = await b.scenario('bytes', { ids });
      const [tb, ts, tc] = [await truth(ids[0]), await truth(ids[1]), await truth(ids[2])];
      expect(out.clone).toEqual({ a: tc.body_fnv1a64, b: tc.body_fnv1a64, url: true, type: 'text/event-stream; charset=utf-8' });
      expect(out.binN).toBe(300000);
      expect(out.bin).toBe(tb.body_fnv1a64);
      expect(out.nat).toBe(out.bin);
      expect(out.sse).toBe(ts.body_fnv1a64);
      expect(out.recBytes).toEqual([300000, ts.body_bytes]);
      const id = testId(`${engine}-byob`);
      const by = await b.scenario('byob', { id });
      note(engine, 'byob', by.nativeByob);
      // As native: a BYOB reader where the native body gives one, the same refusal where not.
      if (by.nativeByob) {
        expect(by.fnv).toBe((await truth(id)).body_fnv1a64);
        expect(by.outcome).toBe('ok');
      } else {
        expect(by.error).toBe('TypeError');
      }
    });

    test('abort mid-stream and reader.cancel() reach the server; records say aborted', async () => {
      await fresh();
      const a = testId(`${engine}-abort`);
      expect(await b.scenario('abort', { id: a, times: 6 })).toEqual(Array(6).fill('AbortError aborted'));
      const ta = await truth(`${a}-5`);
      expect(ta.client_gone_at_ms).not.toBeNull();
      expect(ta.content_tokens).toBeLessThan(200);
      await fresh();
      const c = testId(`${engine}-cancel`);
      expect(await b.scenario('cancel', { id: c })).toEqual({ outcome: 'aborted' });
      const tc = await truth(c);
      expect(tc.client_gone_at_ms).not.toBeNull();
      expect(tc.client_gone_at_ms).toBeLessThan(2000);
    });

    test('a failure inside the SDK mid-stream leaves the app\'s stream whole; measurement turns off with one warning', async () => {
      // A fresh page: the core's exports are hooked before it loads (helpers.js hookCoreExports).
      await b.goto(`${ORIGIN()}/blank.html`);
      await b.waitFor('window.llmRum !== undefined && window.__scenario !== undefined');
      const id = testId(`${engine}-fault`);
      const out = await b.scenario('coreFault', { id });
      const t = await truth(id);
      expect(out.started).toBe(true);
      expect(out.calls, 'the fault fired mid-stream, and the failed core was never called again').toBe(3);
      expect([out.n, out.fnv]).toEqual([t.body_bytes, t.body_fnv1a64]);
      expect(out.active).toBe(false);
      expect(out.afterN).toBeGreaterThan(0);
      expect(out.logged.map((l) => l.kind)).toEqual(['console.warn']);
      expect(out.logged[0].text).toMatch(/measurement disabled after an internal error/);
    });

    test('a slow reader keeps backpressure (byte stream or default-stream fallback)', async () => {
      await fresh({ match: ['/bytes'] });
      const id = testId(`${engine}-slow`);
      const out = await b.scenario('slowReader', { id });
      const t = await truth(id);
      expect(t.body_bytes).toBeGreaterThan(2 * 1024 * 1024); // plenty was there to read ahead
      expect([out.chunks, out.bytes, out.outcome]).toEqual([1, out.firstLen, 'aborted']);
    });

    test('first paint and render delay: streamed and buffered renderers', async () => {
      await fresh();
      const q = 'prefill_ms=80&gap_ms=30&tokens=40';
      await b.scenario('paint', { kind: 'streamed', query: 'prefill_ms=5&gap_ms=5&tokens=5' }); // warm-up
      // Each answer within the single-delivery sanity bound (frames slip on this shared
      // machine under load: 54 ms seen in WebKit, 97 ms once in Chromium while other builds
      // ran); the medians of 5 answers within `frame`.
      const SLIP = SANITY;
      const fp = [];
      const p95 = [];
      const errs = [];
      for (let run = 0; run < 5; run++) {
        const { rec } = await b.scenario('paint', { kind: 'streamed', query: q });
        const m = rec.marks;
        expect(rec.outcome).toBe('ok');
        expect(m.firstPaint).not.toBeNull();
        expect(m.firstPaint).toBeGreaterThanOrEqual(m.firstToken);
        expect(m.lastPaint).toBeGreaterThanOrEqual(m.lastToken);
        // The bracket's half width plus the clock step: at least the step; usually under a
        // frame, but a bracket spans the whole rendering update, which WebKitGTK's software
        // rendering under Xvfb can stretch on a loaded machine (21.5 ms seen once).
        expect(rec.paintErrorMs).toBeGreaterThanOrEqual(tol.step);
        expect(rec.paintErrorMs).toBeLessThanOrEqual(SLIP);
        errs.push(rec.paintErrorMs);
        fp.push(m.firstPaint - m.firstToken);
        p95.push(rec.renderDelay.p95);
        expect(m.firstPaint - m.firstToken).toBeLessThanOrEqual(SLIP);
        expect(rec.renderDelay.p95).toBeLessThanOrEqual(SLIP);
        expect(rec.buffered).toBe(false);
      }
      note(engine, 'firstPaintAfterToken', stat(fp));
      note(engine, 'streamedRenderDelayP95', stat(p95));
      note(engine, 'paintErrorMs', stat(errs));
      // Paint times are when the screen showed the frame (issue 30): the next frame's time
      // (its rAF timestamp), a vsync after the frame's own; the error reaches from there to two
      // frames past the next frame's rAF callback (a raster running long), and back to the
      // read: two frames, plus the next callback's lateness in its frame, plus the clock step.
      // The same code in every engine; only Chromium's compositor can check it
      // (paint-compositor.spec.js): here in-page.
      const shown = 1.5 * FRAME;
      expect(percentile(errs, 0.5)).toBeLessThanOrEqual(2.5 * FRAME);
      expect(percentile(fp, 0.5)).toBeLessThanOrEqual(tol.frame + shown);
      expect(percentile(p95, 0.5)).toBeLessThanOrEqual(tol.tail + shown);
      const { rec } = await b.scenario('paint', { kind: 'buffered', query: q });
      const m = rec.marks;
      expect(m.firstPaint - m.lastToken).toBeGreaterThanOrEqual(0);
      expect(m.firstPaint - m.lastToken).toBeLessThanOrEqual(SLIP);
      expect(rec.buffered).toBe(true);
      expect(rec.renderDelay.first).toBeGreaterThan(1000);
      note(engine, 'bufferedFirstPaintAfterLastToken', +(m.firstPaint - m.lastToken).toFixed(2));
    });

    // Auto mode (issue 15): nothing named. The chat page has a ticking clock, a "typing…"
    // indicator and the user's prompt echoed (repeating the answer's opening words) changing
    // beside the answer; each UI is run named (rum.observe: the reference) and unnamed, and the
    // medians of firstPaint − firstToken must agree within a frame.
    test('auto mode: the answer element found unnamed, first paint as with rum.observe', async () => {
      await fresh();
      await b.scenario('autoAnswer', { ui: 'streamed', query: 'prefill_ms=5&gap_ms=5&tokens=5' }); // warm-up
      // The answer opens with a bare markdown "#" (no letter to recognise it by: auto mode
      // places that frame once the heading's words come, issue 29).
      const q = 'prefill_ms=80&gap_ms=25&tokens=40';
      for (const ui of ['streamed', 'throttled', 'markdown', 'react', 'buffered']) {
        // From the token whose arrival the first paint follows: the last for a buffered UI
        // (from the first, the two runs' stream lengths would differ by what the host's load
        // did to a second of streaming: CI read 21.3 ms).
        const fp = (r) => r.marks.firstPaint - (ui === 'buffered' ? r.marks.lastToken : r.marks.firstToken);
        const diff = [];
        for (let run = 0; run < 3; run++) {
          const named = await b.scenario('autoAnswer', { ui, query: q, named: true });
          const auto = await b.scenario('autoAnswer', { ui, query: q });
          expect([named.paintSource, auto.paintSource], ui).toEqual(['observed', 'auto']);
          const m = auto.marks;
          expect(m.firstPaint, ui).toBeGreaterThanOrEqual(m.firstToken);
          expect(m.firstPaint - (ui === 'buffered' ? m.lastToken : m.firstToken), ui).toBeLessThanOrEqual(SANITY);
          expect(m.lastPaint, ui).toBeGreaterThanOrEqual(m.lastToken);
          expect(m.lastPaint - m.lastToken, ui).toBeLessThanOrEqual(ui === 'throttled' ? 200 + SANITY : SANITY);
          expect([auto.buffered, named.buffered], ui).toEqual([ui === 'buffered', ui === 'buffered']);
          diff.push(fp(auto) - fp(named));
        }
        note(engine, `autoMinusNamedFirstPaint.${ui}`, stat(diff));
        expect(Math.abs(percentile(diff, 0.5)), ui).toBeLessThanOrEqual(tol.frame);
      }
    });

    test('auto mode: a second answer in the same chat, concurrent answers, shadow roots', async () => {
      await fresh();
      // Each answer opens with a bare "#", as above.
      const q = 'prefill_ms=60&gap_ms=20&tokens=30';
      // One <p> per paragraph (the markdown renderer), twice in the same container.
      const twice = await b.scenario('autoTwice', { ui: 'markdown', query: q });
      twice.forEach((r, i) => saneAuto(r, `answer ${i + 1} in one chat`));
      // Two answers at once, saying different things, each in its own chat.
      const pair = await b.scenario('autoConcurrent', { ui: 'streamed', queries: [q, `prefill_ms=90&gap_ms=15&tokens=30&from=60`] });
      pair.forEach((r, i) => saneAuto(r, `concurrent answer ${i + 1}`));
      // A chat built with web components: an open shadow root is searched, a closed one
      // cannot be seen (and says so).
      saneAuto(await b.scenario('autoAnswer', { ui: 'streamed', query: q, shadow: 'open' }), 'open shadow root');
      const closed = await b.scenario('autoAnswer', { ui: 'streamed', query: q, shadow: 'closed' });
      expect([closed.paintSource, closed.marks.firstPaint, closed.buffered]).toEqual(['none', null, null]);
      // Switched off: no paint fields, and the record is not held.
      await fresh({ observe: false });
      const off = await b.scenario('autoAnswer', { ui: 'streamed', query: q });
      expect([off.paintSource, off.marks.firstPaint]).toEqual(['none', null]);
    });

    // Issue 29. A UI that re-creates the answer's node per token: the element auto mode found
    // is gone after every token; re-bound to the replacement, the answer keeps one record that
    // paints as the same answer rendered in place, measured with rum.observe. Two answers
    // side by side in ONE container, its panes empty until text comes: each finds its own
    // pane or says 'none', never the other's — scripted apart (the second 250 ms later, or
    // with other words), a record bound to the other pane fails saneAuto (first paint a
    // prefill late, or last paint before its last token).
    test('auto mode: a node re-created per token keeps its answer; side-by-side answers in one container never take each other\'s pane', async () => {
      await fresh();
      const q = 'prefill_ms=60&gap_ms=20&tokens=30';
      const fp = (r) => r.marks.firstPaint - r.marks.firstToken;
      const diff = [];
      for (let run = 0; run < 3; run++) {
        const named = await b.scenario('autoAnswer', { ui: 'markdown', query: q, named: true });
        const auto = await b.scenario('autoAnswer', { ui: 'replace', query: q });
        saneAuto(auto, 'replaced per token');
        expect(auto.chars).toBe(named.chars);
        expect(auto.buffered).toBe(false);
        expect(auto.stalls.count, 'no stall made of re-binding').toBe(0);
        diff.push(fp(auto) - fp(named));
      }
      note(engine, 'autoMinusNamedFirstPaint.replace', stat(diff));
      expect(Math.abs(percentile(diff, 0.5))).toBeLessThanOrEqual(tol.frame);

      const later = 'prefill_ms=310&gap_ms=20&tokens=30';
      const cases = {
        'other words': [q, 'prefill_ms=90&gap_ms=15&tokens=30&from=60'],
        'same words, 250 ms apart': [q, later],
        'same words, at once': [q, q],
      };
      const found = {};
      for (const [what, queries] of Object.entries(cases)) {
        for (const ui of ['streamed', 'markdown']) {
          const recs = await b.scenario('autoSideBySide', { ui, queries });
          recs.forEach((r, i) => {
            const label = `${what}, ${ui}, pane ${i + 1}`;
            if (r.paintSource === 'none') expect(r.marks.firstPaint, label).toBeNull();
            else saneAuto(r, label);
          });
          found[`${what}, ${ui}`] = recs.map((r) => r.paintSource);
        }
      }
      note(engine, 'sideBySidePaintSource', found);
      // Where the words differ, or one answer shows before the other's first token, each is found.
      for (const what of ['other words', 'same words, 250 ms apart'])
        for (const ui of ['streamed', 'markdown']) expect(found[`${what}, ${ui}`], `${what}, ${ui}`).toEqual(['auto', 'auto']);
    });

    test('EventSource: timing against the server, named events, Resource Timing or its absence', async () => {
      await fresh();
      await b.scenario('eventSource', { url: `/v1/stream?prefill_ms=5&gap_ms=5&tokens=5&test_id=${testId('warm')}` });
      const id = testId(`${engine}-es`);
      const out = await b.scenario('eventSource', { url: `/v1/stream?prefill_ms=150&gap_ms=20&tokens=30&stall_at=15&stall_ms=300&test_id=${id}` });
      const t = await truth(id);
      const { rec, app } = out;
      const writes = contentWrites(t);
      expect([rec.transport, rec.outcome, rec.complete, rec.format, rec.contentEvents]).toEqual(['eventsource', 'ok', true, 'openai-chat', 30]);
      expect(rec.chunks).toBe(out.chunks);
      expect(app).toHaveLength(30);
      expect(rec.ttft).toBeLessThanOrEqual(app[0] + tol.step + 0.01);
      const lags = writes.map((w, i) => rec.startEpochMs + app[i] - w.epoch);
      expect(Math.min(...lags)).toBeGreaterThan(-tol.early);
      expect(percentile(lags, 0.5)).toBeLessThan(tol.lag);
      expect(lag(rec, rec.ttft, writes[0])).toBeLessThan(SANITY);
      expect(rec.stalls.count).toBe(1);
      note(engine, 'eventSourceTokenLag', stat(lags));
      note(engine, 'eventSourceServerTiming', rec.serverTiming === null ? null : rec.serverTiming.map((e) => e.name));
      note(engine, 'eventSourceRecordHeldMs', +out.heldMs.toFixed(1));
      if (rec.serverTiming === null) {
        // No Resource Timing entry for an EventSource in this engine: the record says so and
        // is not held waiting for one.
        expect(out.heldMs).toBeLessThan(100);
      } else {
        expect(rec.serverTiming.map((e) => e.name)).toContain('queue');
        expect(rec.traceId).toBe(t.trace_id);
      }

      // Named events (Anthropic's), seen through the app's own listeners.
      const types = ['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop', 'error'];
      const named = await b.scenario('eventSource', { url: `/v1/stream?format=anthropic&prefill_ms=20&gap_ms=3&tokens=30&test_id=${testId('es-named')}`, types, closeOn: 'message_stop' });
      expect([named.rec.format, named.rec.contentEvents, named.rec.complete, named.rec.outcome]).toEqual(['anthropic', 30, true, 'ok']);
    });

    test('EventSource reconnect: two linked records', async () => {
      await fresh();
      const id = testId(`${engine}-reconnect`);
      const out = await b.scenario('reconnect', { id });
      expect(out.log).toEqual(['open 1', 'error 0', 'open 2']);
      const [a, c] = out.recs;
      expect(out.recs).toHaveLength(2);
      expect(a.reconnectOf).toBeNull();
      expect(c.reconnectOf).toBe(a.id);
      expect([a.outcome, a.complete, c.outcome, c.complete]).toEqual(['ok', true, 'ok', true]);
      const truths = await (await fetch(`${ORIGIN()}/__truth?test_id=${id}&all=1&wait_ms=5000`)).json();
      expect(truths).toHaveLength(2);
      for (const [rec, t] of [[a, truths[0]], [c, truths[1]]]) {
        const writes = contentWrites(t);
        expect(rec.contentEvents).toBe(10);
        expect(lag(rec, rec.ttft, writes[0])).toBeGreaterThan(-tol.early);
        expect(lag(rec, rec.ttft, writes[0])).toBeLessThan(SANITY);
      }
    });

    test('an in-band error event, then the client aborts: outcome error, every format', async () => {
      await fresh({ match: '/v1/' });
      const cases = [
        ['openai-chat', 'error'],
        ['openai-responses', 'error'],
        ['openai-responses', 'failed'],
        ['anthropic', 'error'],
        ['ai-sdk-ui', 'error'],
        ['ndjson', 'error'],
      ];
      for (const [format, kind] of cases) {
        const out = await b.scenario('errorThenAbort', { query: `format=${format}&prefill_ms=20&gap_ms=5&tokens=40&error_at=5&error_kind=${kind}` });
        expect(out, `${format} ${kind}`).toEqual({ outcome: 'error', format, sawError: true });
      }
    });

    test('beacons arrive at the collector', async () => {
      const c = collector.origins[0];
      await fresh({ collector: `${c}/v1/rum` });
      const { ids } = await b.scenario('beacons', { n: 3 });
      expect(ids).toHaveLength(3);
      const t0 = Date.now();
      let got;
      for (;;) {
        const s = await (await fetch(`${c}/api/summary`)).json();
        got = (s.outcomes || {}).ok || 0;
        if (got >= 3 || Date.now() - t0 > 15_000) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(got).toBe(3);
    });

    test('the demo page loads and answers with no script error', async () => {
      const c = collector.origins[0];
      await b.goto(`${ORIGIN()}/demo/index.html?collector=${encodeURIComponent(c + '/v1/rum')}&dashboard=${encodeURIComponent(c + '/')}`);
      await b.waitFor('window.demo !== undefined');
      await b.evaluate('window.demo.ready.then(() => true)');
      await b.click('#ask');
      await b.waitFor('window.demo.history.length > 0', 60_000);
      const last = await b.evaluate('window.demo.history[window.demo.history.length - 1].records');
      for (const kind of ['streamed', 'buffered', 'throttled', 'janky']) {
        expect(last[kind].outcome, kind).toBe('ok');
        expect(last[kind].marks.firstPaint, kind).not.toBeNull();
        expect(last[kind].marks.interaction, kind).not.toBeNull();
      }
      expect(await b.evaluate('window.demoErrors')).toEqual([]);
      expect(await b.evaluate('[...document.querySelectorAll(".status")].map((e) => e.textContent).filter((t) => t.startsWith("error"))')).toEqual([]);
    });
  });
}
