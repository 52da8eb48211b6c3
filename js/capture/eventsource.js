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

import { begun, forget } from './requests.js';
import { SKIP } from './match.js';

/** `readyState` of an EventSource that will not reconnect (HTML §"EventSource" CLOSED). */
const CLOSED = 2;

/**
 * Whether to wait for an EventSource's Resource Timing entry. HTML reports the EventSource
 * fetch to Resource Timing (whatwg/html#7553; WPT resource-timing/event-source-timing.html) and
 * Chromium and Firefox do, when the stream ends; WebKit creates no entry for it (measured in
 * WebKitGTK 2.50: none within 1 s, none later), so waiting there would only hold every record
 * a second for nothing. WebKit is told by navigator.vendor, "Apple Computer, Inc." in every
 * WebKit browser (HTML §"navigator.vendor"; on iOS that is every browser). An entry that is
 * already there is still used.
 */
const waitsForEntry = () => !(globalThis.navigator && /^Apple/.test(navigator.vendor || ''));

/**
 * Calls cb(entry | undefined) once with the Resource Timing entry of `url` that started at or
 * after `since` (it appears only when the stream has ended), waiting at most 1 s for it where
 * the engine creates one.
 */
function resourceEntry(url, since, cb, wait) {
  const pick = (list) => list.find((e) => e.name === url && e.startTime >= since - 1);
  // Also called from timers: a missing or throwing Performance Timeline is "no entry".
  const byName = () => {
    try {
      return performance.getEntriesByName(url);
    } catch {
      return [];
    }
  };
  const now = pick(byName());
  if (now) return cb(now);
  // Not waiting: one task, for an entry queued right behind the stream's end.
  if (!wait) return void setTimeout(() => cb(pick(byName())), 0);
  let obs;
  const done = (e) => {
    if (cb) cb(e);
    cb = null;
    clearTimeout(timer);
    if (obs) obs.disconnect();
  };
  const timer = setTimeout(() => done(pick(byName())), 1000);
  // An observer also sees entries when the page's resource timing buffer is full.
  try {
    obs = new PerformanceObserver((l) => {
      const e = pick(l.getEntries());
      if (e) done(e);
    });
    obs.observe({ type: 'resource' });
  } catch {
    /* polling at the timeout only */
  }
}

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
 * @property {(ev: Event) => void} [on]  its listener
 * @property {boolean} [closed]  the app called close()
 */

/**
 * Makes the class: a subclass of `Native` (or `Native` itself when it is not a class, with one
 * warning: a page's own stand-in stays unmeasured).
 * @param {import('./requests.js').Capture} cap
 * @param {typeof EventSource} Native
 * @param {string | null} param  the traceparentQueryParam option (a query parameter name;
 *   anything but a non-empty string: off)
 * @param {(key: string, message: string, err?: unknown) => void} warnOnce
 * @returns {typeof EventSource}
 */
export function makeEventSource(cap, Native, param, warnOnce) {
  if (typeof Native !== 'function') return Native;
  try {
    return measured(cap, Native, typeof param == 'string' ? param : '');
  } catch (e) {
    warnOnce('es', 'EventSource not measured: window.EventSource cannot be extended', e);
    return Native;
  }
}

function measured(cap, Native, param) {
  /** @type {WeakMap<EventSource, Measured>} */
  const state = new WeakMap();
  const wait = waitsForEntry();
  // Reconnect attempts are not caused by a user action: no interaction (-1).
  const begin = (core, m, t, first) => {
    const h = core.es_begin(m.url, t, performance.timeOrigin + t, cap.random(), first, !!param, -1);
    begun(cap, core, h, m.url);
    return h;
  };

  // One connection attempt ended at `t`: its record is finished when the Resource Timing
  // entry (serverTiming, request start) showed up, or after 1 s. The app never waits.
  const endAttempt = (m, t, byApp) => {
    const h = m.h;
    m.h = 0;
    resourceEntry(m.target, m.since, (e) => cap.core.fenced((core) => {
      // The entries as the browser parsed them (no round trip through the header grammar).
      if (e) for (const s of e.serverTiming || []) core.es_server_timing(h, s.name, s.duration, s.description);
      cap.settled(h, core.es_end(h, t, byApp, e ? e.startTime : NaN));
    }), wait);
    m.since = t;
  };

  const onEvent = (es, m, ev) => {
    const t = performance.now();
    if (m.closed) return;
    cap.core.fenced((core) => {
      const type = ev.type;
      if (type === 'open') {
        // After a drop the browser reconnects: a new record linked to the first.
        if (!m.h) m.h = begin(core, m, t, m.r);
        core.es_message(m.h, t, '', '', '');
        cap.confirmed(m.h); // a stream: its answer element may be bound now
      } else if (type === 'error' && !(ev instanceof MessageEvent)) {
        // The connection dropped (readyState CONNECTING: the browser reconnects; its failed
        // retries are not app errors) or failed for good (CLOSED; a reconnect that does gets
        // an error record of its own).
        if (!m.h && es.readyState === CLOSED) m.h = begin(core, m, t, m.r);
        if (m.h) endAttempt(m, t, false);
      } else if (m.h) {
        core.es_message(m.h, t, type, ev.data, ev.lastEventId);
      }
    });
  };

  /** Begins the first attempt's record for `url`: its Measured, or null when not measured. */
  const start = (url, t) =>
    cap.core.fenced((core) => {
      let abs;
      try {
        abs = new URL(url, cap.base()).href;
      } catch {
        return null; // not a URL: the native constructor throws its own error
      }
      if (cap.match(abs, 'GET') === SKIP) return null;
      /** @type {Measured} */
      const m = { url: abs, target: abs, since: t, r: cap.random(), types: new Set(['open', 'error', 'message', 'trace']), h: 0 };
      m.h = core.es_begin(abs, t, performance.timeOrigin + t, m.r, [], !!param, cap.interaction(t));
      begun(cap, core, m.h, abs);
      const tp = param && core.traceparent(m.h);
      if (tp) {
        const u = new URL(abs);
        u.searchParams.append(param, tp);
        m.target = u.href;
      }
      return m;
    }, null);

  class EventSource extends Native {
    constructor(...args) {
      const t = performance.now();
      const url = args[0];
      const m = start(url, t);
      // The app's own arguments (their count too: a missing one must throw as natively),
      // unless a traceparent parameter was added.
      const added = m !== null && m.target !== m.url;
      if (added) args[0] = m.target;
      try {
        super(...args);
      } catch (e) {
        if (m) forget(cap, m.h); // no record (and no paint watch); the app gets the native error
        throw e;
      }
      if (!m) return;
      cap.core.fenced(() => {
        // The URL the app gave, not the one with our parameter.
        if (added) Object.defineProperty(this, 'url', { get: () => m.url, configurable: true });
        m.on = (ev) => onEvent(this, m, ev);
        for (const type of m.types) super.addEventListener(type, m.on);
        state.set(this, m);
      });
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
        m.closed = true;
        cap.core.fenced(() => m.h && endAttempt(m, performance.now(), true));
      }
    }
  }
  Object.defineProperty(EventSource, 'name', { value: 'EventSource' });
  return EventSource;
}
