// The wasm core as the rest of the facade sees it: built once by init() from one configuration
// object, then reached only through `fenced(fn)` — the one guard around every call into it.
// A throw inside (a wasm trap, a bug, a browser API the call used) turns measurement off for
// the page with one warning and never reaches the app: whoever asked gets `otherwise` and
// hands the app's request, response or stream on untouched. The core's limits are read from
// it (src/wasm/exports.rs), not repeated here.

import { warn } from './warn.js';
import { tabSession } from './ids.js';
// The glue over the wasm's exports (bundled into dist/index.js by scripts/build.sh): its loader
// and the `Core` class.
import loadGlue, { Core as WasmCoreClass, raw } from './wasm/llm_rum.js';

export { raw };

export const VERSION = '0.1.0';

/**
 * The `Core` class the wasm exports (src/wasm/exports.rs): requests by handle (`begin`,
 * `response`, `chunk`, `end`, the `es_*` and paint inputs), the current request, finished
 * records (for onRecord and the collector). Only ever touched inside `fenced`.
 * @typedef {any} WasmCore
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
    // The glue compiles a fetched response as it streams in (instantiateStreaming).
    const bytes = wasmBytes(opts.wasmUrl, nativeFetch);
    bytes.catch(() => {}); // awaited below; a failure there is reported once, not as unhandled
    const src = await bytes;
    // The tab session reads sessionStorage, whose first read in a page is a synchronous round
    // trip to the browser process (1–30 ms measured in Chromium on a loaded machine): read
    // while the wasm's body streams in, in a task of its own, after init() has resolved.
    const session = tabSession(opts.sampleRate);
    await loadGlue({ module_or_path: src });
    // One configuration object, read by the core (src/core/config.rs Config::from_json).
    const config = {
      pageOrigin: globalThis.location ? globalThis.location.origin : '',
      propagate: opts.propagateTraceUrls,
      correlation: opts.correlationHeaders.map((h) => h.toLowerCase()),
      stallThresholdMs: opts.stallThresholdMs, // unset: the core's default (src/core/stalls.rs)
      clockStepMs: clockStep(),
      stripQuery: opts.stripQuery,
      templateIds: opts.templateIds,
      sampled: session.sampled,
      budgets: Object.entries(opts.budgets),
      collect: !!opts.collector, // records also go out for the beacon queue (deliver/queue.js)
      models: opts.models.map((r) => [r.match, r.model ?? null, r.provider ?? null]),
    };
    core.attach(new WasmCoreClass(JSON.stringify(config)));
    return session;
  } catch (e) {
    warn('measurement disabled: the wasm core did not load', e);
    return false;
  }
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
 * the app gave that cannot be fetched.
 * @param {string | URL | undefined} wasmUrl  the `wasmUrl` option
 * @returns {Promise<Response | Uint8Array>}
 */
async function wasmBytes(wasmUrl, nativeFetch) {
  // The app's own URL is taken at its word: if it is wrong, the warning says so.
  if (wasmUrl) return nativeFetch(wasmUrl);
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

/**
 * The page clock's step: performance.now() is coarsened (HR-Time §"coarsen time") to 5 µs on
 * a cross-origin isolated page and 100 µs otherwise in Chromium, to 1 ms in Firefox and WebKit,
 * possibly with jitter at the step boundaries, so any time read from it is within one step of
 * the true time. Measured once by init(): the smallest difference between consecutive distinct
 * readings over two ticks (≤ ~2 ms of spinning where the step is 1 ms, ~0.2 ms in Chromium;
 * capped at 5 ms). The core adds it to the paint brackets' half widths for `paintErrorMs`.
 */
function clockStep() {
  const t0 = performance.now();
  let a = t0;
  let step = Infinity;
  for (let ticks = 0; ticks < 2; ) {
    const b = performance.now();
    if (b !== a) {
      step = Math.min(step, b - a);
      a = b;
      ticks++;
    }
    if (b - t0 > 5) break;
  }
  return Number.isFinite(step) ? step : 5;
}
