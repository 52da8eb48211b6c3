// First paint as the screen showed it (issue 30), in Chromium: the SDK's paint times held
// against the compositor's own frames (screencast.js: CDP Page.startScreencast, a CSS-only
// animation elsewhere on the page so that every vsync yields a frame, the answer box compared
// pixel by pixel with the empty box, frame times — planned display times — on the page clock
// through performance.timeOrigin). Ground truth is what was recorded, not a schedule: the
// compositor's bracket (P, T] — the last frame still showing the empty (or not yet final) box,
// and the first frame showing text (the final text for good).
//
// Tolerances, designed in: `firstPaint` and `lastPaint` lie within that bracket widened by one
// frame either side (the screencast's frame interval, 16.7 ms, and the clock step); the truth lies within
// `paintErrorMs`: the record's [paint − paintErrorMs, paint + paintErrorMs] meets (P, T]. Every
// run, no median: the bound must hold in each. Firefox and WebKit have no screencast: their
// paints are checked in-page (engines.spec.js).
//
// The pages: streamed (a token appended per event), buffered (the whole answer set at the
// end), large (~4 400 chars of CJK, emoji and Latin set at once), markdown re-rendered per
// token, and a page busy in its own handlers (30 ms of script per token before it renders).
import { test, expect } from '@playwright/test';
import { openPage } from './util.js';
import { screencast, boxSignatures, compositorTruth } from './screencast.js';

// A small viewport: every frame is PNG-encoded by the browser while the page streams.
test.use({ viewport: { width: 640, height: 480 } });

const RUNS = 3;
// The page's clock (performance.now(), rAF timestamps) is coarsened to 100 µs here (HR-Time
// "coarsen time"; the page is not cross-origin isolated), the screencast's frame times are
// not: a paint at a frame's time can read up to one step before that frame.
const CLOCK_STEP_MS = 0.1;
const STREAM = 'prefill_ms=300&gap_ms=30&tokens=40';
const PAGES = {
  streamed: { kind: 'streamed', query: STREAM },
  buffered: { kind: 'buffered', query: 'prefill_ms=300&gap_ms=10&tokens=40' },
  large: { kind: 'buffered', query: 'prefill_ms=300&gap_ms=1&tokens=700' },
  markdown: { kind: 'markdown', query: 'prefill_ms=300&gap_ms=20&tokens=60' },
  busy: { kind: 'streamed', query: STREAM, opts: { busyMs: 30 } },
};

/** One answer on `page`, recorded; returns the record and the compositor's truth (page clock). */
async function run(page, decoder, p) {
  const rect = await page.evaluate(async () => (await import('/helpers.js')).compositorStage());
  await page.waitForTimeout(100);
  const cast = await screencast(page);
  await page.waitForTimeout(150); // frames of the empty box before the request
  const out = await page.evaluate(async (p) => (await import('/helpers.js')).compositorAnswer(p.kind, p.query, p.opts || {}), p);
  const frames = await cast.stop();
  const truth = compositorTruth(frames, await boxSignatures(decoder, frames, rect), out.timeOrigin, out.start);
  return { rec: out.rec, start: out.start, truth };
}

const f1 = (v) => (v == null ? 'null' : Number(v).toFixed(1));

for (const [name, p] of Object.entries(PAGES)) {
  test(`${name}: first and last paint agree with the compositor's frames`, async ({ page, context }) => {
    await openPage(page);
    await page.evaluate(async () => (await import('/helpers.js')).startRum());
    const decoder = await context.newPage();
    for (let k = 0; k < RUNS; k++) {
      let r = await run(page, decoder, p);
      if (!r.truth.first || !r.truth.last) {
        // The screencast stopped sending frames before the box changed (seen once with the
        // machine's load at 7 on 2 cores: 39 frames, none with text): a recording, not the SDK,
        // failed. Once more; a second failure fails the test below.
        console.log(`compositor ${name}: recording incomplete (${JSON.stringify(r.truth)}), once more`);
        r = await run(page, decoder, p);
      }
      const { rec, start, truth } = r;
      expect(rec.outcome).toBe('ok');
      // Every vsync gave a frame (the animation), and the box showed the answer.
      expect(truth.frameMs, JSON.stringify(truth)).toBeLessThan(20);
      expect(truth.first, JSON.stringify(truth)).not.toBeNull();
      expect(truth.last, JSON.stringify(truth)).not.toBeNull();
      const m = rec.marks;
      const err = rec.paintErrorMs;
      const frame = truth.frameMs;
      const ft = start + m.firstToken;
      const at = (x) => `[${f1(x[0] - ft)}, ${f1(x[1] - ft)}]`;
      console.log(
        `compositor ${name}: first frame with text ${at(truth.first)}, SDK firstPaint ${f1(start + m.firstPaint - ft)}; ` +
          `final text ${at(truth.last)}, SDK lastPaint ${f1(start + m.lastPaint - ft)}; paintErrorMs ${f1(err)} (ms after firstToken)`,
      );
      for (const [key, [P, T]] of [
        ['firstPaint', truth.first],
        ['lastPaint', truth.last],
      ]) {
        const t = start + m[key];
        const why = `${key} ${f1(t - ft)} ± ${f1(err)} vs compositor ${at([P, T])} (after firstToken)`;
        expect(t, why).toBeGreaterThanOrEqual(P - frame - CLOCK_STEP_MS);
        expect(t, why).toBeLessThanOrEqual(T + frame + CLOCK_STEP_MS);
        // The truth within the stated error: the bound meets the compositor's bracket.
        expect(t - err, why).toBeLessThanOrEqual(T);
        expect(t + err, why).toBeGreaterThan(P);
      }
      // No credit before arrival: the first frame showing text came after the first token.
      expect(truth.first[1]).toBeGreaterThanOrEqual(ft);
    }
  });
}
