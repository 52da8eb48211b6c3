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
    const m = begin(cap, input, init, performance.now(), null);
    if (!m) return nativeFetch.call(globalThis, input, init);
    return follow(cap, m, nativeFetch.apply(globalThis, m.args || [input, init]), bytes);
  };
}

/**
 * Measures a request the app made at `t`, before the core was ready (capture/early.js), and
 * that went out as the app made it: begun at `t`, with the traceparent it carried (the app's
 * own, adopted, or none — never one of ours, which was not added).
 * @param {import('./requests.js').Capture} cap
 * @returns {Promise<Response>} `sent`, measured
 */
export function measureSent(cap, input, init, t, sent) {
  const m = begin(cap, input, init, t, sentTraceparent(input, init));
  return m ? follow(cap, m, sent, (earlyBytes ??= byteStreamsWork())) : sent;
}
/** byteStreamsWork() for the early requests: asked once, not per request. */
let earlyBytes;

/**
 * Begins the record of a request made at `t`: { h, any (measure whatever the response), args
 * (the arguments with our traceparent) }, or null when not measured. `sentTp`: the
 * traceparent an already sent request carried ('' for none), else null (ours may be added).
 */
function begin(cap, input, init, t, sentTp) {
  return cap.core.fenced((core) => {
    const isRequest = typeof Request === 'function' && input instanceof Request;
    const url = new URL(isRequest ? input.url : String(input), cap.base()).href;
    const method = String((init && init.method) || (isRequest ? input.method : 'GET'));
    const how = cap.match(url, method);
    if (how === SKIP) return null;
    const h = core.begin(url, method, t, performance.timeOrigin + t, cap.random(), cap.interaction(t));
    begun(cap, core, h, url);
    const any = how === ALWAYS;
    if (sentTp !== null) {
      core.adopt_traceparent(h, sentTp); // '' is no trace context: nothing was sent
      return { h, any, args: null };
    }
    const tp = core.traceparent(h);
    return { h, any, args: tp ? withTraceparent(core, h, tp, input, init) : null };
  }, null);
}

/**
 * The response of begun request `m`, measured (its `headers` time is when it came, also when it
 * waits for `cap.hold()`); a failure ends its record and goes on.
 */
function follow(cap, m, sent, bytes) {
  return sent.then(
    (res) => {
      const t = performance.now();
      const wait = cap.hold();
      return wait ? wait.then(() => onResponse(cap, m, res, bytes, t)) : onResponse(cap, m, res, bytes, t);
    },
    (err) => {
      end(cap, m.h, outcomeOf(err));
      throw err;
    },
  );
}

/** The `traceparent` a request made with these arguments carried, or ''. */
function sentTraceparent(input, init) {
  try {
    // init.headers, when given, replaces a Request's headers (Fetch §5.4 Request constructor).
    const headers = init && init.headers !== undefined ? new Headers(init.headers) : input instanceof Request ? input.headers : null;
    return (headers && headers.get('traceparent')) || '';
  } catch {
    return '';
  }
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

function onResponse(cap, { h, any, args }, res, bytes, t) {
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
  p.hookReaders(body);
  p.attach(res.body.getReader()); // the one step that touches the app's objects: last
  return out;
}

/**
 * One chunk into the core, stamped now: a function of its own, not a closure per chunk
 * (`fenced` hands it the extra arguments). `perf`: the Performance object, read once — each
 * `performance` is a Window getter call, on a path that takes two clock readings per chunk.
 */
function chunkIn(core, h, value, asked) {
  core.chunk(h, perf.now(), value, asked);
}
let perf;

/**
 * The measuring pass-through between the original body's reader and the stream the app
 * reads. Two ways through, the same bytes and the same record:
 * - the stream's own source (`source`): pulls the original body only when the app reads
 *   (highWaterMark 0: no read-ahead, so backpressure holds for a slow reader), stamps each
 *   chunk into the core, and cancel() goes straight to the network. `source(true)` is an
 *   underlying byte source (`type: 'bytes'` like the native body, so BYOB readers work — a
 *   TransformStream's readable would reject getReader({ mode: 'byob' })), `source(false)` the
 *   same for a default stream, where the engine has no byte streams. Every way of consuming the
 *   body takes it: pipeTo/pipeThrough, async iteration, tee/clone, text()/json(), BYOB readers.
 * - the fast path (`hookReaders`): a default reader from `body.getReader()` — what clients
 *   that parse streams use — reads the original body's reader directly, one promise hop per
 *   chunk instead of a pull, an enqueue and the stream's own read (scripts/bench.js: ~4.9 →
 *   ~1.5 µs per chunk in Chromium). Taken only while the app-facing stream has nothing queued and
 *   no pull is under way, so the order of chunks is the source's whichever way each read goes;
 *   the first read always goes through the stream, which marks the body disturbed
 *   (`bodyUsed`) as natively.
 */
function pump(cap, h) {
  perf = performance;
  let reader = null;
  let ctl = null; // the app-facing stream's controller
  let ended = false;
  let open = true; // the app-facing stream is readable (we have not closed or errored it)
  let pulls = 0; // pulls under way
  let disturbed = false; // the stream was read once (its own path)
  let fastReads = 0; // fast reads under way
  let orphans = 0; // of those, the ones whose reader was released: their chunk goes back
  const endOnce = (outcome) => {
    if (!ended) {
      ended = true;
      end(cap, h, outcome);
    }
  };
  const close = () => {
    if (open) {
      open = false;
      ctl.close();
    }
  };
  const error = (err) => {
    if (open) {
      open = false;
      ctl.error(err);
    }
  };
  // The original body failed (abort, network): the record ends, and the app's stream errors.
  const fail = (err) => {
    endOnce(outcomeOf(err));
    error(err);
  };
  // `asked`: when the app's read asked for this chunk (the core tells the app's own time
  // from a network silence with it: src/core/request/delivery.rs).
  const measure = (value, asked) => cap.core.fenced(chunkIn, undefined, h, value, asked);
  const step = (c, { done, value }, asked) => {
    if (done) {
      endOnce(OK);
      close();
      // A pending BYOB read must be answered after close (Streams §4.7.4).
      if (c.byobRequest) c.byobRequest.respond(0);
      return undefined;
    }
    // Byte streams reject empty chunks; the native body never yields one, but a source that
    // did must not stall the app: read on.
    if (!value.byteLength) return pull(c, asked);
    // Measure first: a byte stream's enqueue() transfers (detaches) the chunk's buffer.
    measure(value, asked);
    if (open) c.enqueue(value);
    return undefined;
  };
  const pull = (c, asked = perf.now()) => {
    disturbed = true;
    pulls++;
    return reader.read().then(
      (r) => {
        pulls--;
        return step(c, r, asked);
      },
      (err) => {
        pulls--;
        fail(err);
      },
    );
  };
  // One fast read: `r` is the original reader's result object, handed on as it is.
  const fast = (r, asked) => {
    fastReads--;
    if (r.done) {
      endOnce(OK);
      close();
    } else if (!r.value.byteLength) {
      fastReads++;
      return reader.read().then((r2) => fast(r2, asked), failed);
    } else {
      measure(r.value, asked);
    }
    if (orphans) {
      // The app released this reader while the read was under way: natively that read fails
      // and its chunk stays in the stream for the next reader.
      orphans--;
      if (!r.done && open) ctl.enqueue(r.value);
      throw new TypeError('the reader was released');
    }
    return r;
  };
  const failed = (err) => {
    fastReads--;
    if (orphans) orphans--;
    fail(err);
    throw err;
  };
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
      start(c) {
        ctl = c;
      },
      pull,
      cancel(reason) {
        open = false;
        endOnce(ABORTED);
        return reader.cancel(reason);
      },
    }),
    /** Gives default readers of `body` the fast path (own properties; the prototypes' stay). */
    hookReaders(body) {
      const getReader = body.getReader;
      define(body, 'getReader', function getReader_(options) {
        const r = getReader.call(this, options); // throws as natively (locked, a bad mode)
        // A mode that did not throw is 'byob': such readers stay on the stream's own path.
        if (this !== body || (options != null && options.mode !== undefined)) return r;
        const nativeRead = r.read;
        const release = r.releaseLock;
        let released = false;
        define(r, 'read', function read() {
          // The stream's own path: a released reader, the first read, a stream we ended, a
          // chunk queued or on its way back (orphans), a pull under way, or another `this`.
          if (this !== r || released || !disturbed || !open || pulls || orphans || ctl.desiredSize !== 0) return nativeRead.call(this);
          const asked = perf.now();
          fastReads++;
          return reader.read().then((r2) => fast(r2, asked), failed);
        });
        define(r, 'releaseLock', function releaseLock() {
          release.call(this); // throws as natively
          if (this === r) {
            released = true;
            orphans = fastReads;
          }
        });
        return r;
      });
    },
  };
}

/** A method as the prototypes have them: non-enumerable, writable, configurable. */
function define(obj, name, value) {
  Object.defineProperty(obj, name, { value, writable: true, configurable: true });
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
