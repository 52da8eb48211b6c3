// llm-rum: the facade users import. Importing this module touches nothing global (safe under
// SSR / Node); init() loads the wasm core and, with patchGlobals, wraps window.fetch.
// If anything fails, the app keeps its native fetch and sees at most one console.warn.

import { makeFetch } from './fetch.js';
import { normalize } from './options.js';

export const VERSION = '0.1.0';
const INTERACTION_WINDOW_MS = 1000;

function warn(message, err) {
  try {
    console.warn('llm-rum: ' + message, err === undefined ? '' : err);
  } catch {
    /* a console that throws must not break init */
  }
}

function randomBytes() {
  const b = new Uint8Array(32);
  globalThis.crypto.getRandomValues(b);
  return b;
}

/** Reads the session sampling decision, making it once per tab session (sessionStorage). */
function sampleDecision(rate) {
  const key = 'llm-rum:sampled';
  try {
    const kept = globalThis.sessionStorage && sessionStorage.getItem(key);
    if (kept === '1' || kept === '0') return kept === '1';
    const sampled = rate >= 1 || Math.random() < rate;
    if (globalThis.sessionStorage) sessionStorage.setItem(key, sampled ? '1' : '0');
    return sampled;
  } catch {
    return rate >= 1 || Math.random() < rate;
  }
}

async function loadCore(opts, sampled) {
  const wasm = await import('./wasm/llm_rum.js');
  await wasm.default(opts.wasmUrl ? { module_or_path: opts.wasmUrl } : undefined);
  const origin = globalThis.location ? globalThis.location.origin : '';
  const core = new wasm.Core(
    origin,
    opts.propagateTraceUrls.join('\n'),
    opts.correlationHeaders.join('\n'),
    opts.stallThresholdMs,
    opts.stripQuery,
    sampled,
  );
  for (const [metric, limit] of Object.entries(opts.budgets)) core.add_budget(metric, limit);
  return core;
}

function makeMatcher(opts, state) {
  const isOwn = (url) => opts.collector !== null && url.startsWith(new URL(opts.collector, state.base()).href);
  if (!opts.match) return (url) => (isOwn(url) ? 0 : 1);
  return (url, method) => {
    if (isOwn(url)) return 0;
    for (const m of opts.match) {
      try {
        if (typeof m === 'string' ? url.includes(m) : m instanceof RegExp ? m.test(url) : m(url, { method })) return 2;
      } catch (e) {
        state.warnOnce('match', 'a match predicate threw; treated as no match', e);
      }
    }
    return 0;
  };
}

/**
 * Starts llm-rum. Never rejects: on any failure the returned object's `fetch` is the native
 * fetch and nothing is patched.
 * @param {import('./index').RumOptions} [options]
 * @returns {Promise<import('./index').Rum>}
 */
export async function init(options) {
  const g = globalThis;
  const nativeFetch = g.fetch;
  const nativeEventSource = g.EventSource;
  const [opts, problems] = normalize(options);
  for (const p of problems) warn('ignoring bad option ' + p);

  const warned = new Set();
  const state = {
    core: null,
    lastInteraction: -1,
    listeners: [],
    warnOnce(key, message, err) {
      if (!warned.has(key)) {
        warned.add(key);
        warn(message, err);
      }
    },
    base: () => (g.location ? g.location.href : 'http://localhost/'),
  };

  const sampled = sampleDecision(opts.sampleRate);
  try {
    if (typeof nativeFetch === 'function') state.core = await loadCore(opts, sampled);
  } catch (e) {
    warn('measurement disabled: the wasm core did not load', e);
  }

  const deliver = () => {
    const core = state.core;
    if (!core) return;
    const text = core.take_records();
    if (!text) return;
    const records = JSON.parse(text);
    for (const r of records) {
      if (opts.onRecord) {
        try {
          opts.onRecord(r);
        } catch (e) {
          state.warnOnce('onRecord', 'onRecord threw (contained)', e);
        }
      }
    }
    if (opts.collector) queueBeacon(text);
  };

  // Minimal transport: batch record texts, send with sendBeacon (text/plain: no preflight),
  // on a short timer and when the page is hidden. The full policy (retry, quota, persistence)
  // is the transport's job.
  let pending = [];
  let timer = 0;
  const session = Array.from(randomBytes().subarray(0, 8), (b) => b.toString(16).padStart(2, '0')).join('');
  const queueBeacon = (arrayText) => {
    pending.push(arrayText.slice(1, -1));
    if (!timer) timer = setTimeout(flushNow, 1000);
  };
  const flushNow = () => {
    if (timer) clearTimeout(timer);
    timer = 0;
    if (!pending.length || !opts.collector) return Promise.resolve();
    const page = g.location ? g.location.pathname : '';
    const body = `{"v":1,"sdk":"llm-rum/${VERSION}","session":"${session}","page":${JSON.stringify(page)},"records":[${pending.join(',')}]}`;
    pending = [];
    try {
      if (g.navigator && g.navigator.sendBeacon && g.navigator.sendBeacon(opts.collector, body)) return Promise.resolve();
      return nativeFetch
        .call(g, opts.collector, { method: 'POST', body, keepalive: true, headers: { 'content-type': 'text/plain;charset=UTF-8' } })
        .then(() => undefined, () => undefined);
    } catch {
      return Promise.resolve();
    }
  };

  const fail = (e) => {
    if (state.core) {
      state.core = null;
      warn('measurement disabled after an internal error; requests are unaffected', e);
    }
  };

  const ctx = {
    live: () => state.core,
    nativeFetch,
    base: state.base,
    match: makeMatcher(opts, state),
    random: randomBytes,
    interaction: (t) => (state.lastInteraction >= 0 && t - state.lastInteraction <= INTERACTION_WINDOW_MS ? state.lastInteraction : -1),
    end(h, outcome) {
      const core = state.core;
      if (!core) return;
      // Called from stream callbacks: nothing may escape into the app's stream.
      try {
        core.end(h, performance.now(), outcome);
        deliver();
      } catch (e) {
        fail(e);
      }
    },
    fail,
  };
  const rumFetch = makeFetch(ctx);

  const listen = (target, type, fn, opt) => {
    if (!target || !target.addEventListener) return;
    target.addEventListener(type, fn, opt);
    state.listeners.push(() => target.removeEventListener(type, fn, opt));
  };
  if (state.core && g.document) {
    listen(g.document, 'visibilitychange', () => {
      if (g.document.visibilityState === 'hidden') {
        try {
          if (state.core) state.core.hidden();
        } catch (e) {
          fail(e);
        }
        flushNow();
      }
    });
    listen(g, 'pagehide', () => flushNow());
  }

  let patched = false;
  if (opts.patchGlobals && state.core && typeof nativeFetch === 'function') {
    g.fetch = rumFetch;
    patched = true;
  }

  return {
    // Bound: `rum.fetch(...)` calls it as a method, and native fetch throws "Illegal
    // invocation" unless `this` is the global (or undefined).
    fetch: state.core ? rumFetch : typeof nativeFetch === 'function' ? nativeFetch.bind(g) : nativeFetch,
    EventSource: nativeEventSource,
    observe() {
      return () => {};
    },
    mark(name) {
      try {
        return !!(state.core && state.core.mark(String(name), performance.now()));
      } catch (e) {
        fail(e);
        return false;
      }
    },
    markInteraction() {
      state.lastInteraction = performance.now();
    },
    flush: () => flushNow(),
    async shutdown() {
      if (patched && g.fetch === rumFetch) g.fetch = nativeFetch;
      patched = false;
      for (const off of state.listeners.splice(0)) off();
      await flushNow();
    },
    get active() {
      return state.core !== null;
    },
  };
}
