//! How the answer's text reached the page (`record.delivery`) and whether something between
//! the model and the page held it back (`record.upstreamBuffered`). The rule is defined here,
//! once; the README's "Delivery" section states it in words.
//!
//! Why a page can tell: a streaming server writes an event when a token is ready, so the page
//! gets the text a little at a time — one event per read, or a few when the server (or a busy
//! page) coalesces them. A buffer in between — nginx's `proxy_buffering`, a CDN, compression
//! without flushes, a serverless gateway — collects the events for as long as it holds them and
//! then delivers them together: many events in one read after a silence in which, had they
//! been passed on, some would have arrived. That shape, when it is how *most* of the answer
//! arrived, is what no streaming server produces.
//!
//! Definitions (all content-bearing arrivals, i.e. reads carrying answer text):
//! * an **arrival** is what reached the page at one moment: reads (EventSource: messages)
//!   within `ARRIVAL_WINDOW_MS` — one 60 Hz frame — of the first read of the arrival are one
//!   arrival. One burst can reach the page as several reads: an EventSource dispatches each
//!   message on its own (with the app's listeners running in between), WebKit hands over a
//!   network read in pieces 1–2 ms apart and a decompressed body in pieces up to 6 ms apart
//!   (measured: 600 gzip'd events as 32 + 568). Reads within one frame are painted together
//!   anyway. The window is anchored at the arrival's first read, so a fast stream makes
//!   frame-sized arrivals, never one long chain;
//! * its **silence** is how long the page had been waiting for it: the time since the previous
//!   arrival (since `start` for the first) minus the time the app itself spent before asking
//!   for more (fetch: from the previous delivery — headers or a read — to the app's next read
//!   request). A page that is slow to read (a blocking render in its read loop) makes its
//!   own bursts; they are not charged to the network;
//! * a **burst** is an arrival carrying at least `BURST_EVENTS` content events after a silence
//!   of at least `BURST_SILENCE_MS`.
//!
//! `upstreamBuffered` is `null` when the answer has fewer than `BURST_EVENTS` content events
//! (no arrival could be a burst, and a short answer in one piece proves nothing), else `true`
//! when bursts carried at least half of the answer's text and were at least half of its
//! arrivals — or when a single burst carried at least half of the text — and `false`
//! otherwise.
//!
//! Why these numbers: 100 ms is the silence a person starts to see as a pause (and the usual
//! "instant" bound); nginx's default 4 KB buffers hold 15–18 OpenAI chunks (~50 AI SDK
//! events), so 8 events after 100 ms is well below what a buffering proxy delivers even for a
//! fast model (≥ 60 tokens/s) while above what servers and pages coalesce on their own (a
//! few events). Requiring half of the arrivals keeps occasional bursts — a janky page, a
//! TCP retransmit, a server catching up after a pause — from reading as a buffering proxy:
//! those leave most arrivals small. The single-burst clause catches the proxy that holds
//! the whole answer (or most of it) and lets a first token or two through.
//!
//! Memory: running aggregates and a fixed-size sketch (`LogHistogram`, for
//! `eventsPerArrival.p50`), whatever the answer length.

use crate::core::request::histogram::LogHistogram;

/// Reads within this many ms (one 60 Hz frame) of an arrival's first read belong to it.
pub const ARRIVAL_WINDOW_MS: f64 = 16.0;
/// A burst carries at least this many content events...
pub const BURST_EVENTS: u32 = 8;
/// ...after the page waited at least this long for it.
pub const BURST_SILENCE_MS: f64 = 100.0;

/// The arrival still open (more reads may join it within the window).
#[derive(Clone, Copy, Debug)]
struct Open {
    start: f64,
    events: u32,
    chars: u32,
    silence: f64,
}

/// Sums over closed arrivals.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    arrivals: u32,
    bursts: u32,
    events: u32,
    chars: u64,
    burst_chars: u64,
    largest_chars: u32,
    largest_burst_chars: u32,
    max_events: u32,
}

/// Running aggregates of a request's content arrivals.
#[derive(Clone, Debug, Default)]
pub struct Delivery {
    open: Option<Open>,
    /// Time of the previous content read (the end of the previous arrival so far).
    last: Option<f64>,
    totals: Totals,
    /// Content events per closed arrival (p50).
    per_arrival: LogHistogram,
}

/// What the record reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeliverySummary {
    pub arrivals: u32,
    /// Median content events per arrival (nearest rank; exact below 50), `None` without text.
    pub events_p50: Option<u32>,
    pub events_max: Option<u32>,
    /// The largest share of the answer's chars that came in one arrival, `None` without text.
    pub largest_share: Option<f64>,
    pub upstream_buffered: Option<bool>,
}

impl Open {
    fn is_burst(&self) -> bool {
        self.events >= BURST_EVENTS && self.silence >= BURST_SILENCE_MS
    }
}

impl Totals {
    /// These totals with arrival `o` added.
    fn with(mut self, o: &Open) -> Totals {
        self.arrivals += 1;
        self.events = self.events.saturating_add(o.events);
        self.chars += o.chars as u64;
        self.largest_chars = self.largest_chars.max(o.chars);
        self.max_events = self.max_events.max(o.events);
        if o.is_burst() {
            self.bursts += 1;
            self.burst_chars += o.chars as u64;
            self.largest_burst_chars = self.largest_burst_chars.max(o.chars);
        }
        self
    }
}

impl Delivery {
    /// A read at `t` carrying `events` content events (`chars` chars of answer text); `start`
    /// is the request's start, `app_ms` the time the app took before asking for this read
    /// (0 when unknown: EventSource, or a read the app was waiting for).
    pub fn on_read(&mut self, t: f64, events: u32, chars: u32, start: f64, app_ms: f64) {
        if events == 0 || !t.is_finite() {
            return;
        }
        match self.open.as_mut() {
            Some(o) if t - o.start <= ARRIVAL_WINDOW_MS => {
                o.events = o.events.saturating_add(events);
                o.chars = o.chars.saturating_add(chars);
            }
            _ => {
                self.close();
                let since = self.last.unwrap_or(start);
                let silence = (t - since - app_ms.max(0.0)).max(0.0);
                self.open = Some(Open { start: t, events, chars, silence });
            }
        }
        self.last = Some(t);
    }

    /// Folds the open arrival into the aggregates.
    fn close(&mut self) {
        if let Some(o) = self.open.take() {
            self.totals = self.totals.with(&o);
            self.per_arrival.record(o.events as f64);
        }
    }

    /// The summary, the open arrival included (it is complete as far as anyone can know).
    pub fn summary(&self) -> DeliverySummary {
        let t = match &self.open {
            Some(o) => self.totals.with(o),
            None => self.totals,
        };
        let any = t.arrivals > 0 && t.chars > 0;
        let rule = (t.events >= BURST_EVENTS).then(|| {
            let half_text = 2 * t.burst_chars >= t.chars;
            let half_arrivals = 2 * t.bursts >= t.arrivals;
            (half_text && half_arrivals) || 2 * t.largest_burst_chars as u64 >= t.chars
        });
        DeliverySummary {
            arrivals: t.arrivals,
            events_p50: self.median(t.arrivals).map(|v| (v + 0.5) as u32),
            events_max: (t.arrivals > 0).then_some(t.max_events),
            largest_share: any.then(|| t.largest_chars as f64 / t.chars as f64),
            upstream_buffered: if any { rule } else { None },
        }
    }

    /// The median (nearest rank) of events per arrival over the closed arrivals and the open
    /// one, without folding it in: the r-th smallest of a set plus one value x is x clamped
    /// between the set's (r−1)-th and r-th smallest.
    fn median(&self, n: u32) -> Option<f64> {
        let h = &self.per_arrival;
        let Some(o) = &self.open else { return h.quantile(0.5) };
        let x = o.events as f64;
        let r = n.div_ceil(2); // nearest rank of 0.5 among n = closed + 1
        let closed = h.count();
        let nth = |k: u32| h.quantile(k as f64 / closed as f64);
        let lo = if r >= 2 { nth(r - 1) } else { None };
        let hi = if r <= closed { nth(r) } else { None };
        Some(x.max(lo.unwrap_or(x)).min(hi.unwrap_or(x)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::util::test_rng::Rng;
    use alloc::vec::Vec;

    /// Reads `(t, events, chars, app_ms)` from a request started at 0.
    fn run(reads: &[(f64, u32, u32, f64)]) -> DeliverySummary {
        let mut d = Delivery::default();
        for &(t, e, c, a) in reads {
            d.on_read(t, e, c, 0.0, a);
        }
        d.summary()
    }

    /// `n` reads of one 5-char event every `gap` ms from `t0`.
    fn stream(t0: f64, gap: f64, n: u32) -> Vec<(f64, u32, u32, f64)> {
        (0..n).map(|i| (t0 + gap * i as f64, 1, 5, 0.0)).collect()
    }

    #[test]
    fn a_clean_stream_is_not_buffered() {
        let s = run(&stream(250.0, 20.0, 120));
        assert_eq!(s.arrivals, 120);
        assert_eq!((s.events_p50, s.events_max), (Some(1), Some(1)));
        assert!((s.largest_share.unwrap() - 1.0 / 120.0).abs() < 1e-12);
        assert_eq!(s.upstream_buffered, Some(false));
    }

    #[test]
    fn the_whole_answer_in_one_read_at_the_end_is_buffered() {
        let s = run(&[(556.0, 12, 60, 0.0)]);
        assert_eq!((s.arrivals, s.events_p50, s.events_max, s.largest_share), (1, Some(12), Some(12), Some(1.0)));
        assert_eq!(s.upstream_buffered, Some(true));
    }

    #[test]
    fn too_short_to_tell_below_burst_events() {
        // 7 events: nothing could be a burst; 8: the same shape is a burst.
        assert_eq!(run(&[(500.0, 7, 35, 0.0)]).upstream_buffered, None);
        assert_eq!(run(&[(500.0, 8, 40, 0.0)]).upstream_buffered, Some(true));
        // Counted over the whole answer, not per read.
        assert_eq!(run(&stream(250.0, 20.0, 7)).upstream_buffered, None);
        assert_eq!(run(&stream(250.0, 20.0, 8)).upstream_buffered, Some(false));
        // No text at all: nothing to say.
        let s = run(&[]);
        assert_eq!((s.arrivals, s.events_p50, s.events_max, s.largest_share, s.upstream_buffered), (0, None, None, None, None));
    }

    #[test]
    fn burst_events_threshold_both_sides() {
        // Every arrival after a 340 ms silence: 7 events each is not a burst, 8 is.
        let mk = |k: u32| (1..=10).map(|i| (340.0 * i as f64, k, 5 * k, 0.0)).collect::<Vec<_>>();
        assert_eq!(run(&mk(BURST_EVENTS - 1)).upstream_buffered, Some(false));
        assert_eq!(run(&mk(BURST_EVENTS)).upstream_buffered, Some(true));
    }

    #[test]
    fn burst_silence_threshold_both_sides() {
        // 8 events per read: every 99.9 ms is a fast stream the person sees move; every 100 ms
        // is bursts. (The first arrival's silence counts from start: the same 100 / 99.9.)
        let mk = |gap: f64| (1..=10).map(|i| (gap * i as f64, 8, 40, 0.0)).collect::<Vec<_>>();
        assert_eq!(run(&mk(BURST_SILENCE_MS - 0.1)).upstream_buffered, Some(false));
        assert_eq!(run(&mk(BURST_SILENCE_MS)).upstream_buffered, Some(true));
    }

    #[test]
    fn half_of_the_arrivals_both_sides() {
        // Bursts of 8 events (40 chars) between single events (1 char each): the bursts carry
        // most of the text either way; they must also be half of the arrivals.
        let mk = |singles: u32| {
            let mut r = Vec::new();
            let mut t = 0.0;
            for _ in 0..4 {
                t += 300.0;
                r.push((t, 8, 40, 0.0));
                for _ in 0..singles {
                    t += 20.0;
                    r.push((t, 1, 1, 0.0));
                }
            }
            r
        };
        // 4 bursts of 8 arrivals (one single after each): half → buffered.
        assert_eq!(run(&mk(1)).upstream_buffered, Some(true));
        // 4 bursts of 12 arrivals: a third → not (a page or network coalescing now and then).
        let s = run(&mk(2));
        assert_eq!(s.upstream_buffered, Some(false));
        assert_eq!(s.events_p50, Some(1));
    }

    #[test]
    fn half_of_the_text_both_sides() {
        // Half the arrivals are bursts (8 events, 8 chars); the other half carry 7 events after
        // short silences. Bursts with half of the text → buffered; with less → not.
        let mk = |burst_chars: u32, other_chars: u32| {
            (0..6)
                .map(|i| if i % 2 == 0 { (300.0 * (i + 1) as f64, 8, burst_chars, 0.0) } else { (300.0 * i as f64 + 50.0, 7, other_chars, 0.0) })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(&mk(40, 40)).upstream_buffered, Some(true));
        assert_eq!(run(&mk(40, 41)).upstream_buffered, Some(false));
    }

    #[test]
    fn one_burst_with_half_the_text_both_sides() {
        // A few tokens trickle through, then the rest in one burst (a proxy that lets the first
        // read pass): the burst's share decides, whatever the count of arrivals.
        let mk = |burst_chars: u32| {
            let mut r = stream(250.0, 20.0, 5);
            r.push((2000.0, 40, burst_chars, 0.0));
            r.extend(stream(2020.0, 20.0, 5).into_iter().map(|(t, e, _, a)| (t, e, 3, a)));
            r
        };
        // 5×5 + 15 = 40 chars besides the burst.
        assert_eq!(run(&mk(40)).upstream_buffered, Some(true));
        assert_eq!(run(&mk(39)).upstream_buffered, Some(false));
    }

    #[test]
    fn reads_within_the_window_are_one_arrival() {
        // A burst dispatched as separate reads (EventSource messages, decompressed pieces).
        let mut r: Vec<_> = (0..20).map(|i| (600.0 + 0.1 * i as f64, 1, 5, 0.0)).collect();
        r.push((600.0 + ARRIVAL_WINDOW_MS, 1, 5, 0.0)); // still within
        r.push((600.0 + ARRIVAL_WINDOW_MS + 0.01, 1, 5, 0.0)); // a new arrival
        let s = run(&r);
        assert_eq!((s.arrivals, s.events_max), (2, Some(21)));
        assert_eq!(s.upstream_buffered, Some(true));
        // WebKit's gzip'd answer: a first piece, the rest 6 ms later — one burst.
        let s = run(&[(3102.0, 32, 160, 0.0), (3108.0, 568, 2840, 0.0)]);
        assert_eq!((s.arrivals, s.largest_share, s.upstream_buffered), (1, Some(1.0), Some(true)));
        // The window is anchored at the arrival's first read: a fast stream (1 ms apart) makes
        // frame-sized arrivals (17 reads: 0..=16 ms), never one long chain, and no bursts.
        let s = run(&stream(300.0, 1.0, 200));
        assert_eq!(s.arrivals, 12);
        assert_eq!((s.events_p50, s.events_max), (Some(17), Some(17)));
        assert_eq!(s.upstream_buffered, Some(false));
        // Reads more than a frame apart are arrivals of their own.
        let s = run(&stream(300.0, ARRIVAL_WINDOW_MS + 0.01, 20));
        assert_eq!((s.arrivals, s.events_max), (20, Some(1)));
    }

    #[test]
    fn the_apps_own_delay_is_not_silence() {
        // The page blocked 300 ms before asking for more, and found 10 events waiting: its own
        // burst, not the network's. The same read waited for is a burst.
        let mut slow = stream(250.0, 20.0, 2);
        slow.push((590.0, 10, 50, 300.0));
        let mut waited = stream(250.0, 20.0, 2);
        waited.push((590.0, 10, 50, 0.0));
        assert_eq!(run(&slow).upstream_buffered, Some(false));
        assert_eq!(run(&waited).upstream_buffered, Some(true));
        // Both sides of the silence threshold once the app's time is taken off.
        let at = |app: f64| run(&[(1000.0, 10, 50, app)]).upstream_buffered;
        assert_eq!(at(1000.0 - BURST_SILENCE_MS), Some(true));
        assert_eq!(at(1000.0 - BURST_SILENCE_MS + 0.1), Some(false));
    }

    #[test]
    fn nginx_four_kilobyte_buffers() {
        // Measured through nginx 1.22 (default proxy_buffering, 4 KB buffers) in front of the
        // scripted server, 120 tokens 20 ms apart: 7 reads of 15–18 events every ~350 ms.
        let reads = [(657.6, 15), (999.4, 18), (1345.9, 18), (1700.0, 17), (2059.5, 18), (2419.5, 18), (2720.1, 16)];
        let r: Vec<_> = reads.iter().map(|&(t, e)| (t, e, 5 * e, 0.0)).collect();
        let s = run(&r);
        assert_eq!((s.arrivals, s.events_p50, s.events_max), (7, Some(18), Some(18)));
        assert_eq!(s.upstream_buffered, Some(true));
    }

    #[test]
    fn events_per_arrival_median_is_exact_for_small_counts() {
        let mut r = Vec::new();
        for (i, k) in [1u32, 2, 3, 4, 5, 6, 7, 9, 11, 13, 17, 23, 31, 47].iter().enumerate() {
            r.push((100.0 * (i + 1) as f64, *k, *k, 0.0));
        }
        let s = run(&r);
        assert_eq!((s.events_p50, s.events_max), (Some(7), Some(47)));
    }

    #[test]
    fn memory_is_bounded_whatever_the_length() {
        let mut d = Delivery::default();
        for i in 0..1_000_000u32 {
            d.on_read(i as f64 * 20.0, 1 + i % 40, 4, 0.0, 0.0);
        }
        let s = d.summary();
        assert_eq!(s.arrivals, 1_000_000);
        assert_eq!(s.events_max, Some(40));
        // The sketch covers 1..=40 only: a few hundred buckets at most.
        assert!(core::mem::size_of::<Delivery>() < 256);
    }

    /// Against the definitions computed from the whole list of reads (what the sketch and the
    /// running totals must equal): random read schedules, summaries taken mid-stream too.
    #[test]
    fn random_schedules_match_the_definitions() {
        let mut rng = Rng(0x5eed_0016);
        for case in 0..400 {
            let mut reads = Vec::new();
            let mut t = rng.float(400.0);
            for _ in 0..1 + rng.index(60) {
                let long = rng.below(4) == 0;
                t += if long { rng.float(500.0) } else { rng.float(25.0) };
                let big = rng.below(3) == 0;
                let e = 1 + rng.below(if big { 40 } else { 3 }) as u32;
                reads.push((t, e, e * (1 + rng.below(6) as u32)));
            }
            let mut d = Delivery::default();
            for (k, &(t, e, c)) in reads.iter().enumerate() {
                d.on_read(t, e, c, 0.0, 0.0);
                // The oracle: group the reads so far, then apply the rule as the docs state it.
                let mut groups: Vec<(f64, u32, u32, f64)> = Vec::new(); // start, events, chars, silence
                let mut last = 0.0;
                for &(t, e, c) in &reads[..=k] {
                    match groups.last_mut() {
                        Some(g) if t - g.0 <= ARRIVAL_WINDOW_MS => {
                            g.1 += e;
                            g.2 += c;
                        }
                        _ => groups.push((t, e, c, t - last)),
                    }
                    last = t;
                }
                let mut sorted: Vec<u32> = groups.iter().map(|g| g.1).collect();
                sorted.sort();
                let chars: u32 = groups.iter().map(|g| g.2).sum();
                let events: u32 = groups.iter().map(|g| g.1).sum();
                let burst = |g: &&(f64, u32, u32, f64)| g.1 >= BURST_EVENTS && g.3 >= BURST_SILENCE_MS;
                let bursts: Vec<_> = groups.iter().filter(burst).collect();
                let burst_chars: u32 = bursts.iter().map(|g| g.2).sum();
                let largest_burst = bursts.iter().map(|g| g.2).max().unwrap_or(0);
                let want = (events >= BURST_EVENTS).then(|| (2 * burst_chars >= chars && 2 * bursts.len() >= groups.len()) || 2 * largest_burst >= chars);
                let s = d.summary();
                let why = alloc::format!("case {case} read {k}: {reads:?}");
                assert_eq!(s.arrivals as usize, groups.len(), "{why}");
                assert_eq!(s.events_max, sorted.last().copied(), "{why}");
                assert_eq!(s.events_p50, Some(sorted[(sorted.len() + 1) / 2 - 1]), "{why}");
                assert_eq!(s.largest_share, Some(groups.iter().map(|g| g.2).max().unwrap() as f64 / chars as f64), "{why}");
                assert_eq!(s.upstream_buffered, want, "{why}");
            }
        }
    }

    #[test]
    fn summary_includes_the_open_arrival_and_does_not_consume_it() {
        let mut d = Delivery::default();
        d.on_read(500.0, 10, 50, 0.0, 0.0);
        assert_eq!(d.summary().upstream_buffered, Some(true));
        d.on_read(501.0, 10, 50, 0.0, 0.0); // joins the same arrival
        let s = d.summary();
        assert_eq!((s.arrivals, s.events_max), (1, Some(20)));
    }
}
