// What measuring an EventSource takes (capture/eventsource.js owns the class): its records'
// begin (and the reconnects' ones), the events into the core, the end of each connection
// attempt with its Resource Timing entry. A chunk of its own (issue 14: size), loaded when the
// page makes its first EventSource — or at init() with `traceparentQueryParam`, whose
// parameter must be added before the native constructor runs. What it shares with the main
// bundle comes in as arguments (a shared import would split off a third file every page loads).
// Like fetch.js it only stamps times and moves event data into the wasm core; every core call
// is fenced (core.js).

import { UNSEEN } from '../codes.js';

/** The first attempt's `first`: no earlier attempt to link to. */
const NO_BYTES = new Uint8Array(0);

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
 * The measuring side of the class, over `cap` (the Capture), for the traceparent query
 * parameter `param` ('' for none). `begun` and `forget` are capture/requests.js's, `skip` is
 * match.js's SKIP.
 * @param {import('./requests.js').Capture} cap
 * @param {string} param
 * @param {{ begun: typeof import('./requests.js').begun, forget: typeof import('./requests.js').forget, skip: number }} env
 */
export function measuring(cap, param, { begun, forget, skip }) {
  const wait = waitsForEntry();
  // The core's EventSource inputs (src/wasm/core.rs `es_*`).
  const esBegin = (core, url, t, random, first, sendTrace, interaction) => core.es_begin(url, t, performance.timeOrigin + t, random, first, sendTrace, interaction);
  const esMessage = (core, h, t, type, data, lastEventId) => core.es_message(h, t, type, data, lastEventId);
  // Reconnect attempts are not caused by a user action: no interaction (-1).
  const begin = (core, m, t, first) => {
    const h = esBegin(core, m.url, t, cap.random(), first, !!param, -1);
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

  return {
    forget: (m) => forget(cap, m.h),

    /**
     * Begins the first attempt's record of `m`, made at `t` (`sendTrace`: our traceparent
     * parameter may go into `m.target`): false when not measured.
     */
    start: (m, t, sendTrace) =>
      cap.core.fenced((core) => {
        if (cap.match(m.url, 'GET') === skip) return false;
        m.h = esBegin(core, m.url, t, m.r, NO_BYTES, sendTrace, cap.interaction(t));
        begun(cap, core, m.h, m.url);
        const tp = sendTrace && param && core.traceparent(m.h);
        if (tp) {
          const u = new URL(m.url);
          u.searchParams.append(param, tp);
          m.target = u.href;
        }
        return true;
      }, false),

    /** Event `ev` of `es` at `t`, when its readyState was `state`. */
    event(m, ev, t, state) {
      if (m.closed) return;
      cap.core.fenced((core) => {
        const type = ev.type;
        if (type === 'open') {
          // After a drop the browser reconnects: a new record linked to the first.
          if (!m.h) m.h = begin(core, m, t, m.r);
          esMessage(core, m.h, t, '', '', '');
          cap.confirmed(m.h); // a stream: its answer element may be bound now
        } else if (type === 'error' && !(ev instanceof MessageEvent)) {
          // The connection dropped (readyState CONNECTING: the browser reconnects; its failed
          // retries are not app errors) or failed for good (CLOSED; a reconnect that does gets
          // an error record of its own).
          if (!m.h && state === CLOSED) m.h = begin(core, m, t, m.r);
          if (m.h) endAttempt(m, t, false);
        } else if (m.h) {
          esMessage(core, m.h, t, type, ev.data, ev.lastEventId);
        }
      });
    },

    /** What was kept of `m` before the measurement came in ends at `t` (the early tap's bound). */
    unseen(m, t) {
      const h = m.h;
      m.h = 0;
      m.closed = true;
      cap.core.fenced((core) => h && cap.settled(h, core.end(h, t, UNSEEN)));
    },

    /** The app closed `m` at `t`. */
    closed(m, t) {
      m.closed = true;
      cap.core.fenced(() => m.h && endAttempt(m, t, true));
    },
  };
}
