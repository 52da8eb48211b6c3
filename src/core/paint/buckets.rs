//! Bounded arrival and paint lists for the paint tracker.
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

/// Bucket bound per list (arrivals, paints). See the module docs for the error it implies.
pub const MAX_BUCKETS: usize = 128;

/// Raw chars `(previous bucket's chars, chars]` arrived during `[t0, t1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ArrivalBucket {
    pub(crate) t0: f64,
    pub(crate) t1: f64,
    pub(crate) chars: u64,
}

/// Paints during `[t0, t1]`; the last of them showed `rendered` (running max) chars and was
/// reported when `arrived` raw chars had arrived. Progress is derived from both in `result()`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PaintBucket {
    pub(crate) t0: f64,
    pub(crate) t1: f64,
    pub(crate) rendered: u64,
    pub(crate) arrived: u64,
    pub(crate) err: f64,
    /// Raw progress located by a text probe (`stream/tail.rs`), when one matched.
    pub(crate) probed: Option<u64>,
}

pub(crate) trait Bucket: Copy {
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
pub(crate) fn push_coalescing<T: Bucket>(v: &mut Vec<T>, cap: usize, item: T) {
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

pub(crate) fn max_span<T: Bucket>(v: &[T]) -> f64 {
    v.iter().fold(0.0, |m, b| m.max(b.t1() - b.t0()))
}
