// llm-rum: the facade users import. Importing this module touches nothing global (safe under
// SSR / Node); init() loads the wasm core and, with patchGlobals, wraps window.fetch.
// If anything fails, the app keeps its native fetch and sees at most one console.warn.

import { makeFetch } from './fetch.js';
import { makeEventSource } from './eventsource.js';
import { normalize, templateOf } from './options.js';
import { makeTransport } from './transport.js';
import { makePaint, clockStep } from './paint.js';

export const VERSION = '0.1.0';
const INTERACTION_WINDOW_MS = 1000;

function warn(message, err) {
  try {
    console.warn('llm-rum: ' + message, err === undefined ? '' : err);
  } catch {
    /* a console that throws must not break init */
  }
}

/**
 * 32 random bytes for trace/span/record ids. Where crypto.getRandomValues is missing or throws
 * (an old or locked-down engine), Math.random: the ids must be unique, not secret (W3C Trace
 * Context §"trace-id": random, not cryptographically so).
 */
function randomBytes() {
  const b = new Uint8Array(32);
  try {
    globalThis.crypto.getRandomValues(b);
  } catch {
    for (let i = 0; i < b.length; i++) b[i] = (Math.random() * 256) | 0;
  }
  return b;
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

/**
 * The tab session: an id and the sampling decision, made once per tab session and kept in
 * sessionStorage so every page of the session agrees (and with its traceparent flags).
 */
function tabSession(rate) {
  const key = 'llm-rum:session';
  try {
    const kept = globalThis.sessionStorage && sessionStorage.getItem(key);
    const m = kept && /^([0-9a-f]{16}):([01])$/.exec(kept);
    if (m) return { id: m[1], sampled: m[2] === '1' };
  } catch {
    /* storage blocked: decide for this page only */
  }
  const s = { id: hex(randomBytes().subarray(0, 8)), sampled: rate >= 1 || Math.random() < rate };
  try {
    if (globalThis.sessionStorage) sessionStorage.setItem(key, `${s.id}:${s.sampled ? 1 : 0}`);
  } catch {
    /* as above */
  }
  return s;
}

async function loadCore(opts, sampled, session) {
  const wasm = await import('./wasm/llm_rum.js');
  await wasm.default(opts.wasmUrl ? { module_or_path: opts.wasmUrl } : undefined);
  // One configuration object, read by the core (src/core/config.rs Config::from_json).
  const config = {
    pageOrigin: globalThis.location ? globalThis.location.origin : '',
    propagate: opts.propagateTraceUrls,
    correlation: opts.correlationHeaders.map((h) => h.toLowerCase()),
    stallThresholdMs: opts.stallThresholdMs, // unset: the core's default
    clockStepMs: clockStep(),
    stripQuery: opts.stripQuery,
    templateIds: opts.templateIds,
    // Records wait for the hook only when there is somewhere to send them.
    beforeSend: !!(opts.beforeSend && opts.collector),
    sampled,
    budgets: Object.entries(opts.budgets),
    beacon: opts.collector ? { sdk: 'llm-rum/' + VERSION, session } : null,
  };
  return new wasm.Core(JSON.stringify(config));
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
  const undo = []; // what start() has set up so far, taken down again if it fails
  try {
    return await start(options, nativeFetch, nativeEventSource, undo);
  } catch (e) {
    // Anything unforeseen (an options object whose getters throw, a frozen global, …): the
    // page keeps its own fetch and EventSource, and hears of it once.
    for (const f of undo.splice(0).reverse()) {
      try {
        f();
      } catch {
        /* best effort */
      }
    }
    warn('measurement disabled: init failed; requests are unaffected', e);
    return inert(nativeFetch, nativeEventSource);
  }
}

/** The Rum of an SDK that did not start: the native APIs, and methods that do nothing. */
function inert(nativeFetch, nativeEventSource) {
  return {
    fetch: typeof nativeFetch === 'function' ? nativeFetch.bind(globalThis) : nativeFetch,
    EventSource: nativeEventSource,
    observe: () => () => {},
    mark: () => false,
    markInteraction() {},
    flush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
    active: false,
  };
}

async function start(options, nativeFetch, nativeEventSource, undo) {
  const g = globalThis;
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

  const session = tabSession(opts.sampleRate);
  try {
    if (typeof nativeFetch === 'function') state.core = await loadCore(opts, session.sampled, session.id);
  } catch (e) {
    warn('measurement disabled: the wasm core did not load', e);
  }

  // beforeSend runs after onRecord (which sees every record as measured, for the page's own
  // use), on its own copy, once per record on its way to the collector — a `partial`
  // snapshot on page hide and its completed record are one each. Synchronous: the page may
  // be unloading, its urgent flush follows at once. What it returns goes to the core's
  // queue (false/null: dropped; undefined: the copy as edited in place); a hook that throws
  // or returns anything else drops that record: it may have been there to scrub it.
  const hook = !!(opts.beforeSend && opts.collector);
  const sendEdited = (r) => {
    let v;
    try {
      v = opts.beforeSend(r);
      if (v === undefined) v = r;
      // A Promise is not awaited (the page may be unloading).
      if (v && (typeof v !== 'object' || typeof v.then === 'function')) throw new TypeError('expected the record or false');
      v = v && JSON.stringify(v); // one JSON text is one line, as transport_queue takes them
    } catch (e) {
      state.warnOnce('beforeSend', 'beforeSend failed (contained); record dropped', e);
      return;
    }
    try {
      if (v && state.core) state.core.transport_queue(v, performance.now());
    } catch (e) {
      fail(e);
    }
  };

  const deliver = () => {
    const core = state.core;
    if (!core) return;
    let records, outgoing;
    try {
      const text = core.take_records(false);
      // With beforeSend: the records (and partial snapshots) on their way to the collector.
      const out = hook ? core.take_records(true) : '';
      if (!text && !out) return;
      records = text ? JSON.parse(text) : [];
      outgoing = out ? JSON.parse(out) : [];
    } catch (e) {
      fail(e); // reached from timers and frame callbacks: nothing may escape into the page
      return;
    }
    for (const r of records) {
      if (opts.onRecord) {
        try {
          opts.onRecord(r);
        } catch (e) {
          state.warnOnce('onRecord', 'onRecord threw (contained)', e);
        }
      }
    }
    for (const r of outgoing) sendEdited(r);
    // The core queued the records for the collector (beforeSend's through transport_queue);
    // send when it says so.
    try {
      if (transport) transport.schedule();
    } catch (e) {
      fail(e);
    }
  };

  const fail = (e) => {
    if (state.core) {
      state.core = null;
      warn('measurement disabled after an internal error; requests are unaffected', e);
      try {
        paint.stop(); // its observers would otherwise run on for nothing
      } catch {
        /* already failing */
      }
    }
  };

  const ctx = {
    live: () => state.core,
    warnOnce: state.warnOnce,
    nativeFetch,
    base: state.base,
    match: makeMatcher(opts, state),
    random: randomBytes,
    // The latest action within 1 s *before* the request (a time handed in for later is not).
    interaction: (t) => {
      const d = t - state.lastInteraction;
      return state.lastInteraction >= 0 && d >= 0 && d <= INTERACTION_WINDOW_MS ? state.lastInteraction : -1;
    },
    end(h, outcome) {
      const core = state.core;
      if (!core) return;
      // Called from stream callbacks: nothing may escape into the app's stream.
      try {
        ctx.settled(h, core.end(h, performance.now(), outcome));
      } catch (e) {
        fail(e);
      }
    },
    /** Request `h` for `url` began: the app's route template, if one matches, goes to the
     * core; paint observation notes the container's text so far. */
    began(h, url) {
      const template = templateOf(opts.urlTemplates, url);
      if (template) state.core.set_route(h, template);
      paint.began(h);
    },
    /** Its response is measured (a stream, or `match`ed): bind its answer element. */
    confirmed(h) {
      paint.confirmed(h);
    },
    /** The core ended `h`; `done` = its record is queued (false: it waits for a paint). */
    settled(h, done) {
      paint.ended(h, done);
      deliver();
    },
    deliver,
    fail,
  };
  const paint = makePaint(ctx, opts);
  undo.push(() => {
    state.core = null;
    paint.stop();
    for (const off of state.listeners.splice(0)) off();
  });
  const rumFetch = makeFetch(ctx);
  // EventSource (issue 4): a subclass of the native class, or the native class itself.
  let rumES = nativeEventSource;
  try {
    if (state.core && typeof nativeEventSource === 'function') rumES = makeEventSource(ctx, nativeEventSource, opts.traceparentQueryParam);
  } catch (e) {
    // Not a class that can be extended (a page's own stand-in): EventSource stays unmeasured.
    state.warnOnce('es', 'EventSource not measured: window.EventSource cannot be extended', e);
  }
  let encode = null;
  if (state.core && opts.collector && opts.exporter === 'otlp') {
    try {
      const { toOtlp } = await import('./otlp.js');
      encode = (payload) => toOtlp(payload, opts.templateIds);
    } catch (e) {
      warn('the OTLP exporter did not load; sending v1 JSON beacons', e);
    }
  }
  const transport =
    state.core && opts.collector
      ? makeTransport(() => state.core, new URL(opts.collector, state.base()).href, nativeFetch, fail, encode, (href) => templateOf(opts.urlTemplates, href))
      : null;
  if (transport) undo.push(() => transport.stop());
  if (transport) transport.restore();
  const flushNow = () => (transport ? transport.flush() : Promise.resolve());

  const listen = (target, type, fn, opt) => {
    if (!target || !target.addEventListener) return;
    target.addEventListener(type, fn, opt);
    state.listeners.push(() => target.removeEventListener(type, fn, opt));
  };
  if (state.core && g.document) {
    // Hidden or unloading: flag running streams, queue their partial records, send urgently.
    const hide = (reason, unloading) => {
      try {
        if (state.core) state.core.page_hidden(performance.now(), unloading);
        deliver();
      } catch (e) {
        fail(e);
      }
      if (transport) transport.urgent(reason);
    };
    listen(g.document, 'visibilitychange', () => g.document.visibilityState === 'hidden' && hide('hidden', false));
    // pagehide without `persisted`: the page is unloading (its streams are about to be cut).
    listen(g, 'pagehide', (e) => hide('pagehide', !e.persisted));
    // The user's action that caused a request (DESIGN §1 `interaction`): the latest trusted
    // click, Enter keydown or submit. `timeStamp` is the event's creation time, the same
    // value Event Timing reports as the entry's startTime (Event Timing §"startTime"), so
    // no PerformanceObserver round trip is needed. Capture phase: the app cannot hide it.
    const act = (e) => {
      if (e.isTrusted && (e.type !== 'keydown' || e.key === 'Enter')) state.lastInteraction = e.timeStamp;
    };
    for (const type of ['click', 'keydown', 'submit']) listen(g, type, act, { capture: true, passive: true });
    // Back from the back/forward cache: the page lives on.
    listen(g, 'pageshow', () => {
      try {
        if (state.core) state.core.page_shown();
      } catch (e) {
        fail(e);
      }
    });
  }

  let patched = false;
  if (opts.patchGlobals && state.core && typeof nativeFetch === 'function') {
    g.fetch = rumFetch;
    patched = true;
  }
  const patchedES = opts.patchGlobals && rumES !== nativeEventSource;
  if (patchedES) g.EventSource = rumES;

  return {
    // Bound: `rum.fetch(...)` calls it as a method, and native fetch throws "Illegal
    // invocation" unless `this` is the global (or undefined).
    fetch: state.core ? rumFetch : typeof nativeFetch === 'function' ? nativeFetch.bind(g) : nativeFetch,
    EventSource: rumES,
    observe(el) {
      try {
        return state.core ? paint.observe(el) : () => {};
      } catch (e) {
        fail(e);
        return () => {};
      }
    },
    mark(name) {
      try {
        return !!(state.core && state.core.mark(String(name), performance.now()));
      } catch (e) {
        fail(e);
        return false;
      }
    },
    markInteraction(t) {
      // `t`: the action's own performance.now() time (an event's timeStamp, or a time handed
      // over from another frame); default now.
      state.lastInteraction = typeof t === 'number' && Number.isFinite(t) && t >= 0 ? t : performance.now();
    },
    flush: () => flushNow(),
    async shutdown() {
      if (patched && g.fetch === rumFetch) g.fetch = nativeFetch;
      patched = false;
      if (patchedES && g.EventSource === rumES) g.EventSource = nativeEventSource;
      for (const off of state.listeners.splice(0)) off();
      try {
        paint.stop();
        await flushNow();
        if (transport) transport.stop();
      } catch (e) {
        fail(e);
      }
    },
    get active() {
      return state.core !== null;
    },
  };
}
