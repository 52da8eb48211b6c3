// The measured response's body: a pass-through between the original body's reader and the
// stream the app reads, which hands every chunk to a `Sink` as it passes and says how the body
// ended. It knows nothing of the core: the measuring wrapper (fetch.js) gives it a sink that
// stamps each chunk into the core, and the early tap (tap.js) one that keeps the chunks until
// the core is in (issue 27). Either way the app's stream behaves as the native body does:
// - the body is re-streamed by pulling the original body's reader on demand — not clone()/
//   tee() + drain — so a reader's cancel() reaches the network and backpressure holds when the
//   app reads slowly; no timer, no read-ahead: a chunk reaches the app when the app asks and
//   the network has it;
// - everything that can throw is built first and the original body is locked last, so a
//   failure leaves the response untouched (the caller hands it on as it came).

import { OK, ABORTED, ERROR } from '../codes.js';

/**
 * Where the chunks go. Called from stream callbacks: a sink never throws (the core's calls are
 * fenced; the tap only pushes to arrays).
 * @typedef {object} Sink
 * @property {(value: Uint8Array, asked: number, given: boolean) => void} chunk  a chunk on its
 *   way to the app; `asked`: when the app's read asked for it; `given`: the app gets this very
 *   object (false: a byte stream's enqueue() detaches its buffer right after this call)
 * @property {(outcome: number) => void} end  codes.js OK, ABORTED or ERROR; called once
 */

/** The error a fetch/stream failed with → ABORTED or ERROR. */
export function outcomeOf(err) {
  // Aborts surface as DOMException "AbortError" (or the signal's custom reason, which is
  // not an Error at all); network failures as TypeError, an Error.
  if (err && err.name === 'AbortError') return ABORTED;
  return err instanceof Error || err instanceof DOMException ? ERROR : ABORTED;
}

/**
 * Whether this engine implements readable byte streams (Streams §4.7). WebKit before Safari
 * 26.4 throws "ReadableByteStreamController is not implemented" at construction. A BYOB reader
 * is requested too, since that is what a byte stream is for. Asked once per page: the first
 * byte stream a page makes costs ~3 ms of the main thread in Chromium (measured here), so
 * loadCore asks in an idle period (js/core.js), before a response needs the answer.
 */
export function byteStreamsWork() {
  if (byteStreams === undefined) {
    try {
      new ReadableStream({ type: 'bytes' }).getReader({ mode: 'byob' }).releaseLock();
      byteStreams = true;
    } catch {
      byteStreams = false;
    }
  }
  return byteStreams;
}
let byteStreams;

/**
 * `res` with its body passing through `sink`. Fail-open by construction: everything that can
 * throw (the replacement stream, the Response, its mirrored getters) is built first, and the
 * original body is locked last, when nothing else can fail. A throw before that leaves `res`
 * untouched and the caller hands it to the app as it came.
 * @param {Response} res  a response with a body
 * @param {Sink} sink
 * @returns {Response}
 */
export function passThrough(res, sink) {
  const bytes = byteStreamsWork();
  const p = pump(sink);
  const body = new ReadableStream(p.source(bytes), { highWaterMark: 0 });
  const out = new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  mirror(out, res);
  p.hookReaders(body);
  p.attach(res.body.getReader()); // the one step that touches the app's objects: last
  return out;
}

/**
 * The pass-through between the original body's reader and the stream the app reads. Two ways
 * through, the same bytes to the app and the same chunks to the sink:
 * - the stream's own source (`source`): pulls the original body only when the app reads
 *   (highWaterMark 0: no read-ahead, so backpressure holds for a slow reader), hands each
 *   chunk to the sink, and cancel() goes straight to the network. `source(true)` is an
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
 * @param {Sink} sink
 */
function pump(sink) {
  perf = performance;
  let reader = null;
  let ctl = null; // the app-facing stream's controller
  let ended = false;
  let open = true; // the app-facing stream is readable (we have not closed or errored it)
  let pulls = 0; // pulls under way
  let disturbed = false; // the stream was read once (its own path)
  let fastReads = 0; // fast reads under way
  let orphans = 0; // of those, the ones whose reader was released: their chunk goes back
  let given = true; // the stream path hands the app the chunk itself (false: a byte stream)
  const endOnce = (outcome) => {
    if (!ended) {
      ended = true;
      sink.end(outcome);
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
    // To the sink first: a byte stream's enqueue() transfers (detaches) the chunk's buffer.
    sink.chunk(value, asked, given);
    if (open) c.enqueue(value);
    return undefined;
  };
  // `asked`: when the app's read asked for this chunk (the core tells the app's own time from
  // a network silence with it: src/core/request/delivery.rs).
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
      sink.chunk(r.value, asked, true);
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
    source(bytes) {
      given = !bytes;
      return {
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
      };
    },
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
/** The Performance object, read once per pump: each `performance` is a Window getter call. */
let perf;

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
