//! What the person saw (the record's `firstPaint`, `lastPaint`, `renderDelay`, `stalls`,
//! `buffered`, `paintErrorMs`): a pure state machine fed with text arrivals and painted frames.
//!
//! The browser layer calls, in the order things happen on the page:
//! * `on_arrival(t, cumulative_chars)` when answer text reaches the page (the same moments the
//!   timeline counts as content arrivals), with the running count of raw answer chars;
//! * `on_paint(t_paint, rendered_len, err_ms)` for each frame that painted the observed element,
//!   with its answer-text length (`textContent.length`) and the paint time's error bound;
//! * `on_end(t_end, final_chars)` when the stream ended (paints keep coming after it: the frame
//!   that shows the end of the answer is usually after the last arrival);
//! * `on_hidden(t)` when the page was hidden.
//!
//! `result()` can be called at any time; `stalls()` are built as the paints come in. How
//! arrivals are matched to paints is in `delays.rs`; the memory bound and the error it implies
//! in `buckets.rs`.
//!
//! # Metric definitions
//!
//! * `first_paint`: time of the first paint showing > 0 chars, reported after the first arrival.
//!   Paints reported before any arrival are ignored entirely (a placeholder or "typing…" text
//!   is not answer text).
//! * `last_paint`: the first paint of the final run of paints with the final rendered length
//!   that was reported after the last arrival (so the frame that shows the end of the answer,
//!   stable). If no paint came after the last arrival (its text changed nothing on screen and
//!   the app did not re-render), the start of the final run before it. `None` when the latest
//!   paint showed 0 chars.
//! * `render_delay`: for each unit of painted answer text, paint time − arrival time, weighted
//!   by chars (a 50-char chunk counts 50 times a 1-char one). `first` is the delay of the
//!   answer's first char; `p50`/`p95` use the nearest-rank definition of `LogHistogram` over
//!   chars (the smallest delay `d` with at least `q` of the painted chars at ≤ `d`), computed
//!   exactly over the ≤ 2·`MAX_BUCKETS` matched pieces (sorted; a char-weighted record into
//!   `LogHistogram` would cost one sample per char); `max` the largest. Delays below 0 (a paint
//!   timestamp earlier than the arrival of text it shows: a clock/refinement inconsistency)
//!   are clamped to 0 and their chars counted in `negative_chars`. Text no paint reached is
//!   left out and counted in `unpainted_chars`. `None` when nothing was painted.
//! * `buffered`: the first paint was reported when ≥ 90 % of the raw text had arrived, and
//!   more than `BUFFERED_MIN_WAIT_MS` after the first arrival. The second condition keeps a
//!   one-chunk answer (or one that arrived in a burst) painted promptly from being blamed on the
//!   UI: there was nothing it could have streamed. An answer that had fully arrived before the
//!   first paint is buffered by the same rule. `None` without a first paint.
//! * stalls (as the person saw them): a gap between consecutive paints that grew the text
//!   (length above the previous paint's), longer than `stall_threshold_ms`, provided some
//!   text arrived after the gap began (the answer was still incomplete: the wait before the
//!   first paint is `ttfp`, and a slow re-render after everything was shown is not a stall).
//!   Let `w` = the first arrival after the gap began. `Render` when the text waited on screen
//!   longer than the network made the person wait and longer than a frame
//!   (`t_end − w > max(w − t_start, FRAME_MS)`), else `Network`. Gaps ending after the page
//!   was hidden are not stalls (nobody was looking and the browser does not paint).
//!   `Stall::start` is relative to the `origin` given to `new` (the request start), as in
//!   `Timeline`, so the lists can be merged.
//! * `paint_error_ms`: the largest `err_ms` of the paints used.
//! * `hidden`: `on_hidden` was called: the paint metrics describe frames nobody waited for.
//!
//! Timestamps that go backwards are raised to the previous one of their kind (arrivals and
//! paints separately); NaN or infinite inputs are ignored; arrivals that add no chars change
//! nothing; arrivals after `on_end` are ignored.

use alloc::vec::Vec;
use crate::core::util::math;
use crate::core::paint::buckets::{max_span, push_coalescing, ArrivalBucket, PaintBucket, MAX_BUCKETS};
use crate::core::paint::delays::{match_delays, RenderDelay};
use crate::core::stalls::{Stall, StallCause, Stalls, DEFAULT_STALL_THRESHOLD_MS};

/// One frame at 60 Hz: the delay any renderer has, and the slack in stall classification.
pub const FRAME_MS: f64 = 1000.0 / 60.0;
/// `buffered` needs at least this share of the raw text to have arrived at the first paint.
pub const BUFFERED_FRACTION_NUM: u64 = 9;
pub const BUFFERED_FRACTION_DEN: u64 = 10;
/// …and the first paint later than this after the first arrival (3 frames).
pub const BUFFERED_MIN_WAIT_MS: f64 = 50.0;

/// Everything `result()` reports (absolute `performance.now()` times, like `Timeline` marks).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaintResult {
    pub first_paint: Option<f64>,
    pub last_paint: Option<f64>,
    pub render_delay: Option<RenderDelay>,
    pub buffered: Option<bool>,
    /// Largest paint-time error bound seen (`paintErrorMs`); `None` without a first paint.
    pub paint_error_ms: Option<f64>,
    /// The page was hidden: these frames were not waited for.
    pub hidden: bool,
    /// Painted chars whose delay came out negative and was clamped to 0 (beyond the coalescing
    /// error): 0 for consistent clocks.
    pub negative_chars: u64,
    /// Raw chars no paint reached (rounded).
    pub unpainted_chars: u64,
    /// Bound on the error bucket coalescing adds to each `render_delay` statistic (0 = exact).
    pub delay_error_ms: f64,
}

impl PaintResult {
    fn empty(hidden: bool) -> PaintResult {
        PaintResult {
            first_paint: None,
            last_paint: None,
            render_delay: None,
            buffered: None,
            paint_error_ms: None,
            hidden,
            negative_chars: 0,
            unpainted_chars: 0,
            delay_error_ms: 0.0,
        }
    }
}

/// What a paint showed, as a paint bucket stores it: the running maximum of rendered lengths,
/// the raw chars that had arrived when its text was read, and the raw progress a text probe
/// located (if one matched).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Shown {
    rendered: u64,
    arrived: u64,
    probed: Option<u64>,
}

pub struct PaintTracker {
    origin: f64,
    stall_threshold_ms: f64,
    cap: usize,
    arrivals: Vec<ArrivalBucket>,
    paints: Vec<PaintBucket>,
    /// Raw chars arrived so far (running max of `cumulative_chars`).
    arrived: u64,
    first_arrival: Option<f64>,
    last_arrival: Option<f64>,
    last_paint_t: Option<f64>,
    /// Rendered length in the previous (used) paint.
    last_len: u64,
    /// Running max of rendered lengths.
    max_len: u64,
    /// (time, raw chars arrived when it was reported).
    first_paint: Option<(f64, u64)>,
    /// What the last stored paint showed: a paint changing none of it adds nothing.
    stored: Shown,
    /// Last paint that grew the text (start of the current potential stall).
    last_growth: Option<f64>,
    /// First arrival after `last_growth`: from then on text was waiting to be painted.
    wait_since: Option<f64>,
    /// First paint of the current run of equal lengths, any / since the last arrival.
    run_any: Option<f64>,
    run_after: Option<f64>,
    err_max: f64,
    ended: bool,
    hidden_at: Option<f64>,
    stalls: Stalls,
}

impl PaintTracker {
    /// `origin` = the request start (`Stall::start` is relative to it); `stall_threshold_ms`
    /// from the config (a non-finite or negative value falls back to 250).
    pub fn new(origin: f64, stall_threshold_ms: f64) -> PaintTracker {
        Self::with_capacity(origin, stall_threshold_ms, MAX_BUCKETS)
    }

    fn with_capacity(origin: f64, stall_threshold_ms: f64, cap: usize) -> PaintTracker {
        let threshold = if stall_threshold_ms.is_finite() && stall_threshold_ms >= 0.0 {
            stall_threshold_ms
        } else {
            DEFAULT_STALL_THRESHOLD_MS
        };
        PaintTracker {
            origin: if origin.is_finite() { origin } else { 0.0 },
            stall_threshold_ms: threshold,
            cap: cap.max(2),
            arrivals: Vec::new(),
            paints: Vec::new(),
            arrived: 0,
            first_arrival: None,
            last_arrival: None,
            last_paint_t: None,
            last_len: 0,
            max_len: 0,
            first_paint: None,
            stored: Shown::default(),
            last_growth: None,
            wait_since: None,
            run_any: None,
            run_after: None,
            err_max: 0.0,
            ended: false,
            hidden_at: None,
            stalls: Stalls::default(),
        }
    }

    /// Answer text reached the page at `t`; `cumulative_chars` raw answer chars so far.
    pub fn on_arrival(&mut self, t: f64, cumulative_chars: u32) {
        let c = cumulative_chars as u64;
        if !t.is_finite() || self.ended || c <= self.arrived {
            return;
        }
        let t = self.last_arrival.map_or(t, |l| t.max(l));
        match self.arrivals.last_mut() {
            // Same instant (several events in one chunk): one step, no extra bucket.
            Some(b) if b.t1 == t => b.chars = c,
            _ => push_coalescing(&mut self.arrivals, self.cap, ArrivalBucket { t0: t, t1: t, chars: c }),
        }
        self.arrived = c;
        self.first_arrival.get_or_insert(t);
        self.last_arrival = Some(t);
        if self.last_growth.is_some() && self.wait_since.is_none() {
            self.wait_since = Some(t);
        }
        // The final run must show this text too: it restarts at the next paint.
        self.run_after = None;
    }

    /// `chars` raw answer chars arrived during `[t0, t1]` before tracking began (an element
    /// observed mid-answer): one bucket, its text taken as spread evenly over the span, as
    /// for coalesced buckets. Only as the first input.
    pub fn seed(&mut self, t0: f64, t1: f64, chars: u32) {
        if self.arrived > 0 || chars == 0 || !(t0.is_finite() && t1.is_finite() && t0 <= t1) {
            return;
        }
        push_coalescing(&mut self.arrivals, self.cap, ArrivalBucket { t0, t1, chars: chars as u64 });
        self.arrived = chars as u64;
        self.first_arrival = Some(t0);
        self.last_arrival = Some(t1);
    }

    /// A frame painted at `t_paint` (± `err_ms`) showing `rendered_len` chars of answer text.
    pub fn on_paint(&mut self, t_paint: f64, rendered_len: u32, err_ms: f64) {
        self.on_paint_probed(t_paint - err_ms, t_paint, rendered_len, err_ms, None);
    }

    /// As `on_paint`, with the raw progress a text probe located (the on-screen text ends
    /// after `probed` raw chars): used instead of the proportional estimate for this paint.
    ///
    /// The frame's text was read at `read` (the browser layer reads it in the frame's rAF
    /// callback, at or before `t_paint − err_ms`, and reports when the screen showed it). No
    /// credit before arrival: text that arrived after that read cannot be on this frame, even
    /// though the report comes later (chunk tasks run before the next frame, which closes the
    /// bracket): such a paint is capped at what had arrived by the read, and cannot be the
    /// frame showing the end. A `read` that is not a number, or after `t_paint`, is taken as
    /// `t_paint − err_ms`.
    pub fn on_paint_probed(&mut self, read: f64, t_paint: f64, rendered_len: u32, err_ms: f64, probed: Option<u32>) {
        let err = if err_ms.is_finite() && err_ms > 0.0 { err_ms } else { 0.0 };
        let read = if read.is_finite() && read <= t_paint { read } else { t_paint - err };
        let arrived = self.arrived_by(read);
        if !t_paint.is_finite() || arrived == 0 {
            return;
        }
        let stale = arrived < self.arrived;
        let t = self.last_paint_t.map_or(t_paint, |l| t_paint.max(l));
        let len = rendered_len as u64;

        if len != self.last_len || self.run_any.is_none() {
            self.run_any = Some(t);
        }
        if !stale && (len != self.last_len || self.run_after.is_none()) {
            self.run_after = Some(t);
        }
        if len > 0 && self.first_paint.is_none() {
            self.first_paint = Some((t, arrived));
        }
        if len > 0 {
            self.err_max = self.err_max.max(err);
        }

        if len > self.last_len {
            if let (Some(prev), Some(w)) = (self.last_growth, self.wait_since) {
                let gap = t - prev;
                let visible = self.hidden_at.is_none_or(|h| t <= h);
                if gap > self.stall_threshold_ms && visible {
                    let w = w.max(prev).min(t);
                    let (network, render) = (w - prev, t - w);
                    let cause = if render > network.max(FRAME_MS) { StallCause::Render } else { StallCause::Network };
                    self.stalls.add(Stall { start: prev - self.origin, dur: gap, cause });
                }
            }
            self.last_growth = Some(t);
            // What this frame shows was read at `read`: text that arrived after the read is
            // still waiting — since its arrival (its bucket's start, not before the read) —
            // even though this paint is reported after it came. Without this, a page that
            // blocks right after such an arrival (its chunk handler rendering) showed a network
            // stall where text was waiting to be painted.
            self.wait_since = if stale {
                self.arrivals.iter().find(|b| b.t1 > read).map(|b| b.t0.max(read))
            } else {
                None
            };
        }

        self.max_len = self.max_len.max(len);
        let probed = probed.map(u64::from).filter(|_| len > 0);
        let shown = Shown { rendered: self.max_len, arrived, probed };
        if self.max_len > 0 && shown != self.stored {
            let b = PaintBucket { t0: t, t1: t, rendered: self.max_len, arrived, err, probed };
            match self.paints.last_mut() {
                Some(last) if last.t1 == t => {
                    last.rendered = b.rendered;
                    last.arrived = b.arrived;
                    last.probed = b.probed;
                    last.err = last.err.max(err);
                }
                _ => push_coalescing(&mut self.paints, self.cap, b),
            }
            self.stored = shown;
        }
        self.last_len = len;
        self.last_paint_t = Some(t);
    }

    /// Raw chars that had arrived by `t` (a coalesced bucket still running at `t` counts
    /// only what arrived before it: a lower bound).
    fn arrived_by(&self, t: f64) -> u64 {
        if self.last_arrival.is_none_or(|a| a <= t) {
            return self.arrived;
        }
        self.arrivals.iter().rev().find(|b| b.t1 <= t).map_or(0, |b| b.chars)
    }

    /// The stream ended at `t_end` with `final_chars` raw answer chars. Chars the arrivals did
    /// not report (a decoder flush at the end) count as arriving at `t_end`. Paints keep
    /// counting after this; arrivals do not. Idempotent: the first call wins.
    pub fn on_end(&mut self, t_end: f64, final_chars: u32) {
        if self.ended {
            return;
        }
        self.on_arrival(t_end, final_chars);
        self.ended = true;
    }

    /// When the page was first hidden, if it was.
    pub fn hidden_at(&self) -> Option<f64> {
        self.hidden_at
    }

    /// The page was hidden at `t` (sticky: the record says `hidden`).
    pub fn on_hidden(&mut self, t: f64) {
        if self.hidden_at.is_none() {
            self.hidden_at = Some(if t.is_finite() { t } else { f64::NEG_INFINITY });
        }
    }

    /// The engine's own presentation time `p` (Long Animation Frame, Element Timing,
    /// interaction-contentful-paint `presentationTime`) of resolution `res_ms`, for the frame
    /// whose paint was reported at `key` (the browser layer matched the frame by its paint
    /// step): that stored paint takes it as its time, with `res_ms` as its error, unless it
    /// would precede the frame's rendering (`key − err`) or pass a neighbour. First/last paint
    /// and render delays follow; stalls already counted keep their bracketed times (off by at
    /// most the bracket).
    pub fn refine(&mut self, key: f64, p: f64, res_ms: f64) {
        if !p.is_finite() {
            return;
        }
        let res = if res_ms.is_finite() && res_ms > 0.0 { res_ms } else { 0.0 };
        let Some(i) = self.paints.iter().position(|b| b.t0 == b.t1 && b.t0 == key && b.err > res && p >= key - b.err) else {
            return;
        };
        let (old, prev, next) = (self.paints[i].t0, self.paints.get(i.wrapping_sub(1)), self.paints.get(i + 1));
        // Order must hold: a refined time may not pass its neighbours.
        if prev.is_some_and(|b| b.t1 > p) || next.is_some_and(|b| b.t0 < p) {
            return;
        }
        if let Some(b) = self.paints.get_mut(i) {
            b.t0 = p;
            b.t1 = p;
            b.err = res;
        }
        let fix = |t: &mut Option<f64>| {
            if *t == Some(old) {
                *t = Some(p);
            }
        };
        fix(&mut self.run_any);
        fix(&mut self.run_after);
        fix(&mut self.last_paint_t);
        if let Some(fp) = self.first_paint.as_mut().filter(|fp| fp.0 == old) {
            fp.0 = p;
        }
        self.err_max = self.paints.iter().fold(0.0, |m, b| m.max(b.err));
    }

    /// The request start moved back by `d` ms (an EventSource reconnect rebased to its
    /// Resource Timing start): stall offsets follow.
    pub fn shift_origin(&mut self, d: f64) {
        self.origin -= d;
        for s in &mut self.stalls.list {
            s.start += d;
        }
    }

    /// True once the stream ended and a non-empty paint came after its last arrival that
    /// shows the end of the text, as far as its probe tells (`stored`: what the latest paint
    /// showed once anything was) (a probe found short of the end:
    /// the app is still rendering a backlog — paint-compositor.spec.js's busy page rendered its
    /// last tokens ~100 ms after the stream's end reached the SDK; no probe found: taken as
    /// the end). The browser layer may stop observing then (or keep going for later
    /// re-renders; `result()` stays correct either way).
    pub fn final_paint_seen(&self) -> bool {
        self.ended && self.run_after.is_some() && self.last_len > 0 && self.stored.probed.is_none_or(|p| p >= self.arrived)
    }

    /// Paint stalls so far (`count`, `network`, `render`, bounded `list`), starts relative to
    /// `origin`.
    pub fn stalls(&self) -> &Stalls {
        &self.stalls
    }

    pub fn result(&self) -> PaintResult {
        let hidden = self.hidden_at.is_some();
        let (Some((t_fp, arrived_fp)), Some(t_first)) = (self.first_paint, self.first_arrival) else {
            return PaintResult::empty(hidden);
        };
        let a_fin = self.arrived;
        let buffered = arrived_fp * BUFFERED_FRACTION_DEN >= a_fin * BUFFERED_FRACTION_NUM
            && t_fp - t_first > BUFFERED_MIN_WAIT_MS;
        let last_paint = if self.last_len > 0 { self.run_after.or(self.run_any) } else { None };
        let r_fin = if self.last_len > 0 { self.last_len } else { self.max_len };
        let m = match_delays(&self.arrivals, &self.paints, a_fin as f64, r_fin as f64);
        PaintResult {
            first_paint: Some(t_fp),
            last_paint,
            render_delay: m.delay,
            buffered: Some(buffered),
            paint_error_ms: Some(self.err_max),
            hidden,
            negative_chars: math::ceil(m.negative) as u64,
            unpainted_chars: (a_fin as f64 - m.painted + 0.5).max(0.0) as u64,
            delay_error_ms: max_span(&self.arrivals) + max_span(&self.paints),
        }
    }
}

// The tests read the tracker's private state (bucket lists, the clamped threshold).
#[cfg(test)]
#[path = "tests.rs"]
mod tests;
