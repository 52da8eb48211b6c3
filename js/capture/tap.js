// The early tap (issue 27): what a request made before the core was in needs to be measured
// once the core is, kept in JS with the original times — and nothing held back from the app.
// The request goes out as the app made it, its response reaches the app the moment it comes,
// and each chunk the moment the app reads it (body.js); the tap is the body's sink meanwhile.
// It keeps facts and references, not copies: the response object (its headers are immutable),
// each chunk's arrival time, the time the app asked for it, and the chunk itself — the very
// object the app got wherever it can (a default reader's fast path, a default stream), and a
// copy only where a byte stream's enqueue() detaches the buffer it is handed.
//
// Bounded, whatever the core does (loading, slow, failed, never arriving): per request the
// first MAX_KEPT_BYTES and MAX_KEPT_CHUNKS; at most MAX_TAPS requests tapped at once (a
// request past that goes to the app untouched and unmeasured). Past a request's bound the tap
// keeps nothing more and remembers when it stopped: the record (made when the core comes) ends
// there, `partial`, with `unseen: ['end']` — never a wrong number. When the core is in,
// fetch.js `adoptTap` replays the kept history into the core and the tap hands what still
// comes on to the live sink; when the core fails, the tap lets go of everything.

/** Bytes kept per request (the chunks' byteLength). */
export const MAX_KEPT_BYTES = 256 * 1024;
/** Chunks kept per request. */
export const MAX_KEPT_CHUNKS = 4096;
/** Requests tapped at once (fetch and EventSource together). */
export const MAX_TAPS = 8;

let taps = 0;
/** A tap slot, or false when MAX_TAPS are taken (the request goes unmeasured). */
export const takeSlot = () => taps < MAX_TAPS && ++taps > 0;
/** Gives a slot back (its tap was adopted or let go). */
export const giveSlot = () => void (taps = Math.max(0, taps - 1));

/** A sink that drops everything: a tap let go of, or one whose core said "not measured". */
const NOWHERE = { chunk() {}, end() {} };

/**
 * One early fetch: its facts so far, and the body's sink (body.js `Sink`) until the core is in.
 * @implements {import('./body.js').Sink}
 */
export class Tap {
  /**
   * @param {string} url  absolute
   * @param {string} method
   * @param {number} t  when the app called fetch
   * @param {string} tp  the traceparent the request carried ('' for none)
   */
  constructor(url, method, t, tp) {
    this.url = url;
    this.method = method;
    this.t = t;
    this.tp = tp;
    /** @type {Response | null} the response as the network gave it */
    this.res = null;
    this.headersAt = 0;
    /** @type {[number, number] | null} [outcome, t]: the fetch failed */
    this.failed = null;
    /** @type {[number, number] | null} [outcome, t]: the body ended */
    this.ended = null;
    /** Kept chunks, four slots each: t, asked, the chunk, its byteLength then. */
    this.kept = [];
    this.keptBytes = 0;
    /** When the tap stopped keeping (the bound), or -1. */
    this.over = -1;
    /** @type {import('./body.js').Sink | null} where chunks go once adopted (NOWHERE: let go) */
    this.to = null;
    /** @type {{ response: (res: Response, t: number) => Response,
     *   failed: (outcome: number, t: number) => void } | null}
     * the measuring path, when the core came before the response (fetch.js adoptTap) */
    this.adopted = null;
  }

  chunk(value, asked, given) {
    if (this.to) return this.to.chunk(value, asked, given);
    const t = performance.now();
    const n = value.byteLength;
    if (this.over >= 0) return undefined;
    if (this.kept.length >= 4 * MAX_KEPT_CHUNKS || this.keptBytes + n > MAX_KEPT_BYTES) {
      this.over = t;
      return undefined;
    }
    this.keptBytes += n;
    this.kept.push(t, asked, given ? value : value.slice(), n);
    return undefined;
  }

  end(outcome) {
    if (this.to) return this.to.end(outcome);
    this.ended = [outcome, performance.now()];
    return undefined;
  }

  /** From now on chunks go to `sink` (null: nowhere); what was kept is let go. */
  live(sink) {
    this.to = sink || NOWHERE;
    this.kept = [];
    this.keptBytes = 0;
  }
}
