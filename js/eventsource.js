// The instrumented EventSource: a subclass of the native one, so instanceof, the static
// constants, readyState, withCredentials and close() are the browser's own. Like fetch.js it
// only stamps performance.now() and moves event data into the wasm core (src/core decides
// what is content, the outcome, the trace); every core call is fenced (ctx.fail: measurement
// off, the app's EventSource untouched). The native constructor runs with the app's
// arguments (plus, when opted in, a traceparent query parameter); measurement attaches after.
//
// The SDK listens to `open`, `error`, `message`, `trace` and, on first use, to every named
// event type the app subscribes to with addEventListener — registered just before the app's
// first listener of that type, so its stamp precedes the app's handler. It never wraps the
// app's listeners: they receive the very same event objects.

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
 * Makes the class. `ctx` is fetch.js's context (live, fail, base, match, random, interaction,
 * began, settled); `param`: the traceparentQueryParam option (a query parameter name;
 * anything but a non-empty string: off).
 */
export function makeEventSource(ctx, Native, param) {
  const state = new WeakMap();
  const wait = waitsForEntry();
  if (typeof param != 'string') param = '';
  // Reconnect attempts are not caused by a user action: no interaction (-1).
  const begin = (core, m, t, first) => {
    const h = core.es_begin(m.url, t, performance.timeOrigin + t, ctx.random(), first, !!param, -1);
    ctx.began(h, m.url);
    return h;
  };

  // One connection attempt ended at `t`: its record is finished when the Resource Timing
  // entry (serverTiming, request start) showed up, or after 1 s. The app never waits.
  const endAttempt = (m, t, byApp) => {
    const h = m.h;
    m.h = 0;
    resourceEntry(m.target, m.since, (e) => {
      const core = ctx.live();
      if (!core) return;
      try {
        const st = e ? (e.serverTiming || []).map((s) => s.name + (s.duration ? ';dur=' + s.duration : '') + (s.description ? ';desc=' + JSON.stringify(s.description) : '')) : [];
        ctx.settled(h, core.es_end(h, t, byApp, e ? e.startTime : NaN, st.join()));
      } catch (err) {
        ctx.fail(err);
      }
    }, wait);
    m.since = t;
  };

  const onEvent = (es, m, ev) => {
    const t = performance.now();
    const core = ctx.live();
    if (!core || m.closed) return;
    try {
      const type = ev.type;
      if (type === 'open') {
        // After a drop the browser reconnects: a new record linked to the first.
        if (!m.h) m.h = begin(core, m, t, m.r);
        core.es_message(m.h, t, '', '', '');
        ctx.confirmed(m.h); // a stream: its answer element may be bound now
      } else if (type === 'error' && !(ev instanceof MessageEvent)) {
        // The connection dropped (readyState CONNECTING: the browser reconnects; its failed
        // retries are not app errors) or failed for good (CLOSED; a reconnect that does gets
        // an error record of its own).
        if (!m.h && es.readyState === 2) m.h = begin(core, m, t, m.r);
        if (m.h) endAttempt(m, t, false);
      } else if (m.h) {
        core.es_message(m.h, t, type, ev.data, ev.lastEventId);
      }
    } catch (e) {
      ctx.fail(e);
    }
  };

  class EventSource extends Native {
    constructor(...args) {
      const t = performance.now();
      const url = args[0];
      const core = ctx.live();
      let m;
      let target = url;
      let abs;
      try {
        abs = core && new URL(url, ctx.base()).href;
      } catch {
        /* not a URL: the native constructor throws its own error below */
      }
      try {
        if (abs && ctx.match(abs, 'GET')) {
          m = { url: abs, target: abs, since: t, r: ctx.random(), types: new Set(['open', 'error', 'message', 'trace']) };
          m.h = core.es_begin(abs, t, performance.timeOrigin + t, m.r, [], !!param, ctx.interaction(t));
          ctx.began(m.h, abs);
          const tp = param && core.traceparent(m.h);
          if (tp) {
            const u = new URL(abs);
            u.searchParams.append(param, tp);
            target = m.target = u.href;
          }
        }
      } catch (e) {
        ctx.fail(e);
        m = null;
        target = url;
      }
      // The app's own arguments (their count too: a missing one must throw as natively).
      if (target !== url) args[0] = target;
      try {
        super(...args);
      } catch (e) {
        try {
          if (m) ctx.end(m.h, 4); // forget: no record (and no paint watch)
        } catch {
          /* the app gets the native error */
        }
        throw e;
      }
      if (!m) return;
      try {
        // The URL the app gave, not the one with our parameter.
        if (target !== url) Object.defineProperty(this, 'url', { get: () => m.url, configurable: true });
        m.on = (ev) => onEvent(this, m, ev);
        for (const type of m.types) super.addEventListener(type, m.on);
        state.set(this, m);
      } catch (e) {
        ctx.fail(e);
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
        m.closed = true;
        try {
          if (m.h && ctx.live()) endAttempt(m, performance.now(), true);
        } catch (e) {
          ctx.fail(e);
        }
      }
    }
  }
  Object.defineProperty(EventSource, 'name', { value: 'EventSource' });
  return EventSource;
}
