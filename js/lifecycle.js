// The page's life as measurement sees it: hidden or unloading (running streams are flagged, their
// partial records queued and sent urgently), shown again from the back/forward cache, and the
// user's actions that cause requests (`marks.interaction`). Every listener is removed by stop().

import { FLUSH_HIDDEN, FLUSH_PAGEHIDE } from './codes.js';

/**
 * @typedef {object} Lifecycle
 * @property {(t: number) => number} interaction  the latest user action within
 *   INTERACTION_WINDOW_MS before a request that starts at `t` (a time handed in for later is
 *   not one), or -1
 * @property {(t?: number) => void} markInteraction  rum.markInteraction
 * @property {(deliver: () => void, transport: import('./deliver/transport.js').Transport | null) => void} attach
 *   where a hidden page's records go, once the core is in (started before it by init(), so
 *   that a user action just before the first request is seen)
 * @property {() => void} stop  removes the listeners
 */

/** How long before a request the user's action may have happened to count as its cause. */
const INTERACTION_WINDOW_MS = 1000;

/**
 * @param {import('./core.js').Core} core
 * @returns {Lifecycle}
 */
export function startLifecycle(core) {
  const g = globalThis;
  let deliver = () => {}; // hands finished records on (deliver/records.js), once attached
  let transport = null;
  let last = -1; // the latest user action (performance.now() ms)
  const off = [];
  const listen = (target, type, fn, opt) => {
    if (!target || !target.addEventListener) return;
    target.addEventListener(type, fn, opt);
    off.push(() => target.removeEventListener(type, fn, opt));
  };
  if (g.document) {
    /** Hidden or unloading: flag running streams, queue their partial records, send urgently. */
    const hide = (reason, unloading) => {
      core.fenced((c) => {
        c.page_hidden(performance.now(), unloading);
        deliver();
      });
      if (transport) transport.urgent(reason);
    };
    listen(g.document, 'visibilitychange', () => g.document.visibilityState === 'hidden' && hide(FLUSH_HIDDEN, false));
    // pagehide without `persisted`: the page is unloading (its streams are about to be cut).
    listen(g, 'pagehide', (e) => hide(FLUSH_PAGEHIDE, !e.persisted));
    // Back from the back/forward cache: the page lives on.
    listen(g, 'pageshow', () => core.fenced((c) => c.page_shown()));
    // The user's action that caused a request: the latest trusted click, Enter keydown or
    // submit. `timeStamp` is the event's creation time, the same value Event Timing reports as
    // the entry's startTime (Event Timing §"startTime"), so no PerformanceObserver round trip
    // is needed. Capture phase: the app cannot hide it.
    const act = (e) => {
      if (e.isTrusted && (e.type !== 'keydown' || e.key === 'Enter')) last = e.timeStamp;
    };
    for (const type of ['click', 'keydown', 'submit']) listen(g, type, act, { capture: true, passive: true });
  }
  return {
    attach(d, tr) {
      deliver = d;
      transport = tr;
    },
    interaction(t) {
      const d = t - last;
      return last >= 0 && d >= 0 && d <= INTERACTION_WINDOW_MS ? last : -1;
    },
    markInteraction(t) {
      // `t`: the action's own performance.now() time (an event's timeStamp, or a time handed
      // over from another frame); default now.
      last = typeof t === 'number' && Number.isFinite(t) && t >= 0 ? t : performance.now();
    },
    stop() {
      for (const f of off.splice(0)) f();
    },
  };
}
