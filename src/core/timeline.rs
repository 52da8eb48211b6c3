//! One request's timeline: marks as they happen, bounded statistics, and the outcome.
//!
//! The browser adapter calls `on_*` with `performance.now()` stamps; `record::encode` turns
//! the finished timeline into the wire record. All per-chunk work is O(chunk) and the state is
//! bounded whatever the answer length (the histogram is fixed-size, lists are capped).

use alloc::{string::String, vec::Vec};
use super::config::Config;
use super::server_timing::{parse_server_timing, ServerTimingEntry};
use super::stats::LogHistogram;
use super::stream::{Content, StreamDecoder};
use super::traceparent::{from_server_timing, parse_traceresponse, TraceContext};

/// How the request ended. `Partial` = the page was hidden/unloaded while it still ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Aborted,
    Error,
    Partial,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Aborted => "aborted",
            Outcome::Error => "error",
            Outcome::Partial => "partial",
        }
    }
    /// The code the JS glue passes (kept numeric so no string crosses per request end).
    pub fn from_code(code: u32) -> Outcome {
        match code {
            0 => Outcome::Ok,
            1 => Outcome::Aborted,
            3 => Outcome::Partial,
            _ => Outcome::Error,
        }
    }
}

/// Where the record's trace id came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceSource {
    /// We generated it and sent it in `traceparent`.
    Propagated,
    /// The app set its own `traceparent`; we adopted it.
    App,
    /// Nothing was sent (cross-origin, not allow-listed); the server reported its trace.
    Server,
    /// Nothing was sent and the server reported nothing: the ids link to nothing.
    None,
}

impl TraceSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceSource::Propagated => "propagated",
            TraceSource::App => "app",
            TraceSource::Server => "server",
            TraceSource::None => "none",
        }
    }
}

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
/// Bounds for the other per-request lists.
pub const MAX_SERVER_TIMING: usize = 32;
pub const MAX_CORRELATION: usize = 16;
pub const MAX_USER_MARKS: usize = 32;
const MAX_VALUE_LEN: usize = 256;

#[derive(Default)]
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
}

/// Request identity, fixed at `begin`.
pub struct Identity {
    /// 16 lower-case hex chars, unique per record (beacon dedupe key).
    pub id: String,
    pub trace: TraceContext,
    pub trace_source: TraceSource,
    /// Absolute URL, query stripped unless configured otherwise.
    pub url: String,
    pub method: String,
    pub start_epoch_ms: f64,
}

pub struct Timeline {
    pub ident: Identity,
    /// performance.now() at start; every mark below is absolute and reported minus this.
    pub start: f64,
    pub interaction: Option<f64>,
    pub headers: Option<f64>,
    pub first_byte: Option<f64>,
    pub first_token: Option<f64>,
    pub first_reasoning: Option<f64>,
    pub last_token: Option<f64>,
    pub end: Option<f64>,
    pub outcome: Option<Outcome>,
    pub status: u16,
    pub bytes: u64,
    pub chunks: u32,
    pub content: Content,
    /// Content-bearing arrivals (chunks with ≥1 content event): the ITL sample points.
    pub arrivals: u32,
    pub itl: LogHistogram,
    pub stalls: Stalls,
    pub server_timing: Vec<ServerTimingEntry>,
    pub correlation: Vec<(String, String)>,
    pub user_marks: Vec<(String, f64)>,
    pub hidden: bool,
    stall_threshold_ms: f64,
    decoder: Option<StreamDecoder>,
}

impl Timeline {
    pub fn new(cfg: &Config, ident: Identity, start: f64) -> Timeline {
        Timeline {
            ident,
            start,
            interaction: None,
            headers: None,
            first_byte: None,
            first_token: None,
            first_reasoning: None,
            last_token: None,
            end: None,
            outcome: None,
            status: 0,
            bytes: 0,
            chunks: 0,
            content: Content::default(),
            arrivals: 0,
            itl: LogHistogram::new(),
            stalls: Stalls::default(),
            server_timing: Vec::new(),
            correlation: Vec::new(),
            user_marks: Vec::new(),
            hidden: false,
            stall_threshold_ms: cfg.stall_threshold_ms,
            decoder: None,
        }
    }

    pub fn is_ended(&self) -> bool {
        self.end.is_some()
    }

    /// Response headers are available. `content_type` picks the decoder.
    pub fn on_headers(&mut self, t: f64, status: u16, content_type: &str, ai_sdk_header: bool) {
        if self.is_ended() || self.headers.is_some() {
            return;
        }
        self.headers = Some(t);
        self.status = status;
        self.decoder = Some(StreamDecoder::new(content_type, ai_sdk_header));
    }

    /// The raw `Server-Timing` header (fetch joins repeated headers with ", ").
    pub fn on_server_timing(&mut self, header: &str) {
        parse_server_timing(header, &mut self.server_timing);
        self.server_timing.truncate(MAX_SERVER_TIMING);
        if self.ident.trace_source == TraceSource::None {
            if let Some(tc) = from_server_timing(&self.server_timing) {
                self.adopt_server_trace(tc);
            }
        }
    }

    /// The legacy `traceresponse` header.
    pub fn on_traceresponse(&mut self, header: &str) {
        if self.ident.trace_source == TraceSource::None {
            if let Some(tc) = parse_traceresponse(header) {
                self.adopt_server_trace(tc);
            }
        }
    }

    fn adopt_server_trace(&mut self, server: TraceContext) {
        // Keep our own span id (it is this client span); take the server's trace so the
        // record joins the server's trace even though nothing was propagated.
        self.ident.trace.trace_id = server.trace_id;
        self.ident.trace_source = TraceSource::Server;
    }

    /// A configured correlation header's value (name lower-case).
    pub fn on_correlation(&mut self, name: &str, value: &str) {
        if self.correlation.len() < MAX_CORRELATION && !self.correlation.iter().any(|(n, _)| n == name) {
            self.correlation.push((truncate(name).into(), truncate(value).into()));
        }
    }

    /// One body chunk delivered to the page at `t`.
    pub fn on_chunk(&mut self, t: f64, bytes: &[u8]) {
        if self.is_ended() {
            return;
        }
        if self.first_byte.is_none() {
            self.first_byte = Some(t);
        }
        self.chunks += 1;
        self.bytes += bytes.len() as u64;
        let c = match self.decoder.as_mut() {
            Some(d) => d.feed(bytes),
            // Headers were never reported (should not happen): count bytes, find no content.
            None => return,
        };
        self.on_content(t, &c);
    }

    /// One already-framed piece of content (used by `on_chunk`, and by EventSource messages).
    pub fn on_content(&mut self, t: f64, c: &Content) {
        if c.reasoning_events > 0 && self.first_reasoning.is_none() {
            self.first_reasoning = Some(t);
        }
        if c.content_events > 0 {
            if let Some(prev) = self.last_token {
                let gap = t - prev;
                self.itl.record(gap);
                if gap > self.stall_threshold_ms {
                    self.stalls.add(Stall { start: prev - self.start, dur: gap, cause: StallCause::Network });
                }
            } else {
                self.first_token = Some(t);
            }
            self.last_token = Some(t);
            self.arrivals += 1;
        }
        self.content.merge(c);
    }

    /// A custom stage mark (`rum.mark(name)`); first of a name wins, list bounded.
    pub fn on_user_mark(&mut self, name: &str, t: f64) {
        if self.user_marks.len() < MAX_USER_MARKS && !self.user_marks.iter().any(|(n, _)| n == name) {
            self.user_marks.push((truncate(name).into(), t));
        }
    }

    /// The stream finished (`Ok` = body fully read), was aborted, failed, or is being cut off
    /// by page hide/unload (`Partial`). A status ≥ 400 or an in-band error event turns a
    /// complete read into `error`. Idempotent: the first end wins.
    pub fn on_end(&mut self, t: f64, outcome: Outcome) {
        if self.is_ended() {
            return;
        }
        if outcome == Outcome::Ok {
            if let Some(d) = self.decoder.as_mut() {
                let c = d.finish();
                self.on_content(t, &c);
            }
        }
        let outcome = match outcome {
            Outcome::Ok if self.status >= 400 || self.content.error_event => Outcome::Error,
            o => o,
        };
        self.end = Some(t);
        self.outcome = Some(outcome);
    }

    // ---- derived metrics (DESIGN.md §1); `None` when the inputs are missing ----

    pub fn rel(&self, t: Option<f64>) -> Option<f64> {
        t.map(|t| t - self.start)
    }
    pub fn ttft(&self) -> Option<f64> {
        self.rel(self.first_token)
    }
    pub fn total(&self) -> Option<f64> {
        self.rel(self.last_token)
    }
    /// (outputTokens, from usage?)
    pub fn output_tokens(&self) -> (u32, bool) {
        match self.content.usage_output_tokens {
            Some(n) => (n, true),
            None => (self.content.content_events, false),
        }
    }
    pub fn tpot(&self) -> Option<f64> {
        let (n, _) = self.output_tokens();
        match (self.first_token, self.last_token) {
            (Some(a), Some(b)) if n > 1 => Some((b - a) / (n - 1) as f64),
            _ => None,
        }
    }
    pub fn format(&self) -> &'static str {
        match &self.decoder {
            Some(d) => d.format().as_str(),
            None => "unknown",
        }
    }
    /// False when a line overflowed the bounded buffer (content metrics incomplete).
    pub fn understood(&self) -> bool {
        self.decoder.as_ref().is_none_or(|d| !d.overflowed())
    }
    pub fn complete(&self) -> bool {
        self.content.done
    }
    /// Sum of server stage durations (all Server-Timing entries with `dur`, except a
    /// `total` entry which spans the others) — the server's share of TTFT.
    pub fn server_ms(&self) -> Option<f64> {
        let mut sum = None;
        for e in &self.server_timing {
            if let Some(d) = e.dur {
                if e.name != "total" {
                    sum = Some(sum.unwrap_or(0.0) + d);
                }
            }
        }
        sum
    }
}

fn truncate(s: &str) -> &str {
    if s.len() <= MAX_VALUE_LEN {
        return s;
    }
    let mut end = MAX_VALUE_LEN;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}
