// llm-rum: the facade users import. Importing this module touches nothing global (safe under
// SSR / Node); init() loads the wasm core and, with patchGlobals, wraps window.fetch and
// window.EventSource. If anything fails, the app keeps its native APIs and sees at most one
// console.warn. init() reads top to bottom:
//   options.js   the options, checked (bad ones reported and replaced by their defaults)
//   core.js      the wasm core, built from them; every call into it fenced
//   deliver/     finished records → onRecord (and beforeSend), the beacon transport (otlp.js
//                on demand)
//   capture/     paint.js (what the person saw), fetch.js and eventsource.js (the wrappers)
//   lifecycle.js page hide/show and the user's actions
// and then patches the globals and returns the Rum.

import { normalize, base, templateOf } from './options.js';
import { loadCore, VERSION } from './core.js';
import { warn, warnerOnce } from './warn.js';
import { randomBytes } from './ids.js';
import { startTransport } from './deliver/transport.js';
import { makeDeliver } from './deliver/records.js';
import { makePaint } from './capture/paint.js';
import { makeMatcher } from './capture/match.js';
import { makeFetch } from './capture/fetch.js';
import { makeEventSource } from './capture/eventsource.js';
import { startLifecycle } from './lifecycle.js';

export { VERSION };

/**
 * Starts llm-rum. Never rejects: on any failure the returned object's `fetch` is the native
 * fetch and nothing is patched.
 * @param {import('./index').RumOptions} [options]
 * @returns {Promise<import('./index').Rum>}
 */
export async function init(options) {
  const g = globalThis;
  const native = { fetch: g.fetch, EventSource: g.EventSource };
  const undo = []; // what start() has set up so far, taken down again if it fails
  try {
    return await start(options, native, undo);
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
    return inert(native);
  }
}

async function start(options, native, undo) {
  const g = globalThis;
  // Options: bad ones are reported once and replaced by their defaults.
  const [opts, problems] = normalize(options);
  for (const p of problems) warn('ignoring bad option ' + p);
  const warnOnce = warnerOnce();

  // The core: without it the page keeps its native APIs.
  const core = await loadCore(opts, native.fetch);
  if (!core) return inert(native);
  undo.push(core.stop);

  // The modules: where records go, what the person saw, the page's life, the two wrappers.
  const transport = opts.collector ? await startTransport(core, opts, native.fetch) : null;
  if (transport) undo.push(transport.stop);
  const deliver = makeDeliver(core, opts, transport, warnOnce);
  const paint = makePaint(core, opts, warnOnce, deliver);
  core.onFail(paint.stop); // its observers would otherwise run on for nothing
  undo.push(paint.stop);
  const life = startLifecycle(core, deliver, transport);
  undo.push(life.stop);
  /** @type {import('./capture/requests.js').Capture} */
  const cap = {
    core,
    base,
    match: makeMatcher(opts, warnOnce),
    random: randomBytes,
    interaction: life.interaction,
    route: (url) => templateOf(opts.urlTemplates, url),
    began: paint.began,
    confirmed: paint.confirmed,
    settled(h, done) {
      paint.ended(h, done);
      deliver();
    },
  };
  const rumFetch = makeFetch(cap, native.fetch);
  const rumES = makeEventSource(cap, native.EventSource, opts.traceparentQueryParam, warnOnce);

  // The globals last, and put back only while they are still ours.
  const ours = { fetch: rumFetch, EventSource: rumES };
  const patched = opts.patchGlobals ? Object.keys(ours).filter((k) => ours[k] !== native[k]) : [];
  const unpatch = () => patched.splice(0).forEach((k) => g[k] === ours[k] && (g[k] = native[k]));
  undo.push(unpatch);
  for (const k of patched) g[k] = ours[k];
  const flush = () => {
    paint.settle(); // a record waiting for auto mode to find its answer goes now
    return transport ? transport.flush() : Promise.resolve();
  };

  // The api.
  return {
    fetch: rumFetch,
    EventSource: rumES,
    observe: (el) => core.fenced(() => paint.observe(el), () => {}),
    mark: (name) => !!core.fenced((c) => c.mark(String(name), performance.now()), false),
    markInteraction: life.markInteraction,
    flush,
    async shutdown() {
      unpatch();
      life.stop();
      try {
        paint.stop();
        await flush();
        if (transport) transport.stop();
      } catch (e) {
        core.fail(e);
      }
    },
    get active() {
      return core.live();
    },
  };
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
    active: false,
  };
}
