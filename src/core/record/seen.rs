//! What the person saw, as the record reports it (`firstPaint`, `lastPaint`, `ttfp`,
//! `perceivedTtft`, `perceivedTotal`, `renderDelay`, `buffered`, paint stalls): the
//! `PaintTracker`'s result with the visibility rule applied, and Long Animation Frame blame
//! for render stalls.
//!
//! Visibility rule: a paint time is reported only if the page had not been hidden by then.
//! Browsers do not run rendering for hidden pages (HTML §8.1.7.3 "update the rendering"
//! skips unrendered documents), so frames after a hide are frames nobody waited for; a
//! record whose last paint came after the page was hidden reports its first paint (it was
//! seen) but no `lastPaint`, `perceivedTotal` or `renderDelay`.

use alloc::borrow::Cow;
use crate::core::paint::PaintResult;
use crate::core::request::kinds::PAINT_NONE;
use crate::core::request::timeline::Timeline;
use crate::core::stalls::{Blame, Stall, StallCause, Stalls};

/// A finished (or snapshotted) timeline's paint metrics, as its record reports them.
pub struct Seen<'a> {
    tl: &'a Timeline,
    /// The tracker's result with the visibility rule applied (all `None` when no element was
    /// known or nothing was painted while visible). Absolute `performance.now()` times.
    pub paint: PaintResult,
    /// A paint of the answer was seen (an element known, painted while visible).
    painted: bool,
}

impl<'a> Seen<'a> {
    pub fn of(tl: &'a Timeline) -> Seen<'a> {
        let r = tl.paint.result();
        let hidden_at = tl.paint.hidden_at();
        let visible = |t: &f64| hidden_at.is_none_or(|h| *t <= h);
        // A paint of the answer was seen at all (an element known, painted while visible).
        let painted = r.first_paint.filter(visible).is_some() && tl.paint_source != PAINT_NONE;
        // Text that arrived before paint observation watched the request may have been painted
        // unseen (issue 27: the app is never held back for it): its first paint — and what is
        // measured from it, the render delay of that text, `buffered` — is not known, rather
        // than a later frame passed off as the first one (the record's `unseen` says so). What
        // was seen from then on stands: the last paint, and the stalls between paints.
        let first_paint = r.first_paint.filter(|_| painted && !tl.first_paint_unseen());
        // Hidden before the end of the answer was painted: its last paint was never seen
        // (the tracker's fallback — the last paint before the final arrival — would pass
        // for it).
        let last_paint = r
            .last_paint
            .filter(|_| painted)
            .filter(visible)
            .filter(|_| hidden_at.is_none() || tl.paint.final_paint_seen());
        let paint = PaintResult {
            first_paint,
            last_paint,
            render_delay: first_paint.and(last_paint).and(r.render_delay),
            buffered: first_paint.and(r.buffered),
            paint_error_ms: r.paint_error_ms.filter(|_| painted),
            ..r
        };
        Seen { tl, paint, painted }
    }

    /// The stalls to report (the record's `stalls`: gaps the person could see): as seen on
    /// screen once a paint was seen, else between content arrivals. Where paint observation came
    /// in after text had arrived (`Timeline::paint_from`), the gaps between arrivals before it
    /// and the gaps between paints after it: a stall under way when it came in is counted once,
    /// from the arrivals (the paints seen start after it).
    pub fn stalls(&self) -> Cow<'a, Stalls> {
        if !self.painted {
            Cow::Borrowed(&self.tl.stalls)
        } else if self.tl.first_paint_unseen() {
            Cow::Owned(self.tl.stalls_unwatched.merged(self.tl.paint.stalls()))
        } else {
            Cow::Borrowed(self.tl.paint.stalls())
        }
    }

    /// The long frame that overlapped a render stall most, if any.
    pub fn blame_for(&self, s: &Stall) -> Option<&'a Blame> {
        if s.cause != StallCause::Render {
            return None;
        }
        let start = self.tl.start;
        let (a, b) = (start + s.start, start + s.start + s.dur);
        self.tl
            .blames
            .iter()
            .map(|x| (x, x.end.min(b) - x.start.max(a)))
            .filter(|(_, overlap)| *overlap > 0.0)
            .max_by(|x, y| x.1.total_cmp(&y.1))
            .map(|(x, _)| x)
    }

    /// `ttfp`: first paint − start.
    pub fn ttfp(&self) -> Option<f64> {
        since(self.paint.first_paint, self.tl.start)
    }
    /// `perceivedTtft`: first paint − (interaction ?? start).
    pub fn perceived_ttft(&self) -> Option<f64> {
        since(self.paint.first_paint, self.tl.interaction.unwrap_or(self.tl.start))
    }
    /// `perceivedTotal`: last paint − (interaction ?? start).
    pub fn perceived_total(&self) -> Option<f64> {
        since(self.paint.last_paint, self.tl.interaction.unwrap_or(self.tl.start))
    }
}

/// `t` as an offset from `origin`.
fn since(t: Option<f64>, origin: f64) -> Option<f64> {
    t.map(|t| t - origin)
}
