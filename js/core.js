// The wasm core as the rest of the facade sees it: built once by init() from one configuration
// object, then reached only through `fenced(fn)` — the one guard around every call into it.
// A throw inside (a wasm trap, a bug, a browser API the call used) turns measurement off for
// the page with one warning and never reaches the app: whoever asked gets `otherwise` and
// hands the app's request, response or stream on untouched. The core's limits are read from
// it (src/wasm/exports.rs), not repeated here.

import { warn } from './warn.js';
import { tabSession } from './ids.js';

export const VERSION = '0.1.0';

/**
 * The `Core` class the wasm exports (src/wasm/exports.rs): requests by handle (`begin`,
 * `response`, `chunk`, `end`, the `es_*` and paint inputs), the current request, finished
 * records and the beacon queue. Only ever touched inside `fenced`.
 * @typedef {any} WasmCore
 */

/**
 * @typedef {object} Core
 * @property {<T>(fn: (core: WasmCore) => T, otherwise?: T) => T} fenced  runs `fn` with the
 *   core while measurement is on and returns its result; else, or when `fn` throws (which
 *   turns measurement off, see `fail`), returns `otherwise`. Nothing escapes.
 * @property {() => boolean} live  whether measurement is on
 * @property {(err: unknown) => void} fail  turns measurement off for good: one warning, then
 *   the `onFail` callbacks (observers that would otherwise run on for nothing)
 * @property {(fn: () => void) => void} onFail
 * @property {() => void} stop  turns measurement off without a word (init() failed and says so)
 * @property {number} maxPayload  the largest beacon payload the core builds, in bytes
 */

/**
 * Loads the wasm core and builds it from the options. Resolves to null — after one warning,
 * unless there is no fetch to measure at all — when it cannot load (no WebAssembly, a CSP
 * without 'wasm-unsafe-eval', the file missing): the page then keeps its native APIs.
 * @param {ReturnType<typeof import('./options.js').normalize>[0]} opts
 * @param {unknown} nativeFetch
 * @returns {Promise<Core | null>}
 */
export async function loadCore(opts, nativeFetch) {
  const session = tabSession(opts.sampleRate);
  if (typeof nativeFetch !== 'function') return null;
  // Not a page or a worker (Node, SSR): nothing of a person's to measure.
  if (!globalThis.document && !globalThis.WorkerGlobalScope) return void warn('measurement disabled: not a browser');
  try {
    const wasm = await import('./wasm/llm_rum.js');
    await wasm.default({ module_or_path: await wasmBytes(opts.wasmUrl, nativeFetch) });
    // One configuration object, read by the core (src/core/config.rs Config::from_json).
    const config = {
      pageOrigin: globalThis.location ? globalThis.location.origin : '',
      propagate: opts.propagateTraceUrls,
      correlation: opts.correlationHeaders.map((h) => h.toLowerCase()),
      stallThresholdMs: opts.stallThresholdMs, // unset: the core's default (src/core/stalls.rs)
      clockStepMs: clockStep(),
      stripQuery: opts.stripQuery,
      templateIds: opts.templateIds,
      beforeSend: !!opts.beforeSend, // only with a collector (options.js)
      sampled: session.sampled,
      budgets: Object.entries(opts.budgets),
      beacon: opts.collector ? { sdk: 'llm-rum/' + VERSION, session: session.id } : null,
    };
    return fence(new wasm.Core(JSON.stringify(config)));
  } catch (e) {
    warn('measurement disabled: the wasm core did not load', e);
    return null;
  }
}

/**
 * Where the wasm comes from — the one loading decision (README "Bundlers and frameworks").
 * `new URL('./wasm/llm_rum_bg.wasm', import.meta.url)`, written out literally, is the pattern
 * webpack 5, Vite, Parcel and Next.js (webpack and Turbopack) recognise: they emit the file and
 * rewrite the URL. Rollup and esbuild leave it as it is, so the file is missing next to the
 * app's bundle (a 404, or an SPA server's HTML page), and an IIFE build has no import.meta.url
 * (the URL throws): then the same bytes come from a base64 copy in a chunk of its own
 * (wasm/inline.js, built by scripts/build.sh), which a page whose file was found never loads.
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
  return (await import('./wasm/inline.js')).default;
}

/** @param {WasmCore} wasm  @returns {Core} */
function fence(wasm) {
  let live = wasm;
  const failed = [];
  const core = {
    fenced(fn, otherwise) {
      if (!live) return otherwise;
      try {
        return fn(live);
      } catch (e) {
        core.fail(e);
        return otherwise;
      }
    },
    live: () => live !== null,
    fail(e) {
      if (!live) return;
      live = null;
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
    },
    maxPayload: wasm.max_payload,
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
