// In-page helpers for the end-to-end tests: the "app" side. Imported by page.evaluate
// callbacks via `await import('/helpers.js')`.

/** Starts llm-rum with `opts`, collecting records into window.__records. */
export async function startRum(opts = {}) {
  const { init } = await import('/dist/index.js');
  window.__records = [];
  window.__recordTimes = new Map(); // record id → performance.now() when onRecord got it
  window.__rum = await init({
    ...opts,
    onRecord: (r) => {
      window.__records.push(r);
      window.__recordTimes.set(r.id, performance.now());
    },
  });
  // init() resolves before the core is in (issue 14); the tests that are not about that
  // phase start from a fully started SDK.
  await window.__rum.ready;
  return window.__rum.active;
}

/** Reads a response body to the end like an app would; returns the bytes and read times. */
export async function readAll(res) {
  const reader = res.body.getReader();
  const parts = [];
  const times = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    times.push(performance.now());
    parts.push(value);
    n += value.length;
  }
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return { bytes: out, times, parts };
}

/** Answer characters of an OpenAI chat SSE body, parsed the way an app would. */
export function openAiChars(bytes) {
  const text = new TextDecoder().decode(bytes);
  let chars = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const ev = JSON.parse(line.slice(6));
    for (const c of ev.choices || []) if (c.delta && c.delta.content) chars += [...c.delta.content].length;
  }
  return chars;
}

/** FNV-1a 64 of bytes, lower-case hex (the scripted server reports the same of what it sent). */
export function fnv1a64(bytes) {
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, '0');
}

/** Resolves with the first record matching `pred`, or rejects after `ms`. */
export async function waitRecord(pred, ms = 5000) {
  const t0 = performance.now();
  for (;;) {
    const r = window.__records.find(pred);
    if (r) return r;
    if (performance.now() - t0 > ms) throw new Error('no matching record within ' + ms + ' ms');
    await new Promise((res) => setTimeout(res, 10));
  }
}

/**
 * Streams with an EventSource as an app would (EventSource tests): `onmessage`, plus a
 * listener for each of `types` (named events), closing at `[DONE]` or at an event of type
 * `closeOn`. Resolves with every event the app's listeners saw, in order, and (unless
 * `record: false`) the SDK's record of it: the first eventsource record finished after the
 * call began. `Ctor`: the class to construct (default: the page's EventSource).
 */
export async function esStream(url, { types = [], closeOn = null, Ctor = EventSource, record = true } = {}) {
  const before = window.__records ? window.__records.length : 0;
  const events = [];
  const es = new Ctor(url);
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('EventSource did not finish: ' + url)), 20000);
    const on = (ev) => {
      // `ts`: when the browser made the event (Event.timeStamp, the clock of performance.now()):
      // the SDK's listener, which runs before this one, stamped it between `ts` and `t`.
      events.push({ type: ev.type, data: ev.data, lastEventId: ev.lastEventId, origin: ev.origin, trusted: ev.isTrusted, ts: ev.timeStamp, t: performance.now() });
      if (ev.data === '[DONE]' || ev.type === closeOn) {
        es.close();
        clearTimeout(timer);
        resolve();
      }
    };
    es.onmessage = on;
    for (const ty of types) es.addEventListener(ty, on);
    es.onerror = () => {
      if (es.readyState === 2) reject(new Error('EventSource failed: ' + url));
    };
  });
  const rec = record ? await waitRecord((r, i) => i >= before && r.transport === 'eventsource') : null;
  return { events, rec };
}

/**
 * Paint tests: streams one chat answer into a fresh element rendered by `kind` (see
 * /demo/renderers.js), the element handed to rum.observe before the request. Returns the
 * record and the page's own Long Animation Frame entries (an independent paint reference).
 */
export async function renderAnswer(kind, query, { renderOpts = {}, beforeFetch = null } = {}) {
  const { readDeltas, makeRenderer } = await import('/demo/renderers.js');
  const loafs = [];
  const po = new PerformanceObserver((l) => loafs.push(...l.getEntries().map((e) => ({ startTime: e.startTime, duration: e.duration, renderStart: e.renderStart, paintTime: e.paintTime, presentationTime: e.presentationTime }))));
  // Long Animation Frames are Chromium's; elsewhere observing them would only log a warning.
  if ((PerformanceObserver.supportedEntryTypes || []).includes('long-animation-frame')) po.observe({ type: 'long-animation-frame' });
  const el = document.createElement('div');
  document.body.append(el);
  const before = window.__records.length;
  const undo = window.__rum.observe(el);
  if (beforeFetch) await beforeFetch();
  const fetchAt = performance.now();
  const res = await fetch('/v1/chat/completions?' + query, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'default', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const r = makeRenderer(kind, el, renderOpts);
  await readDeltas(res, (d) => r.push(d));
  r.end();
  const rec = await waitRecord((x, i) => i >= before, 8000);
  await new Promise((res) => setTimeout(res, 100)); // late LoAF entries
  po.disconnect();
  undo();
  el.remove();
  return { rec, loafs, fetchAt, start: rec.startEpochMs - performance.timeOrigin };
}

/**
 * Test-only fault injection into the wasm core. The SDK's generated glue (js/wasm/llm_rum.js, a
 * chunk of dist/) keeps the `Core` class out of a page's reach; instead this wraps
 * WebAssembly.instantiateStreaming and WebAssembly.instantiate so that the exports the glue
 * calls (`core_chunk`, `core_es_message`, … : wasm-bindgen's names for src/wasm/core.rs's
 * methods) live in a plain object, returned here: a test swaps one for a throwing function and
 * puts it back. Call it in a fresh page before its first init() (the glue instantiates once per
 * page); the browser's functions are restored once the core is loaded.
 * @returns {Record<string, Function>}
 */
export function hookCoreExports() {
  const exports = {};
  const { instantiateStreaming, instantiate } = WebAssembly;
  const restore = () => Object.assign(WebAssembly, { instantiateStreaming, instantiate });
  const wrap = (instance, module) => {
    restore();
    Object.assign(exports, instance.exports);
    return { instance: { exports }, module };
  };
  WebAssembly.instantiateStreaming = async (...a) => {
    const r = await instantiateStreaming.apply(WebAssembly, a);
    return wrap(r.instance, r.module);
  };
  WebAssembly.instantiate = async (...a) => {
    const r = await instantiate.apply(WebAssembly, a);
    return r instanceof WebAssembly.Instance ? wrap(r, a[0]) : wrap(r.instance, r.module);
  };
  return exports;
}

/**
 * Compositor-truth tests (paint-compositor.spec.js): a fixed answer box and, elsewhere on the
 * page, a CSS-only animation (a transform, run by the compositor: no main-thread frames of its
 * own) so that every vsync produces a screencast frame. Returns the box's rectangle (CSS px).
 */
export function compositorStage() {
  let stage = document.getElementById('stage');
  if (!stage) {
    const style = document.createElement('style');
    style.textContent =
      '@keyframes llmrum-spin { to { transform: rotate(360deg) } }' +
      '#stage { position: fixed; left: 0; top: 0; width: 100vw; height: 100vh; background: #fff; z-index: 1 }' +
      '#box { position: absolute; left: 8px; top: 8px; width: 600px; height: 400px; overflow: hidden; font: 11px/1.25 sans-serif; color: #000; background: #fff }' +
      '#box h3, #box p, #box ul, #box pre { margin: 0 0 2px }' +
      '#spinner { position: absolute; left: 8px; bottom: 8px; width: 24px; height: 24px; background: #c33; animation: llmrum-spin 1s linear infinite }';
    stage = document.createElement('div');
    stage.id = 'stage';
    stage.innerHTML = '<div id="box"></div><div id="spinner"></div>';
    document.head.append(style);
    document.body.append(stage);
  }
  const box = document.getElementById('box');
  box.textContent = ''; // empty before the recording starts: the truth's "empty box"
  const r = box.getBoundingClientRect();
  return { x: r.x, y: r.y, width: r.width, height: r.height };
}

/**
 * One answer rendered by `kind` into a fresh element in the stage's box, observed by the SDK.
 * `busyMs`: the page's own chunk handler runs that long before it renders each token. Returns
 * the record, the request start on the page clock and the page's time origin.
 */
export async function compositorAnswer(kind, query, { renderOpts = {}, busyMs = 0 } = {}) {
  const { readDeltas, makeRenderer, block } = await import('/demo/renderers.js');
  const el = document.createElement('div');
  document.getElementById('box').append(el);
  const before = window.__records.length;
  const undo = window.__rum.observe(el);
  const res = await fetch('/v1/chat/completions?' + query, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'default', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const r = makeRenderer(kind, el, renderOpts);
  await readDeltas(res, (d) => {
    if (busyMs) block(busyMs);
    r.push(d);
  });
  r.end();
  const rec = await waitRecord((x, i) => i >= before, 8000);
  await new Promise((res) => setTimeout(res, 150)); // the frames after the last paint
  undo();
  return { rec, start: rec.startEpochMs - performance.timeOrigin, timeOrigin: performance.timeOrigin };
}
