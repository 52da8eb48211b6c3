// Sends what the core's beacon queue decides to send (src/core/beacon/ owns batching,
// sizes, backoff, dedupe). This file only moves payloads and reports outcomes:
// - normal flushes: fetch, with `keepalive` while the page's keepalive quota allows (Fetch
//   §4.5: 64 KiB of keepalive bodies in flight per document, shared with sendBeacon);
// - urgent flushes (hidden / pagehide): navigator.sendBeacon; when it refuses, smaller
//   payloads; what still cannot go is persisted to localStorage (bounded) and sent by the
//   next page load;
// - text/plain bodies: a CORS-safelisted content type, so no preflight (Fetch §3.2.3).
// The SDK's own requests use the native fetch, so it never measures its beacons.

const MIN_PAYLOAD = 4 * 1024;
const KEEPALIVE_QUOTA = 64 * 1024;
const PERSIST_KEY = 'llm-rum:queue';
const PERSIST_MAX = 256 * 1024;

/** Retry-After (seconds or an HTTP date) in ms, or -1. */
function retryAfter(res) {
  const v = res.headers.get('retry-after');
  if (!v) return -1;
  const s = Number(v);
  if (Number.isFinite(s)) return s * 1000;
  const d = Date.parse(v);
  return Number.isFinite(d) ? Math.max(0, d - Date.now()) : -1;
}

/**
 * `live()` → the core or null; `url` the collector; `nativeFetch`; `fail(e)` disables;
 * `encode`: null for the v1 JSON beacon, or a payload → OTLP/HTTP JSON converter (otlp.js);
 * `template(href)`: the app's route template for the page, or ''.
 * Returns { schedule(), flush(reason), urgent(reason), restore(), stop() }.
 */
export function makeTransport(live, url, nativeFetch, fail, encode, template) {
  const g = globalThis;
  const nav = g.navigator;
  let timer = 0;
  let keepaliveBytes = 0;
  // The beacon's `page`: the core templates the page's path like a record's `url` (no
  // conversation id in it).
  const take = (core, max, reason, urgent, t) => {
    const loc = g.location;
    return core.transport_take(max, reason, urgent, loc ? loc.pathname : '', loc ? template(loc.href) : '', t, sentAt(t));
  };
  // `sentAt` is on the records' clock (their startEpochMs is performance.timeOrigin + t), so
  // the collector's received − sentAt measures exactly the skew of the times it stores.
  const sentAt = (t) => performance.timeOrigin + t;
  const offline = () => !!nav && nav.onLine === false;

  const guard = (f) => {
    const core = live();
    if (!core) return undefined;
    try {
      return f(core);
    } catch (e) {
      fail(e);
      return undefined;
    }
  };

  function schedule() {
    guard((core) => {
      const at = core.transport_due_at();
      if (timer) clearTimeout(timer);
      timer = 0;
      if (at >= 0 && !offline()) timer = setTimeout(() => flush('timer'), Math.max(0, at - performance.now()));
    });
  }

  function send(payload, batch) {
    // Payloads are ASCII but for page paths and header values: length ≈ bytes; count
    // generously so the keepalive quota is never overrun.
    const size = payload.length * 2;
    const keepalive = keepaliveBytes + size <= KEEPALIVE_QUOTA;
    if (keepalive) keepaliveBytes += size;
    const done = (status, after) => guard((core) => core.transport_result(batch, performance.now(), status, after, Math.random()));
    let body = payload;
    try {
      if (encode) body = encode(payload);
    } catch (e) {
      fail(e);
      return Promise.resolve();
    }
    // OTLP/HTTP JSON must be application/json (a CORS preflight: the OpenTelemetry
    // Collector's receiver answers it when configured with cors.allowed_origins).
    const type = encode ? 'application/json' : 'text/plain;charset=UTF-8';
    let sent;
    try {
      sent = nativeFetch.call(g, url, { method: 'POST', body, keepalive, headers: { 'content-type': type } });
    } catch (e) {
      sent = Promise.reject(e); // a synchronous throw is a failed send, not an SDK fault
    }
    // Retry-After is readable cross-origin only when the collector exposes it (ours does).
    return sent
      .then(
        (res) => done(res.status, retryAfter(res)),
        () => done(0, -1),
      )
      .finally(() => {
        if (keepalive) keepaliveBytes -= size;
        schedule();
      });
  }

  /** A normal flush: everything that may go now, as fetches. */
  function flush(reason) {
    if (offline()) return Promise.resolve();
    const sends = [];
    guard((core) => {
      for (let i = 0; i < 64; i++) {
        const t = performance.now();
        const payload = take(core, core.max_payload, reason, false, t);
        if (payload === undefined) break;
        sends.push(send(payload, core.transport_last_batch()));
      }
    });
    schedule();
    return Promise.all(sends).then(() => undefined);
  }

  /** Page hidden or going away (the core has queued partial records): sendBeacon, persist. */
  function urgent(reason) {
    // sendBeacon can only send a CORS-safelisted type, which an OTLP receiver refuses:
    // OTLP goes out as keepalive fetches instead (no persistence for what does not fit).
    if (encode) {
      guard((core) => {
        for (let i = 0; i < 64; i++) {
          const t = performance.now();
          const payload = take(core, core.max_payload, reason, true, t);
          if (payload === undefined) break;
          send(payload, core.transport_last_batch());
        }
      });
      return;
    }
    guard((core) => {
      const t = performance.now();
      let max = core.max_payload;
      // transport_due_at() < 0: the queue is empty.
      for (let i = 0; i < 64 && core.transport_due_at() >= 0; i++) {
        const payload = take(core, max, reason, true, t);
        if (payload !== undefined) {
          const batch = core.transport_last_batch();
          let ok = false;
          try {
            ok = !!(nav && nav.sendBeacon && nav.sendBeacon(url, payload));
          } catch {
            ok = false;
          }
          // Accepted: no answer will come. Refused: back to the front of the queue.
          core.transport_result(batch, t, ok ? 200 : 0, -1, 0);
          if (ok) continue;
        }
        // Refused (quota) or too big for this allowance: try smaller pieces.
        if (max <= MIN_PAYLOAD) break;
        max >>= 1;
      }
      if (core.transport_due_at() >= 0) {
        const rest = core.transport_persist();
        try {
          const prev = g.localStorage.getItem(PERSIST_KEY) || '';
          g.localStorage.setItem(PERSIST_KEY, (prev + rest).slice(-PERSIST_MAX));
        } catch {
          /* storage unavailable or full: those records are lost, as with any beacon */
        }
      }
    });
    // If the page stays (hidden then shown), anything requeued goes out normally.
    schedule();
  }

  /** Records persisted by an earlier page load. */
  function restore() {
    let text = null;
    try {
      text = g.localStorage && g.localStorage.getItem(PERSIST_KEY);
      if (text) g.localStorage.removeItem(PERSIST_KEY);
    } catch {
      text = null;
    }
    if (text) {
      guard((core) => core.transport_queue(text, performance.now()));
      flush('restore');
    }
  }

  const onOnline = () => flush('online');
  if (g.addEventListener) g.addEventListener('online', onOnline);

  return {
    schedule,
    flush: () => flush('manual'),
    urgent,
    restore,
    stop() {
      if (timer) clearTimeout(timer);
      timer = 0;
      if (g.removeEventListener) g.removeEventListener('online', onOnline);
    },
  };
}
