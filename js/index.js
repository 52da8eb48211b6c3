// llm-rum: the facade users import. Importing this module touches nothing global (safe under
// SSR / Node). init() patches window.fetch and window.EventSource (with patchGlobals) and
// resolves at once: measurement is on from that moment, while the wasm core downloads and
// compiles (issue 14: ready time); the requests made meanwhile are measured once it is in
// (capture/early.js, capture/eventsource.js), and `rum.ready` says when that is. If anything
// fails, the app keeps its native APIs and sees at most one console.warn. init() reads top to
// bottom:
//   options.js   the options, checked (bad ones reported and replaced by their defaults)
//   core.js      the wasm core, requested first; every call into it fenced
//   capture/     early.js and eventsource.js (the requests made before the core is in)
//   lifecycle.js page hide/show and the user's actions
// then, once the core is in (setup):
//   deliver/     finished records → onRecord (and beforeSend), the beacon transport (otlp.js
//                on demand)
//   capture/     paint.js (what the person saw), fetch.js (the wrapper)

import { normalize, base, templateOf } from './options.js';
import { makeCore, loadCore, unmeasurable, VERSION } from './core.js';
import { warn, warnerOnce } from './warn.js';
import { randomBytes } from './ids.js';
import { makeDeliver } from './deliver/records.js';
import { paintOnDemand, ownUrl } from './capture/paint-on-demand.js';
import { makeMatcher } from './capture/match.js';
import { makeFetch, adoptTap } from './capture/fetch.js';
import { earlyFetch } from './capture/early.js';
import { makeEventSource } from './capture/eventsource.js';
import { startLifecycle } from './lifecycle.js';

export { VERSION };

/**
 * Starts llm-rum. Never rejects: on any failure the returned object's `fetch` is the native
 * fetch and nothing is patched (a core that fails to load later puts the globals back).
 * @param {import('./index').RumOptions} [options]
 * @returns {Promise<import('./index').Rum>}
 */
export async function init(options) {
  const g = globalThis;
  const native = { fetch: g.fetch, EventSource: g.EventSource };
  const undo = []; // what has been set up so far, taken down again if it fails
  const down = () => {
    for (const f of undo.splice(0).reverse()) {
      try {
        f();
      } catch {
        /* best effort */
      }
    }
  };
  try {
    return start(options, native, undo, down);
  } catch (e) {
    // Anything unforeseen (an options object whose getters throw, a frozen global, …): the
    // page keeps its own fetch and EventSource, and hears of it once.
    down();
    warn('measurement disabled: init failed; requests are unaffected', e);
    return inert(native);
  }
}

function start(options, native, undo, down) {
  const g = globalThis;
  // Options: bad ones are reported once and replaced by their defaults.
  const [opts, problems] = normalize(options);
  for (const p of problems) warn('ignoring bad option ' + p);
  const why = unmeasurable(native.fetch);
  if (why !== '') {
    if (why) warn('measurement disabled: ' + why);
    return inert(native);
  }
  const warnOnce = warnerOnce();
  let stopped = false; // init() failed or shutdown() was called
  undo.push(() => (stopped = true));
  // The core, and the chunks below, load from the next task (issue 14: ready time): the
  // page's first network request from script costs 2–4 ms of synchronous setup in Chromium
  // whatever API makes it (fetch, XHR, a preload link, a dynamic import: measured here), and
  // paying it inside init() held the app's continuation (init() itself 6.5 → 1.4 ms median over
  // 20 fresh loads; the core came in no later). The wasm is still the first thing requested.
  const core = makeCore();
  undo.push(core.stop);
  const later = nextTask();
  const loading = later.then(() => loadCore(opts, native.fetch, core));
  // The beacon transport is a chunk of its own, loaded only with a collector. Paint
  // observation likewise unless `observe: false` (auto mode, the default, must watch from the
  // first measured stream's first frame); with false, on the first rum.observe(). Both load
  // while the wasm does; nothing of the app's waits for them.
  const chunks = {
    sender: opts.collector ? chunk(later.then(() => import('./deliver/transport.js'))) : null,
    painter: opts.observe ? chunk(later.then(() => import('./capture/paint.js'))) : null,
  };

  // What the app does before the core is in, done once it is (or let go when it failed) in
  // the order the app did it: fetch (its response goes to the app at once, a tap keeps what
  // measuring it needs: capture/early.js), EventSource (its events kept until then:
  // capture/eventsource.js), rum.observe(), rum.mark().
  /** @type {import('./capture/early.js').Deferred[]} */
  const deferred = [];
  const defer = (f) => void deferred.push(f);
  const replay = (adopt) => {
    for (const f of deferred.splice(0)) {
      try {
        f(adopt);
      } catch (e) {
        core.fail(e);
      }
    }
  };
  const match = makeMatcher(opts, warnOnce);
  const early = earlyFetch(native.fetch, match, base, defer);
  // EventSource measurement is a chunk loaded by the first EventSource — or with the loads
  // above, when there is a traceparent query parameter to add (it must be in before the native
  // constructor runs).
  const esChunk = opts.traceparentQueryParam ? chunk(later.then(() => import('./capture/es-measure.js'))) : null;
  const es = makeEventSource(native.EventSource, opts.traceparentQueryParam, warnOnce, () => esChunk || import('./capture/es-measure.js'), defer);
  undo.push(() => {
    early.ready(native.fetch);
    es.attach(null);
    replay(null);
  });
  const life = startLifecycle(core);
  undo.push(life.stop);
  let api = null; // the started SDK, once setup() finished

  // The globals last (everything above that can fail has), put back only while still ours.
  const ours = { fetch: early.fetch, EventSource: es.Class };
  const patched = opts.patchGlobals ? Object.keys(ours).filter((k) => ours[k] !== native[k]) : [];
  const unpatch = () => patched.splice(0).forEach((k) => g[k] === ours[k] && (g[k] = native[k]));
  undo.push(unpatch);
  for (const k of patched) g[k] = ours[k];

  const ready = loading
    .then((tab) => (tab && !stopped ? setup(opts, native, core, tab, chunks, early, es, life, warnOnce, ours, undo, match) : null))
    .then(
      (started) => {
        if (!started || stopped) {
          down();
          return false;
        }
        api = started.api;
        replay(started.adopt);
        return true;
      },
      (e) => {
        down();
        warn('measurement disabled: init failed; requests are unaffected', e);
        return false;
      },
    );

  // The api.
  return {
    // Bound to the early wrapper for good: it hands on to the measuring one once the core is
    // in (or to the native fetch), so a client given `rum.fetch` now keeps what it was given.
    fetch: early.fetch,
    EventSource: es.Class,
    observe(el) {
      if (api) return api.observe(el);
      let undoIt = null;
      let cancelled = false;
      defer((adopt) => adopt && !cancelled && (undoIt = api.observe(el)));
      return () => {
        cancelled = true;
        if (undoIt) undoIt();
      };
    },
    mark(name) {
      if (api) return api.mark(name);
      // The current request is one made before the core was in (if any): marked once it is
      // measured, at the time of this call.
      const t = performance.now();
      defer((adopt) => adopt && api.mark(name, t));
      return early.pending() > 0;
    },
    markInteraction: life.markInteraction,
    // Before the core is in there is nothing to send, and it may never come (a hung CDN):
    // neither waits for it.
    flush: () => (api ? api.flush() : Promise.resolve()),
    async shutdown() {
      stopped = true;
      unpatch();
      // Not started: everything is taken down now (the core, if it ever comes, finds `stopped`).
      if (!api) return down();
      await api.shutdown();
    },
    ready,
    get active() {
      return core.live();
    },
  };
}

/**
 * The SDK proper, once the core is in: the modules, the measuring fetch, and the requests made
 * before, measured. Returns the methods the Rum hands on to.
 */
async function setup(opts, native, core, tab, { sender, painter }, early, es, life, warnOnce, ours, undo, match) {
  const g = globalThis;
  const route = (url) => templateOf(opts.urlTemplates, url);
  const ids = { sdk: 'llm-rum/' + VERSION, session: tab.id };
  const transport = sender ? await (await sender).startTransport(core, opts, native.fetch, { warn, base, route, warnOnce, ids }) : null;
  if (transport) undo.push(transport.stop);
  const deliver = makeDeliver(core, opts, transport, warnOnce);
  const paint = paintOnDemand(() => painter || import('./capture/paint.js'), core, [core, opts, warnOnce, deliver, ownUrl()], warnOnce);
  if (painter) await paint.load();
  core.onFail(paint.stop); // its observers would otherwise run on for nothing
  undo.push(paint.stop);
  life.attach(deliver, transport);
  /** @type {import('./capture/requests.js').Capture} */
  const cap = {
    core,
    base,
    match,
    random: randomBytes,
    interaction: life.interaction,
    route,
    began: paint.began,
    confirmed: paint.confirmed,
    settled(h, done) {
      paint.ended(h, done);
      deliver();
    },
  };
  const rumFetch = makeFetch(cap, native.fetch);
  // fetch takes over from the early wrapper (the global too, unless the app wrapped it
  // meanwhile: then the early wrapper hands on to ours); what was done meanwhile is measured
  // by the caller (replay).
  if (opts.patchGlobals && g.fetch === ours.fetch) {
    g.fetch = rumFetch;
    ours.fetch = rumFetch; // what shutdown() puts back
  }
  early.ready(rumFetch);
  await es.attach(cap);
  const flush = () => {
    paint.settle(); // a record waiting for auto mode to find its answer goes now
    deliver();
    return transport ? transport.flush() : Promise.resolve();
  };
  const api = {
    observe: (el) => core.fenced(() => paint.observe(el), () => {}),
    mark: (name, t = performance.now()) => !!core.fenced((c) => c.mark(String(name), t), false),
    flush,
    async shutdown() {
      life.stop();
      try {
        paint.stop();
        await flush();
        if (transport) transport.stop();
      } catch (e) {
        core.fail(e);
      }
    },
  };
  // What was sent meanwhile is measured with this (the deferred calls, index.js start).
  return { api, adopt: (tap) => adoptTap(cap, tap) };
}

/**
 * Resolves in the next task: a MessageChannel message, not setTimeout, which a background tab
 * throttles to once a second (HTML §"timer initialisation steps" allows it; Chromium does it
 * for hidden pages), so a page loaded in a background tab still gets its core at once.
 * @returns {Promise<void>}
 */
function nextTask() {
  return new Promise((resolve) => {
    try {
      const c = new MessageChannel();
      c.port1.onmessage = () => {
        c.port1.close();
        resolve();
      };
      c.port2.postMessage(0);
    } catch {
      setTimeout(resolve, 0);
    }
  });
}

/**
 * A chunk's import whose failure waits until it is awaited (init() then fails as a whole, and
 * the page keeps its native APIs) rather than surfacing as an unhandled rejection.
 * @template T @param {Promise<T>} p @returns {Promise<T>}
 */
function chunk(p) {
  p.catch(() => {});
  return p;
}

/** The Rum of an SDK that did not start: the native APIs, and methods that do nothing. */
function inert(native) {
  return {
    // Bound: `rum.fetch(...)` calls it as a method, and native fetch throws "Illegal
    // invocation" unless `this` is the global (or undefined).
    fetch: typeof native.fetch === 'function' ? native.fetch.bind(globalThis) : native.fetch,
    EventSource: native.EventSource,
    observe: () => () => {},
    mark: () => false,
    markInteraction() {},
    flush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
    ready: Promise.resolve(false),
    active: false,
  };
}
