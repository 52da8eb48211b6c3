// Requests the app makes before the core is in (init() resolves at once; the wasm takes tens
// of ms on a fresh load) are measured too. `rum.fetch`, and with patchGlobals window.fetch,
// is this wrapper from the start: such a request goes out at once exactly as the app made it —
// without our traceparent, since whether to send one is the core's decision (its record says
// traceSource "none", or "app" for the app's own) — and its record begins at the time the app
// made it once the core is ready. Its response reaches the app when the core (and paint
// observation) are in, so that its first chunk and first paint are measured — but never more
// than HOLD_MS after it came: past that it goes to the app unmeasured (a network so slow that
// the wasm is still on its way a second later). If the core fails to load, it goes through
// untouched. Once the core is in, every call goes straight to the measuring wrapper.

/** The longest a response waits for the core before it goes to the app unmeasured. */
const HOLD_MS = 1000;

/**
 * What is done once the core is in (or failed), in the order the app did it: the requests
 * made before, and rum.observe() / rum.mark() calls (index.js). Called with what measures a
 * request sent before the core was in (fetch.js measureSent), or null when the core failed.
 * @typedef {(measure: ((input: any, init: any, t: number, sent: Promise<Response>) => Promise<Response>) | null) => void} Deferred
 */

/**
 * @param {typeof fetch} nativeFetch
 * @param {(f: Deferred) => void} defer  queues `f` for when the core is in
 * @returns {{ fetch: typeof fetch, pending: () => number, ready: (wrapped: typeof fetch) => void }}
 *   `ready`: from now on calls go to `wrapped` (the measuring wrapper, or the native fetch);
 *   `pending`: requests sent and not yet handed on
 */
export function earlyFetch(nativeFetch, defer) {
  let later = null; // after ready: the wrapper, or the native fetch
  let waiting = 0;
  return {
    fetch: function fetch(input, init) {
      if (later) return later.call(globalThis, input, init);
      const t = performance.now();
      const sent = nativeFetch.call(globalThis, input, init);
      waiting++;
      return new Promise((resolve) => {
        let done = false;
        let timer = 0;
        const go = (measure) => {
          if (done) return; // already handed on
          done = true;
          waiting--;
          clearTimeout(timer);
          let res = sent;
          try {
            if (measure) res = measure(input, init, t, sent);
          } catch {
            /* unmeasured, untouched */
          }
          resolve(res);
        };
        defer(go);
        // The response (or the failure) came: it waits HOLD_MS for the core at most.
        const giveUp = () => done || (timer = setTimeout(() => go(null), HOLD_MS));
        sent.then(giveUp, giveUp);
      });
    },
    pending: () => waiting,
    ready(wrapped) {
      later = wrapped;
    },
  };
}
