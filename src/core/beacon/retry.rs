//! Which failed sends are retried, and how long the queue holds before the next try.

use crate::core::util::math;

pub const BACKOFF_START_MS: f64 = 1000.0;
pub const BACKOFF_CAP_MS: f64 = 60_000.0;

/// A send worth repeating: a network error (`status` 0), 408, 429 or 5xx. Anything else
/// (400, 413) the collector will never take.
pub fn retryable(status: u32) -> bool {
    status == 0 || status == 408 || status == 429 || (500..600).contains(&status)
}

/// The hold after failed attempt number `attempt` (0 = the first failure):
/// `BACKOFF_START_MS · 2^attempt`, capped at `BACKOFF_CAP_MS`, jittered to 50–100 % by
/// `jitter` in [0, 1) so a fleet of pages does not retry in step; or `Retry-After`
/// (`retry_after_ms`, negative when absent) when longer, itself capped at 10 minutes.
pub fn backoff_ms(attempt: u32, jitter: f64, retry_after_ms: f64) -> f64 {
    let backoff = (BACKOFF_START_MS * math::powi(2.0, attempt.min(16) as i32)).min(BACKOFF_CAP_MS)
        * (0.5 + 0.5 * jitter.clamp(0.0, 1.0));
    backoff.max(retry_after_ms.min(10.0 * BACKOFF_CAP_MS))
}
