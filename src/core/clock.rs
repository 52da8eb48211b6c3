//! The page clock's step, inferred from the readings the SDK takes anyway.
//!
//! `performance.now()` is coarsened (HR-Time §"coarsen time"): 5 µs on a cross-origin isolated
//! page and 100 µs otherwise in Chromium, 1 ms in Firefox and WebKit (20 µs in an isolated
//! Firefox page). Every reading is within one step of the true time, so the step adds to the
//! paint brackets' error (`paintErrorMs`). Until issue 27 the facade measured it at init by
//! spinning on the clock for up to 5 ms of the page's main thread; now the core reads it off the
//! stamps it is handed (request starts, chunk arrivals, paint brackets): a coarsened reading is
//! a whole multiple of the step, so the step is the coarsest candidate that every reading so far
//! is a multiple of. It starts at the coarsest (1 ms: an error bound too wide, never too narrow)
//! and only ever gets finer; a reading that is a multiple of a coarser step by chance (1 in 10
//! for 100 µs vs 1 ms) only delays the refinement to the next reading.

/// The steps engines use, coarsest first; each divides the one before it, so "a multiple of
/// step i" implies "a multiple of every later step".
const STEPS: [f64; 5] = [1.0, 0.1, 0.02, 0.005, 0.001];

/// The inferred step: an index into `STEPS`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClockGrain(usize);

impl ClockGrain {
    /// One reading of the page clock (milliseconds). O(1) amortised: the index only grows.
    pub fn see(&mut self, t: f64) {
        if !t.is_finite() {
            return;
        }
        while self.0 + 1 < STEPS.len() && !multiple_of(t, STEPS[self.0]) {
            self.0 += 1;
        }
    }

    /// The step in milliseconds.
    pub fn step_ms(&self) -> f64 {
        STEPS[self.0]
    }
}

/// Whether `t` is a whole multiple of `step`, to the rounding of the decimal step in binary
/// (a reading of 1234.1 is the double nearest to it, not exactly 12341 × 0.1).
fn multiple_of(t: f64, step: f64) -> bool {
    let x = t / step;
    (x - libm::round(x)).abs() < 1e-3
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::util::test_rng::Rng;

    /// Readings of a clock coarsened to `step`, at pseudo-random true times.
    fn readings(step: f64, n: usize, seed: u64) -> impl Iterator<Item = f64> {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        (0..n).map(move |_| {
            let t = rng.below(10_000_000) as f64 / 1000.0; // 0–10 000 ms, 1 µs apart
            libm::floor(t / step) * step
        })
    }

    #[test]
    fn starts_at_one_millisecond() {
        assert_eq!(ClockGrain::default().step_ms(), 1.0);
    }

    #[test]
    fn finds_each_engine_step_from_a_few_readings() {
        for (step, seed) in [(1.0, 1), (0.1, 2), (0.02, 3), (0.005, 4), (0.001, 5)] {
            let mut g = ClockGrain::default();
            for t in readings(step, 40, seed) {
                g.see(t);
            }
            assert_eq!(g.step_ms(), step, "clock coarsened to {step} ms");
        }
    }

    #[test]
    fn never_finer_than_the_clock_and_never_coarser_again() {
        // Whole-millisecond readings (Firefox, WebKit) keep it at 1 ms however many come.
        let mut g = ClockGrain::default();
        for t in readings(1.0, 1000, 6) {
            g.see(t);
        }
        assert_eq!(g.step_ms(), 1.0);
        // Once refined, a reading that happens to be whole does not coarsen it.
        g.see(12.3);
        g.see(100.0);
        assert_eq!(g.step_ms(), 0.1);
        g.see(f64::NAN);
        assert_eq!(g.step_ms(), 0.1);
    }

    #[test]
    fn decimal_steps_survive_binary_rounding() {
        let mut g = ClockGrain::default();
        for t in [1234.1, 98765.4, 0.3, 7.7] {
            g.see(t);
        }
        assert_eq!(g.step_ms(), 0.1);
    }
}
