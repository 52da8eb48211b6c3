//! Stalls and their blame: the values both stall detectors fill — the request timeline
//! (gaps between content arrivals) and the paint tracker (gaps between painted frames) — and
//! the record reports. A leaf: it imports nothing from the core.

use alloc::{string::String, vec::Vec};

/// A gap longer than this (ms) between visible progress is a stall, unless configured
/// otherwise (`stallThresholdMs`). The JS facade leaves the option unset by default, so this
/// is the only place the default lives.
pub const DEFAULT_STALL_THRESHOLD_MS: f64 = 250.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallCause {
    Network,
    Render,
}

impl StallCause {
    pub fn as_str(self) -> &'static str {
        match self {
            StallCause::Network => "network",
            StallCause::Render => "render",
        }
    }
}

/// One stall: `start` is the offset from the request start of the last visible progress
/// before the gap, `dur` the gap's length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stall {
    pub start: f64,
    pub dur: f64,
    pub cause: StallCause,
}

/// Kept per record in `stallList`: the longest ones, so a 10 000-token answer with a
/// flaky connection cannot grow the record.
pub const MAX_STALL_LIST: usize = 16;

#[derive(Clone, Default)]
pub struct Stalls {
    pub count: u32,
    pub total_ms: f64,
    pub longest_ms: f64,
    pub network: u32,
    pub render: u32,
    /// Sorted longest first, at most `MAX_STALL_LIST`.
    pub list: Vec<Stall>,
}

impl Stalls {
    pub fn add(&mut self, s: Stall) {
        self.count += 1;
        self.total_ms += s.dur;
        if s.dur > self.longest_ms {
            self.longest_ms = s.dur;
        }
        match s.cause {
            StallCause::Network => self.network += 1,
            StallCause::Render => self.render += 1,
        }
        let pos = self.list.iter().position(|x| x.dur < s.dur).unwrap_or(self.list.len());
        if pos < MAX_STALL_LIST {
            if self.list.len() == MAX_STALL_LIST {
                self.list.pop();
            }
            self.list.insert(pos, s);
        }
    }

    /// These stalls and `other`'s, as one set (two detectors' stalls over disjoint spans).
    pub fn merged(&self, other: &Stalls) -> Stalls {
        let mut out = self.clone();
        out.count += other.count;
        out.total_ms += other.total_ms;
        out.longest_ms = out.longest_ms.max(other.longest_ms);
        out.network += other.network;
        out.render += other.render;
        for s in &other.list {
            let pos = out.list.iter().position(|x| x.dur < s.dur).unwrap_or(out.list.len());
            if pos < MAX_STALL_LIST {
                out.list.insert(pos, *s);
                out.list.truncate(MAX_STALL_LIST);
            }
        }
        out
    }
}

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
