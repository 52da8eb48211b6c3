//! What the person saw, as the record reports it (DESIGN §1 `firstPaint`, `lastPaint`, `ttfp`,
//! `perceivedTtft`, `perceivedTotal`, `renderDelay`, `buffered`, paint stalls): the
//! `PaintTracker`'s result with the visibility rule applied, and Long Animation Frame blame
//! for render stalls.
//!
//! Visibility rule: a paint time is reported only if the page had not been hidden by then.
//! Browsers do not run rendering for hidden pages (HTML §8.1.7.3 "update the rendering"
//! skips unrendered documents), so frames after a hide are frames nobody waited for; a
//! record whose last paint came after the page was hidden reports its first paint (it was
//! seen) but no `lastPaint`, `perceivedTotal` or `renderDelay`.

use alloc::string::String;
use crate::core::config::strip_query;
use crate::core::paint::PaintResult;
use crate::core::request::timeline::{truncate, Stall, StallCause, Stalls, Timeline};

/// Long frames kept per request for blame (the longest scripts win).
pub const MAX_BLAMES: usize = 8;

/// A Long Animation Frame's longest script (LoAF `scripts[]`, W3C Long Animation Frames
/// §"PerformanceScriptTiming"): the frame's span and who ran.
#[derive(Clone, Debug, PartialEq)]
pub struct Blame {
    pub start: f64,
    pub end: f64,
    /// `invoker`, e.g. `DIV#send.onclick`, `Response.json.then`.
    pub invoker: String,
    /// `sourceURL` without query or fragment.
    pub source: String,
    /// The script's duration.
    pub script_ms: f64,
}


impl Timeline {
    /// A Long Animation Frame `[start, start + dur]` whose longest script was `invoker` from
    /// `source`, running `script_ms`. Kept when it overlaps the request (start to end, or
    /// still running) and is among the `MAX_BLAMES` longest scripts.
    pub fn on_long_frame(&mut self, start: f64, dur: f64, invoker: &str, source: &str, script_ms: f64) {
        let end = start + dur;
        if !(end.is_finite() && script_ms.is_finite()) || end < self.start || self.end.is_some_and(|e| start > e) {
            return;
        }
        // Invokers can hold URLs too (`IMG[src=…?token=…].onload`): queries go, like source's.
        let clip = |s: &str| String::from(truncate(strip_query(s)));
        let b = Blame { start, end, invoker: clip(invoker), source: clip(source), script_ms };
        if self.blames.len() < MAX_BLAMES {
            self.blames.push(b);
        } else if let Some(min) = self.blames.iter_mut().min_by(|a, b| a.script_ms.total_cmp(&b.script_ms)) {
            if min.script_ms < script_ms {
                *min = b;
            }
        }
    }

    /// The paint metrics to report: the tracker's result with the visibility rule applied
    /// (all `None` when no element was observed or nothing was painted while visible).
    /// Absolute `performance.now()` times.
    pub fn seen(&self) -> PaintResult {
        let r = self.paint.result();
        let hidden_at = self.paint.hidden_at();
        let visible = |t: &f64| hidden_at.is_none_or(|h| *t <= h);
        let first_paint = r.first_paint.filter(visible).filter(|_| self.observed);
        // Hidden before the end of the answer was painted: its last paint was never seen
        // (the tracker's fallback — the last paint before the final arrival — would pass
        // for it).
        let last_paint = first_paint
            .and(r.last_paint)
            .filter(visible)
            .filter(|_| hidden_at.is_none() || self.paint.final_paint_seen());
        PaintResult {
            first_paint,
            last_paint,
            render_delay: last_paint.and(r.render_delay),
            buffered: first_paint.and(r.buffered),
            paint_error_ms: first_paint.and(r.paint_error_ms),
            ..r
        }
    }

    /// The stalls to report: as seen on screen once a paint was reported, else between
    /// content arrivals (DESIGN §1 `stalls`).
    pub fn reported_stalls<'a>(&'a self, seen: &PaintResult) -> &'a Stalls {
        if seen.first_paint.is_some() {
            self.paint.stalls()
        } else {
            &self.stalls
        }
    }

    /// The long frame that overlapped a render stall most, if any.
    pub fn blame_for(&self, s: &Stall) -> Option<&Blame> {
        if s.cause != StallCause::Render {
            return None;
        }
        let (a, b) = (self.start + s.start, self.start + s.start + s.dur);
        self.blames
            .iter()
            .map(|x| (x, x.end.min(b) - x.start.max(a)))
            .filter(|(_, overlap)| *overlap > 0.0)
            .max_by(|x, y| x.1.total_cmp(&y.1))
            .map(|(x, _)| x)
    }
}

/// The record's paint metrics from a `seen()` result (DESIGN §1).
impl PaintResult {
    fn from(t: Option<f64>, origin: f64) -> Option<f64> {
        t.map(|t| t - origin)
    }
    pub fn ttfp(&self, tl: &Timeline) -> Option<f64> {
        Self::from(self.first_paint, tl.start)
    }
    pub fn perceived_ttft(&self, tl: &Timeline) -> Option<f64> {
        Self::from(self.first_paint, tl.interaction.unwrap_or(tl.start))
    }
    pub fn perceived_total(&self, tl: &Timeline) -> Option<f64> {
        Self::from(self.last_paint, tl.interaction.unwrap_or(tl.start))
    }
}
