// The instrumented fetch, once the core is in: it begins each request's record, adds the
// traceparent the core decides on, reads the response's headers into the core and passes the
// body through body.js with a sink that stamps each chunk into the core. It also measures the
// requests the early tap followed before the core was in (`adoptTap`). It stamps
// performance.now() and moves bytes; every decision and every metric lives in the wasm core
// (src/core). The rules that keep it invisible to the app:
// - the native fetch is called exactly once, with the app's own arguments unless a
//   traceparent is added (then with an equivalent Request, which is what fetch() builds
//   internally anyway: Fetch §5.6 step 2);
// - every call into the core is fenced (core.js): a failure disables measurement and the
//   app's request, response and stream carry on untouched;
// - the response goes to the app the moment it comes, and each chunk the moment the app reads
//   it (body.js): nothing waits for the core, a chunk or a timer.

import { begun, end, forget } from './requests.js';
import { OK, UNSEEN } from '../codes.js';
import { SKIP, ALWAYS } from './match.js';
import { passThrough, outcomeOf } from './body.js';

/**
 * Makes the wrapper.
 * @param {import('./requests.js').Capture} cap
 * @param {typeof fetch} nativeFetch
 * @returns {typeof fetch}
 */
export function makeFetch(cap, nativeFetch) {
  return function fetch(input, init) {
    const m = cap.core.fenced((core) => {
      const [url, method] = target(input, init, cap.base());
      return begin(cap, core, url, method, performance.now(), null, input, init);
    }, null);
    if (!m) return nativeFetch.call(globalThis, input, init);
    return follow(cap, m, nativeFetch.apply(globalThis, m.args || [input, init]));
  };
}

/**
 * The absolute URL and the method of a fetch made with these arguments (what the native fetch
 * will request). Throws for arguments the native fetch rejects: the caller's fence hands them on.
 * @returns {[string, string]}
 */
export function target(input, init, base) {
  const isRequest = typeof Request === 'function' && input instanceof Request;
  const url = new URL(isRequest ? input.url : String(input), base).href;
  return [url, String((init && init.method) || (isRequest ? input.method : 'GET'))];
}

/** The `traceparent` a request made with these arguments carried, or ''. */
export function sentTraceparent(input, init) {
  try {
    // init.headers, when given, replaces a Request's headers (Fetch §5.4 Request constructor).
    const headers = init && init.headers !== undefined ? new Headers(init.headers) : input instanceof Request ? input.headers : null;
    return (headers && headers.get('traceparent')) || '';
  } catch {
    return '';
  }
}

/**
 * Begins the record of a request to `url` made at `t` (inside a fenced call): { h, any
 * (measure whatever the response), args (the arguments with our traceparent) }, or null when
 * not measured. `sentTp`: the traceparent an already sent request carried ('' for none), else
 * null (ours may be added to `input`, `init`).
 */
function begin(cap, core, url, method, t, sentTp, input, init) {
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
}

/** The response of begun request `m`, measured; a failure ends its record and goes on. */
function follow(cap, m, sent) {
  return sent.then(
    (res) => onResponse(cap, m, res, performance.now()),
    (err) => {
      end(cap, m.h, outcomeOf(err));
      throw err;
    },
  );
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

/**
 * The headers of begun request `h` came at `t`: whether the core measures it (a stream, or a
 * `match`ed request). Inside a fenced call; the record of one it does not measure is settled.
 */
function respond(cap, core, h, any, res, t) {
  // Opaque responses expose nothing (no status, headers or body).
  if (res.type === 'opaque' || res.type === 'opaqueredirect') {
    forget(cap, h);
    return false;
  }
  if (!core.response(h, t, res.status, headerLines(res.headers), any)) {
    cap.settled(h, true); // not measured: the core forgot it
    return false;
  }
  cap.confirmed(h); // measured: its answer element may be bound now
  return true;
}

/**
 * A response's headers as the core reads them (src/core/request/headers.rs): one `name:value`
 * line each, as the `Headers` iterator gives them — names lower-cased, each once with its values
 * combined (Fetch §"sort and combine"), only what CORS exposes. One string crosses into the core
 * rather than one call per header it looks for.
 */
function headerLines(headers) {
  let s = '';
  for (const [k, v] of headers) s += k + ':' + v + '\n';
  return s;
}

function onResponse(cap, { h, any, args }, res, t) {
  if (args) {
    try {
      held.set(res, args);
      if (res.body) held.set(res.body, args);
    } catch {
      /* not an object: nothing to hold */
    }
  }
  // A throw in here: nothing of the app's was touched (see body.js passThrough), and the
  // response goes through as it came (`otherwise`).
  return cap.core.fenced((core) => {
    if (!respond(cap, core, h, any, res, t)) return res;
    if (!res.body) {
      end(cap, h, OK);
      return res;
    }
    return passThrough(res, liveSink(cap, h));
  }, res);
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
 * The sink of a measured body (body.js): each chunk stamped into the core as it passes, the
 * end into the core once.
 * @returns {import('./body.js').Sink}
 */
function liveSink(cap, h) {
  perf = performance;
  return {
    chunk: (value, asked) => cap.core.fenced(chunkIn, undefined, h, value, asked),
    end: (outcome) => end(cap, h, outcome),
  };
}

/**
 * Measures a request the early tap followed before the core was in (tap.js), from what it
 * recorded, with the original times: begun when the app called fetch, with the traceparent it
 * carried (the app's own, adopted, or none — ours was not added: the core decides that), its
 * headers when they came, its chunks as they passed to the app. Then the live stream is
 * measured as any other: the tap hands what still comes on to the same sink a measured body
 * has. Called once, when the core is in (index.js setup).
 * @param {import('./requests.js').Capture} cap
 * @param {import('./tap.js').Tap} tap
 */
export function adoptTap(cap, tap) {
  const ok = cap.core.fenced((core) => {
    const m = begin(cap, core, tap.url, tap.method, tap.t, tap.tp, null, null);
    if (!m) return false;
    const { h, any } = m;
    if (tap.failed) {
      end(cap, h, tap.failed[0], tap.failed[1]);
      return true;
    }
    if (!tap.res) {
      // No response yet: it is measured when it comes, as any other.
      tap.adopted = { response: (res, t) => onResponse(cap, m, res, t), failed: (outcome, t) => end(cap, h, outcome, t) };
      return true;
    }
    if (!respond(cap, core, h, any, tap.res, tap.headersAt)) return false;
    if (!tap.res.body) {
      end(cap, h, OK, tap.headersAt);
      return true;
    }
    // The chunks it kept, as they came; then the chunk that did not fit, or the end.
    const kept = tap.kept;
    for (let i = 0; i < kept.length; i += 4) {
      // A kept reference the app detached since (a transfer): seen up to here.
      if (kept[i + 2].byteLength !== kept[i + 3]) return unseen(cap, tap, h, kept[i]);
      core.chunk(h, kept[i], kept[i + 2], kept[i + 1]);
    }
    if (tap.over >= 0) return unseen(cap, tap, h, tap.over);
    if (tap.ended) end(cap, h, tap.ended[0], tap.ended[1]);
    else tap.live(liveSink(cap, h));
    return true;
  }, false);
  if (!ok) tap.live(null);
}

/** The tap stopped keeping `h`'s chunks at `t`: its record ends there, saying so. */
function unseen(cap, tap, h, t) {
  tap.live(null);
  end(cap, h, UNSEEN, t);
  return true;
}
