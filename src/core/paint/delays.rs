//! `renderDelay`: how long each unit of answer text waited between arriving and being painted.
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

use alloc::vec::Vec;
use crate::core::paint::buckets::{ArrivalBucket, PaintBucket};

/// `renderDelay`, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RenderDelay {
    pub first: f64,
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

/// Walks the arrival and paint step functions together over raw-char positions `x`
/// (piecewise linear inside coalesced buckets) and collects char-weighted delays.
pub(crate) fn match_delays(arrivals: &[ArrivalBucket], paints: &[PaintBucket], a_fin: f64, r_fin: f64) -> Matched {
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
    let mut pieces: Vec<(f64, f64)> = Vec::with_capacity(arrivals.len() + paints.len());
    let (mut ai, mut pi) = (0usize, 0usize);
    let (mut a_lo, mut p_lo) = (0.0f64, 0.0f64);
    let mut p_hi = match paints.first() {
        Some(b) => progress(b, 0.0),
        None => return out,
    };
    let mut x = 0.0f64;
    let mut first: Option<f64> = None;
    let mut max = 0.0f64;
    while let (Some(a), Some(p)) = (arrivals.get(ai), paints.get(pi)) {
        let a_hi = a.chars as f64;
        if a_hi <= x {
            a_lo = a_hi;
            ai += 1;
            continue;
        }
        if p_hi <= x {
            p_lo = p_hi;
            pi += 1;
            if let Some(n) = paints.get(pi) {
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

pub(crate) struct Matched {
    pub delay: Option<RenderDelay>,
    pub negative: f64,
    pub painted: f64,
}

/// Time at position `x` inside a bucket covering positions `(lo, hi]` over `[t0, t1]`.
fn lerp(t0: f64, t1: f64, lo: f64, hi: f64, x: f64) -> f64 {
    if hi > lo {
        // Constant bounds: clamp's assert compiles away (cf. request/histogram.rs).
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
