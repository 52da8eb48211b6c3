//! Client time → collector time.
//!
//! `startEpochMs` is the browser's wall clock, which can be off by minutes, hours or years
//! (and anyone can send any number). The SDK stamps each beacon with `sentAt`, on the same
//! clock as the records' `startEpochMs` (`performance.timeOrigin + performance.now()`), so
//! `received − sentAt` is the client's clock error plus the beacon's transit time. Transit is
//! never negative and, for one small POST, rarely above `MAX_TRANSIT_MS`; the correction is the
//! smallest shift that makes the client's clock agree with a transit in `[0, MAX_TRANSIT_MS]`:
//! none when `received − sentAt` is within that range, else the excess. What remains is at most
//! `max(MAX_TRANSIT_MS, actual transit)` off.
//!
//! Records whose corrected start is still outside `[received − MAX_AGE_MS, received +
//! MAX_AHEAD_MS]` are refused (not stored, counted by reason). An honest record starts before
//! it is sent, so with `sentAt` nothing lands in the future; the 5 minutes leave room for
//! beacons without `sentAt` (older SDKs) from clocks a little fast. 24 hours covers a record
//! persisted by a page that was closed and reopened the next day.

use crate::ingest::Beacon;

/// The collector's clock: epoch ms.
pub fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}

pub const MAX_TRANSIT_MS: f64 = 2_000.0;
pub const MAX_AGE_MS: f64 = 24.0 * 3600.0 * 1000.0;
pub const MAX_AHEAD_MS: f64 = 5.0 * 60.0 * 1000.0;

/// What admission did to one beacon.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Admitted {
    /// Added to every record's start (0 without `sentAt`).
    pub skew_ms: f64,
    pub too_old: u32,
    pub future: u32,
}

impl Admitted {
    pub fn refused(&self) -> u32 {
        self.too_old + self.future
    }
}

/// The clock correction for a beacon sent at `sent_at` (client clock) and received at
/// `received_ms` (ours).
pub fn skew(sent_at: Option<f64>, received_ms: f64) -> f64 {
    match sent_at {
        Some(s) => {
            let d = received_ms - s;
            d - d.clamp(0.0, MAX_TRANSIT_MS)
        }
        None => 0.0,
    }
}

/// Corrects every record's start and removes the ones outside the window.
pub fn admit(b: &mut Beacon, received_ms: f64) -> Admitted {
    let mut a = Admitted {
        skew_ms: skew(b.sent_at, received_ms),
        ..Default::default()
    };
    b.records.retain_mut(|r| {
        let t = r.start_ms + a.skew_ms;
        if !(t >= received_ms - MAX_AGE_MS) {
            a.too_old += 1;
            false
        } else if t > received_ms + MAX_AHEAD_MS {
            a.future += 1;
            false
        } else {
            r.start_ms = t;
            true
        }
    });
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::decode;
    use serde_json::json;

    fn beacon(sent_at: Option<f64>, starts: &[f64]) -> Beacon {
        let recs: Vec<_> = starts
            .iter()
            .enumerate()
            .map(|(i, s)| json!({"id": format!("r{i}"), "outcome": "ok", "startEpochMs": s}))
            .collect();
        let mut b = json!({"v": 1, "records": recs});
        if let Some(s) = sent_at {
            b["sentAt"] = json!(s);
        }
        decode(b.to_string().as_bytes()).unwrap()
    }

    const NOW: f64 = 1_764_000_000_000.0;

    #[test]
    fn skew_is_the_excess_over_a_plausible_transit() {
        assert_eq!(skew(None, NOW), 0.0);
        assert_eq!(
            skew(Some(NOW - 150.0), NOW),
            0.0,
            "150 ms of transit: no correction"
        );
        assert_eq!(skew(Some(NOW - MAX_TRANSIT_MS), NOW), 0.0);
        // Client clock 1 h slow: sent at (its) NOW − 1 h, arrives 100 ms later.
        assert_eq!(
            skew(Some(NOW - 3_600_000.0 + 100.0), NOW),
            3_600_000.0 - 100.0 - MAX_TRANSIT_MS
        );
        // Client clock 10 min fast.
        assert_eq!(skew(Some(NOW + 600_000.0), NOW), -600_000.0);
    }

    #[test]
    fn corrects_then_refuses_what_is_still_out_of_window() {
        // A clock 1 h fast, honest otherwise: records move back to now.
        let fast = NOW + 3_600_000.0;
        let mut b = beacon(Some(fast), &[fast - 5_000.0, fast - 60_000.0]);
        let a = admit(&mut b, NOW);
        assert_eq!((a.skew_ms, a.refused()), (-3_600_000.0, 0));
        assert_eq!(b.records[0].start_ms, NOW - 5_000.0);
        assert_eq!(b.records[1].start_ms, NOW - 60_000.0);
        // Without sentAt: 0 and 1e308 and a week ago are refused; 4 min ahead passes.
        let mut b = beacon(
            None,
            &[
                0.0,
                1e308,
                NOW - 7.0 * 86_400_000.0,
                NOW + 240_000.0,
                NOW - 1.0,
            ],
        );
        let a = admit(&mut b, NOW);
        assert_eq!((a.too_old, a.future), (2, 1));
        assert_eq!(
            b.records.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["r3", "r4"]
        );
        // A record claiming to start after the beacon was sent is future, even if sentAt is.
        let mut b = beacon(Some(NOW), &[NOW + 600_000.0]);
        assert_eq!(admit(&mut b, NOW).future, 1);
        // Absurd sentAt cannot bring absurd starts in (1e308 − 1e308 = 0: too old).
        let mut b = beacon(Some(1e308), &[1e308]);
        assert_eq!(admit(&mut b, NOW).too_old, 1);
    }
}
