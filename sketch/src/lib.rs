//! llm-rum-sketch: streaming quantiles with O(1) memory in the number of samples — the SDK
//! core's record `itl` `{p50, p95, p99, max}` over an answer of any length (its memory per
//! request bounded whatever the answer length), and the collector's rollups, which merge and
//! store these sketches. A crate of its own so both depend on it, neither on the other's
//! internals. `no_std` + `alloc` (the shipped wasm has no std).
//!
//! `LogHistogram` is a DDSketch-style logarithmic histogram (Masson, Rim, Lee: "DDSketch: A Fast
//! and Fully-Mergeable Quantile Sketch with Relative-Error Guarantees", VLDB 2019): a value `v`
//! goes to bucket `k = ceil(log_γ v)`, i.e. bucket `k` holds `(γ^(k-1), γ^k]`, with
//! `γ = (1+α)/(1-α)`. Answering with the bucket's representative `2γ^k/(γ+1) = (1-α)·γ^k` is
//! within relative error α of every value in the bucket.
//!
//! Parameters (all fixed, so memory is fixed):
//! * α = 1 %.
//! * Values below `FLOOR` (0.01 ms = 10 µs, far below any clock the browser gives us) share a
//!   zero bucket and are reported as within ±`FLOOR` (absolute), not α (relative).
//! * Buckets cover `[FLOOR, γ^KEY_MAX ≈ 1.0024e7 ms]` (~2.8 hours). Larger finite values clamp
//!   into the top bucket (their quantile estimate is then only bounded below by ~1e7), but
//!   `max()` and `sum()` stay exact.
//! * That is `BUCKETS` = 1037 buckets of `u32`. The counts live in a `Vec` sized lazily to the
//!   span of keys actually seen (plus ≤ 25 % growth slack), so an answer whose gaps span one
//!   decade (e.g. 10–100 ms) uses ~116–165 buckets (≈ 0.5–0.7 KB); the hard ceiling is
//!   1037 × 4 = 4148 bytes of counts plus the struct itself (48 bytes on wasm32, 64 on
//!   64-bit targets).
//!
//! The logarithm is `f64::ln` (≈ 0.45 KB of wasm from compiler-builtins' libm, measured) and the
//! representative uses `f64::powi` (a square-and-multiply loop, ≈ 0.13 KB); `exp` (≈ 0.7 KB) and
//! `str::parse`/`fmt` are not linked.

#![cfg_attr(not(test), no_std)]
extern crate alloc;

pub mod math;

// The core's test PRNG, included by path (as the workspace's tests/ do): one PRNG for every
// random case.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../src/core/util/test_rng.rs"]
mod test_rng;

use alloc::{vec::Vec, vec};
/// Relative accuracy α of `quantile` for values ≥ `FLOOR`.
pub const ALPHA: f64 = 0.01;
/// Values below this (ms) go to the zero bucket; their estimates are within ±`FLOOR`.
pub const FLOOR: f64 = 0.01;
/// γ = (1+α)/(1−α).
const GAMMA: f64 = 1.020_202_020_202_02;
/// 1 / ln γ (checked against `GAMMA.ln()` in the tests).
const INV_LN_GAMMA: f64 = 49.998_333_288_886_78;
/// ceil(log_γ FLOOR): the lowest bucket key.
const KEY_MIN: i32 = -230;
/// ceil(log_γ 1e7): the highest bucket key; γ^806 ≈ 1.0024e7.
const KEY_MAX: i32 = 806;
/// Number of non-zero buckets, the bound on `counts.len()`.
pub const BUCKETS: usize = (KEY_MAX - KEY_MIN + 1) as usize;

/// Streaming quantile estimator for non-negative millisecond values (inter-token gaps, render
/// delays). See the module docs for the error bound and memory.
#[derive(Clone, Debug, Default)]
pub struct LogHistogram {
    /// `counts[i]` is the number of samples with key `base + i`. Never longer than `BUCKETS`.
    counts: Vec<u32>,
    /// Key of `counts[0]` (meaningless while `counts` is empty).
    base: i32,
    /// Samples in `[0, FLOOR)`.
    zero: u32,
    n: u32,
    min: f64,
    max: f64,
    sum: f64,
}

/// Bucket key of a value `v >= FLOOR` (finite), clamped to `[KEY_MIN, KEY_MAX]`.
#[inline]
fn key_of(v: f64) -> i32 {
    // `as i32` saturates (never UB, never panics); the clamp absorbs the top-bucket overflow
    // and any 1-ulp rounding of ln at the FLOOR boundary.
    let k = math::ceil(math::ln(v) * INV_LN_GAMMA) as i32;
    k.clamp(KEY_MIN, KEY_MAX)
}

/// The representative value of bucket `k`: (1−α)·γ^k = 2γ^k/(γ+1), the point whose relative
/// distance to both ends of `(γ^(k-1), γ^k]` is α.
#[inline]
fn representative(k: i32) -> f64 {
    (1.0 - ALPHA) * math::powi(GAMMA, k)
}

/// The nearest rank of quantile `q` among `n` samples: `ceil(q·n)` clamped to `[1, n]`.
///
/// `q·n` is computed in binary floating point, so a decimal `q` can land a hair above an integer
/// (0.07 × 100 = 7.000000000000001); the product is shrunk by a relative 1e-12 before `ceil` so
/// such cases keep the rank a decimal reading gives (7, not 8). `None` for NaN `q`.
fn nearest_rank(q: f64, n: u32) -> Option<u32> {
    if q.is_nan() || n == 0 {
        return None;
    }
    let q = q.clamp(0.0, 1.0); // constant bounds: clamp's assert compiles away
    let x = q * n as f64;
    let r = math::ceil(x - x * 1e-12) as u32; // saturating cast; x <= n < 2^32
    Some(r.max(1).min(n))
}

impl LogHistogram {
    pub const fn new() -> Self {
        LogHistogram { counts: Vec::new(), base: 0, zero: 0, n: 0, min: 0.0, max: 0.0, sum: 0.0 }
    }

    /// Adds one sample (milliseconds).
    ///
    /// NaN, negative and infinite values are ignored (they can only come from a clock bug, and
    /// one of them would poison `sum`/`max`). `-0.0` counts as 0. Once `count()` reaches
    /// `u32::MAX` further samples are ignored, so every statistic stays consistent.
    pub fn record(&mut self, v: f64) {
        // `contains` is false for NaN as well as for negative and infinite values.
        if !(0.0..f64::INFINITY).contains(&v) || self.n == u32::MAX {
            return;
        }
        let v = v + 0.0; // -0.0 → +0.0, so min/max never print "-0"
        if self.n == 0 {
            self.min = v;
            self.max = v;
        } else {
            if v < self.min {
                self.min = v;
            }
            if v > self.max {
                self.max = v;
            }
        }
        self.n += 1;
        self.sum += v;
        if v < FLOOR {
            self.zero += 1;
            return;
        }
        let k = key_of(v);
        self.cover(k);
        if let Some(c) = self.counts.get_mut((k - self.base) as usize) {
            *c = c.saturating_add(1);
        }
    }

    /// Grows the window of counts so it covers key `k`.
    ///
    /// The window grows by at least `SLACK` (or a quarter of its length) in the needed direction so a
    /// slowly drifting range does not reallocate on every sample, but never past
    /// `[KEY_MIN, KEY_MAX]`, and capacity is requested exactly, so `counts` never holds more
    /// than `BUCKETS` entries. Each growth is O(BUCKETS) and there are at most ~20 of them
    /// per direction (geometric growth from 17 to 1037 buckets).
    fn cover(&mut self, k: i32) {
        const SLACK: i32 = 8;
        let len = self.counts.len() as i32;
        if len == 0 {
            let lo = (k - SLACK).max(KEY_MIN);
            let hi = (k + SLACK).min(KEY_MAX);
            self.base = lo;
            self.counts = vec![0; (hi - lo + 1) as usize];
        } else if k < self.base {
            let new_base = (k - SLACK.max(len / 4)).max(KEY_MIN);
            let extra = (self.base - new_base) as usize;
            let mut grown = Vec::with_capacity(extra + self.counts.len());
            grown.resize(extra, 0);
            grown.extend_from_slice(&self.counts);
            self.counts = grown;
            self.base = new_base;
        } else if k >= self.base + len {
            let new_top = (k + SLACK.max(len / 4)).min(KEY_MAX);
            let new_len = (new_top - self.base + 1) as usize;
            self.counts.reserve_exact(new_len - self.counts.len());
            self.counts.resize(new_len, 0);
        }
    }

    /// Number of samples recorded (ignored values not included).
    pub fn count(&self) -> u32 {
        self.n
    }

    /// Samples at most `v` ms, counting the bucket that holds `v` whole: a sample up to 2α
    /// (2 %) above `v` counts as at most `v`, never one below `v` as above it. What the record's
    /// `itl.buckets` (OpenTelemetry GenAI's `time_per_output_chunk` boundaries) are made of.
    pub fn count_le(&self, v: f64) -> u32 {
        if !(v >= FLOOR) {
            return if v >= 0.0 { self.zero } else { 0 };
        }
        let upto = (key_of(v) - self.base + 1).clamp(0, self.counts.len() as i32) as usize;
        self.counts[..upto].iter().fold(self.zero, |a, c| a.saturating_add(*c))
    }

    /// Exact smallest sample, `None` when empty.
    pub fn min(&self) -> Option<f64> {
        (self.n > 0).then_some(self.min)
    }

    /// Exact largest sample, `None` when empty.
    pub fn max(&self) -> Option<f64> {
        (self.n > 0).then_some(self.max)
    }

    /// Sum of the samples as accumulated in f64 (exact up to ordinary f64 rounding; no bucket
    /// error). 0 when empty.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// Estimated `q`-quantile, `None` when empty or `q` is NaN; `q` is clamped to `[0, 1]`.
    ///
    /// Definition (nearest rank): with `n` samples sorted ascending `x₁ ≤ … ≤ xₙ`, the answer
    /// estimates `x_r` with `r = max(1, ceil(q·n))` (see `nearest_rank` for the rounding
    /// guard). `r = 1` returns the exact `min()`, `r = n` the exact `max()`. Otherwise it
    /// returns the representative of `x_r`'s bucket, clamped to `[min, max]`, so
    /// `|estimate − x_r| ≤ α·x_r` for `FLOOR ≤ x_r ≤ 1e7`, `≤ FLOOR` for `x_r < FLOOR`, plus
    /// float rounding (~1e-14 relative).
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let r = nearest_rank(q, self.n)?;
        if r == 1 {
            return Some(self.min);
        }
        if r == self.n {
            return Some(self.max);
        }
        let mut acc = self.zero;
        if r <= acc {
            // Somewhere in [0, FLOOR): 0 clamped to min, i.e. min itself.
            return Some(self.min);
        }
        for (i, &c) in self.counts.iter().enumerate() {
            acc = acc.saturating_add(c);
            if r <= acc {
                // i < BUCKETS, so no overflow. max/min rather than `clamp`: with non-constant
                // bounds `f64::clamp` keeps an assert whose message formats floats (~20 KB of
                // wasm, measured).
                let key = self.base + i as i32;
                return Some(representative(key).max(self.min).min(self.max));
            }
        }
        // Unreachable while counts add up to n; the max is the safe answer.
        Some(self.max)
    }

    /// Heap bytes held by the bucket counts (≤ `BUCKETS * 4`), for tests and memory budgets.
    pub fn heap_bytes(&self) -> usize {
        self.counts.capacity() * core::mem::size_of::<u32>()
    }
}

/// Merging and storage, for the collector's rollups (the collector's `store/sqlite/rollup.rs`): many sketches of
/// the same parameters add up to the sketch of all their samples, so a window's percentiles
/// come from merging per-minute sketches instead of re-reading every value.
impl LogHistogram {
    /// Adds every sample of `other` (the DDSketch merge: bucket counts add up). The result is
    /// the sketch the union of both sample sets would have produced: same counts, `min`, `max`
    /// and `count`, and `sum` up to float rounding. Counts saturate at `u32::MAX`.
    pub fn merge(&mut self, other: &LogHistogram) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            self.min = other.min;
            self.max = other.max;
        } else {
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
        }
        self.n = self.n.saturating_add(other.n);
        self.zero = self.zero.saturating_add(other.zero);
        self.sum += other.sum;
        let Some((lo, hi)) = other.key_span() else { return };
        self.cover(lo);
        self.cover(hi);
        for k in lo..=hi {
            let c = other.counts[(k - other.base) as usize];
            if c > 0 {
                if let Some(s) = self.counts.get_mut((k - self.base) as usize) {
                    *s = s.saturating_add(c);
                }
            }
        }
    }

    /// Takes `other`'s samples back out of a sketch they were merged into (a stored record that
    /// is replaced by a newer version of itself). Counts, `count` and `sum` go back exactly
    /// (counts saturate at 0 if `other` was never merged). `min`/`max` cannot be restored from
    /// a sketch: when `other` held the extreme, it becomes its bucket's representative — still
    /// within α of the true extreme, so every quantile keeps its documented bound.
    pub fn subtract(&mut self, other: &LogHistogram) {
        if other.n == 0 || self.n == 0 {
            return;
        }
        if other.n >= self.n {
            *self = LogHistogram::new();
            return;
        }
        self.n -= other.n;
        self.zero = self.zero.saturating_sub(other.zero);
        self.sum = (self.sum - other.sum).max(0.0);
        if let Some((lo, hi)) = other.key_span() {
            for k in lo..=hi {
                let c = other.counts[(k - other.base) as usize];
                if let Some(s) = k
                    .checked_sub(self.base)
                    .and_then(|i| self.counts.get_mut(i as usize))
                {
                    *s = s.saturating_sub(c);
                }
            }
        }
        if other.min <= self.min {
            self.min = match (self.zero, self.key_span()) {
                (0, Some((lo, _))) => representative(lo),
                _ => self.min, // a sample below FLOOR remains: within ±FLOOR either way
            };
        }
        if other.max >= self.max {
            if let Some((_, hi)) = self.key_span() {
                self.max = representative(hi).max(self.min);
            } else {
                self.max = FLOOR.min(self.max).max(self.min);
            }
        }
    }

    /// Lowest and highest key with a non-zero count.
    fn key_span(&self) -> Option<(i32, i32)> {
        let first = self.counts.iter().position(|&c| c > 0)?;
        let last = self.counts.iter().rposition(|&c| c > 0)?;
        Some((self.base + first as i32, self.base + last as i32))
    }

    /// Non-empty buckets in ascending order as `(value, count)`: the bucket's representative
    /// clamped to `[min, max]` (samples below `FLOOR` report as `min`). For drawing a
    /// distribution from a sketch; every sample is within α (or ±`FLOOR`) of its value.
    pub fn buckets(&self) -> impl Iterator<Item = (f64, u32)> + '_ {
        let zero = (self.zero > 0).then_some((self.min, self.zero));
        let rest = self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(move |(i, &c)| {
            (representative(self.base + i as i32).max(self.min).min(self.max), c)
        });
        zero.into_iter().chain(rest)
    }

    /// Appends the compact binary form (`ENCODING` 1): version byte, `count`; then, when not
    /// empty, `min`/`max`/`sum` as little-endian f64, the zero bucket, and the non-zero span of
    /// counts as LEB128 varints with runs of empty buckets written as `0, run length`. A typical
    /// rollup sketch (a few hundred samples within two decades) takes 100–300 bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(ENCODING);
        put_varint(out, self.n as u64);
        if self.n == 0 {
            return;
        }
        for x in [self.min, self.max, self.sum] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        put_varint(out, self.zero as u64);
        let Some((lo, hi)) = self.key_span() else {
            put_varint(out, 0);
            return;
        };
        put_varint(out, (hi - lo + 1) as u64);
        put_varint(out, ((lo << 1) ^ (lo >> 31)) as u32 as u64); // zigzag
        let mut run = 0u64;
        for k in lo..=hi {
            let c = self.counts[(k - self.base) as usize];
            if c == 0 {
                run += 1;
                continue;
            }
            if run > 0 {
                out.push(0);
                put_varint(out, run);
                run = 0;
            }
            put_varint(out, c as u64);
        }
    }

    /// Reads one sketch written by `encode` from the front of `buf`; returns it and the bytes
    /// consumed. `None` for anything `encode` cannot have produced (unknown version, truncated,
    /// keys out of range, counts that do not add up to `count`, non-finite or negative
    /// extremes), so a damaged row can never yield a sketch that breaks `quantile`.
    pub fn decode(buf: &[u8]) -> Option<(LogHistogram, usize)> {
        let mut at = 0usize;
        if *buf.first()? != ENCODING {
            return None;
        }
        at += 1;
        let n = u32::try_from(get_varint(buf, &mut at)?).ok()?;
        let mut h = LogHistogram::new();
        if n == 0 {
            return Some((h, at));
        }
        let mut f = [0.0f64; 3];
        for x in f.iter_mut() {
            let b: [u8; 8] = buf.get(at..at + 8)?.try_into().ok()?;
            *x = f64::from_le_bytes(b);
            at += 8;
        }
        let [min, max, sum] = f;
        if !(min >= 0.0 && min <= max && max.is_finite() && sum >= 0.0) {
            return None;
        }
        let zero = u32::try_from(get_varint(buf, &mut at)?).ok()?;
        let span = get_varint(buf, &mut at)?;
        let mut total = zero as u64;
        if span > 0 {
            if span > BUCKETS as u64 {
                return None;
            }
            let z = get_varint(buf, &mut at)? as u32;
            let lo = ((z >> 1) as i32) ^ -((z & 1) as i32);
            let hi = lo.checked_add(span as i32 - 1)?;
            if lo < KEY_MIN || hi > KEY_MAX {
                return None;
            }
            h.base = lo;
            h.counts = vec![0; span as usize];
            let mut i = 0usize;
            while i < span as usize {
                let v = get_varint(buf, &mut at)?;
                if v == 0 {
                    let run = get_varint(buf, &mut at)?;
                    i = i.checked_add(usize::try_from(run).ok()?)?;
                    continue;
                }
                *h.counts.get_mut(i)? = u32::try_from(v).ok()?;
                total += v;
                i += 1;
            }
            if i != span as usize || h.counts[span as usize - 1] == 0 {
                return None;
            }
        }
        if total != n as u64 {
            return None;
        }
        h.n = n;
        h.zero = zero;
        h.min = min;
        h.max = max;
        h.sum = sum;
        Some((h, at))
    }
}

/// Version byte of `LogHistogram::encode`'s format.
const ENCODING: u8 = 1;

/// Appends `v` as an unsigned LEB128 varint (also used by the collector's stored aggregates).
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads an unsigned LEB128 varint at `*at`, advancing it; `None` when truncated or too long.
pub fn get_varint(buf: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*at)?;
        *at += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;


    fn exact(sorted: &[f64], q: f64) -> f64 {
        let r = nearest_rank(q, sorted.len() as u32).unwrap();
        sorted[r as usize - 1]
    }

    const QS: [f64; 14] =
        [0.0, 0.001, 0.01, 0.07, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0];

    fn check(values: &[f64]) {
        let mut h = LogHistogram::new();
        for &v in values {
            h.record(v);
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(h.count() as usize, values.len());
        assert_eq!(h.min(), sorted.first().copied());
        assert_eq!(h.max(), sorted.last().copied());
        assert!(h.heap_bytes() <= BUCKETS * 4, "{}", h.heap_bytes());
        for q in QS {
            let est = h.quantile(q).unwrap();
            let ex = exact(&sorted, q);
            assert!(
                (est - ex).abs() <= ALPHA * ex + FLOOR,
                "q={q} est={est} exact={ex} n={}",
                values.len()
            );
        }
    }

    #[test]
    fn constants_match_their_definitions() {
        let g = (1.0 + ALPHA) / (1.0 - ALPHA);
        assert!((GAMMA - g).abs() < 1e-15);
        assert!((INV_LN_GAMMA - 1.0 / g.ln()).abs() < 1e-9);
        assert_eq!(KEY_MIN, (FLOOR.ln() / g.ln()).ceil() as i32);
        assert_eq!(KEY_MAX, (1e7f64.ln() / g.ln()).ceil() as i32);
        assert_eq!(BUCKETS, 1037);
        assert!(GAMMA.powi(KEY_MAX) >= 1e7);
    }

    #[test]
    fn representative_is_within_alpha_of_its_bucket() {
        for k in [KEY_MIN, -1, 0, 1, 100, KEY_MAX] {
            let hi = GAMMA.powi(k);
            let lo = GAMMA.powi(k - 1);
            let r = representative(k);
            assert!((r - hi).abs() <= ALPHA * hi * (1.0 + 1e-12));
            assert!((r - lo).abs() <= ALPHA * lo * (1.0 + 1e-12));
        }
        // Every value maps to a bucket whose representative is within α (sweep 1e-2..1e7).
        let mut v = FLOOR;
        while v < 1e7 {
            let r = representative(key_of(v));
            assert!((r - v).abs() <= ALPHA * v * (1.0 + 1e-9), "v={v} r={r}");
            v *= 1.000_37;
        }
    }

    #[test]
    fn nearest_rank_definition() {
        assert_eq!(nearest_rank(0.0, 10), Some(1));
        assert_eq!(nearest_rank(-3.0, 10), Some(1));
        assert_eq!(nearest_rank(1.0, 10), Some(10));
        assert_eq!(nearest_rank(7.0, 10), Some(10));
        assert_eq!(nearest_rank(0.5, 4), Some(2));
        assert_eq!(nearest_rank(0.5, 3), Some(2));
        assert_eq!(nearest_rank(0.07, 100), Some(7));
        assert_eq!(nearest_rank(0.95, 100), Some(95));
        assert_eq!(nearest_rank(0.99, 100), Some(99));
        assert_eq!(nearest_rank(0.951, 100), Some(96));
        assert_eq!(nearest_rank(0.5, u32::MAX), Some(u32::MAX / 2 + 1));
        assert_eq!(nearest_rank(f64::NAN, 10), None);
        assert_eq!(nearest_rank(0.5, 0), None);
    }

    #[test]
    fn empty() {
        let h = LogHistogram::new();
        assert_eq!(h.count(), 0);
        assert_eq!(h.quantile(0.5), None);
        assert_eq!(h.quantile(0.0), None);
        assert_eq!(h.min(), None);
        assert_eq!(h.max(), None);
        assert_eq!(h.sum(), 0.0);
        assert_eq!(h.heap_bytes(), 0);
    }

    #[test]
    fn one_sample_is_exact() {
        for v in [0.0, 0.004, 0.01, 1.0, 37.25, 1e7, 1e12] {
            let mut h = LogHistogram::new();
            h.record(v);
            for q in QS {
                assert_eq!(h.quantile(q), Some(v));
            }
            assert_eq!((h.min(), h.max(), h.sum(), h.count()), (Some(v), Some(v), v, 1));
        }
    }

    #[test]
    fn ignores_invalid_values() {
        let mut h = LogHistogram::new();
        for v in [f64::NAN, -1.0, -1e-300, f64::INFINITY, f64::NEG_INFINITY] {
            h.record(v);
        }
        assert_eq!(h.count(), 0);
        h.record(-0.0);
        h.record(5.0);
        assert_eq!(h.count(), 2);
        assert!(h.min().unwrap().is_sign_positive());
        assert_eq!(h.sum(), 5.0);
        assert_eq!(h.quantile(f64::NAN), None);
    }

    #[test]
    fn zeros_and_huge_values() {
        let mut h = LogHistogram::new();
        for _ in 0..10 {
            h.record(0.0);
        }
        for _ in 0..10 {
            h.record(0.009);
        }
        for _ in 0..10 {
            h.record(f64::MAX);
        }
        assert_eq!(h.count(), 30);
        assert_eq!(h.quantile(0.0), Some(0.0));
        assert!(h.quantile(0.5).unwrap() <= FLOOR);
        assert_eq!(h.quantile(1.0), Some(f64::MAX));
        // The 25th value is huge: clamped into the top bucket, estimate ~1e7 (documented).
        let p = h.quantile(0.8).unwrap();
        assert!((9.8e6..=1.01e7).contains(&p), "{p}");
        assert_eq!(h.max(), Some(f64::MAX));
        assert!(h.heap_bytes() <= BUCKETS * 4);
        assert!(h.sum().is_infinite()); // 10 × f64::MAX overflows; documented as f64 sum.
    }

    #[test]
    fn memory_is_bounded_by_bucket_count() {
        let mut h = LogHistogram::new();
        // Walk from the top down so every record prepends: the worst case for the Vec.
        let mut v = 2e7;
        while v > 1e-4 {
            h.record(v);
            v /= 1.01;
        }
        assert!(h.counts.len() <= BUCKETS);
        assert!(h.heap_bytes() <= BUCKETS * 4);
        // A typical answer: gaps within one decade use a tenth of that.
        let mut t = LogHistogram::new();
        let mut rng = Rng(7);
        for _ in 0..10_000 {
            t.record(10.0 + 90.0 * rng.unit());
        }
        assert!(t.heap_bytes() <= 800, "{}", t.heap_bytes());
    }

    #[test]
    fn uniform() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let v: Vec<f64> = (0..50_000).map(|_| rng.unit() * 500.0).collect();
        check(&v);
    }

    #[test]
    fn log_normal() {
        let mut rng = Rng(42);
        // Median ~30 ms with a long tail: what inter-token gaps look like.
        let v: Vec<f64> = (0..50_000).map(|_| (3.4 + 0.9 * rng.normal()).exp()).collect();
        check(&v);
    }

    #[test]
    fn count_le_is_exact_but_for_the_bucket_holding_the_bound() {
        let mut rng = Rng(7);
        let v: Vec<f64> = (0..20_000).map(|_| (3.4 + 1.2 * rng.normal()).exp()).collect();
        let mut h = LogHistogram::new();
        v.iter().for_each(|&x| h.record(x));
        for b in [0.005, 10.0, 20.0, 40.0, 80.0, 160.0, 1e6] {
            let below = v.iter().filter(|&&x| x <= b).count() as u32;
            let slack = v.iter().filter(|&&x| x <= b * (1.0 + 2.0 * ALPHA)).count() as u32;
            let c = h.count_le(b);
            assert!(below <= c && c <= slack, "≤{b}: {c} not in [{below}, {slack}]");
        }
        assert_eq!(h.count_le(f64::NAN), 0);
        assert_eq!(h.count_le(f64::INFINITY), h.count());
    }

    #[test]
    fn constant() {
        check(&vec![42.0; 1000]);
        check(&vec![0.0; 1000]);
        check(&vec![0.005; 1000]);
    }

    #[test]
    fn two_spikes() {
        let mut v = vec![20.0; 900];
        v.extend(std::iter::repeat_n(1500.0, 100));
        check(&v);
        // Many tiny values and a few huge ones in between the spikes' boundary.
        let mut w = vec![0.003; 500];
        w.extend(std::iter::repeat_n(3_600_000.0, 500));
        check(&w);
    }

    #[test]
    fn small_counts() {
        check(&[1.0, 2.0]);
        check(&[5.0, 1.0, 3.0]);
        check(&[0.0, 1e-3, 0.02, 7.7, 123.0, 4567.0, 98765.0, 1e6]);
    }

    #[test]
    fn a_million_samples() {
        let mut rng = Rng(12345);
        let v: Vec<f64> = (0..1_000_000)
            .map(|i| {
                if i % 10 == 0 {
                    (6.0 + 1.5 * rng.normal()).exp() // slow tail
                } else {
                    (3.0 + 0.5 * rng.normal()).exp()
                }
            })
            .collect();
        check(&v);
        let mut h = LogHistogram::new();
        for &x in &v {
            h.record(x);
        }
        let exact_sum: f64 = v.iter().sum();
        assert_eq!(h.sum(), exact_sum);
    }

    // ---- merge, subtract, encode (the collector's rollups) ----

    fn sketch(values: &[f64]) -> LogHistogram {
        let mut h = LogHistogram::new();
        values.iter().for_each(|&v| h.record(v));
        h
    }

    /// Everything observable about a sketch: equal for equal sample multisets.
    fn same(a: &LogHistogram, b: &LogHistogram) {
        assert_eq!((a.count(), a.min(), a.max(), a.zero), (b.count(), b.min(), b.max(), b.zero));
        assert!((a.sum() - b.sum()).abs() <= 1e-9 * a.sum().abs().max(1.0), "{} {}", a.sum(), b.sum());
        assert_eq!(a.buckets().collect::<Vec<_>>(), b.buckets().collect::<Vec<_>>());
        for q in QS {
            assert_eq!(a.quantile(q), b.quantile(q), "q={q}");
        }
    }

    #[test]
    fn merged_parts_equal_the_whole() {
        let mut rng = Rng(99);
        let v: Vec<f64> = (0..20_000)
            .map(|i| match i % 7 {
                0 => 0.0,
                1 => 0.004,
                2 => (7.0 + 2.0 * rng.normal()).exp(),
                _ => (4.0 + 0.7 * rng.normal()).exp(),
            })
            .collect();
        let whole = sketch(&v);
        // Uneven parts, merged in an order that grows the window both ways.
        let mut merged = LogHistogram::new();
        for part in [&v[15_000..], &v[..10], &v[10..9_000], &v[9_000..15_000], &[][..]] {
            merged.merge(&sketch(part));
        }
        same(&merged, &whole);
        check_against(&merged, &v);
        merged.merge(&LogHistogram::new());
        same(&merged, &whole);
    }

    fn check_against(h: &LogHistogram, values: &[f64]) {
        let mut sorted = values.to_vec();
        sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
        for q in QS {
            let (est, ex) = (h.quantile(q).unwrap(), exact(&sorted, q));
            assert!((est - ex).abs() <= ALPHA * ex + FLOOR, "q={q} est={est} exact={ex}");
        }
    }

    #[test]
    fn subtract_takes_samples_back_out_within_the_bound() {
        let mut rng = Rng(5);
        let keep: Vec<f64> = (0..3_000).map(|_| 20.0 + rng.float(400.0)).collect();
        // The extremes are in the part taken out: min/max become bucket estimates.
        let gone = [0.5, 5_000.0, 77.0];
        let mut h = sketch(&keep);
        h.merge(&sketch(&gone));
        for g in gone {
            h.subtract(&sketch(&[g]));
        }
        assert_eq!(h.count() as usize, keep.len());
        assert!((h.sum() - keep.iter().sum::<f64>()).abs() < 1e-6);
        check_against(&h, &keep);
        // Non-extreme removals keep min/max exact.
        let mut h = sketch(&[1.0, 50.0, 100.0]);
        h.subtract(&sketch(&[50.0]));
        assert_eq!((h.min(), h.max(), h.count()), (Some(1.0), Some(100.0), 2));
        // Everything out: empty again; more than was in: empty, never negative.
        h.subtract(&sketch(&[1.0, 100.0]));
        assert_eq!((h.count(), h.quantile(0.5), h.sum()), (0, None, 0.0));
        let mut z = sketch(&[0.001, 3.0]);
        z.subtract(&sketch(&[3.0]));
        assert_eq!((z.count(), z.quantile(1.0)), (1, Some(0.001)));
    }

    #[test]
    fn encode_round_trips_and_is_compact() {
        let mut rng = Rng(11);
        let cases: Vec<Vec<f64>> = vec![
            vec![],
            vec![0.0],
            vec![0.003, 0.002],
            vec![37.25],
            vec![f64::MAX, 1.0],
            (0..500).map(|_| (5.0 + rng.normal()).exp()).collect(),
            (0..50).map(|i| if i % 2 == 0 { 0.02 } else { 9e6 }).collect(),
        ];
        for v in &cases {
            let h = sketch(v);
            let mut buf = vec![0xAB]; // appends after what is there
            h.encode(&mut buf);
            let (d, used) = LogHistogram::decode(&buf[1..]).unwrap();
            assert_eq!(used, buf.len() - 1);
            same(&d, &h);
            // Two in a row decode one after the other.
            let mut two = Vec::new();
            h.encode(&mut two);
            sketch(&[1.0]).encode(&mut two);
            let (a, n) = LogHistogram::decode(&two).unwrap();
            let (b, _) = LogHistogram::decode(&two[n..]).unwrap();
            assert_eq!((a.count(), b.count()), (h.count(), 1));
        }
        let mut buf = Vec::new();
        sketch(&cases[5]).encode(&mut buf);
        assert!(buf.len() < 400, "500 log-normal samples took {} bytes", buf.len());
    }

    #[test]
    fn decode_refuses_what_encode_cannot_produce() {
        let mut good = Vec::new();
        sketch(&[1.0, 2.0, 300.0, 0.001]).encode(&mut good);
        assert!(LogHistogram::decode(&good).is_some());
        // Every truncation fails; no byte flip panics, and whatever decodes is consistent.
        for cut in 0..good.len() {
            assert!(LogHistogram::decode(&good[..cut]).is_none(), "cut {cut}");
        }
        let mut rng = Rng(3);
        for _ in 0..20_000 {
            let mut b = good.clone();
            let i = rng.index(b.len());
            b[i] = rng.next_u64() as u8;
            if let Some((h, _)) = LogHistogram::decode(&b) {
                let total: u64 = h.buckets().map(|(_, c)| c as u64).sum();
                assert_eq!(total, h.count() as u64);
                assert!(h.count() == 0 || h.quantile(0.5).unwrap().is_finite());
            }
        }
        assert!(LogHistogram::decode(&[2, 0]).is_none(), "unknown version");
        assert!(LogHistogram::decode(&[1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).is_none());
    }
}
