// What the person saw: which element shows which answer, and when frames painted it. This
// file stamps times and reads text lengths; the core (src/core/paint/, record/seen.rs) matches
// arrivals to paints and computes every metric — and decides which request is current
// (`current_answer`) and which it still holds (`observe` answers false for one it let go of):
// this file keeps no list of requests.
//
// Per frame that follows a text change in an observed element, when the screen showed it
// (issue 30: held against Chromium's compositor, the main thread's rendering is a vsync or
// more before the display; `bracket` below):
//   the text is read in the frame's rAF callback (the rendering update has begun: HTML "update
//     the rendering" runs rAF callbacks, then style, layout and paint), and no text that
//     arrives later is credited to this frame; the screen showed it no earlier;
//   the paint is reported at the next frame's time (its rAF timestamp: the vsync it was begun
//     for, which is when the compositor showed the frame before it), with an error bound
//     reaching from the read to two frames past the next frame's callback (raster running long);
// refined by the engine's own presentation time of that frame where it gives one (Long
// Animation Frame, Element Timing, interaction-contentful-paint `presentationTime`).
//
// Work per mutation batch: a flag; per changed frame: one `textContent.length` read (never
// innerText, which forces layout) and one rAF of the next frame (the browser produces that
// frame for us when nothing else asks for it). Watches are RAII-like: stop() disconnects the
// MutationObserver, cancels the frame and clears the timer.

import { PAINT_NONE, PAINT_OBSERVED, PAINT_AUTO } from '../codes.js';

/** After the stream ends, how long the record waits for the frame that paints its end. */
const FINISH_AFTER_END_MS = 3000;
/** The last frames measured (≤ 8, any watch of the page), for the engine's own paint times. */
const recent = [];
/** A 60 Hz frame: the unit of a paint bracket's reach (see above). */
const FRAME_MS = 1000 / 60;

/**
 * When the screen showed a frame whose rAF callback ran at `lo` (its text read then), given the
 * next frame's rAF timestamp `ts` and callback time `next`: `{ t, err }`, the paint time and its
 * error bound (the truth within [t − err, t + err]). Measured against Chromium's compositor
 * (paint-compositor.spec.js, 45 answers, a third of them with the machine's 2 cores saturated
 * three times over):
 * - the next frame's timestamp `ts` is the display time of this one in most frames (to 0.1 ms),
 *   one frame before it when raster runs long (rarely two): it is `t`;
 * - a page busy in its own tasks runs our callback late in its frame; the next frame's
 *   timestamp then precedes `lo` (the display came 5–25 ms after `lo`): `t` is never earlier
 *   than half a frame after `lo`, nor later than `next`;
 * - the display came up to two frames past `next` (raster of ~4 400 chars of CJK on a starved
 *   machine): the bound reaches `next` + 2 frames, and back to `lo`. Capped at three frames
 *   after `lo` (until December 2026) it failed there: the display came 47–77 ms after `lo`.
 * `ts` missing (a frame not begun by a rAF of ours): `next` stands for it.
 */
function bracket(lo, ts, next) {
  const t = Math.max(lo + FRAME_MS / 2, Math.min(Number.isFinite(ts) ? ts : next, next));
  const hi = Math.max(next, t) + 2 * FRAME_MS;
  return { t, err: Math.max(t - lo, hi - t) };
}

// Auto mode (no element named): while a measured stream has no answer element, one
// MutationObserver on the document (and on open shadow roots) collects the nodes that changed —
// nothing else per mutation — and the next frame's rAF callback asks the core which of them
// shows the answer (`Core::claim`: its start, then its growth, in the same normalised text the
// paint probes use). Mutation callbacks run before the frame that paints the change, so the
// element found is measured in that same frame: its first paint is bracketed as it would be
// with rum.observe(el). The document observer is disconnected as soon as no stream waits.
//
// An answer's first frames can show no letters to find it by: a literal `#`, `-` or backtick
// before the renderer knows what they start, an empty code box under its "JavaScript" label
// (issue 29). So each frame while a stream waits is remembered (its rAF callback's time) with
// the elements that changed in it and their text length, and the frame after it is looked at
// too (its rAF timestamp and callback time: what a Watch closes a frame with);
// when an element is found, the earlier frames that changed it (or something inside it) are
// reported as its paints first, each timed as a Watch times its frames (`bracket`): its first
// paint is the frame rum.observe(el) would have seen.
// The core keeps out frames before the answer's first arrival (a "typing…" placeholder).
/** Distinct changed nodes remembered per frame (more are dropped until the next frame). */
const AUTO_MAX_NODES = 512;
/** Levels climbed from a changed node to the answer's own container. */
const AUTO_MAX_CLIMB = 8;
/** A container may hold this much text before the answer (a "Assistant:" label) and still be
 * the answer's: more is a chat log's earlier messages. */
const AUTO_MAX_LABEL = 40;
/** Frames remembered while streams wait for their element (a first paint before letters). */
const AUTO_FRAMES = 32;
/** Changed elements remembered per frame. */
const AUTO_FRAME_ELS = 32;
/** A stream that ended unfound: frames with nothing answer-like changing before giving up… */
const AUTO_QUIET_FRAMES = 3;
/** …or this long (hidden pages run no frames). */
const AUTO_GIVE_UP_MS = 1000;

function resolve(target) {
  if (!target) return null;
  if (typeof target === 'string') {
    try {
      return globalThis.document ? document.querySelector(target) : null;
    } catch {
      return null;
    }
  }
  return typeof Node === 'function' && target instanceof Node ? target : null;
}

/** `el`'s ancestors (AUTO_MAX_CLIMB of them): where it was, should a re-render replace it. */
function chain(el) {
  const up = [];
  for (let a = el.parentNode; a && a.nodeType === 1 && up.length < AUTO_MAX_CLIMB; a = a.parentNode) up.push(a);
  return up;
}

/** Chars of the element's text sent with each paint as a probe (src/core/stream/tail.rs). */
const PROBE_CHARS = 48;

/**
 * The last `n` UTF-16 units of `el`'s text, walking text nodes backwards from the end: cost
 * O(nodes visited), not O(text) like textContent.
 */
function tailText(el, n) {
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  let node = walker.lastChild();
  // lastChild() of the root descends through elements (skipped by SHOW_TEXT) to the last text.
  let out = '';
  while (node && out.length < n) {
    out = node.data.slice(-(n - out.length)) + out;
    node = walker.previousNode();
  }
  return out;
}

/**
 * What a Watch needs from the paint state.
 * @typedef {object} PaintState
 * @property {import('../core.js').Core} core
 * @property {(err: unknown) => void} fail  a browser API of paint observation failed: paint
 *   metrics off (requests stay measured)
 * @property {(w: Watch) => void} done  the record completed: stop watching, deliver it
 * @property {(w: Watch) => void} drop  no more paints will come: finish the record if it ended
 * @property {(w: Watch, now: number) => void} lost  the element left the page (in the frame
 *   whose rAF callback ran at `now`): re-bind auto mode's answer to its replacement, or drop
 */

class Watch {
  /**
   * @param {PaintState} p
   * @param {number} h  the request's handle
   * @param {Node} el   the observed element
   * @param {boolean} explicit  from rum.observe (else the `observe` container)
   * @param {number} base  text length that is not this answer's (a container's earlier
   *   messages, as of the request's start)
   * @param {boolean} [now]  measure this frame (called from a rAF callback: auto mode)
   * @param {Element[] | null} [up]  auto mode: the element's ancestors, watched for the
   *   element's replacement (a library that re-creates the message node re-binds, `lost`)
   */
  constructor(p, h, el, explicit, base, now, up = null) {
    this.p = p;
    this.h = h;
    this.el = el;
    this.explicit = explicit;
    this.base = base;
    this.up = up;
    this.raf = 0;
    this.dirty = true; // the text changed since the last frame measured (first: measure it)
    this.open = null; // the frame measured last, waiting for the next frame to close its bracket
    this.timer = 0;
    this.live = true;
    this.mo = null;
    try {
      this.mo = new MutationObserver((records) => this.changed(records));
      this.mo.observe(el, { childList: true, characterData: true, subtree: true });
      // Its ancestors' own children only (no subtree: a sibling message's text is not ours):
      // a re-render that replaces the element, or a level above it, happens there, and the
      // element's own observer sees nothing of it.
      if (up) for (const a of up) this.mo.observe(a, { childList: true });
      if (typeof requestAnimationFrame !== 'function') throw new TypeError('no requestAnimationFrame');
    } catch (e) {
      this.stop(); // what was made so far; the caller reports the failure
      throw e;
    }
    if (now) this.frame();
    else this.next();
  }

  changed(records) {
    // A MutationObserver callback: nothing may throw into the page.
    try {
      // Per mutation batch only a flag (the pending frame): the text is read once per frame,
      // in its rAF callback. A write in an app's own rAF callback after ours is read in the
      // next frame (README limitations): no text is credited to a frame that read the element
      // before it came. A change beside an ancestor is only a question for that frame: is the
      // element still there?
      if (!this.up || records.some((r) => this.el.contains(r.target))) this.dirty = true;
      else if (this.el.isConnected) return;
      this.next();
    } catch (e) {
      this.p.fail(e);
    }
  }

  next() {
    if (!this.raf) this.raf = requestAnimationFrame((ts) => this.frame(ts));
  }

  /** A rAF callback (its timestamp `ts`; none when measuring at once): closes the bracket of
   * the frame measured before, and measures this one if the text changed. */
  frame(ts) {
    this.raf = 0;
    try {
      const now = performance.now();
      const c = this.open;
      this.open = null;
      // Gone from the page (a re-render replaced it): the frame measured before still closes
      // its bracket — it was shown — then `lost` re-binds the answer or lets it go.
      const gone = !this.el.isConnected;
      if (this.dirty && !gone) {
        this.dirty = false;
        // `hi` and `t` are set when the next frame closes its bracket.
        // What this frame will paint. Every mutated frame is reported, even when the length
        // did not change: a re-render after an invisible last token (a trailing newline under
        // markdown) is the frame that shows the final answer, and the core needs a paint after
        // the last arrival to know it. One O(text) read per frame, not per mutation: reading
        // per mutation made a 20 000-append answer quadratic (148 µs per append in
        // scripts/bench.js).
        const f = (this.open = { lo: now, shown: Math.max(0, this.el.textContent.length - this.base), probe: tailText(this.el, PROBE_CHARS) });
        // The last 8, for the engine's own paint times (makePaint).
        if (recent.push(f) > 8) recent.shift();
        this.next(); // its bracket closes with the next frame
      }
      if (c && this.close(c, ts, now)) return;
      if (gone) this.p.lost(this, now);
    } catch (e) {
      this.p.fail(e); // a rAF callback must not throw into the page
    }
  }

  /**
   * Reports frame `c`, closed by the frame with rAF timestamp `ts` whose callback ran at `now`;
   * true when that completed the record (or measurement is off): this watch is done.
   */
  close(c, ts, now) {
    // When the screen showed frame `c` (`bracket`); its text was read at `c.lo`, and the core
    // credits the frame only with what had arrived by then. The engine's own presentation
    // time of the frame refines it where given (`presented` in makePaint); a paint that
    // completed the record keeps its bracket.
    const p = this.p;
    if (!p.core.live()) {
      this.stop(); // measurement was disabled: nothing to report to
      return true;
    }
    const { t, err } = bracket(c.lo, ts, now);
    c.hi = now;
    c.t = t;
    if (!p.core.fenced((core) => core.paint(this.h, c.lo, t, c.shown, err, c.probe), false)) return false;
    p.done(this);
    return true;
  }

  /** The stream ended but its end is not painted yet: give the page a while to paint it. */
  ended() {
    if (!this.timer) this.timer = setTimeout(() => this.p.drop(this), FINISH_AFTER_END_MS);
  }

  stop() {
    if (!this.live) return;
    this.live = false;
    if (this.mo) this.mo.disconnect();
    if (this.raf) cancelAnimationFrame(this.raf);
    if (this.timer) clearTimeout(this.timer);
  }
}

/**
 * The paint hooks the request wrappers call (through their Capture) and rum.observe.
 * @param {import('../core.js').Core} core
 * @param {{ observe: Element | string | 'auto' | false | null, nativePaintTimes: boolean }} opts
 * @param {(key: string, message: string, err?: unknown) => void} warnOnce
 * @param {() => void} deliver  hands finished records on (deliver/records.js)
 * @param {string | null} own  the SDK's main bundle as LoAF names it (capture/paint-on-demand.js
 *   `ownUrl`, read there: this file is a chunk of its own, where the request wrappers are not)
 */
export function makePaint(core, opts, warnOnce, deliver, own) {
  const watches = new Map(); // handle → Watch
  const containers = new Map(); // handle → { el, base }: the `observe` container at its start
  let pending = null; // rum.observe(el) waiting for a measured request
  let perf = null;
  let stopped = false;
  const auto = opts.observe === 'auto';
  const waiting = new Map(); // handle → { ended, quiet, timer }: auto mode looks for its element
  let finder = null; // { mo, nodes, raf }: the document observer, while anything waits
  /**
   * Tells the core how `h`'s element is known (`src`; PAINT_NONE: looked for, and a harmless
   * "do you still hold `h`?"); false when the core let go of `h`.
   */
  const observed = (h, src) => core.fenced((c) => c.observe(h, src), false);

  /** @type {PaintState} */
  const p = {
    core,
    // A browser API of paint observation failed (missing or throwing): paint metrics end for
    // this page, with one warning; requests stay measured. (Core failures go through
    // `core.fenced`, which disables the SDK.)
    fail(e) {
      warnOnce('paint', 'paint metrics off: paint observation failed in this browser; requests are still measured', e);
      api.stop();
    },
    done(w) {
      w.stop();
      forget(w.h);
      if (watches.get(w.h) === w) watches.delete(w.h);
      if (!watches.size) unobservePerf();
      deliver();
    },
    drop(w) {
      // The core finishes an ended request's record now, and leaves a running one alone.
      core.fenced((c) => c.finish(w.h));
      p.done(w);
    },
    lost(w, now) {
      // An element the app named is the app's to name again (README); a container is the
      // app's option. An element auto mode found is the same answer in a new node when a
      // library re-creates its message per token or swaps it at the end (issue 29): the
      // replacement is looked for now under the nearest ancestor still on the page, else from
      // the changes to come, and observed on as the same record — paints already reported
      // stay, the core keeps each shown length once.
      if (w.explicit || !w.up || stopped) {
        p.drop(w);
        return;
      }
      w.stop();
      if (watches.get(w.h) === w) watches.delete(w.h);
      const at = w.up.find((a) => a.isConnected);
      const hit = at && successor(w.h, at);
      if (hit && rebind(w, hit.el, hit.base)) return;
      // Not there yet (a skeleton first, filled later): auto mode's search, from this frame.
      look(w.h, now);
      const s = waiting.get(w.h);
      if (s && w.timer) endWait(w.h, s);
      if (!watches.size) unobservePerf();
    },
  };

  function observePerf() {
    if (perf || typeof PerformanceObserver !== 'function') return;
    let types = [];
    try {
      types = PerformanceObserver.supportedEntryTypes || [];
    } catch {
      /* none */
    }
    perf = [];
    // Optional refinements (LoAF blame, native paint times): an engine without them, or whose
    // observer throws, just goes without (Firefox and WebKit have neither entry type).
    const listen = (type, fn) => {
      if (!types.includes(type)) return;
      try {
        const o = new PerformanceObserver((list) => core.fenced((c) => list.getEntries().forEach((e) => fn(c, e))));
        o.observe({ type });
        perf.push(o);
      } catch {
        /* not this one */
      }
    };
    const refine = opts.nativePaintTimes;
    // The engine's presentation time of a frame we measured (Paint Timing's PaintTimingMixin:
    // `paintTime`, the rendering update's paint step; `presentationTime`, when the compositor
    // presented it, null where not exposed). Our frame is the one whose rAF callback ran
    // before that paint step, the next frame's after it. Not `paintTime` itself: that is the
    // main thread's paint, a vsync or more before the screen showed it.
    const presented = (c, e) => {
      const pt = e.paintTime; // 0 where not exposed: no frame matches
      // The latest frame measured whose rAF callback came before that paint step, unless the
      // next frame's came before it too (the paint step of a frame we did not measure).
      // Entries come after the frame was presented, a frame or more after our report of it
      // (`hi`, `t`: reported; one not reported yet keeps its bracket).
      let f = null;
      for (const x of recent) if (x.lo <= pt) f = x;
      // Its resolution: coarsened to 4 ms where the page is not cross-origin isolated
      // (Chromium's coarsening of paint timestamps; its clock then ticks at 100 µs). Only an
      // engine with presentationTime gets here: it has crossOriginIsolated.
      if (refine && f && f.hi >= pt && e.presentationTime >= pt) c.native_paint(f.t, e.presentationTime, crossOriginIsolated ? 0 : 4);
    };
    // Long Animation Frames (W3C LoAF): blame for render stalls, and the frame's presentation.
    listen('long-animation-frame', (c, e) => {
      presented(c, e);
      let top = null;
      for (const s of e.scripts || []) if (!top || s.duration > top.duration) top = s;
      if (!top) return;
      let invoker = String(top.invoker || '');
      let source = String(top.sourceURL || '');
      // LoAF names a task's entry point. When the app reads a measured body, that is the
      // SDK's re-stream callback (fetch.js), and the app's chunk handler runs inside it as a
      // microtask; the SDK's own share is microseconds. Say what it was, not whose file.
      // Only for a stream read's continuation: bundled into an app, `own` is the app's own
      // bundle, whose other scripts keep their names.
      if (source && source.split(/[?#]/)[0] === own && /\.read\.then$/.test(invoker)) {
        invoker = 'stream-read';
        source = '';
      }
      c.long_frame(e.startTime, e.duration, invoker, source, top.duration);
    });
    // Paints that follow an interaction (Chromium's interaction-contentful-paint), and Element
    // Timing where the app marked its answer with `elementtiming` (the SDK sets no attribute:
    // the app would see it).
    listen('interaction-contentful-paint', presented);
    listen('element', presented);
  }

  function unobservePerf() {
    if (perf) perf.forEach((o) => o.disconnect());
    perf = null;
  }

  function watch(h, el, explicit, base, src = PAINT_OBSERVED, now = false) {
    const old = watches.get(h);
    if (old) old.stop();
    forget(h);
    // The browser side first (it can fail: an engine without MutationObserver or
    // requestAnimationFrame), then the core is told to expect paints.
    let w;
    try {
      w = new Watch(p, h, el, explicit, base, now, src === PAINT_AUTO ? chain(el) : null);
    } catch (e) {
      p.fail(e);
      return null;
    }
    if (!observed(h, src)) {
      w.stop();
      return null;
    }
    watches.set(h, w);
    observePerf();
    return w;
  }

  // ---- auto mode ----

  /** `h` no longer waits for auto mode; the document observer goes when nothing does. */
  function forget(h) {
    const s = waiting.get(h);
    if (s) clearTimeout(s.timer);
    waiting.delete(h);
    if (!waiting.size && finder) {
      finder.mo.disconnect();
      cancelAnimationFrame(finder.raf);
      finder = null;
    }
  }

  /** Auto mode gives up on `h` (its stream ended and nothing showed it): record without paints. */
  function giveUp(h) {
    forget(h);
    core.fenced((c) => c.finish(h));
    deliver();
  }

  /** `h`'s stream ended unfound: a buffered UI shows the answer now. Look on until frames go
   * by with nothing answer-like changing. */
  function endWait(h, s) {
    if (s.ended) return;
    s.ended = true;
    s.timer = setTimeout(() => giveUp(h), AUTO_GIVE_UP_MS);
    if (finder) tick(finder);
  }

  /** Auto mode looks for `h`'s element from now (or, re-binding, from the frame at `since`). */
  function look(h, since) {
    if (!observed(h, PAINT_NONE)) return;
    waiting.set(h, { ended: false, quiet: 0, timer: 0, since: since ?? performance.now(), again: since !== undefined });
    try {
      if (!finder) arm();
    } catch (e) {
      p.fail(e); // no MutationObserver / requestAnimationFrame: paint metrics off
    }
  }

  function arm() {
    // frames: [{ lo, els: [{ el, len, up }] }], oldest first (lo: its rAF callback's time; len:
    // the element's text length; up: its ancestors then)
    const f = { mo: null, nodes: new Set(), raf: 0, frames: [] };
    f.mo = new MutationObserver((records) => {
      // Per mutation only this (an observer callback must not throw into the page).
      try {
        for (const r of records) {
          // The elements a re-render inserted, rather than their parent: a new message node is
          // found (and its frames placed) by that node, not by the chat log around it — whose
          // earlier messages a short conversation's would pass for a label.
          let added = false;
          for (const n of r.addedNodes) {
            if (n.nodeType === 1) {
              added = true;
              if (f.nodes.size < AUTO_MAX_NODES) f.nodes.add(n);
            }
            if (n.shadowRoot) root(f, n.shadowRoot);
          }
          // A removal alone shows nothing new.
          const removal = r.type === 'childList' && !r.addedNodes.length;
          if (!added && !removal && f.nodes.size < AUTO_MAX_NODES) f.nodes.add(r.target);
        }
        tick(f);
      } catch (e) {
        p.fail(e);
      }
    });
    finder = f;
    // The document, and the open shadow roots already on it (one walk per arming; roots
    // attached later are seen when their host is inserted). Closed ones cannot be seen.
    const walk = (r) => {
      root(f, r);
      for (const el of r.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
    };
    walk(document);
  }

  function root(f, r) {
    f.mo.observe(r, { childList: true, characterData: true, subtree: true });
  }

  function tick(f) {
    if (!f.raf) f.raf = requestAnimationFrame((ts) => found(f, ts));
  }

  /** A frame after changes (or after an unfound stream ended): which changed node shows which
   * waiting answer? Newest request first. */
  function found(f, ts) {
    f.raf = 0;
    if (finder !== f) return;
    try {
      const frame = { lo: performance.now(), ts, els: [], next: null };
      // The frame after a remembered one: what times that one (`backdate`).
      const last = f.frames[f.frames.length - 1];
      if (last && !last.next) last.next = frame;
      const nodes = [...f.nodes];
      f.nodes.clear();
      const seen = new Set();
      const alone = new Map(); // watch → its element shows its answer alone (this frame)
      let hs = [...waiting.keys()].reverse();
      let near = false; // anything answer-like changed
      for (const n of nodes) {
        const el = n.nodeType === 1 ? n : n.parentNode;
        if (!hs.length || !el || el.nodeType !== 1 || seen.has(el) || !el.isConnected) continue;
        seen.add(el);
        const owner = [...watches.values()].find((w) => w.el.contains(el));
        if (owner) {
          if (!owner.up) continue;
          if (!alone.has(owner)) {
            const r = ask(owner.h, owner.el.textContent, true);
            alone.set(owner, r >= 0 && r >> 1 === owner.base);
          }
          if (alone.get(owner) || !split(owner, el, hs, f)) {
            // Remembered all the same: a frame showing a waiting answer's first markdown (a
            // bare "#") inside an element found too wide, before the words that split it.
            remember(frame, el, tailText(el, PROBE_CHARS));
            continue;
          }
        }
        const probe = tailText(el, PROBE_CHARS);
        let bound = false;
        for (const h of hs) {
          const hit = claim(h, el, probe, f);
          if (hit === 0) continue;
          near = true;
          if (!hit) continue;
          // Two answers at once that this element could show (side-by-side panes answering
          // alike so far): neither takes it yet. Their frames are remembered; the first frame
          // that tells them apart binds each to its own, its earlier frames backdated.
          if (hs.some((x) => x !== h && ask(x, hit.el.textContent, true) !== -1)) break;
          const s = waiting.get(h);
          if (watch(h, hit.el, false, hit.base, PAINT_AUTO, true)) {
            // Re-binding: the frames before were the old element's.
            backdate(f, h, hit.el, hit.base, frame, s.again ? s.since : -Infinity);
            hs = hs.filter((x) => x !== h);
            bound = true;
            break;
          }
        }
        if (!bound) remember(frame, el, probe);
      }
      if (frame.els.length) {
        f.frames.push(frame);
        if (f.frames.length > AUTO_FRAMES) f.frames.shift();
        tick(f); // the next frame times this one
      }
      for (const [h, s] of waiting) {
        if (!s.ended) continue;
        s.quiet = near ? 0 : s.quiet + 1;
        if (s.quiet >= AUTO_QUIET_FRAMES) giveUp(h);
      }
      if (finder === f && [...waiting.values()].some((s) => s.ended)) tick(f);
    } catch (e) {
      p.fail(e);
    }
  }

  /** `el` changed in `frame` (its text ends with `probe`): kept for a later find's backdate.
   * Its whole length (once per changed element per frame, only while a stream waits): a stream
   * found frames late — two panes alike until they differ — reports what its earlier frames
   * showed, not the first few dozen chars of it. */
  function remember(frame, el, probe) {
    if (frame.els.length < AUTO_FRAME_ELS) frame.els.push({ el, len: probe.length < PROBE_CHARS ? probe.length : el.textContent.length, probe, up: chain(el), prev: el.previousElementSibling });
  }

  /**
   * Where remembered change `x` is now: its element, or the node that took its place — same
   * tag and class, where it was (after the same sibling, in the same parent: React re-creating a
   * bubble keyed by its content) — else null. Not its parent: a bubble re-created per token
   * would place the answer's earlier frames in the whole chat log.
   */
  function placeOf(x) {
    if (x.el.isConnected) return x.el;
    const par = x.up[0];
    if (!par || !par.isConnected) return null;
    const r = x.prev ? (x.prev.parentNode === par ? x.prev.nextElementSibling : null) : par.firstElementChild;
    return r && r.tagName === x.el.tagName && r.getAttribute('class') === x.el.getAttribute('class') ? r : null;
  }

  /** Core's claim of `text` for `h` (Timeline::claim): −1 no, −2 not yet, else 2·base + label. */
  const ask = (h, text, whole) => core.fenced((c) => c.claim(h, text, whole), -1);

  /**
   * Whether auto mode may not take `a` for `h` (whose answer starts `base` chars into its
   * text): it holds another answer's element, or the text before this answer there is another
   * running answer (two panes in one container, the other one's text short enough to pass
   * for a label).
   */
  function shared(h, a, base) {
    for (const w of watches.values()) if (w.h !== h && a.contains(w.el)) return true;
    if (base <= 0) return false;
    const before = a.textContent.slice(0, base);
    return [...waiting.keys()].some((x) => x !== h && ask(x, before, true) >= 0);
  }

  /**
   * A changed element `el` inside `w`'s auto-found element, which no longer shows `w`'s answer
   * alone: is it shared with another answer, one still waiting (`hs`) — two panes in one
   * container, `w` found while the other pane was empty? Then `w` moves down to the lowest
   * element holding its own answer without the other's, or lets go (never counts the other's
   * text). True: `el` is no longer inside a watch and may be claimed.
   */
  function split(w, el, hs, f) {
    const probe = tailText(el, PROBE_CHARS);
    const other = hs.map((x) => claim(x, el, probe, f, w.el)).find((x) => x);
    if (!other) return false;
    const low = successor(w.h, w.el, other.el);
    if (!low || !rebind(w, low.el, low.base)) p.drop(w);
    return true;
  }

  /**
   * Where `h`'s answer is now, under `at` (an element still on the page): the deepest, last
   * element whose text ends as the answer's latest does, climbed to its container as when
   * found, never to one holding `not`. Null: not there (yet).
   */
  function successor(h, at, not = null) {
    const all = at.querySelectorAll('*');
    for (let i = all.length - 1, n = 0; i >= 0 && n < AUTO_MAX_NODES; i--, n++) {
      const e = all[i];
      if (not && (not.contains(e) || e.contains(not))) continue;
      const probe = tailText(e, PROBE_CHARS);
      const hit = probe && claim(h, e, probe, null, not); // its cheap end check first
      if (hit) return hit;
    }
    return null;
  }

  /** `w`'s answer goes on in `el` (a replacement, or a narrower element): the same record.
   * Called from a rAF callback: the frame `w` measured last closes now, then `el` is measured. */
  function rebind(w, el, base) {
    const c = w.open;
    w.open = null;
    if (c && w.close(c, performance.now())) return true;
    const ended = !!w.timer;
    const nw = watch(w.h, el, false, base, PAINT_AUTO, true);
    if (nw && ended) nw.ended();
    return !!nw;
  }

  /**
   * Does `el` show `h`'s answer? 0: nothing like it; null: its end is the answer's latest
   * text, but no container of it shows the answer from its start (yet), or a container that
   * may is not sure yet; else the element to observe and where in its text the answer starts.
   * The element is the highest from `el` up that holds this answer and nothing else (the common
   * container of one element per paragraph), not crossing a shadow root; a container with text
   * before the answer (a label, at most AUTO_MAX_LABEL chars) only where the answer's own
   * earlier changes were in it (`f`'s frames since `h` began waiting): the renderer's root, with
   * a code box's "JavaScript" label in it, rather than the code box — not the chat's bubble
   * around a clean element. Never an element holding `not`, or another answer (`shared`).
   */
  function claim(h, el, probe, f, not = null) {
    const fence = (a, base) => (not && a.contains(not)) || shared(h, a, base);
    // Cheap first: the element's end must be the answer's (its last chars; a short element
    // whole).
    if (ask(h, probe, probe.length < PROBE_CHARS) < 0) return 0;
    let hit = null;
    for (let a = el, i = 0; a && a.nodeType === 1 && a !== document.body && i < AUTO_MAX_CLIMB; a = a.parentNode, i++) {
      const r = ask(h, a.textContent, true);
      if (r < 0) {
        if (hit) break;
        continue;
      }
      const base = Math.floor(r / 2);
      if (fence(a, base)) break;
      if (r % 2 && (hit || base > AUTO_MAX_LABEL)) {
        hit = hit || { el: a, base };
        break;
      }
      hit = { el: a, base };
    }
    if (!hit) return null;
    // Up to the common container of what this answer changed before, each level still this
    // answer (`-2`: perhaps, too little of it after a label yet: wait for a frame with more,
    // unless the stream ended).
    const s = waiting.get(h);
    const top = f && s ? reach(hit.el, f, s) : hit.el;
    for (let a = hit.el; a !== top && a.parentNode && a.parentNode.nodeType === 1; ) {
      a = a.parentNode;
      const r = ask(h, a.textContent, true);
      if (r === -2 && !s.ended) return null;
      if (r < 0 || Math.floor(r / 2) > AUTO_MAX_LABEL || fence(a, Math.floor(r / 2))) break;
      hit = { el: a, base: Math.floor(r / 2) };
    }
    return hit;
  }

  /** The lowest ancestor of `el` (within AUTO_MAX_CLIMB) holding every element that changed
   * with text in `f`'s frames since `s` began waiting, or `el` itself. */
  function reach(el, f, s) {
    let top = el;
    for (const fr of f.frames) {
      if (fr.lo < s.since) continue;
      for (const x of fr.els) {
        const at = placeOf(x) || x.up.find((u) => u.isConnected); // it, its replacement, or what is left of it
        if (!x.len || !at || top.contains(at)) continue;
        let a = top;
        for (let i = 0; a && a.nodeType === 1 && a !== document.body && i < AUTO_MAX_CLIMB && !a.contains(at); i++) a = a.parentNode;
        if (a && a.nodeType === 1 && a !== document.body && a.contains(at)) top = a;
      }
    }
    return top;
  }

  /** Whether remembered change `x` was inside `el` (it or its replacement is, or else an
   * ancestor it had then is `el` or inside it). */
  function within(el, x) {
    if (el.contains(x.el)) return true;
    if (x.el.isConnected) return false;
    const r = placeOf(x);
    return r ? el.contains(r) : x.up.some((u) => u === el || (u.isConnected && el.contains(u)));
  }

  /**
   * `h`'s element `el` was found in frame `cur`: the frames remembered
   * before it that changed `el` or something in it (since `since`: a re-bind's frames before
   * were the old element's) go to the core as its paints first (oldest first; the Watch
   * measures this frame). A frame's text length is its changed elements' (the longest; the
   * found element's less the text before the answer): exact where the answer's element itself
   * changed, at least what one paragraph showed where only a paragraph of it did. Frames that showed no text are
   * not paints, as for rum.observe(el); frames before the answer's first arrival are not
   * either (the core ignores them).
   */
  function backdate(f, h, el, base, cur, since) {
    for (let i = 0; i < f.frames.length; i++) {
      const fr = f.frames[i];
      if (fr.lo < since) continue;
      const nx = fr.next || cur;
      const { t, err } = bracket(fr.lo, nx.ts, nx.lo);
      let len = 0;
      let probe = '';
      // `base` is measured on the element's text now: markup a renderer showed before the
      // answer's first letter (a literal ```js, a code box's label) is in it, and was all an
      // early frame showed: still a paint of the answer (at least 1 char). The probe goes
      // along: a frame that changed only the UI's own chrome (a " ●" dot) shows none of it.
      for (const x of fr.els) {
        if (!within(el, x)) continue;
        // The element itself, or the node it replaced: its text before the answer is `base`.
        const n = placeOf(x) === el ? Math.max(x.len - base, Math.min(x.len, 1)) : x.len;
        if (n > len) [len, probe] = [n, x.probe];
      }
      if (len > 0 && core.fenced((c) => c.paint(h, fr.lo, t, len, err, probe), false)) {
        const w = watches.get(h); // the record is complete (its end was painted already)
        if (w) p.done(w);
        return;
      }
    }
  }

  /** Whether the app named `h`'s answer element (rum.observe), rather than a container. */
  const named = (h) => !!(watches.get(h) || {}).explicit;

  const api = {
    /**
     * A request began (after core.begin). Nothing is bound yet: most fetches are not streams
     * (a sidebar refresh must not take the answer's element), so binding waits for
     * `confirmed`. The container's text so far is noted now: growth after this is the answer.
     */
    began(h) {
      if (stopped) return;
      // Let go of the watches of requests the core let go of: it keeps a bounded number in
      // flight (a body the app never finishes is pushed out, ended `partial`). A container's
      // note goes when its request settles (`confirmed` or `ended`), as every request does.
      for (const w of [...watches.values()]) if (!observed(w.h, PAINT_NONE)) p.drop(w);
      for (const x of [...waiting.keys()]) if (!observed(x, PAINT_NONE)) forget(x);
      const el = auto ? null : resolve(opts.observe);
      if (el) containers.set(h, { el, base: el.textContent.length });
    },
    /**
     * The response of `h` is measured: bind the pending explicit element, or the container.
     * (A request the core no longer holds binds nothing: `watch` fails.)
     */
    confirmed(h) {
      if (stopped) return;
      const c = containers.get(h);
      containers.delete(h);
      if (pending) {
        if (watch(h, pending, true, 0)) pending = null;
        return;
      }
      if (!c || !c.el.isConnected) {
        if (auto) look(h);
        return;
      }
      const w = watch(h, c.el, false, c.base);
      // One answer at a time in a container: the newest stream owns its growth.
      if (w) for (const o of [...watches.values()]) if (o !== w && !o.explicit && o.el === c.el) p.drop(o);
    },
    /** The core ended `h` (end / es_end); `done`: its record is finished. */
    ended(h, done) {
      containers.delete(h);
      const s = waiting.get(h);
      if (s) {
        // Not found yet: a buffered UI shows the answer now. Look on until frames go by with
        // nothing answer-like changing.
        if (done) forget(h);
        else endWait(h, s);
        return;
      }
      const w = watches.get(h);
      if (done) {
        if (w) p.done(w);
        return;
      }
      if (w) w.ended();
      else core.fenced((c) => c.finish(h));
    },
    /**
     * rum.observe(el): the answer element of the current answer — the newest running request
     * with a measured response whose element the app has not named, as the core decides it —
     * or else of the next measured one.
     */
    observe(target) {
      const el = resolve(target);
      if (!el || stopped) return () => {};
      const h = pending
        ? 0
        : core.fenced((c) => {
            let x = c.current_answer(0);
            while (x && named(x)) x = c.current_answer(x);
            return x;
          }, 0);
      if (h) {
        const w = watch(h, el, true, 0);
        return () => w && w.live && p.drop(w);
      }
      pending = el;
      return () => {
        if (pending === el) pending = null;
        const w = [...watches.values()].find((x) => x.el === el && x.explicit);
        if (w) p.drop(w);
      };
    },
    /** rum.flush(): streams that ended unfound stop waiting for their element (records now). */
    settle() {
      for (const [h, s] of [...waiting]) if (s.ended) giveUp(h);
    },
    stop() {
      stopped = true;
      for (const w of [...watches.values()]) p.drop(w);
      for (const h of [...waiting.keys()]) giveUp(h);
      unobservePerf();
      pending = null;
      containers.clear();
    },
  };
  return api;
}
