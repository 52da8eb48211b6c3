//! One request's timeline: marks as they happen, bounded statistics, and the outcome.
//!
//! The browser adapter calls `on_*` with `performance.now()` stamps; `record::encode` turns
//! the finished timeline into the wire record. All per-chunk work is O(chunk) and the state is
//! bounded whatever the answer length (the histogram is fixed-size, lists are capped).

use alloc::{string::String, vec::Vec};
use super::config::Config;
use super::hex;
use super::paint::PaintTracker;
use super::seen::Blame;
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
    /// How an EventSource attempt ended, before `Timeline::on_end` judges completeness: the
    /// app's `close()` is the user's abort, a dropped connection an error (either becomes `Ok`
    /// when the stream's end marker had arrived).
    pub fn eventsource_end(closed_by_app: bool) -> Outcome {
        if closed_by_app {
            Outcome::Aborted
        } else {
            Outcome::Error
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

/// Which browser API carried the request (`record.transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Fetch,
    EventSource,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Fetch => "fetch",
            Via::EventSource => "eventsource",
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
    /// False when the server's timing could not be seen at all (an EventSource whose Resource
    /// Timing entry never appeared: WebKit creates none): the record's `serverTiming` is then
    /// `null`, not `[]` (which says the server sent none).
    pub server_timing_seen: bool,
    pub correlation: Vec<(String, String)>,
    pub user_marks: Vec<(String, f64)>,
    /// What the person saw (issue 3): fed content arrivals and paints once an answer element
    /// is associated (`observed`).
    pub paint: PaintTracker,
    pub observed: bool,
    /// Raw chars per rendered char at the last matched text probe.
    probe_ratio: Option<f64>,
    /// Long Animation Frames that overlapped this request (bounded): render-stall blame.
    pub blames: Vec<Blame>,
    /// `fetch` or `eventsource` (`record.transport`).
    pub via: Via,
    /// EventSource reconnects: the record id of the connection's first attempt.
    pub reconnect_of: Option<String>,
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
            server_timing_seen: true,
            correlation: Vec::new(),
            user_marks: Vec::new(),
            paint: PaintTracker::new(start, cfg.stall_threshold_ms),
            observed: false,
            probe_ratio: None,
            blames: Vec::new(),
            via: Via::Fetch,
            reconnect_of: None,
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
        if self.observed {
            self.observe();
        }
    }

    /// An answer element is associated: paint metrics will be reported, and the answer
    /// text's tail is kept for paint probes.
    pub fn observe(&mut self) {
        let chars = self.content.content_chars;
        if !self.observed {
            // Arrivals feed the paint tracker only once an element is observed (no work or
            // buckets for the many requests nobody observes). Text that came before: spread
            // over its arrival span, like a coalesced bucket.
            if let (Some(t0), Some(t1)) = (self.first_token, self.last_token) {
                self.paint.seed(t0, t1, chars);
            }
        }
        self.observed = true;
        if let Some(d) = self.decoder.as_mut() {
            d.keep_tail(chars);
        }
    }

    /// A frame painted the observed element at `t` (± `err_ms`) with `len` chars of text,
    /// ending with `probe` (the element's last few dozen chars; "" when unknown).
    pub fn on_paint(&mut self, t: f64, len: u32, err_ms: f64, probe: &str) {
        let chars = self.content.content_chars;
        // Where the probe should be, by the raw/rendered ratio at the last match: picks the
        // right one of several occurrences in repetitive text.
        let near = self.probe_ratio.map(|r| r * len as f64);
        let probed = self
            .decoder
            .as_ref()
            .and_then(StreamDecoder::tail)
            .filter(|tail| tail.pos == chars)
            .and_then(|tail| tail.find(probe, near));
        if let (Some(p), true) = (probed, len > 0) {
            self.probe_ratio = Some(p as f64 / len as f64);
        }
        self.paint.on_paint_probed(t, len, err_ms, probed);
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
        if c.content_events > 0 && self.observed {
            self.paint.on_arrival(t, self.content.content_chars);
        }
    }

    /// The page was hidden at `t` (sticky).
    pub fn on_hidden(&mut self, t: f64) {
        self.paint.on_hidden(t);
    }

    /// The page was hidden during the request (`record.hidden`); the paint tracker keeps when.
    pub fn hidden(&self) -> bool {
        self.paint.hidden_at().is_some()
    }

    /// Whether the record should wait for the frame that paints the end of the answer
    /// (an element is observed, the page is visible, and that frame has not come yet).
    pub fn awaits_paint(&self) -> bool {
        // No answer text (tool calls only, an error, an abort before the first token): there
        // is nothing to paint, so nothing to wait for.
        self.observed && !self.hidden() && self.content.content_chars > 0 && !self.paint.final_paint_seen()
    }

    // ---- EventSource (issue 4): the browser frames the events; the same content rules apply ----

    /// The EventSource's `open`: headers arrived (an EventSource only opens on a 200
    /// `text/event-stream` response).
    pub fn on_open(&mut self, t: f64) {
        self.on_headers(t, 200, "text/event-stream", false);
    }

    /// One dispatched EventSource message (`event_type` = the DOM event's type, `message` for
    /// unnamed events; "" = the `open` event itself). Counts as one chunk of `data.len()`
    /// bytes (UTF-8 of the data: the wire framing is invisible to the page). `last_event_id`
    /// and `trace` events may carry the server's trace (see `on_inband_trace`); a `trace`
    /// event is not answer content.
    pub fn on_message(&mut self, t: f64, event_type: &str, data: &str, last_event_id: &str) {
        if self.is_ended() {
            return;
        }
        self.on_open(t);
        if event_type.is_empty() {
            return;
        }
        if self.first_byte.is_none() {
            self.first_byte = Some(t);
        }
        self.chunks += 1;
        self.bytes += data.len() as u64;
        if !last_event_id.is_empty() {
            self.on_inband_trace(last_event_id);
        }
        if event_type == "trace" {
            self.on_inband_trace(data);
            return;
        }
        let c = match self.decoder.as_mut() {
            Some(d) => d.sse_message(event_type, data),
            None => return,
        };
        self.on_content(t, &c);
    }

    /// An in-band trace id (an SSE `id:` line or an `event: trace` message's data): a full
    /// `traceparent` value, or a bare 32-hex trace id. Adopted like Server-Timing's
    /// `trace;desc=` — only when nothing was propagated. Anything else (`id: 17`) is ignored.
    pub fn on_inband_trace(&mut self, s: &str) {
        if self.ident.trace_source != TraceSource::None {
            return;
        }
        let s = s.trim_ascii();
        if let Some(tc) = TraceContext::parse(s) {
            self.adopt_server_trace(tc);
        } else if let Some(id) = hex::parse_exact_str::<16>(s).filter(|id| *id != [0; 16]) {
            self.ident.trace.trace_id = id;
            self.ident.trace_source = TraceSource::Server;
        }
    }

    /// Moves `start` back to `t` (a reconnect's request start, known from Resource Timing
    /// only after the fact; its record began at `open`). Never moves it forward.
    pub fn rebase_start(&mut self, t: f64) {
        if t < self.start && !self.is_ended() {
            let d = self.start - t;
            self.ident.start_epoch_ms -= d;
            self.start = t;
            // Stall starts are kept relative to `start`.
            for s in &mut self.stalls.list {
                s.start += d;
            }
            self.paint.shift_origin(d);
        }
    }

    /// A custom stage mark (`rum.mark(name)`); first of a name wins, list bounded.
    pub fn on_user_mark(&mut self, name: &str, t: f64) {
        if self.user_marks.len() < MAX_USER_MARKS && !self.user_marks.iter().any(|(n, _)| n == name) {
            self.user_marks.push((truncate(name).into(), t));
        }
    }

    /// The stream finished (`Ok` = body fully read), was aborted, failed, or is being cut off
    /// by page hide/unload (`Partial`). A status ≥ 400 turns a complete read into `error`; an
    /// in-band error event turns any end into `error`. Idempotent: the first end wins.
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
        // A stream cut after its own end marker delivered a complete answer: clients such as
        // openai-node cancel the body at `[DONE]` (tests/e2e/openai.spec.js), an app closes
        // its EventSource at the end event, a server drops the connection after it.
        // Reporting those as aborted/error would mislabel every such answer. (Page unload is
        // `Partial` and stays so: the record says the page went away.)
        let outcome = match outcome {
            Outcome::Aborted | Outcome::Error if self.content.done => Outcome::Ok,
            o => o,
        };
        // An in-band error event (a provider's overload or server error mid-answer) failed the
        // answer whatever ends the read after it: the official openai and anthropic clients
        // abort the fetch right after one (`finally { if (!done) controller.abort() }`), which
        // must not read as the user's cancel — nor a page unload as a mere `partial`.
        let outcome = match outcome {
            _ if self.content.error_event => Outcome::Error,
            Outcome::Ok if self.status >= 400 => Outcome::Error,
            o => o,
        };
        self.end = Some(t);
        self.outcome = Some(outcome);
        if self.observed {
            self.paint.on_end(t, self.content.content_chars);
        }
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

/// `s` cut to `MAX_VALUE_LEN` bytes at a char boundary (bounded record strings).
pub fn truncate(s: &str) -> &str {
    if s.len() <= MAX_VALUE_LEN {
        return s;
    }
    let mut end = MAX_VALUE_LEN;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

/// EventSource records (issue 4): messages framed by the browser, classified by the same rules.
#[cfg(test)]
mod eventsource_tests {
    use super::super::config::Config;
    use super::super::session::{Handle, Session};
    use super::Outcome;

    const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn session() -> Session {
        Session::new(Config { page_origin: "https://chat.example".into(), ..Config::default() })
    }

    fn begin(s: &mut Session, t: f64, send: bool, first: &[u8]) -> Handle {
        let r = [(t as u8) ^ 5; 32];
        s.begin_eventsource("https://chat.example/v1/stream?q=secret", t, 1.0e12 + t, &r, first, send)
    }

    fn delta(text: &str) -> String {
        ["{\"choices\":[{\"delta\":{\"content\":\"", text, "\"},\"finish_reason\":null}]}"].concat()
    }

    fn end(s: &mut Session, h: Handle, t: f64, by_app: bool) -> String {
        s.end(h, t, Outcome::eventsource_end(by_app));
        let mut r = s.take_finished();
        assert_eq!(r.len(), 1);
        r.remove(0)
    }

    fn has(rec: &str, needle: &str) {
        assert!(rec.contains(needle), "record lacks {needle}\n{rec}");
    }

    #[test]
    fn first_token_is_the_first_content_message_not_open() {
        let mut s = session();
        let h = begin(&mut s, 100.0, false, &[]);
        let tl = s.get(h).unwrap();
        tl.on_message(130.0, "", "", "");
        let role = "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}";
        tl.on_message(150.0, "message", role, "");
        tl.on_message(180.0, "message", &delta("Hé"), "");
        tl.on_message(200.0, "message", &delta("llo"), "");
        tl.on_message(520.0, "message", &delta("!"), "");
        tl.on_message(521.0, "message", "[DONE]", "");
        let rec = end(&mut s, h, 525.0, true);
        for n in [
            "\"transport\":\"eventsource\"",
            "\"reconnectOf\":null",
            "\"url\":\"https://chat.example/v1/stream\"",
            "\"method\":\"GET\"",
            "\"status\":200",
            "\"outcome\":\"ok\"",
            "\"format\":\"openai-chat\"",
            "\"complete\":true",
            "\"headers\":30,",
            "\"firstByte\":50,",
            "\"firstToken\":80,",
            "\"lastToken\":420,",
            "\"chars\":6,",
            "\"contentEvents\":3,",
            "\"chunks\":5,",
            "\"traceSource\":\"none\"",
            "\"stallList\":[{\"start\":100,\"dur\":320,",
        ] {
            has(&rec, n);
        }
        let bytes: usize = [role.len(), delta("Hé").len(), delta("llo").len(), delta("!").len(), 6].iter().sum();
        has(&rec, &["\"bytes\":", &bytes.to_string()].concat());
    }

    #[test]
    fn named_events_and_outcomes() {
        let mut s = session();
        let h = begin(&mut s, 0.0, false, &[]);
        let tl = s.get(h).unwrap();
        tl.on_open(5.0);
        tl.on_message(10.0, "message_start", "{\"type\":\"message_start\",\"message\":{}}", "");
        tl.on_message(20.0, "content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}", "");
        tl.on_message(30.0, "ping", "{\"type\": \"ping\"}", "");
        // Without a JSON `type`, the event name decides.
        tl.on_message(40.0, "content_block_delta", "{\"delta\":{\"type\":\"text_delta\",\"text\":\" you\"}}", "");
        let open = end(&mut s, h, 50.0, true);
        has(&open, "\"format\":\"anthropic\"");
        has(&open, "\"contentEvents\":2,");
        has(&open, "\"chars\":6,");
        has(&open, "\"outcome\":\"aborted\"");
        // The server dropped the connection before the end marker: error; with it: ok.
        let h = begin(&mut s, 0.0, false, &[]);
        s.get(h).unwrap().on_message(10.0, "message", "partial answer", "");
        let r = end(&mut s, h, 20.0, false);
        has(&r, "\"outcome\":\"error\"");
        has(&r, "\"format\":\"unknown\"");
        has(&r, "\"headers\":10,");
        let h = begin(&mut s, 0.0, false, &[]);
        s.get(h).unwrap().on_message(10.0, "message_stop", "{\"type\":\"message_stop\"}", "");
        has(&end(&mut s, h, 20.0, false), "\"outcome\":\"ok\"");
        // An in-band error event turns a complete stream into an error.
        let h = begin(&mut s, 0.0, false, &[]);
        s.get(h).unwrap().on_message(10.0, "error", "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}", "");
        s.get(h).unwrap().on_message(11.0, "message", "[DONE]", "");
        has(&end(&mut s, h, 20.0, true), "\"outcome\":\"error\"");
        // Never opened (404, wrong type): error, status 0.
        let h = begin(&mut s, 0.0, false, &[]);
        let r = end(&mut s, h, 20.0, false);
        has(&r, "\"outcome\":\"error\"");
        has(&r, "\"status\":0");
    }

    #[test]
    fn in_band_and_resource_timing_trace_ids() {
        let mut s = session();
        // `id:` lines that are counters are ignored; a traceparent id is adopted.
        let h = begin(&mut s, 0.0, false, &[]);
        let tl = s.get(h).unwrap();
        tl.on_message(1.0, "message", "a", "17");
        assert_eq!(tl.ident.trace_source.as_str(), "none");
        tl.on_message(2.0, "message", "b", TP);
        assert_eq!((tl.ident.trace_source.as_str(), tl.ident.trace.trace_id_hex()), ("server", TRACE.into()));
        // A bare trace id in an `event: trace` message; the message is not content.
        let h = begin(&mut s, 0.0, false, &[]);
        let tl = s.get(h).unwrap();
        tl.on_message(1.0, "trace", TRACE, "");
        assert_eq!(tl.ident.trace.trace_id_hex(), TRACE);
        assert_eq!((tl.content.events, tl.content.content_events, tl.chunks), (0, 0, 1));
        // Upper-case / all-zero / short ids are not trace ids.
        for bad in ["0AF7651916CD43DD8448EB211C80319C", "00000000000000000000000000000000", "0af7651916cd43dd"] {
            let h = begin(&mut s, 0.0, false, &[]);
            s.get(h).unwrap().on_inband_trace(bad);
            assert_eq!(s.get(h).unwrap().ident.trace_source.as_str(), "none", "{bad}");
        }
        // Resource Timing's serverTiming at the end: stages and the trace.
        let h = begin(&mut s, 0.0, false, &[]);
        s.get(h).unwrap().on_message(10.0, "message", &delta("x"), "");
        s.get(h).unwrap().on_server_timing(&["queue;dur=1.5, trace;desc=\"", TP, "\""].concat());
        let r = end(&mut s, h, 20.0, false);
        has(&r, "\"traceSource\":\"server\"");
        has(&r, TRACE);
        has(&r, "{\"name\":\"queue\",\"dur\":1.5,\"desc\":null}");
    }

    #[test]
    fn query_traceparent_and_reconnects() {
        let mut s = session();
        // Opted in, same origin: a traceparent to send as a query parameter.
        let first_random = [(0.0f64 as u8) ^ 5; 32];
        let h = begin(&mut s, 0.0, true, &[]);
        let tp = s.traceparent(h);
        assert_eq!(tp.len(), 55);
        let first = s.get(h).unwrap().ident.id.clone();
        s.get(h).unwrap().on_message(10.0, "message", &delta("x"), "");
        let r1 = end(&mut s, h, 20.0, false);
        has(&r1, "\"traceSource\":\"propagated\"");
        // The reconnect resends the same URL: same trace context, linked to the first record.
        let h2 = begin(&mut s, 3020.0, true, &first_random);
        assert_ne!(s.get(h2).unwrap().ident.id, first);
        assert_eq!(s.traceparent(h2), tp, "what the browser sends again");
        let r2 = end(&mut s, h2, 3030.0, true);
        has(&r2, "\"traceSource\":\"propagated\"");
        has(&r2, &["\"reconnectOf\":\"", &first, "\""].concat());
        has(&r2, &tp[3..35]);
        has(&r2, &tp[36..52]);
        // Not opted in: nothing is sent, the server's trace can be adopted.
        let h = begin(&mut s, 0.0, false, &[]);
        assert_eq!(s.traceparent(h), "");
        let h = begin(&mut s, 7.0, false, &first_random);
        assert_eq!(s.get(h).unwrap().ident.trace_source.as_str(), "none");
        assert_eq!(s.get(h).unwrap().reconnect_of.as_deref(), Some(first.as_str()));
        // Other origins get nothing even when opted in.
        let h = s.begin_eventsource("https://other.example/s", 0.0, 0.0, &[1u8; 32], &[], true);
        assert_eq!(s.traceparent(h), "");
    }

    #[test]
    fn a_reconnect_start_moves_back_to_its_request_start() {
        let mut s = session();
        let h = begin(&mut s, 1000.0, false, &[0xab; 32]);
        let tl = s.get(h).unwrap();
        tl.on_open(1000.0);
        tl.on_message(1100.0, "message", &delta("a"), "");
        tl.on_message(1500.0, "message", &delta("b"), "");
        tl.rebase_start(1200.0); // later: ignored
        assert_eq!(tl.start, 1000.0);
        tl.rebase_start(997.5);
        let r = end(&mut s, h, 1600.0, true);
        has(&r, "\"startEpochMs\":1000000000997.5");
        has(&r, "\"headers\":2.5,");
        has(&r, "\"ttft\":102.5,");
        has(&r, "\"stallList\":[{\"start\":102.5,\"dur\":400,");
        has(&r, "\"reconnectOf\":\"abababababababab\"");
    }

    #[test]
    fn fetch_records_say_fetch() {
        let mut s = session();
        let h = s.begin("https://chat.example/v1", "POST", 0.0, 0.0, &[3u8; 32]);
        s.end(h, 1.0, Outcome::Error);
        let r = s.take_finished().remove(0);
        has(&r, "\"transport\":\"fetch\",\"reconnectOf\":null");
    }
}
