// Paint observation (capture/paint.js) is a chunk of its own. With `observe: 'auto'` (the
// default, issue 15) or a named element, init() imports it in parallel with the core, and the
// measuring fetch takes over only once it is in: auto mode watches from the first measured
// stream's first frame. Only with `observe: false` is it loaded on first use, by the first
// rum.observe(el), which binds once it is in as it would have (the current answer, or the next
// one). Nothing waits for it (issue 27: no response is held back from the app): the core is
// told when paint observation came in (`paint_ready`), and an answer whose text arrived before
// that reports no first paint (nor what is measured from it), with `unseen: ['firstPaint']`,
// rather than a later frame passed off as its first paint (src/core/record/seen.rs).
// tests/e2e/chunks.spec.js: an answer observed right after init() keeps its first paint when
// its first token comes after the chunk.

/**
 * @param {() => Promise<typeof import('./paint.js')>} load  the chunk's dynamic import
 * @param {import('../core.js').Core} core
 * @param {Parameters<typeof import('./paint.js').makePaint>} args  makePaint's arguments
 * @param {(key: string, message: string, err?: unknown) => void} warnOnce
 */
export function paintOnDemand(load, core, args, warnOnce) {
  let paint = null;
  let loading = null;
  let stopped = false;
  const get = () =>
    (loading ||= load().then(
      (m) =>
        stopped
          ? null
          : (paint = core.fenced((c) => {
              const p = m.makePaint(...args);
              c.paint_ready(performance.now());
              return p;
            }, null)),
      (e) => {
        warnOnce('paint', 'paint metrics off: the paint chunk did not load; requests are still measured', e);
        return null;
      },
    ));
  return {
    /** Loads the chunk now (init() unless `observe: false`); never rejects. */
    load: get,
    began: (h) => paint && paint.began(h),
    confirmed: (h) => paint && paint.confirmed(h),
    // Without paint the core was never told to wait for a paint: `done` is true.
    ended: (h, done) => paint && paint.ended(h, done),
    /** rum.flush(): records auto mode still holds go now (none before the chunk is in). */
    settle: () => paint && paint.settle(),
    observe(el) {
      if (paint) return paint.observe(el);
      let undo = null;
      let cancelled = false;
      get().then((p) => {
        if (p && !cancelled) undo = core.fenced(() => p.observe(el), null);
      });
      return () => {
        cancelled = true;
        if (undo) undo();
      };
    },
    stop() {
      stopped = true;
      if (paint) paint.stop();
    },
  };
}

/**
 * The URL of the script this code runs in — dist/index.js, or the app's bundle or chunk once
 * bundled — as LoAF's `sourceURL` names it: read from a stack trace, which no bundler rewrites
 * (webpack, Parcel and Next.js replace `import.meta.url` at build time with the build machine's
 * file:// path). Only Chromium has LoAF, so V8's frame format: "at [fn (]URL:line:col[)]".
 * @returns {string | null}
 */
export function ownUrl() {
  const m = /([a-z][\w+.-]*:\/\/[^\s()]+?):\d+:\d+/.exec(String(new Error().stack));
  return m && m[1].split(/[?#]/)[0];
}
