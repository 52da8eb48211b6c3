// Sends what the beacon queue (queue.js: batching, sizes, backoff, dedupe) lets go. This file
// takes the records deliver/records.js hands it into the queue and payloads out to the
// collector:
// - normal flushes: fetch, with `keepalive` while the page's keepalive quota allows (Fetch
//   §4.5: 64 KiB of keepalive bodies in flight per document, shared with sendBeacon);
// - urgent flushes (hidden / pagehide): navigator.sendBeacon; when it refuses, smaller
//   payloads; what still cannot go is persisted to localStorage (bounded) and sent by the
//   next page load;
// - text/plain bodies: a CORS-safelisted content type, so no preflight (Fetch §3.2.3).
// The SDK's own requests use the native fetch, so it never measures its beacons.
// Every call into the core goes through `core.fenced` (core.js). Each flush names its reason
// (codes.js FLUSH_*, the beacon's `reason`).

// A chunk of its own (loaded only with a collector): what it shares with the main bundle
// comes in as `env` (a shared import would make the bundler split off a third file that every
// page loads). The codes are primitives the bundler inlines.
import { FLUSH_TIMER, FLUSH_MANUAL, FLUSH_ONLINE, FLUSH_RESTORE } from '../codes.js';
import { BeaconQueue, MAX_PAYLOAD } from './queue.js';

const MIN_PAYLOAD = 4 * 1024;
const KEEPALIVE_QUOTA = 64 * 1024;
const PERSIST_KEY = 'llm-rum:queue';
const PERSIST_MAX = 256 * 1024;
/** Payloads one flush sends at most (a bound on the loop, not a policy: the queue's is). */
const MAX_SENDS = 64;

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
 * @typedef {object} Transport
 * @property {(id: string, json: string, t: number) => void} push  queues a record (its id from
 *   the core, its text as it goes out: deliver/records.js applied the app's beforeSend)
 * @property {() => void} schedule  (re)arms the timer for the queue's next due flush
 * @property {() => Promise<void>} flush  sends what may go now (`manual`); resolves when the
 *   sends were handed to the browser and answered
 * @property {(reason: number) => void} urgent  the page hides or unloads: sendBeacon now
 * @property {() => void} stop
 */

/**
 * Starts the sender for the `collector` option: the OTLP exporter is loaded first when chosen
 * (its own chunk; if it does not load, v1 JSON beacons with one warning), and records an
 * earlier page load persisted are sent.
 * @param {import('../core.js').Core} core
 * @param {{ collector: string, exporter: 'json' | 'otlp', templateIds: boolean,
 *   urlTemplates: { match: string | RegExp, template: string }[],
 *   beforeSend: ((record: import('../index').RumRecord) => unknown) | null }} opts
 * @param {typeof fetch} nativeFetch
 * @param {{ warn: (message: string, err?: unknown) => void, base: () => string,
 *   route: (url: string) => string,
 *   warnOnce: (key: string, message: string, err?: unknown) => void,
 *   ids: { sdk: string, session: string } }} env
 *   warn.js warn, options.js base, the app's route template for a URL (options.js
 *   templateOf), init()'s warner, what every beacon says of its sender
 * @returns {Promise<Transport>}
 */
export async function startTransport(core, opts, nativeFetch, env) {
  let encode = null;
  if (opts.exporter === 'otlp') {
    try {
      const { toOtlp } = await import('./otlp.js');
      encode = (payload) => toOtlp(payload, opts.templateIds);
    } catch (e) {
      env.warn('the OTLP exporter did not load; sending v1 JSON beacons', e);
    }
  }
  const q = new BeaconQueue(env.ids.sdk, env.ids.session);
  const transport = makeTransport(core, q, new URL(opts.collector, env.base()).href, nativeFetch, encode, env.route);
  transport.restore();
  return transport;
}

/**
 * `q` the queue, `url` the collector; `encode`: null for the v1 JSON beacon, or a payload →
 * OTLP/HTTP JSON converter (otlp.js); `template(href)`: the app's route template for the page,
 * or ''.
 * @param {import('../core.js').Core} core
 * @param {BeaconQueue} q
 * @param {string} url
 * @param {typeof fetch} nativeFetch
 * @param {((payload: string) => string) | null} encode
 * @param {(href: string) => string} template
 * @returns {Transport & { restore(): void }}
 */
function makeTransport(core, q, url, nativeFetch, encode, template) {
  const g = globalThis;
  const nav = g.navigator;
  let timer = 0;
  let keepaliveBytes = 0;
  // The beacon's `page`: the core templates the page's path like a record's `url` (no
  // conversation id in it), once per address the page has had (an SPA's path changes between
  // flushes; the same path is not asked again).
  let pageOf = ['', ''];
  const page = () => {
    const loc = g.location;
    const href = loc ? loc.href : '';
    if (href !== pageOf[0]) pageOf = [href, core.fenced((c) => c.page(loc ? loc.pathname : '', loc ? template(href) : ''), '') || ''];
    return pageOf[1];
  };
  // `sentAt` is on the records' clock (their startEpochMs is performance.timeOrigin + t), so
  // the collector's received − sentAt measures exactly the skew of the times it stores.
  const next = (max, reason, urgent, path, t) => q.take(max, reason, urgent, path, t, performance.timeOrigin + t);
  const offline = () => !!nav && nav.onLine === false;

  // Everything below runs fenced (core.js): a throw turns measurement off, and then nothing
  // more is sent; it never reaches the page (timer callbacks, rum.flush()'s promise).
  function schedule() {
    core.fenced(() => {
      const at = q.dueAt();
      if (timer) clearTimeout(timer);
      timer = 0;
      if (at >= 0 && !offline()) timer = setTimeout(() => flush(FLUSH_TIMER), Math.max(0, at - performance.now()));
    });
  }

  /** @param {string} payload  @param {number} batch */
  function send(payload, batch) {
    // Payloads are ASCII but for page paths and header values: length ≈ bytes; count
    // generously so the keepalive quota is never overrun.
    const size = payload.length * 2;
    const keepalive = keepaliveBytes + size <= KEEPALIVE_QUOTA;
    if (keepalive) keepaliveBytes += size;
    const done = (status, after) => core.fenced(() => q.result(batch, performance.now(), status, after, Math.random()));
    let body = payload;
    try {
      if (encode) body = encode(payload);
    } catch (e) {
      core.fail(e);
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

  /**
   * Sends by fetch every payload the queue lets go now (`urgent`: past a backoff hold too).
   * @param {number} reason  codes.js FLUSH_*
   * @returns {Promise<void>[]}
   */
  function fetchAll(reason, urgent) {
    const sends = [];
    core.fenced(() => {
      const path = page();
      for (let i = 0; i < MAX_SENDS; i++) {
        const payload = next(MAX_PAYLOAD, reason, urgent, path, performance.now());
        if (payload === undefined) break;
        sends.push(send(payload, q.batch));
      }
    });
    return sends;
  }

  /**
   * A normal flush: everything that may go now, as fetches.
   * @param {number} reason  codes.js FLUSH_*
   */
  function flush(reason) {
    if (offline()) return Promise.resolve();
    const sends = fetchAll(reason, false);
    schedule();
    return Promise.all(sends).then(() => undefined);
  }

  /**
   * Page hidden or going away (the core has finished partial records): sendBeacon, persist.
   * @param {number} reason  codes.js FLUSH_*
   */
  function urgent(reason) {
    // sendBeacon can only send a CORS-safelisted type, which an OTLP receiver refuses:
    // OTLP goes out as keepalive fetches instead (no persistence for what does not fit).
    if (encode) return void fetchAll(reason, true);
    core.fenced(() => beaconAll(reason));
    // If the page stays (hidden then shown), anything requeued goes out normally.
    schedule();
  }

  /** sendBeacon what it takes, in smaller payloads when it refuses; persist the rest. */
  function beaconAll(reason) {
    const t = performance.now();
    const path = page();
    let max = MAX_PAYLOAD;
    for (let i = 0; i < MAX_SENDS && q.dueAt() >= 0; i++) {
      const payload = next(max, reason, true, path, t);
      if (payload !== undefined) {
        let ok = false;
        try {
          ok = !!(nav && nav.sendBeacon && nav.sendBeacon(url, payload));
        } catch {
          ok = false;
        }
        // Accepted: no answer will come. Refused: back to the front of the queue.
        q.result(q.batch, t, ok ? 200 : 0, -1, 0);
        if (ok) continue;
      }
      // Refused (quota) or too big for this allowance: try smaller pieces.
      if (max <= MIN_PAYLOAD) break;
      max >>= 1;
    }
    if (q.dueAt() >= 0) {
      const rest = q.drain();
      try {
        const prev = g.localStorage.getItem(PERSIST_KEY) || '';
        g.localStorage.setItem(PERSIST_KEY, (prev + rest).slice(-PERSIST_MAX));
      } catch {
        /* storage unavailable or full: those records are lost, as with any beacon */
      }
    }
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
      core.fenced(() => q.restore(text, performance.now()));
      flush(FLUSH_RESTORE);
    }
  }

  const onOnline = () => flush(FLUSH_ONLINE);
  if (g.addEventListener) g.addEventListener('online', onOnline);

  return {
    push: (id, json, t) => core.fenced(() => q.push(id, json, t)),
    schedule,
    flush: () => flush(FLUSH_MANUAL),
    urgent,
    restore,
    stop() {
      if (timer) clearTimeout(timer);
      timer = 0;
      if (g.removeEventListener) g.removeEventListener('online', onOnline);
    },
  };
}
