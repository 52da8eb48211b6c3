// The wasm core as the rest of the facade sees it: built once by init() from one configuration
// object, then reached only through `fenced(fn)` — the one guard around every call into it.
// A throw inside (a wasm trap, a bug, a browser API the call used) turns measurement off for
// the page with one warning and never reaches the app: whoever asked gets `otherwise` and
// hands the app's request, response or stream on untouched.
//
// The core is `Core`, the #[wasm_bindgen] class of src/wasm/core.rs, whose JS glue
// wasm-bindgen-cli generates (`--target web`, scripts/build.sh) into js/wasm/llm_rum.js. Why
// that target: its loader takes what this file hands it — a compiled `WebAssembly.Module` (from
// `compileStreaming` of the fetched file, or from the inline copy's bytes where bundlers leave
// the file behind) — and instantiates it once per page however many init()s ask (its one init
// promise), with no bundler support for wasm imports needed (`--target bundler` would need it:
// webpack's experiments, a Vite plugin), and no Node-only paths (`--target nodejs`). The glue is
// a chunk of its own, imported by loadCore while the wasm compiles: importing the package then
// evaluates none of it (it builds a TextDecoder at module scope; a runtime without one must
// still import the package, and init() then fails with one warning).

import { warn } from './warn.js';
import { tabSession } from './ids.js';
import { byteStreamsWork } from './capture/body.js';

export const VERSION = '0.1.0';

/**
 * The `Core` class the wasm exports (src/wasm/core.rs, through the generated glue): requests by
 * handle (`begin`, `response`, `chunk`, `end`, the `es_*` and paint inputs), the current
 * request, finished records. Only ever touched inside `fenced`.
 * @typedef {import('./wasm/llm_rum.js').Core} WasmCore
 */

/**
 * @typedef {object} Core
 * @property {<T>(fn: (core: WasmCore, a?: any, b?: any, c?: any) => T, otherwise?: T, a?: any, b?: any, c?: any) => T} fenced
 *   runs `fn` with the core (and `a`, `b`, `c`: so a hot path can pass a function that is not
 *   a fresh closure) while measurement is on and returns its result; else, or when `fn` throws
 *   (which turns measurement off, see `fail`), returns `otherwise`. Nothing escapes.
 * @property {() => boolean} live  whether measurement is on
 * @property {(err: unknown) => void} fail  turns measurement off for good: one warning, then
 *   the `onFail` callbacks (observers that would otherwise run on for nothing)
 * @property {(fn: () => void) => void} onFail
 * @property {() => void} stop  turns measurement off without a word (init() failed and says so)
 */

/**
 * Why this page cannot be measured at all, or '' when it can: there is no fetch to wrap
 * (null: nothing worth a warning), or it is not a page or a worker (Node, SSR: nothing of a
 * person's to measure). Asked synchronously by init() before it touches anything.
 * @param {unknown} nativeFetch
 * @returns {string | null}
 */
export function unmeasurable(nativeFetch) {
  if (typeof nativeFetch !== 'function') return null;
  if (!globalThis.document && !globalThis.WorkerGlobalScope) return 'not a browser';
  return typeof WebAssembly == 'object' ? '' : 'the wasm core did not load (no WebAssembly)';
}

/**
 * Loads the wasm core and builds it from the options into `core` (made by makeCore). Resolves
 * to the tab session (ids.js tabSession: the beacons' `session`), or to false — after one
 * warning — when it cannot load (a CSP without 'wasm-unsafe-eval', the
 * file missing): the page then keeps its native APIs. Its first step, the wasm's request, is
 * taken synchronously (issue 14: ready time); init() resolves while the rest goes on.
 * @param {ReturnType<typeof import('./options.js').normalize>[0]} opts
 * @param {typeof fetch} nativeFetch
 * @param {Core} core
 * @returns {Promise<{ id: string, sampled: boolean } | false>}
 */
export async function loadCore(opts, nativeFetch, core) {
  try {
    // The wasm is requested first and compiled as it streams in; the glue loads meanwhile.
    const { arrived, compiled } = compileCore(opts.wasmUrl, nativeFetch);
    compiled.catch(() => {}); // awaited below; a failure there is reported once, not as unhandled
    const glue = import('./glue.js');
    glue.catch(() => {});
    // The core's arrival is main-thread work — the first byte stream (byteStreamsWork: ~3 ms in
    // Chromium), the tab session's sessionStorage read (a synchronous round trip to the browser
    // process: 1–30 ms, 7.7 ms median here), the instantiation, and V8's compilation of each wasm
    // function on its first call (lazy: up to ~14 ms for the largest here). Each step is a task
    // of its own at background priority (`idle`), once the wasm's response is in and compiling
    // off the main thread, so that none runs while the page has something more urgent to do and
    // the app's responses and chunks get in between (issue 27; what the app requests meanwhile
    // is tapped).
    await arrived.catch(() => {});
    await idle();
    byteStreamsWork();
    await idle();
    const session = tabSession(opts.sampleRate);
    const { default: instantiate, Core } = await glue;
    const module = await compiled;
    await idle();
    await instantiate({ module_or_path: module });
    await idle();
    warmUp(Core);
    await idle();
    // One configuration object, read by the core (src/core/config.rs Config::from_json).
    const config = {
      pageOrigin: globalThis.location ? globalThis.location.origin : '',
      propagate: opts.propagateTraceUrls,
      correlation: opts.correlationHeaders.map((h) => h.toLowerCase()),
      stallThresholdMs: opts.stallThresholdMs, // unset: the core's default (src/core/stalls.rs)
      stripQuery: opts.stripQuery,
      templateIds: opts.templateIds,
      sampled: session.sampled,
      budgets: Object.entries(opts.budgets),
      collect: !!opts.collector, // records also go out for the beacon queue (deliver/queue.js)
      models: opts.models.map((r) => [r.match, r.model ?? null, r.provider ?? null]),
    };
    core.attach(new Core(JSON.stringify(config)));
    return session;
  } catch (e) {
    warn('measurement disabled: the wasm core did not load', e);
    return false;
  }
}

/**
 * Runs one made-up answer through a throwaway Core: V8 compiles a wasm function the first time
 * it is called, on the calling thread, so the calls on the path of every answer (begin,
 * response, chunk, end, take_records, and the record encoder behind them) are compiled here, in
 * an idle period, rather than when the app's first answer arrives. Nothing of it is kept.
 */
function warmUp(Core) {
  const w = new Core('{"sampled":true}');
  try {
    const h = w.begin('http://localhost/', 'POST', 0, 0, new Uint8Array(32), -1);
    w.response(h, 1, 200, 'content-type:text/event-stream\n', false);
    w.chunk(h, 2, new TextEncoder().encode('data: {"choices":[{"delta":{"content":"Hi"}}]}\n\ndata: [DONE]\n\n'), 2);
    w.end(h, 3, 0);
    w.take_records();
  } finally {
    w.free();
  }
}

/**
 * Resolves once the page has nothing more urgent to run: a background-priority task
 * (`scheduler.postTask`, Prioritized Task Scheduling: it runs after every pending task of user-
 * visible priority — the app's network callbacks, input, rendering — with no wait for an idle
 * period); where that is missing (Safari), an idle period (requestIdleCallback, at most
 * IDLE_WAIT_MS away: a page busy for longer still gets its core soon); else the next task.
 */
function idle() {
  return new Promise((resolve) => {
    try {
      scheduler.postTask(resolve, { priority: 'background' });
    } catch {
      try {
        requestIdleCallback(() => resolve(), { timeout: IDLE_WAIT_MS });
      } catch {
        setTimeout(resolve, 0);
      }
    }
  });
}
const IDLE_WAIT_MS = 100;

/** The page's one compile: every init() (React's StrictMode makes two) shares it. */
let compiling = null;

/**
 * The wasm, compiled: from the fetched file as it streams in (`compileStreaming`), else from
 * the inline copy's bytes (wasmBytes). Once per page; after a failure the next init() tries
 * again. `arrived`: the file's response (or the bytes) is in, and its compile started.
 * @returns {{ arrived: Promise<unknown>, compiled: Promise<WebAssembly.Module> }}
 */
function compileCore(wasmUrl, nativeFetch) {
  if (compiling) return compiling;
  const arrived = wasmBytes(wasmUrl, nativeFetch).then((src) => ({
    // A file served without `application/wasm` cannot be compiled as it streams (WebAssembly
    // Web API §"compileStreaming" rejects it): its bytes then (where the generated loader would
    // warn on the console).
    module:
      src instanceof Response
        ? WebAssembly.compileStreaming && /^application\/wasm\b/.test(src.headers.get('content-type') || '')
          ? WebAssembly.compileStreaming(src)
          : src.arrayBuffer().then((b) => WebAssembly.compile(b))
        : WebAssembly.compile(src),
  }));
  const mine = (compiling = { arrived, compiled: arrived.then((a) => a.module) });
  mine.compiled.catch(() => {
    if (compiling === mine) compiling = null;
  });
  return mine;
}

/**
 * Where the wasm comes from — the one loading decision (README "Bundlers and frameworks").
 * `new URL('./wasm/llm_rum_bg.wasm', import.meta.url)`, written out literally, is the pattern
 * webpack 5, Vite, Parcel and Next.js (webpack and Turbopack) recognise: they emit the file and
 * rewrite the URL. Rollup and esbuild leave it as it is, so the file is missing next to the
 * app's bundle (a 404, or an SPA server's HTML page), and an IIFE build has no import.meta.url
 * (the URL throws): then the same bytes come from a base64 copy in a chunk of its own
 * (inline-wasm.js, built by scripts/build.sh), which a page whose file was found never loads.
 * A fetched response is compiled as it streams in; a compile error (a CSP without
 * 'wasm-unsafe-eval') is not a missing file and fails init() as it is, and so does a `wasmUrl`
 * the app gave that cannot be fetched (or answers an error status).
 * @param {string | URL | undefined} wasmUrl  the `wasmUrl` option
 * @returns {Promise<Response | Uint8Array>}
 */
async function wasmBytes(wasmUrl, nativeFetch) {
  // The app's own URL is taken at its word: if it is wrong, the warning says so.
  if (wasmUrl) {
    const res = await nativeFetch(wasmUrl);
    if (!res.ok) throw new Error(`the wasm core's file answered ${res.status} (${res.url})`);
    return res;
  }
  try {
    const res = await nativeFetch(new URL('./wasm/llm_rum_bg.wasm', import.meta.url));
    if (res.ok && !/html/.test(res.headers.get('content-type'))) return res;
  } catch {
    /* no URL, or not fetchable: the inline copy */
  }
  return (await import('./inline-wasm.js')).default;
}

/**
 * The fence around the core, made by init() before the wasm is in: until `attach`, every
 * `fenced` call gets its `otherwise` (the wrappers hand the app's objects on untouched) while
 * `live()` already says true — measurement is on its way; the requests made meanwhile are
 * measured once it is in (capture/early.js, capture/eventsource.js).
 * @returns {Core & { attach: (wasm: WasmCore) => void }}
 */
export function makeCore() {
  let live = null;
  let on = true; // false once failed or stopped
  const failed = [];
  const core = {
    fenced(fn, otherwise, a, b, c) {
      if (!live) return otherwise;
      try {
        return fn(live, a, b, c);
      } catch (e) {
        core.fail(e);
        return otherwise;
      }
    },
    live: () => on,
    attach(wasm) {
      if (on) live = wasm;
    },
    fail(e) {
      if (!live) return;
      live = null;
      on = false;
      warn('measurement disabled after an internal error; requests are unaffected', e);
      for (const f of failed.splice(0)) {
        try {
          f();
        } catch {
          /* already failing */
        }
      }
    },
    onFail: (f) => void failed.push(f),
    stop() {
      live = null;
      on = false;
    },
  };
  return core;
}
