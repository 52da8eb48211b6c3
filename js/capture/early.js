// Requests the app makes before the core is in (init() resolves at once; the wasm takes tens of
// ms on a fresh load, seconds on a slow network, or never comes). `rum.fetch`, and with
// patchGlobals window.fetch, is this wrapper from the start. Such a request goes out at once
// exactly as the app made it — without our traceparent, since whether to send one is the core's
// decision (its record says traceSource "none", or "app" for the app's own) — and its response
// reaches the app the moment the network delivers it: no timer and no wait for the core decides
// when the app gets its data (issue 27). Meanwhile a tap (tap.js) records what the core needs —
// the call's time, the response and when it came, each chunk as it passes to the app (body.js) —
// and once the core is in, the request is measured from that history and then live (fetch.js
// adoptTap), its record the same as if the core had been there all along. If the core fails to
// load, the taps let go and the responses carry on untouched. Once the core is in, every call
// goes straight to the measuring wrapper.

import { Tap, takeSlot, giveSlot } from './tap.js';
import { passThrough, outcomeOf } from './body.js';
import { target, sentTraceparent } from './fetch.js';
import { SKIP } from './match.js';
import { OK } from '../codes.js';

/**
 * What is done once the core is in (or failed), in the order the app did it: the requests
 * made before, and rum.observe() / rum.mark() calls (index.js). Called with what measures a
 * request the tap followed (fetch.js adoptTap), or null when the core failed.
 * @typedef {(adopt: ((tap: Tap) => void) | null) => void} Deferred
 */

/**
 * @param {typeof fetch} nativeFetch
 * @param {(url: string, method: string) => number} match  capture/match.js
 * @param {() => string} base  what relative URLs resolve against
 * @param {(f: Deferred) => void} defer  queues `f` for when the core is in
 * @returns {{ fetch: typeof fetch, pending: () => number, ready: (wrapped: typeof fetch) => void }}
 *   `ready`: from now on calls go to `wrapped` (the measuring wrapper, or the native fetch);
 *   `pending`: early requests still running (rum.mark() made before the core applies to one)
 */
export function earlyFetch(nativeFetch, match, base, defer) {
  let later = null; // after ready: the wrapper, or the native fetch
  const open = new Set(); // taps not yet adopted
  return {
    fetch: function fetch(input, init) {
      if (later) return later.call(globalThis, input, init);
      const t = performance.now();
      // Everything that can fail first, before the app's request is made: a problem here
      // leaves it unmeasured, never changed.
      let tap = null;
      try {
        const [url, method] = target(input, init, base());
        if (match(url, method) !== SKIP && takeSlot()) tap = new Tap(url, method, t, sentTraceparent(input, init));
      } catch {
        tap = null; // arguments the native fetch will reject as it does without us
      }
      const sent = nativeFetch.call(globalThis, input, init);
      if (!tap) return sent;
      open.add(tap);
      defer((adopt) => {
        open.delete(tap);
        giveSlot();
        if (adopt) adopt(tap);
        else tap.live(null);
      });
      return sent.then(
        (res) => {
          const at = performance.now();
          // The core came first: measured as any other response from here.
          if (tap.adopted) return tap.adopted.response(res, at);
          if (tap.to) return res; // let go of (the core failed)
          tap.res = res;
          tap.headersAt = at;
          if (!res.body || res.type === 'opaque' || res.type === 'opaqueredirect') {
            tap.ended = [OK, at];
            return res;
          }
          try {
            return passThrough(res, tap);
          } catch {
            tap.live(null); // nothing of the app's was touched: it gets `res` as it came
            return res;
          }
        },
        (err) => {
          const outcome = outcomeOf(err);
          const at = performance.now();
          if (tap.adopted) tap.adopted.failed(outcome, at);
          else tap.failed = [outcome, at];
          throw err;
        },
      );
    },
    pending: () => [...open].filter((tap) => !tap.failed && !tap.ended).length,
    ready(wrapped) {
      later = wrapped;
    },
  };
}
