// The engine scenarios' app side (tests/e2e/engines.spec.js): what a chat app does in the
// page, once, for every engine. Playwright (Chromium) and W3C WebDriver (Firefox, WebKitGTK)
// both call these through the page's window.__scenario(name, arg) and get plain JSON back; the
// checks against the scripted server's ground truth run on the Node side, with per-engine
// tolerances. Nothing here is engine-specific: where an engine lacks an API, the scenario
// reports that as a fact (for the support table), never branches around the SDK.
import * as h from '/helpers.js';

const CHAT_BODY = JSON.stringify({ model: 'default', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });

/** What this engine offers (the support table's columns), and the SDK's view of its clock. */
export async function env() {
  const types = (globalThis.PerformanceObserver && PerformanceObserver.supportedEntryTypes) || [];
  let byteStreams = false;
  try {
    new ReadableStream({ type: 'bytes' }).getReader({ mode: 'byob' }).releaseLock();
    byteStreams = true;
  } catch {
    /* not implemented */
  }
  // The clock step as a page sees it: the smallest positive difference of performance.now().
  let step = Infinity;
  let a = performance.now();
  const t0 = a;
  for (let seen = 0; seen < 5 && performance.now() - t0 < 50; ) {
    const b = performance.now();
    if (b !== a) {
      step = Math.min(step, b - a);
      a = b;
      seen++;
    }
  }
  return {
    ua: navigator.userAgent,
    coi: globalThis.crossOriginIsolated === true,
    byteStreams,
    loaf: types.includes('long-animation-frame'),
    entryTypes: types,
    step,
  };
}

/** init() with records collected in the page. */
export async function start(opts = {}) {
  if (window.__rum) await window.__rum.shutdown();
  return h.startRum(opts);
}

/**
 * One chat completion through the patched fetch, read to the end as an app reads it: the
 * record, the app's own read times of content-bearing chunks (offsets from the record's start,
 * with how many content events each completed) and what the app received.
 */
export async function chat({ query, id, url = '/v1/chat/completions' }) {
  const res = await fetch(`${url}?${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-test-id': id },
    body: CHAT_BODY,
  });
  const { bytes, times, parts } = await h.readAll(res);
  const rid = res.headers.get('x-request-id');
  const rec = await h.waitRecord((r) => r.correlation['x-request-id'] === rid);
  const dec = new TextDecoder();
  const reads = [];
  parts.forEach((p, i) => {
    // Content-bearing fields of every format's text events (the app's own view).
    const n = (dec.decode(p).match(/"(content|delta|text|response)":"[^"]/g) || []).length;
    if (n) reads.push({ t: performance.timeOrigin + times[i] - rec.startEpochMs, n });
  });
  const textChars = [...new TextDecoder().decode(bytes)].length;
  return { rec, reads, chars: h.openAiChars(bytes), textChars, fnv: h.fnv1a64(bytes), n: bytes.length };
}

/** Binary and SSE bodies through the wrapper, and the binary one through the native fetch. */
export async function bytes({ ids }) {
  const bin = await h.readAll(await fetch(`/bytes?size=300000&chunk=7000&gap_ms=1&test_id=${ids[0]}`));
  const sse = await h.readAll(await fetch(`/v1/stream?tokens=50&gap_ms=2&split=1&test_id=${ids[1]}`));
  const nat = await h.readAll(await window.__native(`/bytes?size=300000&chunk=7000&gap_ms=1`));
  const recs = await Promise.all([h.waitRecord((r) => r.url.endsWith('/bytes')), h.waitRecord((r) => r.url.endsWith('/v1/stream'))]);
  // clone(): both branches whole, and the clone shows the original's url and headers.
  const res = await fetch(`/v1/stream?tokens=20&gap_ms=2&test_id=${ids[2]}`);
  const copy = res.clone();
  const [a, b] = await Promise.all([h.readAll(res), h.readAll(copy)]);
  const clone = { a: h.fnv1a64(a.bytes), b: h.fnv1a64(b.bytes), url: copy.url === res.url && copy.url.includes('/v1/stream'), type: copy.headers.get('content-type') };
  return { bin: h.fnv1a64(bin.bytes), binN: bin.bytes.length, sse: h.fnv1a64(sse.bytes), nat: h.fnv1a64(nat.bytes), recBytes: recs.map((r) => r.bytes), clone };
}

/** A BYOB reader on the wrapped body where the engine's native body offers one. */
export async function byob({ id }) {
  const native = await window.__native('/bytes?size=10000&chunk=1000');
  let nativeByob = true;
  try {
    native.body.getReader({ mode: 'byob' }).releaseLock();
  } catch {
    nativeByob = false;
  }
  await native.body.cancel();
  const res = await fetch(`/v1/stream?tokens=30&gap_ms=2&seed=1&test_id=${id}`);
  let fnv = null;
  let error = null;
  try {
    const reader = res.body.getReader({ mode: 'byob' });
    const parts = [];
    for (;;) {
      const { done, value } = await reader.read(new Uint8Array(1000));
      if (done) break;
      parts.push(...value);
    }
    fnv = h.fnv1a64(Uint8Array.from(parts));
  } catch (e) {
    error = e.name;
    await res.body.cancel().catch(() => {});
  }
  const rec = await h.waitRecord((r) => r.url.endsWith('/v1/stream'));
  return { nativeByob, fnv, error, outcome: rec.outcome };
}

/**
 * Abort mid-stream: the app's read rejects with AbortError; the record says aborted. Repeated
 * with garbage made before each abort: the SDK's own Request (carrying the traceparent) must
 * not lose the app's signal when it is collected (a WebKit bug, see js/capture/fetch.js `held`).
 */
export async function abort({ id, times = 6 }) {
  const out = [];
  for (let i = 0; i < times; i++) {
    const before = window.__records.length;
    const c = new AbortController();
    const res = await fetch(`/v1/stream?tokens=200&gap_ms=20&test_id=${id}-${i}`, { signal: c.signal });
    const reader = res.body.getReader();
    await reader.read();
    await reader.read();
    for (let j = 0; j < 20; j++) new Array(1e5).fill(j); // GC pressure
    c.abort();
    let err = null;
    try {
      for (;;) if ((await reader.read()).done) break;
    } catch (e) {
      err = e.name;
    }
    const rec = await h.waitRecord((r, k) => k >= before && r.url.endsWith('/v1/stream'));
    out.push(`${err} ${rec.outcome}`);
  }
  return out;
}

/** reader.cancel() from the app: it reaches the server; the record says aborted. */
export async function cancel({ id }) {
  const res = await fetch(`/v1/stream?tokens=200&gap_ms=20&test_id=${id}`);
  const reader = res.body.getReader();
  await reader.read();
  await reader.read();
  await reader.cancel('not interested');
  const rec = await h.waitRecord((r) => r.url.endsWith('/v1/stream'));
  return { outcome: rec.outcome };
}

/**
 * An in-band error event and then the client's abort, the way the official openai and
 * anthropic clients end such a stream (`finally { if (!done) controller.abort() }`).
 */
export async function errorThenAbort({ query }) {
  const c = new AbortController();
  const res = await fetch(`/v1/chat/completions?${query}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: CHAT_BODY, signal: c.signal });
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  const sep = /ndjson/.test(res.headers.get('content-type')) ? '\n' : '\n\n';
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += dec.decode(value, { stream: true });
    // Like the clients' own decoders: act on complete events only (an engine may deliver
    // an event in two reads).
    const complete = text.slice(0, text.lastIndexOf(sep) + 1);
    if (/"type":"error"|"error":[{"]|event: error|response\.failed/.test(complete)) break;
  }
  c.abort();
  const rid = res.headers.get('x-request-id');
  const rec = await h.waitRecord((r) => r.correlation['x-request-id'] === rid);
  return { outcome: rec.outcome, format: rec.format, sawError: true };
}

/** One EventSource answer, closed at [DONE] / `closeOn`, with the app's message times. */
export async function eventSource({ url, types = [], closeOn = null }) {
  const { events, rec } = await h.esStream(url, { types, closeOn });
  const closedAt = events.length ? events[events.length - 1].t : performance.now();
  const content = /"(content|delta|text)":"[^"]/;
  const app = events.filter((e) => content.test(e.data)).map((e) => performance.timeOrigin + e.t - rec.startEpochMs);
  // How long after the app's close() the record was delivered (the Resource Timing wait).
  const delivered = window.__recordTimes ? window.__recordTimes.get(rec.id) : null;
  return { rec, app, chunks: events.length, heldMs: delivered == null ? null : delivered - closedAt };
}

/** A stream the server ends without the app closing: the browser reconnects once. */
export async function reconnect({ id }) {
  const before = window.__records.length;
  const log = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no reconnect within 20 s')), 20000);
    const es = new EventSource(`/v1/stream?prefill_ms=50&gap_ms=10&tokens=10&test_id=${id}`);
    let opens = 0;
    es.onopen = () => log.push('open ' + ++opens);
    es.onerror = () => log.push('error ' + es.readyState);
    es.onmessage = (ev) => {
      if (ev.data === '[DONE]' && opens === 2) {
        clearTimeout(timer);
        es.close();
        resolve();
      }
    };
  });
  await h.waitRecord((r, i) => i >= before + 1 && r.transport === 'eventsource');
  return { log, recs: window.__records.slice(before).filter((r) => r.transport === 'eventsource') };
}

/** One answer rendered by `kind` (demo/page/renderers.js) into an element given to observe. */
export async function paint({ kind, query }) {
  const { rec } = await h.renderAnswer(kind, query);
  return { rec };
}

/** Streams to measure and flush to the collector; the Node side reads its summary. */
export async function beacons({ n }) {
  for (let i = 0; i < n; i++) await (await fetch('/v1/stream?tokens=5&gap_ms=2')).text();
  await window.__rum.flush();
  return { ids: window.__records.map((r) => r.id) };
}

/**
 * An app's whole day with the SDK, for the fault-injection suite (faults.spec.js): init with a
 * collector and paint observation, a streamed chat answer rendered into an observed element,
 * an EventSource answer (and the same with the native class), the page hidden (urgent flush:
 * sendBeacon, localStorage), flush and shutdown. Returns what the app received and what the
 * SDK said; it uses no API the faults take away (no TextDecoder: the renderer shows bytes).
 */
export async function workload({ id, esQuery }) {
  const active = await start({ collector: '/plain?status=204', match: ['/v1/'] });
  const el = document.createElement('div');
  document.body.append(el);
  window.__rum.observe(el);
  const res = await fetch(`/v1/chat/completions?prefill_ms=20&gap_ms=5&tokens=20`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-test-id': id },
    body: CHAT_BODY,
  });
  const reader = res.body.getReader();
  const parts = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    el.append('x'.repeat(value.length));
  }
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    bytes.set(p, o);
    o += p.length;
  }
  const es = async (Ctor) => (await h.esStream(`/v1/stream?${esQuery}`, { Ctor, record: false })).events.map((e) => [e.type, e.data.replace(/req-\d+/g, 'req-N').replace(/"created":\d+/g, '"created":0')]);
  const esOurs = await es(window.EventSource);
  const esNative = await es(window.__NativeES);
  // The page is hidden: running streams flagged, an urgent flush (sendBeacon, storage).
  Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
  document.dispatchEvent(new Event('visibilitychange'));
  delete document.visibilityState;
  await new Promise((r) => setTimeout(r, 50));
  let fetchRecord = null;
  if (active) {
    try {
      fetchRecord = await h.waitRecord((r) => r.transport === 'fetch', 4000);
    } catch {
      /* reported as null */
    }
  }
  await window.__rum.flush();
  await window.__rum.shutdown();
  el.remove();
  return {
    active,
    n: bytes.length,
    fnv: h.fnv1a64(bytes),
    esOurs,
    esNative,
    fetchRecord,
    records: window.__records.length,
    restored: window.fetch === window.__native && window.EventSource === window.__NativeES,
  };
}

/** A reader that stalls: the wrapper passes on only what the app pulled (no read-ahead). */
export async function slowReader({ id }) {
  const res = await fetch(`/bytes?size=${16 * 1024 * 1024}&chunk=65536&gap_ms=0&test_id=${id}`);
  const reader = res.body.getReader();
  const first = await reader.read();
  await new Promise((r) => setTimeout(r, 1000)); // the app stalls; the network keeps delivering
  await reader.cancel();
  const rec = await h.waitRecord((r) => r.url.endsWith('/bytes'));
  return { firstLen: first.value.length, chunks: rec.chunks, bytes: rec.bytes, outcome: rec.outcome };
}

// ---- auto mode: the answer element found without being named ----

/** The user's message, echoed into the chat first: it repeats the answer's opening words. */
const PROMPT = 'Streaming answers, measured? Tell me about streaming answers, measured';

/**
 * A chat page the SDK is told nothing about: a ticking clock and a "typing…" indicator
 * changing beside the chat (decoys), in `root` (an open or closed shadow root, or the page).
 */
function chatPage(mode = null) {
  const stage = document.createElement('section');
  document.body.append(stage);
  const clock = document.createElement('span');
  const typing = document.createElement('i');
  stage.append(clock, typing);
  let root = stage;
  if (mode) {
    const host = document.createElement('div');
    stage.append(host);
    root = host.attachShadow({ mode });
  }
  const chat = document.createElement('div');
  root.append(chat);
  const tick = setInterval(() => (clock.textContent = new Date().toISOString().slice(11, 23)), 10);
  return { chat, typing, done: () => (clearInterval(tick), stage.remove()) };
}

/**
 * One chat turn in `page`: the prompt echoed, "typing…", the answer streamed from the scripted
 * server and rendered by `ui` (a demo/page/renderers.js kind, or 'react': a real react-dom
 * chat). `named`: the answer element is handed to rum.observe (the reference run).
 */
async function turn(page, { ui, query, named = false }) {
  const { makeRenderer } = await import('/demo/renderers.js');
  const before = window.__records.length;
  let push;
  let answer;
  if (ui === 'react') {
    const { mountChat } = await import('/react-app/chat.js');
    page.react ||= await mountChat(page.chat);
    const shown = page.chat.querySelectorAll('.msg').length;
    page.react.say('user', PROMPT);
    page.react.say('assistant', '');
    // Rendered: React commits asynchronously (a fixed 20 ms was not always enough in WebKit
    // under load: the named run then named nothing and auto mode found the element).
    for (let k = 0; k < 200 && page.chat.querySelectorAll('.msg').length < shown + 2; k++) await new Promise((r) => setTimeout(r, 10));
    answer = [...page.chat.querySelectorAll('.text')].pop();
    if (!answer) throw new Error('the React chat did not render the answer element within 2 s');
    push = { push: (d) => page.react.append(d), end() {} };
  } else {
    const user = document.createElement('div');
    user.className = 'msg user';
    user.textContent = PROMPT;
    const bot = document.createElement('div');
    bot.className = 'msg assistant';
    answer = document.createElement('div');
    bot.append(answer);
    page.chat.append(user, bot);
    push = makeRenderer(ui, answer);
  }
  page.typing.textContent = 'typing…';
  const undo = named ? window.__rum.observe(answer) : () => {};
  const rec = await answerInto(push, query, before, () => (page.typing.textContent = ''));
  undo();
  return rec;
}

/**
 * One chat answer of `query` streamed from the scripted server and rendered through `push` (a
 * renderer: { push(delta), end() }); `onFirst` runs at its first delta. Its record (one of
 * those after the first `before`).
 */
async function answerInto(push, query, before, onFirst = () => {}) {
  const { readDeltas } = await import('/demo/renderers.js');
  const res = await fetch('/v1/chat/completions?' + query, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'default', stream: true, messages: [{ role: 'user', content: PROMPT }] }),
  });
  let first = true;
  await readDeltas(res, (d) => {
    if (first) onFirst();
    first = false;
    push.push(d);
  });
  push.end();
  const rid = res.headers.get('x-request-id');
  return h.waitRecord((x, i) => i >= before && x.correlation['x-request-id'] === rid, 8000);
}

/** One answer, auto or named: its record. `shadow`: the chat in an 'open' or 'closed' shadow root. */
export async function autoAnswer({ ui, query, named = false, shadow = null }) {
  const page = chatPage(shadow);
  try {
    return await turn(page, { ui, query, named });
  } finally {
    page.done();
  }
}

/** Two answers, one after the other, in the same chat container. */
export async function autoTwice({ ui, query }) {
  const page = chatPage();
  try {
    return [await turn(page, { ui, query }), await turn(page, { ui, query })];
  } finally {
    page.done();
  }
}

/** Two answers streaming at once, each in its own chat on the page. */
export async function autoConcurrent({ ui, queries }) {
  const pages = queries.map(() => chatPage());
  try {
    return await Promise.all(queries.map((query, i) => turn(pages[i], { ui, query })));
  } finally {
    pages.forEach((p) => p.done());
  }
}

/**
 * Two answers streaming at once side by side in ONE chat container (a model-comparison UI):
 * after the user's message, two empty panes in a row, each answer rendered (`ui`) into its own.
 * Nothing tells the panes apart but what they show. Returns each answer's record.
 */
export async function autoSideBySide({ ui, queries }) {
  const { makeRenderer } = await import('/demo/renderers.js');
  const page = chatPage();
  try {
    const before = window.__records.length;
    const user = document.createElement('div');
    user.className = 'msg user';
    user.textContent = PROMPT;
    const row = document.createElement('div');
    row.className = 'compare';
    page.chat.append(user, row);
    const panes = queries.map(() => {
      const pane = document.createElement('div');
      pane.className = 'msg assistant';
      const answer = document.createElement('div');
      pane.append(answer);
      row.append(pane);
      return answer;
    });
    return await Promise.all(queries.map((query, i) => answerInto(makeRenderer(ui, panes[i]), query, before)));
  } finally {
    page.done();
  }
}

/**
 * A failure inside the SDK mid-stream, in a fresh page (its core not loaded yet): every core
 * call per chunk throws from the third chunk on. The app's stream must come whole all the same,
 * measurement turns off with one warning, and the next request goes through untouched. The
 * page's console entries this makes are taken out and returned (the spec checks them).
 */
export async function coreFault({ id }) {
  const core = h.hookCoreExports();
  const started = await h.startRum();
  const chunk = core.core_chunk;
  let calls = 0;
  core.core_chunk = (...a) => {
    if (++calls > 2) throw new Error('simulated core failure');
    return chunk(...a);
  };
  const res = await fetch(`/v1/stream?tokens=40&gap_ms=2&seed=3&test_id=${id}`);
  const got = await h.readAll(res);
  const active = window.__rum.active;
  core.core_chunk = chunk;
  const after = await h.readAll(await fetch('/v1/stream?tokens=5&gap_ms=1'));
  const logged = window.__console.splice(0);
  await window.__rum.shutdown();
  return { started, active, fnv: h.fnv1a64(got.bytes), n: got.bytes.length, afterN: after.bytes.length, calls, logged };
}

/**
 * Issue 27: a chat page that starts a streamed answer right after init(), as pages do on load
 * and on deep links, with the wasm core served `wasm` (the static file's query: `delay_ms=N`,
 * `status=500`, `hang=1` — demo/README.md). The app renders the answer into a paragraph as it
 * reads it (auto mode may find it). Then, once the core is in, the same answer again: the warm
 * reference the early record must equal. Returns the app's own times (offsets from
 * timeOrigin), what it received, and the records of both.
 */
export async function early({ wasm, query, ids, waitMs = 4000 }) {
  const { init } = await import('/dist/index.js');
  window.__records = [];
  const t0 = performance.now();
  const rum = await init({ wasmUrl: '/dist/wasm/llm_rum_bg.wasm?' + wasm, onRecord: (r) => window.__records.push(r) });
  const initMs = performance.now() - t0;
  let readyAt = null;
  rum.ready.then(() => (readyAt = performance.now()));
  const first = await chatInto(ids[0], query);
  const ready = await Promise.race([rum.ready, new Promise((r) => setTimeout(() => r('pending'), waitMs))]);
  const byRid = (rid) => (r) => r.correlation['x-request-id'] === rid;
  let rec = null;
  let warm = null;
  let warmApp = null;
  if (ready === true) {
    rec = await h.waitRecord(byRid(first.rid), 5000);
    warmApp = await chatInto(ids[1], query);
    warm = await h.waitRecord(byRid(warmApp.rid), 5000);
  } else {
    await new Promise((r) => setTimeout(r, 300)); // a record that should not come
  }
  const consoleSeen = window.__console.splice(0);
  const count = window.__records.filter(byRid(first.rid)).length;
  await rum.shutdown();
  return { initMs, readyAt, ready, active: rum.active, first, rec, count, warm, warmApp, console: consoleSeen, timeOrigin: performance.timeOrigin };
}

/** One chat answer read as an app reads it, each delta appended to a paragraph as it comes. */
async function chatInto(id, query) {
  const el = document.body.appendChild(document.createElement('p'));
  const calledAt = performance.now();
  const res = await fetch(`/v1/chat/completions?${query}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-test-id': id }, body: CHAT_BODY });
  const headersAt = performance.now();
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  const parts = [];
  const reads = [];
  let line = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const t = performance.now();
    parts.push(value);
    let n = 0;
    line += dec.decode(value, { stream: true });
    const lines = line.split('\n');
    line = lines.pop();
    for (const l of lines) {
      if (!l.startsWith('data: {')) continue;
      const d = JSON.parse(l.slice(6)).choices?.[0]?.delta?.content;
      if (d) {
        n++;
        el.append(d);
      }
    }
    if (n) reads.push({ t, n });
  }
  const bytes = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  parts.reduce((o, p) => (bytes.set(p, o), o + p.length), 0);
  el.remove();
  return { calledAt, headersAt, reads, rid: res.headers.get('x-request-id'), chars: h.openAiChars(bytes), fnv: h.fnv1a64(bytes), n: bytes.length };
}
