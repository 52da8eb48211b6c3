// The instrumented EventSource: a subclass of the native one, so instanceof, the static
// constants, readyState, withCredentials and close() are the browser's own. Like fetch.js it
// only stamps performance.now() and moves event data into the wasm core (src/core decides
// what is content, the outcome, the trace); every core call is fenced (core.js: measurement
// off, the app's EventSource untouched). The native constructor runs with the app's
// arguments (plus, when opted in, a traceparent query parameter); measurement attaches after.
//
// The SDK listens to `open`, `error`, `message`, `trace` and, on first use, to every named
// event type the app subscribes to with addEventListener — registered just before the app's
// first listener of that type, so its stamp precedes the app's handler. It never wraps the
// app's listeners: they receive the very same event objects.
//
// The class exists from init() on, before the core is in (issue 14: ready time), and what
// measuring takes is a chunk of its own (capture/es-measure.js, issue 14: size), loaded by the
// page's first EventSource: an EventSource made before both are in keeps its events (their
// times and the event objects the app got, within the early tap's bounds: tap.js) and is
// measured once they are, from the moment it was made, as if it had been all along — except
// that it carries no traceparent parameter (the core decides that; with
// `traceparentQueryParam` the chunk is loaded with the core). The app's listeners get every
// event the moment it comes either way: nothing is held from them. Past the bound the record
// ends where keeping stopped, `partial`, with `unseen: ['end']`.

import { begun, forget } from './requests.js';
import { SKIP } from './match.js';
import { base } from '../options.js';
import { randomBytes } from '../ids.js';
import { MAX_KEPT_CHUNKS, MAX_KEPT_BYTES, takeSlot, giveSlot } from './tap.js';

/**
 * What the SDK keeps per measured EventSource.
 * @typedef {object} Measured
 * @property {string} url  the absolute URL the app gave
 * @property {string} target  the absolute URL requested: `url`, or with our traceparent
 *   parameter when opted in
 * @property {number} h  the current connection attempt's handle; 0 between attempts
 * @property {number} since  when the current attempt began (its Resource Timing entry starts after)
 * @property {Uint8Array} r  the first attempt's random bytes (reconnects link to its record)
 * @property {Set<string>} types  event types the SDK listens to
 * @property {(ev: Event) => void} on  its listener
 * @property {boolean} [closed]  the app called close()
 * @property {Array<[Event, number, number]> | null} kept  before the measurement is in: the
 *   events so far, with their times and the readyState then (null once measured)
 * @property {number} keptBytes  the kept messages' data length (UTF-16 units, ×2 for bytes)
 * @property {number} [over]  when keeping stopped at the bound (tap.js)
 * @property {number} [closedAt]  when the app called close() before the measurement was in
 */

/**
 * Makes the class — a subclass of `Native` (or `Native` itself when it is not a class, with
 * one warning: a page's own stand-in stays unmeasured) — and `attach`, which hands it the
 * Capture once the core is in (null: it failed; EventSources are then not measured).
 * @param {typeof EventSource} Native
 * @param {string | null} param  the traceparentQueryParam option (a query parameter name;
 *   anything but a non-empty string: off)
 * @param {(key: string, message: string, err?: unknown) => void} warnOnce
 * @param {() => Promise<typeof import('./es-measure.js')>} load  the measurement chunk's import
 * @param {(f: import('./early.js').Deferred) => void} defer  queues what an EventSource made
 *   before the core is in does once it is, in order with the app's other early calls (an
 *   `observe()` made before it must bind first)
 * @returns {{ Class: typeof EventSource, attach: (cap: import('./requests.js').Capture | null) => Promise<void> | void }}
 *   `attach` returns the measurement's load when it started one
 */
export function makeEventSource(Native, param, warnOnce, load, defer) {
  const none = { Class: Native, attach() {} };
  if (typeof Native !== 'function') return none;
  try {
    return measured(Native, typeof param == 'string' ? param : '', warnOnce, load, defer);
  } catch (e) {
    warnOnce('es', 'EventSource not measured: window.EventSource cannot be extended', e);
    return none;
  }
}

function measured(Native, param, warnOnce, load, defer) {
  const perf = performance;
  /** @type {import('./requests.js').Capture | null | undefined} undefined: not yet; null: failed */
  let cap;
  /** es-measure.js's `measuring`, once loaded (false: it failed to load). */
  let impl = null;
  let loading = false;
  /** @type {WeakMap<EventSource, Measured>} */
  const state = new WeakMap();
  /** EventSources made after the core was in, keeping their events until the measurement is. */
  let waiting = [];
  /** EventSources made before the core was in: caught up by the replay of `defer`. */
  let deferred = 0;
  const ready = () => !!(cap && impl);

  /** Not measured after all: its listeners go. */
  const stop = (es, m) => {
    if (m.kept) giveSlot();
    m.kept = null;
    state.delete(es);
    for (const type of m.types) EventTarget.prototype.removeEventListener.call(es, type, m.on);
  };
  const stopAll = () => {
    for (const [es, m] of waiting.splice(0)) stop(es, m);
  };
  /** An EventSource that kept its events, measured now from them. */
  const catchUp = (es, m) => {
    const kept = m.kept;
    if (!kept || !impl.start(m, m.since, false)) return stop(es, m);
    giveSlot();
    m.kept = null;
    for (const [ev, t, rs] of kept) impl.event(m, ev, t, rs);
    if (m.over !== undefined && !m.closed) {
      // Seen up to the bound: the record ends there, and the rest is not measured.
      impl.unseen(m, m.over);
      stop(es, m);
    } else if (m.closedAt !== undefined) impl.closed(m, m.closedAt);
  };
  /** Loads the measurement (once the core is in); then the waiting ones catch up. */
  const need = () => {
    if (loading || !cap) return loading;
    return (loading = load().then(
      (mod) => {
        impl = cap.core.fenced(() => mod.measuring(cap, param, { begun, forget, skip: SKIP }), false);
        if (!impl) return stopAll();
        for (const [es, m] of waiting.splice(0)) cap.core.fenced(() => catchUp(es, m));
      },
      (e) => {
        impl = false;
        warnOnce('es', 'EventSource not measured: its chunk did not load', e);
        stopAll();
      },
    ));
  };

  class EventSource extends Native {
    constructor(...args) {
      const t = performance.now();
      // Only a URL is measured; anything else is the native constructor's to reject.
      let abs = null;
      try {
        abs = cap !== null && impl !== false ? new URL(args[0], base()).href : null;
      } catch {
        /* not a URL: the native constructor throws its own error */
      }
      /** @type {Measured | null} */
      // Before the measurement is in, its events are kept: in one of the early tap's slots.
      const m = abs && { url: abs, target: abs, since: t, r: randomBytes(), types: new Set(['open', 'error', 'message', 'trace']), h: 0, kept: ready() ? null : takeSlot() ? [] : null, keptBytes: 0 };
      const live = !!(m && ready() && impl.start(m, t, !!param));
      // The app's own arguments (their count too: a missing one must throw as natively),
      // unless a traceparent parameter was added.
      const added = live && m.target !== m.url;
      if (added) args[0] = m.target;
      try {
        super(...args);
      } catch (e) {
        if (live) impl.forget(m); // no record (and no paint watch); the app gets the native error
        if (m && m.kept) giveSlot();
        throw e;
      }
      if (!m || (m.kept === null && !live)) return;
      try {
        // The URL the app gave, not the one with our parameter.
        if (added) Object.defineProperty(this, 'url', { get: () => m.url, configurable: true });
        m.on = (ev) => {
          const at = perf.now(); // once per event: the Performance object read once (fetch.js)
          if (!m.kept) impl.event(m, ev, at, this.readyState);
          else if (m.over === undefined) {
            const n = typeof ev.data == 'string' ? 2 * ev.data.length : 0;
            if (m.kept.length < MAX_KEPT_CHUNKS && m.keptBytes + n <= MAX_KEPT_BYTES) {
              m.keptBytes += n;
              m.kept.push([ev, at, this.readyState]);
            } else m.over = at;
          }
        };
        for (const type of m.types) super.addEventListener(type, m.on);
        state.set(this, m);
        if (m.kept && cap === undefined) {
          // Caught up where the app's early calls are replayed (init() loads the measurement
          // first); made after a failure or a failed load: let go.
          deferred++;
          defer((measure) => (measure && impl ? cap.core.fenced(() => catchUp(this, m)) : stop(this, m)));
        } else if (m.kept) {
          waiting.push([this, m]);
          need();
        }
      } catch (e) {
        if (cap) cap.core.fail(e);
      }
    }

    addEventListener(type) {
      const m = state.get(this);
      if (m && typeof type == 'string' && !m.types.has(type)) {
        m.types.add(type);
        super.addEventListener(type, m.on);
      }
      return super.addEventListener(...arguments);
    }

    close() {
      super.close();
      const m = state.get(this);
      if (m && !m.closed) {
        if (!m.kept) impl.closed(m, performance.now());
        else if (m.closedAt === undefined) m.closedAt = performance.now();
      }
    }
  }
  Object.defineProperty(EventSource, 'name', { value: 'EventSource' });
  return {
    Class: EventSource,
    attach(c) {
      if (cap !== undefined) return;
      cap = c;
      if (!c) return stopAll();
      // With EventSources made before the core was in (their catch-up is replayed in order once
      // init() is done), or a traceparent parameter to add before the next native constructor
      // runs, init() waits for the measurement (`ready`).
      if (deferred || param) return need();
    },
  };
}
