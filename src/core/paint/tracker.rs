//! What the person saw (DESIGN §1 `firstPaint`, `lastPaint`, `renderDelay`, `stalls`,
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
//! `result()` can be called at any time; `stalls()` are built as the paints come in.
//!
//! # Matching arrivals to paints: progress fractions
//!
//! The rendered text is not the raw stream (markdown turns `**x**` into `x`, code fences
//! disappear, `textContent` counts UTF-16 units where the stream counts scalar values), so
//! characters cannot be matched one by one. Instead progress fractions are: a paint showing
//! `rendered / R_fin` of the final rendered text has shown the first `rendered / R_fin · A_fin`
//! raw chars (`A_fin` = final raw chars). That mapping is proportional and monotone, so it
//! survives any uniform shrinkage. Two corrections keep it sane when the shrinkage is not
//! uniform (bold markers collapsing late make the early rendered fraction run ahead):
//! * `rendered` is the running maximum of the painted lengths (a framework re-render that
//!   briefly shows less does not take back what the person already saw);
//! * a paint can never have shown more raw text than had arrived when it was reported (the
//!   progress is capped by the arrival count at the `on_paint` call), so delays cannot go
//!   negative because of the mapping.
//!
//! `A_fin` and `R_fin` are known only at the end, so the matching runs in `result()`.
//! Until then (a hidden or unloaded page cuts a record short) the current values stand in for
//! them: `A_fin` = the raw chars arrived so far (or `on_end`'s count), `R_fin` = the length in
//! the latest paint, or the running maximum when the latest paint showed nothing (the element
//! was cleared).
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
//!
//! # Memory and error bound
//!
//! The state is O(1) in the answer length: at most `MAX_BUCKETS` arrival buckets and
//! `MAX_BUCKETS` paint buckets (24 + 40 bytes each, ≤ 8 KB), plus the bounded stall list.
//! A bucket is a time span `[t0, t1]` and the text that arrived (or was first painted) in it.
//! When a list is full, the adjacent pair whose merged span is shortest is merged; text inside
//! a bucket is taken to be spread evenly over its span. With `K` buckets the shortest adjacent
//! pair spans at most `2·D/(K−1)` (the pairs' spans sum to at most twice the covered time `D`),
//! so no bucket ever spans more than `2·D/(K−1)`: 1.6 % of the stream's duration. Every char's
//! delay — hence `first`, `p50`, `p95` and `max` — is within `delay_error_ms` (the widest
//! arrival bucket plus the widest paint bucket) of the unmerged computation; `first` stays exact
//! (the first bucket of each kind starts at the true first time). Shortest-span merging keeps
//! bursts and freezes (long empty spans) apart, so the bound is rarely approached. Answers with
//! fewer than `MAX_BUCKETS` arrivals and paints are exact (`delay_error_ms` = 0). First/last
//! paint, `buffered` and stalls are computed online and are always exact.

use alloc::vec::Vec;
use crate::core::util::math;
use crate::core::stalls::{Stall, StallCause, Stalls};

/// One frame at 60 Hz: the delay any renderer has, and the slack in stall classification.
pub const FRAME_MS: f64 = 1000.0 / 60.0;
/// `buffered` needs at least this share of the raw text to have arrived at the first paint.
pub const BUFFERED_FRACTION_NUM: u64 = 9;
pub const BUFFERED_FRACTION_DEN: u64 = 10;
/// …and the first paint later than this after the first arrival (3 frames).
pub const BUFFERED_MIN_WAIT_MS: f64 = 50.0;
/// Bucket bound per list (arrivals, paints). See the module docs for the error it implies.
pub const MAX_BUCKETS: usize = 128;
/// Used when the configured threshold is not a finite non-negative number (DESIGN default).
const DEFAULT_STALL_THRESHOLD_MS: f64 = 250.0;

/// Raw chars `(previous bucket's chars, chars]` arrived during `[t0, t1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct ArrivalBucket {
    t0: f64,
    t1: f64,
    chars: u64,
}

/// Paints during `[t0, t1]`; the last of them showed `rendered` (running max) chars and was
/// reported when `arrived` raw chars had arrived. Progress is derived from both in `result()`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PaintBucket {
    t0: f64,
    t1: f64,
    rendered: u64,
    arrived: u64,
    err: f64,
    /// Raw progress located by a text probe (`probe.rs`), when one matched.
    probed: Option<u64>,
}

trait Bucket: Copy {
    fn t0(&self) -> f64;
    fn t1(&self) -> f64;
    /// Absorbs the next (later) bucket.
    fn absorb(&mut self, next: &Self);
}

impl Bucket for ArrivalBucket {
    fn t0(&self) -> f64 {
        self.t0
    }
    fn t1(&self) -> f64 {
        self.t1
    }
    fn absorb(&mut self, next: &Self) {
        self.t1 = next.t1;
        self.chars = next.chars;
    }
}

impl Bucket for PaintBucket {
    fn t0(&self) -> f64 {
        self.t0
    }
    fn t1(&self) -> f64 {
        self.t1
    }
    fn absorb(&mut self, next: &Self) {
        self.t1 = next.t1;
        // Both are monotone over the list, so the later bucket's values are the maxima.
        self.rendered = next.rendered;
        self.arrived = next.arrived;
        self.probed = next.probed;
        self.err = self.err.max(next.err);
    }
}

/// Appends `item`, first merging the adjacent pair with the shortest merged span when the list
/// is full, so `v.len() <= cap` always (for `cap >= 2`).
fn push_bounded<T: Bucket>(v: &mut Vec<T>, cap: usize, item: T) {
    if v.len() >= cap {
        let mut best: Option<(usize, f64)> = None;
        for (i, pair) in v.windows(2).enumerate() {
            if let [a, b] = pair {
                let span = b.t1() - a.t0();
                // Strictly shorter: ties go to the earliest pair (deterministic).
                if best.is_none_or(|(_, s)| span < s) {
                    best = Some((i, span));
                }
            }
        }
        if let Some((i, _)) = best {
            if let Some(next) = v.get(i + 1).copied() {
                if let Some(cur) = v.get_mut(i) {
                    cur.absorb(&next);
                }
                v.remove(i + 1);
            }
        }
    }
    if v.capacity() == 0 {
        // One exact allocation: the list never grows past `cap`, so no doubling slack.
        v.reserve_exact(cap);
    }
    v.push(item);
}

/// `renderDelay`, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RenderDelay {
    pub first: f64,
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

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
    /// `(max_len, arrived, probed)` at the last stored paint: a paint changing none adds nothing.
    stored: (u64, u64, Option<u64>),
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
            stored: (0, 0, None),
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
            _ => push_bounded(&mut self.arrivals, self.cap, ArrivalBucket { t0: t, t1: t, chars: c }),
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
        push_bounded(&mut self.arrivals, self.cap, ArrivalBucket { t0, t1, chars: chars as u64 });
        self.arrived = chars as u64;
        self.first_arrival = Some(t0);
        self.last_arrival = Some(t1);
    }

    /// A frame painted at `t_paint` (± `err_ms`) showing `rendered_len` chars of answer text.
    pub fn on_paint(&mut self, t_paint: f64, rendered_len: u32, err_ms: f64) {
        self.on_paint_probed(t_paint, rendered_len, err_ms, None);
    }

    /// As `on_paint`, with the raw progress a text probe located (the on-screen text ends
    /// after `probed` raw chars): used instead of the proportional estimate for this paint.
    ///
    /// The frame's text was read at `t_paint − err_ms` (the bracket's lower bound: the browser
    /// layer reads it in the frame's rAF callback and reports at the bracket's midpoint).
    /// Text that arrived after that read cannot be on this frame, even though the report
    /// comes later (a chunk task can run between the frame and the report): such a paint is
    /// capped at what had arrived by the read, and cannot be the frame showing the end.
    pub fn on_paint_probed(&mut self, t_paint: f64, rendered_len: u32, err_ms: f64, probed: Option<u32>) {
        let err = if err_ms.is_finite() && err_ms > 0.0 { err_ms } else { 0.0 };
        let arrived = self.arrived_by(t_paint - err);
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
            self.wait_since = None;
        }

        self.max_len = self.max_len.max(len);
        let probed = probed.map(u64::from).filter(|_| len > 0);
        if self.max_len > 0 && (self.max_len, arrived, probed) != self.stored {
            let b = PaintBucket { t0: t, t1: t, rendered: self.max_len, arrived, err, probed };
            match self.paints.last_mut() {
                Some(last) if last.t1 == t => {
                    last.rendered = b.rendered;
                    last.arrived = b.arrived;
                    last.probed = b.probed;
                    last.err = last.err.max(err);
                }
                _ => push_bounded(&mut self.paints, self.cap, b),
            }
            self.stored = (self.max_len, arrived, probed);
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

    /// A native paint timestamp (Long Animation Frame / interaction-contentful-paint
    /// `paintTime`) of resolution `res_ms`: a stored paint whose bracket contains it takes it
    /// as its time, with `res_ms` as its error. First/last paint and render delays follow;
    /// stalls already counted keep their bracketed times (off by at most the bracket).
    pub fn refine(&mut self, p: f64, res_ms: f64) {
        if !p.is_finite() {
            return;
        }
        let res = if res_ms.is_finite() && res_ms > 0.0 { res_ms } else { 0.0 };
        let Some(i) = self.paints.iter().position(|b| b.t0 == b.t1 && b.err > res && (b.t0 - p).abs() <= b.err + res) else {
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

    /// True once the stream ended and a non-empty paint came after its last arrival: the
    /// browser layer may stop observing (or keep going for later re-renders; `result()` stays
    /// correct either way).
    pub fn final_paint_seen(&self) -> bool {
        self.ended && self.run_after.is_some() && self.last_len > 0
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
        let m = self.match_delays(a_fin as f64, r_fin as f64);
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

    /// Walks the arrival and paint step functions together over raw-char positions `x`
    /// (piecewise linear inside coalesced buckets) and collects char-weighted delays.
    fn match_delays(&self, a_fin: f64, r_fin: f64) -> Matched {
        let mut out = Matched { delay: None, negative: 0.0, painted: 0.0 };
        if !(a_fin > 0.0 && r_fin > 0.0) {
            return out;
        }
        let scale = a_fin / r_fin;
        // Raw chars a paint bucket has shown: where its probe matched, else proportional to its
        // rendered share; capped by what had arrived, never behind the previous bucket, never
        // past the end.
        let progress = |b: &PaintBucket, prev: f64| {
            let est = b.probed.map_or(b.rendered as f64 * scale, |p| p as f64);
            est.min(b.arrived as f64).min(a_fin).max(prev)
        };
        let mut pieces: Vec<(f64, f64)> = Vec::with_capacity(self.arrivals.len() + self.paints.len());
        let (mut ai, mut pi) = (0usize, 0usize);
        let (mut a_lo, mut p_lo) = (0.0f64, 0.0f64);
        let mut p_hi = match self.paints.first() {
            Some(b) => progress(b, 0.0),
            None => return out,
        };
        let mut x = 0.0f64;
        let mut first: Option<f64> = None;
        let mut max = 0.0f64;
        while let (Some(a), Some(p)) = (self.arrivals.get(ai), self.paints.get(pi)) {
            let a_hi = a.chars as f64;
            if a_hi <= x {
                a_lo = a_hi;
                ai += 1;
                continue;
            }
            if p_hi <= x {
                p_lo = p_hi;
                pi += 1;
                if let Some(n) = self.paints.get(pi) {
                    p_hi = progress(n, p_lo);
                }
                continue;
            }
            let x1 = a_hi.min(p_hi);
            let d0 = lerp(p.t0, p.t1, p_lo, p_hi, x) - lerp(a.t0, a.t1, a_lo, a_hi, x);
            let d1 = lerp(p.t0, p.t1, p_lo, p_hi, x1) - lerp(a.t0, a.t1, a_lo, a_hi, x1);
            let w = x1 - x;
            // Inside coalesced buckets interpolation alone can dip below 0; only a dip beyond
            // the buckets' spans is a real inconsistency worth counting.
            let tol = (a.t1 - a.t0) + (p.t1 - p.t0);
            if d0.min(d1) < -tol {
                out.negative += w;
            }
            let (d0, d1) = (d0.max(0.0), d1.max(0.0));
            first.get_or_insert(d0);
            max = max.max(d0).max(d1);
            // The delay is linear across the piece: its midpoint stands for it (exact when the
            // buckets are single instants, within the coalescing bound otherwise).
            pieces.push(((d0 + d1) * 0.5, w));
            x = x1;
        }
        out.painted = x;
        let total: f64 = pieces.iter().map(|p| p.1).sum();
        if let (Some(first), true) = (first, total > 0.0) {
            sort_by_delay(&mut pieces);
            let q = |q: f64| weighted_rank(&pieces, total, q);
            out.delay = Some(RenderDelay { first, p50: q(0.5), p95: q(0.95), max });
        }
        out
    }
}

struct Matched {
    delay: Option<RenderDelay>,
    negative: f64,
    painted: f64,
}

/// Time at position `x` inside a bucket covering positions `(lo, hi]` over `[t0, t1]`.
fn lerp(t0: f64, t1: f64, lo: f64, hi: f64, x: f64) -> f64 {
    if hi > lo {
        // Constant bounds: clamp's assert compiles away (cf. stats.rs).
        t0 + (t1 - t0) * ((x - lo) / (hi - lo)).clamp(0.0, 1.0)
    } else {
        t1
    }
}

/// Insertion sort by delay: ≤ 2·`MAX_BUCKETS` pieces, once per record (≤ 33k compares);
/// `sort_unstable_by` would add ~3 KB of pdqsort to the shipped wasm.
fn sort_by_delay(v: &mut [(f64, f64)]) {
    for i in 1..v.len() {
        let mut j = i;
        while j > 0 && v[j - 1].0 > v[j].0 {
            v.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// Nearest rank over weights: the smallest value whose cumulative weight reaches `q·total`
/// (shrunk by a relative 1e-12 like `LogHistogram`, so 0.95 × 100 chars is rank 95, not 96).
/// `sorted` is non-empty and ascending.
fn weighted_rank(sorted: &[(f64, f64)], total: f64, q: f64) -> f64 {
    let target = q * total * (1.0 - 1e-12);
    let mut acc = 0.0;
    for &(d, w) in sorted {
        acc += w;
        if acc >= target {
            return d;
        }
    }
    sorted.last().map_or(0.0, |s| s.0)
}

fn max_span<T: Bucket>(v: &[T]) -> f64 {
    v.iter().fold(0.0, |m, b| m.max(b.t1() - b.t0()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::util::test_rng::Rng;

    const F: f64 = FRAME_MS;


    #[derive(Clone, Copy, Debug)]
    enum Ev {
        Arrive(f64, u32),
        Paint(f64, u32),
    }

    impl Ev {
        fn t(&self) -> f64 {
            match *self {
                Ev::Arrive(t, _) | Ev::Paint(t, _) => t,
            }
        }
    }

    /// A scripted page: raw arrivals `(t, cumulative)` and the times the renderer updated the
    /// DOM (showing everything arrived by then, through `render`), each painted one frame
    /// later. Events are played in time order, arrivals first at equal times.
    fn page(arrivals: &[(f64, u32)], dom_updates: &[f64], render: impl Fn(u32) -> u32) -> Vec<Ev> {
        let mut evs: Vec<Ev> = arrivals.iter().map(|&(t, c)| Ev::Arrive(t, c)).collect();
        for &u in dom_updates {
            let shown = arrivals.iter().filter(|a| a.0 <= u).map(|a| a.1).max().unwrap_or(0);
            evs.push(Ev::Paint(u + F, render(shown)));
        }
        evs.sort_by(|a, b| {
            a.t().total_cmp(&b.t()).then((matches!(a, Ev::Paint(..)) as u8).cmp(&(matches!(b, Ev::Paint(..)) as u8)))
        });
        evs
    }

    fn play(evs: &[Ev], threshold: f64) -> PaintTracker {
        let mut p = PaintTracker::new(1000.0, threshold);
        let mut last = (0.0, 0);
        for e in evs {
            match *e {
                Ev::Arrive(t, c) => {
                    p.on_arrival(t, c);
                    last = (t, c);
                }
                Ev::Paint(t, n) => p.on_paint(t, n, 0.5),
            }
        }
        p.on_end(last.0, last.1);
        p
    }

    /// 100 tokens of 5 chars every 30 ms from t = 1500 (ttft 500 after origin 1000).
    fn steady() -> Vec<(f64, u32)> {
        (0..100).map(|i| (1500.0 + 30.0 * i as f64, 5 * (i + 1))).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn streamed_renderer() {
        let arr = steady();
        let updates: Vec<f64> = arr.iter().map(|a| a.0).collect();
        let p = play(&page(&arr, &updates, |c| c), 250.0);
        let r = p.result();
        assert_eq!(r.first_paint, Some(1500.0 + F));
        assert!(r.first_paint.unwrap() - 1500.0 <= 20.0);
        assert_eq!(r.last_paint, Some(1500.0 + 30.0 * 99.0 + F));
        let d = r.render_delay.unwrap();
        for v in [d.first, d.p50, d.p95, d.max] {
            assert!(close(v, F), "{d:?}");
        }
        assert!(d.p95 <= 20.0);
        assert_eq!(r.buffered, Some(false));
        assert_eq!(p.stalls().count, 0);
        assert_eq!((r.negative_chars, r.unpainted_chars, r.delay_error_ms), (0, 0, 0.0));
        assert_eq!(r.paint_error_ms, Some(0.5));
        assert!(!r.hidden);
        assert!(p.final_paint_seen());
    }

    #[test]
    fn buffered_renderer() {
        let arr = steady();
        let last = arr.last().unwrap().0; // 4470
        let p = play(&page(&arr, &[last], |c| c), 250.0);
        let r = p.result();
        assert_eq!(r.first_paint, Some(last + F));
        assert_eq!(r.last_paint, Some(last + F));
        let d = r.render_delay.unwrap();
        let (ttft, total) = (500.0, last - 1000.0);
        assert!(close(d.first, total - ttft + F), "{d:?}");
        assert!((d.first - (total - ttft)).abs() <= 20.0);
        // Every 5-char token waited until the end: delays 2970+F, 2940+F, …, F.
        assert!(close(d.max, d.first));
        // Nearest rank over 500 chars, ascending from the last token: rank 250 is the 50th
        // token from the end (token 50, 49 gaps before the end), rank 475 the 95th (token 5).
        assert!(close(d.p50, 30.0 * 49.0 + F), "{d:?}");
        assert!(close(d.p95, 30.0 * 94.0 + F), "{d:?}");
        assert_eq!(r.buffered, Some(true));
        // One paint, no gaps between paints: the wait is ttfp, not a stall.
        assert_eq!(p.stalls().count, 0);
    }

    #[test]
    fn throttled_renderer() {
        let arr = steady();
        let last = arr.last().unwrap().0;
        let mut updates: Vec<f64> = (0..15).map(|i| 1500.0 + 200.0 * i as f64).collect();
        updates.push(last); // the throttle's trailing flush at the end of the stream
        let p = play(&page(&arr, &updates, |c| c), 250.0);
        let r = p.result();
        let d = r.render_delay.unwrap();
        assert!((50.0..=200.0).contains(&d.p50), "{d:?}");
        assert!(d.max <= 220.0, "{d:?}");
        // Tokens at 30 ms spacing wait for the next 200 ms tick: the worst lands 10 ms after a
        // tick (30·7 = 210) and waits 190 ms, plus the frame.
        assert!(close(d.max, 190.0 + F), "{d:?}");
        assert!(close(d.first, F));
        assert_eq!(r.buffered, Some(false));
        assert_eq!(p.stalls().count, 0); // 200 ms < 250 ms threshold
        assert_eq!(r.last_paint, Some(last + F));
    }

    /// Arrivals every 40 ms; the renderer freezes 150 ms on two tokens (main thread busy) and
    /// the network goes quiet for 600 ms once. Threshold 100 ms so a 150 ms freeze is visible.
    #[test]
    fn janky_renderer_and_network_gap() {
        let mut arr = Vec::new();
        let mut t = 1500.0;
        for i in 0..60u32 {
            if i == 40 {
                t += 600.0; // scripted network stall before token 40
            }
            arr.push((t, 4 * (i + 1)));
            t += 40.0;
        }
        // Freezes start at the arrivals of tokens 10 and 25: the DOM update for them (and for
        // anything arriving meanwhile) happens 150 ms later.
        let freeze = [(1500.0 + 400.0, 150.0), (1500.0 + 1000.0, 150.0)];
        let mut updates = Vec::new();
        for &(ta, _) in &arr {
            let mut u = ta;
            for &(f0, len) in &freeze {
                if (f0..f0 + len).contains(&ta) {
                    u = f0 + len;
                }
            }
            updates.push(u);
        }
        updates.dedup();
        let p = play(&page(&arr, &updates, |c| c), 100.0);
        let s = p.stalls();
        assert_eq!((s.count, s.render, s.network), (3, 2, 1), "{:?}", s.list);
        // The freeze: last growth = token 9 painted at 1860+F; next paint 1900+150+F.
        let render: Vec<&Stall> = s.list.iter().filter(|x| x.cause == StallCause::Render).collect();
        assert!(render.iter().any(|x| close(x.start, 860.0 + F) && close(x.dur, 190.0)), "{render:?}");
        // The network gap: token 39 at 1500+39·40 = 3060, painted 3060+F; token 40 at 3700.
        let net = s.list.iter().find(|x| x.cause == StallCause::Network).unwrap();
        assert!(close(net.start, 2060.0 + F) && close(net.dur, 640.0), "{net:?}");
        let d = p.result().render_delay.unwrap();
        assert!(close(d.max, 150.0 + F), "{d:?}");
        // With the default 250 ms threshold the freezes are not stalls; the network gap is.
        let p = play(&page(&arr, &updates, |c| c), 250.0);
        assert_eq!((p.stalls().count, p.stalls().network), (1, 1));
    }

    /// A markdown renderer: `**` pairs vanish once closed; an unclosed `**` shows as text.
    fn markdown_len(raw: &str) -> u32 {
        let n = raw.chars().count() as u32;
        let pairs = raw.matches("**").count() as u32 / 2;
        n - 4 * pairs
    }

    #[test]
    fn markdown_shrinkage() {
        // Plain first half, bold-heavy second half: the closing markers arrive late, so the
        // rendered share runs ahead of the raw share early on.
        let mut text = String::new();
        for _ in 0..16 {
            text.push_str("plain txt ");
        }
        for _ in 0..20 {
            text.push_str("**bold text**");
        }
        let total = text.chars().count() as u32;
        let final_len = markdown_len(&text);
        let ratio = final_len as f64 / total as f64;
        assert!((0.78..=0.82).contains(&ratio), "{ratio}");
        // 3-char tokens every 25 ms; the renderer re-renders the whole prefix each token.
        let chars: Vec<char> = text.chars().collect();
        let mut evs = Vec::new();
        let mut t = 1500.0;
        let mut i = 0;
        while i < chars.len() {
            i = (i + 3).min(chars.len());
            let prefix: String = chars[..i].iter().collect();
            evs.push(Ev::Arrive(t, i as u32));
            evs.push(Ev::Paint(t + F, markdown_len(&prefix)));
            t += 25.0;
        }
        let last_arrival = t - 25.0;
        let p = play(&evs, 250.0);
        let r = p.result();
        assert_eq!(r.negative_chars, 0);
        let lp = r.last_paint.unwrap();
        assert!(lp >= last_arrival);
        assert!(close(lp, last_arrival + F));
        let d = r.render_delay.unwrap();
        // Each token is on screen one frame after it arrived: the mapping must say so.
        assert!(d.first >= 0.0 && close(d.p50, F) && d.p95 <= 20.0, "{d:?}");
        assert!(d.max <= 25.0 + F + 1e-9, "{d:?}");
        assert_eq!(r.unpainted_chars, 0);
        assert_eq!(r.buffered, Some(false));
        // Uniform shrinkage too: a renderer showing 80 % of every prefix still maps exactly.
        let arr = steady();
        let updates: Vec<f64> = arr.iter().map(|a| a.0).collect();
        let r = play(&page(&arr, &updates, |c| c * 4 / 5), 250.0).result();
        let d = r.render_delay.unwrap();
        assert!(close(d.p95, F) && close(d.max, F) && r.negative_chars == 0, "{d:?}");
    }

    #[test]
    fn edge_cases() {
        // No paints at all.
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(10.0, 5);
        p.on_end(20.0, 5);
        assert_eq!(p.result(), PaintResult::empty(false));
        // Paints before any arrival are ignored (placeholder text).
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_paint(5.0, 12, 1.0);
        assert_eq!(p.result().first_paint, None);
        p.on_arrival(10.0, 5);
        p.on_paint(20.0, 5, 1.0);
        let r = p.result();
        assert_eq!((r.first_paint, r.render_delay.unwrap().first), (Some(20.0), 10.0));
        // The answer fully arrived before any paint: buffered, every delay to the first paint.
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(10.0, 50);
        p.on_arrival(20.0, 100);
        p.on_end(25.0, 100);
        p.on_paint(200.0, 100, 0.0);
        let r = p.result();
        assert_eq!(r.buffered, Some(true));
        let d = r.render_delay.unwrap();
        assert_eq!((d.first, d.p50, d.p95, d.max), (190.0, 180.0, 190.0, 190.0));
        // …but one chunk painted promptly is not the UI buffering.
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(10.0, 100);
        p.on_paint(10.0 + F, 100, 0.0);
        assert_eq!(p.result().buffered, Some(false));
        // Rendered length drops (framework re-render): progress stays at the running max.
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(0.0, 10);
        p.on_paint(10.0, 10, 0.0);
        p.on_arrival(20.0, 20);
        p.on_paint(30.0, 3, 0.0); // re-render in progress
        p.on_paint(40.0, 20, 0.0);
        let d = p.result().render_delay.unwrap();
        assert_eq!((d.first, d.p50, d.max), (10.0, 10.0, 20.0));
        assert_eq!(p.result().last_paint, Some(40.0));
        // A paint read before the text arrived cannot show it: ignored.
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(100.0, 10);
        p.on_paint(90.0, 10, 0.0);
        assert_eq!(p.result().first_paint, None);
        // Negative delays (a native paint time a hair before the arrival it shows, at the
        // clock's grain): clamped to 0, counted.
        p.on_paint(104.0, 10, 4.0); // read at 100
        p.refine(99.95, 0.1);
        let r = p.result();
        assert_eq!((r.render_delay.unwrap().first, r.negative_chars), (0.0, 10));
        // on_end reports chars the arrivals missed; they arrive at t_end.
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(0.0, 10);
        p.on_paint(10.0, 10, 0.0);
        p.on_end(50.0, 20);
        assert_eq!(p.result().unpainted_chars, 10);
        assert!(!p.final_paint_seen());
        p.on_paint(60.0, 20, 0.0);
        assert!(p.final_paint_seen());
        assert_eq!((p.result().unpainted_chars, p.result().last_paint), (0, Some(60.0)));
        // The last arrival changed nothing on screen and no paint followed: the final run
        // before it stands for lastPaint.
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(0.0, 10);
        p.on_paint(10.0, 10, 0.0);
        p.on_end(30.0, 11);
        assert_eq!(p.result().last_paint, Some(10.0));
        // Element cleared at the end: no lastPaint.
        p.on_paint(40.0, 0, 0.0);
        assert_eq!(p.result().last_paint, None);
        // Garbage inputs change nothing.
        let mut p = PaintTracker::new(f64::NAN, f64::NAN);
        p.on_arrival(f64::NAN, 5);
        p.on_paint(f64::INFINITY, 5, f64::NAN);
        assert_eq!(p.result(), PaintResult::empty(false));
        assert_eq!(p.stall_threshold_ms, 250.0);
    }

    /// A gap is blamed on whichever wait the person mostly sat through.
    #[test]
    fn stall_cause_is_the_dominant_wait() {
        let gap = |wait_from: f64| {
            let mut p = PaintTracker::new(0.0, 250.0);
            p.on_arrival(0.0, 10);
            p.on_paint(10.0, 10, 0.0);
            p.on_arrival(wait_from, 20);
            p.on_paint(610.0, 20, 0.0);
            let s = p.stalls();
            assert_eq!((s.count, s.list[0].start, s.list[0].dur), (1, 10.0, 600.0));
            s.list[0].cause
        };
        // 550 ms of network silence, then a slow 50 ms paint: still a network stall.
        assert_eq!(gap(560.0), StallCause::Network);
        // Text arrived 20 ms into the gap and waited 580 ms: render.
        assert_eq!(gap(30.0), StallCause::Render);
        // Arrived one frame before the paint: network.
        assert_eq!(gap(610.0 - F), StallCause::Network);
        // A gap no arrival interrupted is not a stall (nothing more was coming yet).
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(0.0, 10);
        p.on_paint(10.0, 5, 0.0);
        p.on_paint(900.0, 10, 0.0); // typewriter catching up on text that had arrived
        assert_eq!(p.stalls().count, 0);
    }

    #[test]
    fn hidden_page() {
        let mut p = PaintTracker::new(0.0, 100.0);
        p.on_arrival(0.0, 10);
        p.on_paint(F, 10, 0.0);
        p.on_hidden(50.0);
        p.on_arrival(60.0, 20); // arrives while hidden; painted when visible again
        p.on_paint(900.0, 20, 0.0);
        let r = p.result();
        assert!(r.hidden);
        assert_eq!(p.stalls().count, 0); // the gap spans the hidden time
        assert_eq!(r.first_paint, Some(F));
    }

    /// Random schedules (including garbage) never panic and keep the invariants.
    #[test]
    fn property_random_schedules() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..300 {
            let cap = if round % 3 == 0 { 4 } else { MAX_BUCKETS };
            let mut p = PaintTracker::with_capacity(0.0, rng.unit() * 400.0, cap);
            let mut t = 0.0;
            let mut c = 0u32;
            let steps = 1 + rng.below(600);
            for _ in 0..steps {
                t += match rng.below(10) {
                    0 => -20.0 * rng.unit(), // clocks going backwards
                    1 => 800.0 * rng.unit(),
                    _ => 40.0 * rng.unit(),
                };
                match rng.below(12) {
                    0..=4 => {
                        c = c.saturating_add(rng.below(30) as u32);
                        p.on_arrival(t, c);
                    }
                    5..=9 => {
                        let shown = (c as f64 * (0.5 + rng.unit())) as u32;
                        p.on_paint(t + 20.0 * rng.unit() - 5.0, shown, rng.unit() * 4.0);
                    }
                    10 => p.on_end(t, c + rng.below(3) as u32),
                    _ => match rng.below(6) {
                        0 => p.on_hidden(t),
                        1 => p.on_arrival(f64::NAN, u32::MAX),
                        2 => p.on_paint(f64::NEG_INFINITY, 3, f64::INFINITY),
                        3 => p.on_paint(t, u32::MAX, -1.0),
                        _ => p.on_arrival(t, 0),
                    },
                }
                assert!(p.arrivals.len() <= cap && p.paints.len() <= cap);
            }
            let r = p.result();
            if let Some(d) = r.render_delay {
                for v in [d.first, d.p50, d.p95, d.max] {
                    assert!(v.is_finite() && v >= 0.0, "{d:?}");
                }
                assert!(d.p50 <= d.p95 && d.p95 <= d.max && d.first <= d.max, "{d:?}");
            }
            if let (Some(f), Some(l)) = (r.first_paint, r.last_paint) {
                assert!(l >= f, "{f} {l}");
            }
            assert_eq!(r.first_paint.is_some(), r.buffered.is_some());
            let s = p.stalls();
            assert_eq!(s.count, s.network + s.render);
            assert!(s.list.iter().all(|x| x.dur > p.stall_threshold_ms && x.dur.is_finite()));
        }
    }

    /// Sane random streams: no negative delays, and bucket coalescing stays within the bound it
    /// reports against the unbounded computation.
    #[test]
    fn coalescing_error_is_within_the_reported_bound() {
        let mut rng = Rng(42);
        for _ in 0..40 {
            let n = 200 + rng.below(2000) as usize;
            let mut arr = Vec::new();
            let (mut t, mut c) = (1000.0, 0u32);
            for _ in 0..n {
                t += if rng.below(50) == 0 { 500.0 * rng.unit() } else { 5.0 + 60.0 * rng.unit() };
                c += 1 + rng.below(20) as u32;
                arr.push((t, c));
            }
            // A renderer that sometimes freezes and sometimes throttles.
            let mut updates = Vec::new();
            let mut busy_until = 0.0f64;
            for &(ta, _) in &arr {
                let u = ta.max(busy_until);
                if rng.below(30) == 0 {
                    busy_until = u + 300.0 * rng.unit();
                }
                updates.push(u);
            }
            updates.dedup();
            let evs = page(&arr, &updates, |x| x * 9 / 10);
            let mut small = PaintTracker::new(0.0, 250.0);
            let mut exact = PaintTracker::with_capacity(0.0, 250.0, 1 << 20);
            for e in &evs {
                match *e {
                    Ev::Arrive(t, c) => {
                        small.on_arrival(t, c);
                        exact.on_arrival(t, c);
                    }
                    Ev::Paint(t, l) => {
                        small.on_paint(t, l, 0.0);
                        exact.on_paint(t, l, 0.0);
                    }
                }
            }
            let (rs, re) = (small.result(), exact.result());
            assert_eq!(re.delay_error_ms, 0.0);
            assert_eq!((re.negative_chars, rs.negative_chars), (0, 0));
            assert_eq!((rs.first_paint, rs.last_paint, rs.buffered), (re.first_paint, re.last_paint, re.buffered));
            let (ds, de) = (rs.render_delay.unwrap(), re.render_delay.unwrap());
            let bound = rs.delay_error_ms + 1e-6;
            assert_eq!(ds.first, de.first);
            for (a, b) in [(ds.p50, de.p50), (ds.p95, de.p95), (ds.max, de.max)] {
                assert!((a - b).abs() <= bound, "{ds:?} vs {de:?}, bound {bound}");
            }
            // The documented worst case: 2·D/(K−1) per list.
            let span = |v: &[f64]| 2.0 * (v.last().unwrap() - v.first().unwrap()) / (MAX_BUCKETS - 1) as f64;
            let at: Vec<f64> = arr.iter().map(|a| a.0).collect();
            let pt: Vec<f64> = evs.iter().filter_map(|e| if let Ev::Paint(t, _) = e { Some(*t) } else { None }).collect();
            assert!(max_span(&small.arrivals) <= span(&at) + 1e-9);
            assert!(max_span(&small.paints) <= span(&pt) + 1e-9);
        }
    }

    #[test]
    fn memory_is_bounded_for_100k_arrivals() {
        let mut p = PaintTracker::new(0.0, 250.0);
        let mut t = 0.0;
        for i in 1..=100_000u32 {
            t += 10.0 + (i % 7) as f64;
            p.on_arrival(t, 3 * i);
            if i % 3 == 0 {
                p.on_paint(t + F, 3 * i, 1.0);
            }
            if i % 5000 == 0 {
                p.on_paint(t + F, 1, 1.0); // a re-render flicker now and then
            }
        }
        p.on_end(t, 300_000);
        p.on_paint(t + F, 300_000, 1.0);
        for (len, capacity) in [(p.arrivals.len(), p.arrivals.capacity()), (p.paints.len(), p.paints.capacity())] {
            assert!(len <= MAX_BUCKETS && capacity <= MAX_BUCKETS, "{len} {capacity}");
        }
        assert!(p.stalls().list.len() <= crate::core::stalls::MAX_STALL_LIST);
        let r = p.result();
        let d = r.render_delay.unwrap();
        assert!(d.p50 <= d.p95 && d.p95 <= d.max);
        // Paints trail arrivals by ≤ 2 tokens (≤ 32 ms) + a frame; the reported bound covers
        // the coalescing smear on top.
        assert!(d.max <= 2.0 * 16.0 + F + r.delay_error_ms, "{d:?} {}", r.delay_error_ms);
        assert_eq!(r.last_paint, Some(t + F));
    }

    #[test]
    fn native_paint_times_refine_brackets_they_fall_in() {
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(100.0, 10);
        p.on_paint(110.0, 10, 4.0); // bracket [106, 114]
        p.on_arrival(200.0, 20);
        p.on_paint(210.0, 20, 4.0);
        p.on_end(200.0, 20);
        assert_eq!(p.result().paint_error_ms, Some(4.0));
        p.refine(150.0, 0.1); // inside no bracket: ignored
        p.refine(f64::NAN, 0.1);
        assert_eq!(p.result().first_paint, Some(110.0));
        p.refine(107.5, 0.1);
        let r = p.result();
        assert_eq!((r.first_paint, r.last_paint, r.paint_error_ms), (Some(107.5), Some(210.0), Some(4.0)));
        assert_eq!(r.render_delay.unwrap().first, 7.5);
        p.refine(212.0, 0.1);
        let r = p.result();
        assert_eq!((r.last_paint, r.paint_error_ms), (Some(212.0), Some(0.1)));
        // Refined once: a second timestamp in the old bracket does not move it again.
        p.refine(108.0, 0.1);
        assert_eq!(p.result().first_paint, Some(107.5));
        // Origin shifts move stall offsets.
        let mut p = PaintTracker::new(1000.0, 100.0);
        p.on_arrival(1100.0, 5);
        p.on_paint(1110.0, 5, 0.0);
        p.on_arrival(1500.0, 9);
        p.on_paint(1510.0, 9, 0.0);
        assert_eq!(p.stalls().list[0].start, 110.0);
        p.shift_origin(5.0);
        assert_eq!(p.stalls().list[0].start, 115.0);
    }

    #[test]
    fn a_frame_read_before_an_arrival_but_reported_after_it_is_not_the_final_paint() {
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(100.0, 10);
        p.on_paint(110.0, 10, 2.0);
        // The frame's text is read at 120 (bracket 120..124, reported as 122 ± 2); a chunk
        // task runs at 121 before the report: the last 5 chars, then the end.
        p.on_arrival(121.0, 15);
        p.on_end(121.5, 15);
        p.on_paint(122.0, 10, 2.0);
        assert!(!p.final_paint_seen(), "the frame was read before the last arrival");
        p.on_paint(140.0, 15, 2.0);
        assert!(p.final_paint_seen());
        let r = p.result();
        assert_eq!(r.last_paint, Some(140.0));
        // The stale frame is capped at what had arrived when it was read (10 chars).
        let d = r.render_delay.unwrap();
        assert_eq!((d.first, d.max), (10.0, 19.0));
        // A frame read before any arrival shows no answer text (a placeholder).
        let mut p = PaintTracker::new(0.0, 250.0);
        p.on_arrival(100.0, 3);
        p.on_paint(101.0, 8, 2.0); // read at 99
        assert_eq!(p.result().first_paint, None);
    }
}
