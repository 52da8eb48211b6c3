// What the two request wrappers (fetch.js, eventsource.js) share: the `Capture` init() makes
// them with, and the ways a request's record ends. Both only stamp performance.now() and move
// bytes or event data into the core, which decides and computes everything.

import { FORGET } from '../codes.js';

/**
 * What a request wrapper is made with (one object per init()).
 * @typedef {object} Capture
 * @property {import('../core.js').Core} core  every call into the core goes through
 *   `core.fenced`; when it answers `otherwise`, the wrapper hands the app's objects on untouched
 * @property {() => string} base  the URL relative request URLs resolve against (the page's)
 * @property {(url: string, method: string) => number} match  SKIP, IF_STREAM or ALWAYS
 *   (capture/match.js)
 * @property {() => Uint8Array} random  32 random bytes: the request's trace, span and record ids
 * @property {(t: number) => number} interaction  the time of the user's action that caused a
 *   request starting at `t`, or -1 (lifecycle.js)
 * @property {(url: string) => string} route  the app's route template for `url`
 *   (`urlTemplates`), or '' (the core's own id rule applies)
 * @property {(h: number) => void} began  the core began `h` (paint notes the observed
 *   container's text so far)
 * @property {(h: number) => void} confirmed  `h`'s response is measured (a stream, or
 *   `match`ed): its answer element may be bound now
 * @property {(h: number, done: boolean) => void} settled  the core ended `h`; `done`: its
 *   record is finished (false: it waits for the frame that paints the end of the answer).
 *   Paint follows, and finished records are delivered.
 */

/**
 * The core began `h` for `url` (inside the wrapper's fenced call): the app's route template
 * for it goes to the core, and paint follows.
 * @param {Capture} cap
 * @param {import('../core.js').WasmCore} core
 * @param {number} h
 * @param {string} url
 */
export function begun(cap, core, h, url) {
  const route = cap.route(url);
  if (route) core.set_route(h, route);
  cap.began(h);
}

/**
 * `h` ended at `t` (default: now): codes.js OK, ABORTED, ERROR or UNSEEN. Called from promise
 * and stream callbacks: nothing escapes.
 * @param {Capture} cap
 * @param {number} h
 * @param {number} outcome
 * @param {number} [t]
 */
export function end(cap, h, outcome, t = performance.now()) {
  cap.core.fenced((core) => cap.settled(h, core.end(h, t, outcome)));
}

/**
 * `h` turned out not to be measurable (an opaque response, an EventSource the browser refused
 * to construct): no record.
 * @param {Capture} cap
 * @param {number} h
 */
export function forget(cap, h) {
  end(cap, h, FORGET);
}
