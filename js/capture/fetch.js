// The instrumented fetch. This file owns the promise/stream plumbing and nothing else: it
// stamps performance.now() and moves bytes; every decision and every metric lives in the
// wasm core (src/core). The rules that keep it invisible to the app:
// - the native fetch is called exactly once, with the app's own arguments unless a
//   traceparent is added (then with an equivalent Request, which is what fetch() builds
//   internally anyway: Fetch §5.6 step 2);
// - every call into the core is fenced (core.js): a failure disables measurement and the
//   app's request, response and stream carry on untouched;
// - the body is re-streamed by pulling the original body's reader on demand — not clone()/
//   tee() + drain — so a reader's cancel() reaches the network and backpressure holds when
//   the app reads slowly.

import { begun, end, forget } from './requests.js';
import { OK, ABORTED, ERROR } from '../codes.js';
import { SKIP, ALWAYS } from './match.js';

/** The error a fetch/stream failed with → ABORTED or ERROR. */
function outcomeOf(err) {
  // Aborts surface as DOMException "AbortError" (or the signal's custom reason, which is
  // not an Error at all); network failures as TypeError, an Error.
  if (err && err.name === 'AbortError') return ABORTED;
  return err instanceof Error || err instanceof DOMException ? ERROR : ABORTED;
}

/**
 * Makes the wrapper.
 * @param {import('./requests.js').Capture} cap
 * @param {typeof fetch} nativeFetch
 * @returns {typeof fetch}
 */
export function makeFetch(cap, nativeFetch) {
  const bytes = byteStreamsWork();
  return function fetch(input, init) {
    // Measured: { h, any (measure whatever the response), args (with our traceparent) }.
    const m = cap.core.fenced((core) => {
      const t = performance.now();
      const isRequest = typeof Request === 'function' && input instanceof Request;
      const url = new URL(isRequest ? input.url : String(input), cap.base()).href;
      const method = String((init && init.method) || (isRequest ? input.method : 'GET'));
      const how = cap.match(url, method);
      if (how === SKIP) return null;
      const h = core.begin(url, method, t, performance.timeOrigin + t, cap.random(), cap.interaction(t));
      begun(cap, core, h, url);
      const tp = core.traceparent(h);
      return { h, any: how === ALWAYS, args: tp ? withTraceparent(core, h, tp, input, init) : null };
    }, null);
    if (!m) return nativeFetch.call(globalThis, input, init);
    return nativeFetch.apply(globalThis, m.args || [input, init]).then(
      (res) => onResponse(cap, m, res, bytes),
      (err) => {
        end(cap, m.h, outcomeOf(err));
        throw err;
      },
    );
  };
}

/** [Request] carrying our traceparent — or the app's own, which is then adopted. */
function withTraceparent(core, h, tp, input, init) {
  let req;
  try {
    req = new Request(input, init);
  } catch {
    // Invalid arguments: native fetch will reject with the same TypeError; send them as-is.
    return null;
  }
  const own = req.headers.get('traceparent');
  if (own) core.adopt_traceparent(h, own);
  // Under mode "no-cors" the headers guard silently drops non-safelisted names (Fetch
  // §5.2 "request-no-cors"), which is the right outcome: no preflight, no header.
  else req.headers.set('traceparent', tp);
  return [req];
}

/**
 * The Request we made (`args`, when a traceparent was added) must live as long as its response:
 * its signal follows the app's, and WebKit drops that link when the Request is garbage
 * collected — the app's abort() then no longer reaches the fetch (measured in WebKitGTK 2.50:
 * `fetch(new Request(url, { signal }))` read on to the end after abort() in half of the runs
 * once the Request was unreachable; DOM §"abort signal garbage collection"; the same bug in
 * undici: nodejs/undici#3644). Held by the response and its body, whichever the app keeps.
 */
const held = new WeakMap();

function onResponse(cap, { h, any, args }, res, bytes) {
  if (args) {
    try {
      held.set(res, args);
      if (res.body) held.set(res.body, args);
    } catch {
      /* not an object: nothing to hold */
    }
  }
  // A throw in here: nothing of the app's was touched (see wrapBody), and the response goes
  // through as it came (`otherwise`).
  return cap.core.fenced((core) => {
    const t = performance.now();
    // Opaque responses expose nothing (no status, headers or body).
    if (res.type === 'opaque' || res.type === 'opaqueredirect') {
      forget(cap, h);
      return res;
    }
    if (!core.response(h, t, res.status, res.headers, any)) {
      cap.settled(h, true); // not measured: the core forgot it
      return res;
    }
    cap.confirmed(h); // measured: its answer element may be bound now
    if (!res.body) {
      end(cap, h, OK);
      return res;
    }
    return wrapBody(cap, h, res, bytes);
  }, res);
}

/**
 * Whether this engine implements readable byte streams (Streams §4.7). WebKit before Safari
 * 26.4 throws "ReadableByteStreamController is not implemented" at construction. Asked once
 * per init; a BYOB reader is requested too, since that is what a byte stream is for.
 */
export function byteStreamsWork() {
  try {
    new ReadableStream({ type: 'bytes' }).getReader({ mode: 'byob' }).releaseLock();
    return true;
  } catch {
    return false;
  }
}

/**
 * The measured response. Fail-open by construction: everything that can throw (the
 * replacement stream, the Response, its mirrored getters) is built first, and the original
 * body is locked last, when nothing else can fail. A throw before that leaves `res` untouched
 * and the caller hands it to the app as it came.
 */
function wrapBody(cap, h, res, bytes) {
  const p = pump(cap, h);
  const body = new ReadableStream(p.source(bytes), { highWaterMark: 0 });
  const out = new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  mirror(out, res);
  p.attach(res.body.getReader()); // the one step that touches the app's objects: last
  return out;
}

/**
 * The measuring pass-through between the original body's reader and the stream the app
 * reads. It pulls the source only when the app reads (highWaterMark 0: no read-ahead, so
 * backpressure holds for a slow reader), stamps each chunk into the core, and cancel() goes
 * straight to the network. It is independent of the kind of stream it feeds: `source(true)`
 * is an underlying byte source (`type: 'bytes'` like the native body, so BYOB readers work —
 * a TransformStream's readable would reject getReader({ mode: 'byob' }) — and fewer promise
 * hops per chunk than pipeTo + TransformStream, see scripts/bench.js), `source(false)` the
 * same for a default stream, where the engine has no byte streams.
 */
function pump(cap, h) {
  let reader = null;
  let ended = false;
  const endOnce = (outcome) => {
    if (!ended) {
      ended = true;
      end(cap, h, outcome);
    }
  };
  // `asked`: when the app's read asked for this chunk (the core tells the app's own time
  // from a network silence with it: src/core/request/delivery.rs).
  const step = (c, { done, value }, asked) => {
    if (done) {
      endOnce(OK);
      c.close();
      // A pending BYOB read must be answered after close (Streams §4.7.4).
      if (c.byobRequest) c.byobRequest.respond(0);
      return undefined;
    }
    // Byte streams reject empty chunks; the native body never yields one, but a source that
    // did must not stall the app: read on.
    if (!value.byteLength) return pull(c, asked);
    // Measure first: a byte stream's enqueue() transfers (detaches) the chunk's buffer.
    cap.core.fenced((core) => core.chunk(h, performance.now(), value, asked));
    c.enqueue(value);
    return undefined;
  };
  const pull = (c, asked = performance.now()) =>
    reader.read().then(
      (r) => step(c, r, asked),
      (err) => {
        endOnce(outcomeOf(err));
        c.error(err);
      },
    );
  return {
    attach(r) {
      reader = r;
      // An abort or a network failure errors the original body at once, even while nobody
      // reads it — the official clients abort right after an in-band error event and never
      // read again. The record ends then, not when (if ever) the app pulls next.
      r.closed.then(null, (err) => endOnce(outcomeOf(err)));
    },
    source: (bytes) => ({
      type: bytes ? 'bytes' : undefined,
      pull,
      cancel(reason) {
        endOnce(ABORTED);
        return reader.cancel(reason);
      },
    }),
  };
}

/**
 * `new Response()` cannot set url/redirected/type, and copies headers into a mutable object.
 * Shadow those getters on the instance (non-enumerable, like the prototype's) so the app
 * sees the original values, and make clone() keep doing so.
 */
function mirror(out, res) {
  const { url, redirected, type, headers } = res;
  const get = (value) => ({ get: () => value, configurable: true });
  Object.defineProperties(out, {
    url: get(url),
    redirected: get(redirected),
    type: get(type),
    headers: get(headers),
    clone: {
      value: function clone() {
        // The native clone() throws as natively (a locked or used body); our part after it
        // cannot throw into the app: at worst the clone shows the Response's own getters.
        const c = Response.prototype.clone.call(this);
        try {
          mirror(c, res);
        } catch {
          /* fail-open */
        }
        return c;
      },
      configurable: true,
      writable: true,
    },
  });
}
