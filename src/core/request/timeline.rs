//! One request's timeline: marks as they happen, bounded statistics, and the outcome.
//!
//! The wasm surface calls `on_*` with `performance.now()` stamps; `record::encode` turns
//! the finished timeline into the wire record. All per-chunk work is O(chunk) and the state is
//! bounded whatever the answer length (the histogram is fixed-size, lists are capped).

use alloc::{string::String, vec::Vec};
use crate::core::config::Config;
use crate::core::stream::tail::chrome_only;
use crate::core::util::text::truncate;
use crate::core::util::url::strip_query;
use crate::core::util::hex;
use crate::core::paint::PaintTracker;
use crate::core::stalls::{Blame, Stall, StallCause, Stalls, MAX_BLAMES};
use crate::core::request::kinds::{Outcome, TraceSource, Via, PAINT_NONE};
use crate::core::trace::server_timing::{parse_server_timing, ServerTimingEntry};
use crate::core::request::delivery::Delivery;
use crate::core::stream::tail::Claim;
use crate::core::request::hints::UpstreamHints;
use crate::core::request::histogram::LogHistogram;
use crate::core::stream::{Content, StreamDecoder};
use crate::core::trace::traceparent::{from_server_timing, parse_traceresponse, TraceContext};

/// Bounds for the other per-request lists.
pub const MAX_SERVER_TIMING: usize = 32;
pub const MAX_CORRELATION: usize = 16;
pub const MAX_USER_MARKS: usize = 32;
/// Bytes kept of each string the record carries from outside (header values, mark names,
/// script URLs).
pub const MAX_VALUE_LEN: usize = 256;

/// Request identity, fixed at `begin`.
pub struct Identity {
    /// 16 lower-case hex chars, unique per record (beacon dedupe key).
    pub id: String,
    pub trace: TraceContext,
    pub trace_source: TraceSource,
    /// The request's absolute URL, query stripped unless configured otherwise. Its recorded
    /// form (ids templated) is made when the record is encoded (`Config::record_url`).
    pub url: String,
    /// The app's route template for it (`urlTemplates`), when one matched.
    pub route: Option<String>,
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
    /// How the text reached the page: arrivals, events per arrival, upstream buffering.
    pub delivery: Delivery,
    /// Response facts that explain bursts (fetch: read from the headers).
    pub hints: UpstreamHints,
    /// When the app asked for the chunk being delivered (fetch: the pull), and when the page
    /// last received something (headers or a chunk): the app's own time between the two is
    /// not a silence of the network (`Delivery::on_read`).
    asked: Option<f64>,
    last_delivery: Option<f64>,
    pub stalls: Stalls,
    /// Of `stalls`, those that began before paint observation watched the request
    /// (`paint_from`): the gaps the person saw before its paints could be seen (record/seen.rs).
    pub stalls_unwatched: Stalls,
    pub server_timing: Vec<ServerTimingEntry>,
    /// False when the server's timing could not be seen at all (an EventSource whose Resource
    /// Timing entry never appeared: WebKit creates none): the record's `serverTiming` is then
    /// `null`, not `[]` (which says the server sent none).
    pub server_timing_seen: bool,
    pub correlation: Vec<(String, String)>,
    pub user_marks: Vec<(String, f64)>,
    /// What the person saw: fed content arrivals and paints once an answer element
    /// is associated (`observed`).
    pub paint: PaintTracker,
    /// Paint tracking is on: an element is observed, or auto mode looks for one.
    pub observed: bool,
    /// How the element was known: `kinds::PAINT_*` (`PAINT_NONE` while auto mode looks).
    pub paint_source: u32,
    /// Raw chars per rendered char at the last matched text probe.
    probe_ratio: Option<f64>,
    /// Long Animation Frames that overlapped this request (bounded): render-stall blame.
    pub blames: Vec<Blame>,
    /// `fetch` or `eventsource` (`record.transport`).
    pub via: Via,
    /// EventSource reconnects: the record id of the connection's first attempt.
    pub reconnect_of: Option<String>,
    /// The facade stopped seeing the stream before its end (the early tap's bound, issue 27):
    /// the record covers it up to `end` (outcome `partial`), and says so in `unseen`.
    pub unseen_end: bool,
    /// Paint observation watched this request from this time on (`Session::paint_ready`;
    /// −∞: from its start). Text that arrived before it may have been painted unseen, so the
    /// first paint is not known (`record::seen`).
    pub paint_from: f64,
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
            delivery: Delivery::default(),
            hints: UpstreamHints::default(),
            asked: None,
            last_delivery: None,
            stalls: Stalls::default(),
            stalls_unwatched: Stalls::default(),
            server_timing: Vec::new(),
            server_timing_seen: true,
            correlation: Vec::new(),
            user_marks: Vec::new(),
            paint: PaintTracker::new(start, cfg.stall_threshold_ms),
            observed: false,
            paint_source: PAINT_NONE,
            probe_ratio: None,
            blames: Vec::new(),
            via: Via::Fetch,
            reconnect_of: None,
            unseen_end: false,
            paint_from: f64::NEG_INFINITY,
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
        self.last_delivery = Some(t);
        self.status = status;
        self.decoder = Some(StreamDecoder::new(content_type, ai_sdk_header));
        if self.observed {
            self.observe(PAINT_NONE);
        }
    }

    /// An answer element is associated (`source`: `PAINT_OBSERVED` or `PAINT_AUTO`), or auto
    /// mode starts looking for one (`PAINT_NONE`): arrivals are tracked and the answer text's
    /// tail is kept for paint probes (and `claim`). Paint metrics are reported once an element
    /// is known.
    pub fn observe(&mut self, source: u32) {
        if source != PAINT_NONE {
            self.paint_source = source;
        }
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

    /// A frame painted the observed element at `t` (± `err_ms`) with `len` chars of text read
    /// at `read` (≤ `t − err_ms`), ending with `probe` (the element's last few dozen chars; ""
    /// when unknown).
    pub fn on_paint(&mut self, read: f64, t: f64, len: u32, err_ms: f64, probe: &str) {
        // A frame whose shown text is only the UI's own chrome (assistant-ui's ` ●` in-progress
        // dot beside a typewriter that shows its first char frames later, issue 29) shows none
        // of the answer: not its first paint. Known where the probe (the element's last chars)
        // covers all of the shown text.
        let len = if chrome_only(probe, len) { 0 } else { len };
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
        self.paint.on_paint_probed(read, t, len, err_ms, probed);
    }

    /// Auto mode: does `text` show this answer? `whole`: it is an element's whole text (see
    /// `TextTail::claim`), and the answer is `2·base + (1 if text other than the answer's
    /// comes before it)`, `base` being the UTF-16 offset where the answer starts; else `text` is
    /// the end of an element's text (a probe), and the answer is 0 when it ends like this
    /// answer's latest text. −1: no (or no tail: not looked for); −2: not yet (`Claim::Maybe`).
    pub fn claim(&self, text: &str, whole: bool) -> f64 {
        let Some(tail) = self.decoder.as_ref().and_then(StreamDecoder::tail).filter(|t| t.pos == self.content.content_chars) else {
            return -1.0;
        };
        if !whole {
            return if tail.find(text, None).is_some() { 0.0 } else { -1.0 };
        }
        match tail.claim_or_maybe(text) {
            Claim::Yes(base, clean) => f64::from(base) * 2.0 + if clean { 0.0 } else { 1.0 },
            Claim::Maybe => -2.0,
            Claim::No => -1.0,
        }
    }

    /// The raw `Server-Timing` header (fetch joins repeated headers with ", ").
    pub fn on_server_timing(&mut self, header: &str) {
        parse_server_timing(header, &mut self.server_timing);
        self.server_timing_added();
    }

    /// One entry of an EventSource attempt's Resource Timing `serverTiming`, as the browser
    /// parsed it (`ServerTimingEntry::parsed_by_browser`); `on_resource_timing` follows.
    pub fn on_server_timing_entry(&mut self, entry: ServerTimingEntry) {
        if self.server_timing.len() < MAX_SERVER_TIMING {
            self.server_timing.push(entry);
        }
    }

    /// Bounds the entries; a `trace;desc=` among them names the server's trace when nothing
    /// else did.
    fn server_timing_added(&mut self) {
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
            self.correlation.push((truncate(name, MAX_VALUE_LEN).into(), truncate(value, MAX_VALUE_LEN).into()));
        }
    }

    /// The app asked for the next body chunk at `t` (fetch: the wrapper's pull). Optional:
    /// without it every read counts as waited for.
    pub fn on_asked(&mut self, t: f64) {
        if t.is_finite() {
            self.asked = Some(t);
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
        // The app's own time: from the previous delivery to its request for this chunk.
        let app_ms = match (self.asked.take(), self.last_delivery) {
            (Some(a), Some(d)) => (a - d).max(0.0),
            _ => 0.0,
        };
        self.last_delivery = Some(t);
        let c = match self.decoder.as_mut() {
            Some(d) => d.feed(bytes),
            // Headers were never reported (should not happen): count bytes, find no content.
            None => return,
        };
        self.on_read(t, &c, app_ms);
    }

    /// One already-framed piece of content (used by `on_chunk`, and by EventSource messages).
    pub fn on_content(&mut self, t: f64, c: &Content) {
        self.on_read(t, c, 0.0);
    }

    /// `on_content`, with the app's own time before the read (see `on_asked`).
    fn on_read(&mut self, t: f64, c: &Content, app_ms: f64) {
        if c.reasoning_events > 0 && self.first_reasoning.is_none() {
            self.first_reasoning = Some(t);
        }
        if c.content_events > 0 {
            if let Some(prev) = self.last_token {
                let gap = t - prev;
                self.itl.record(gap);
                if gap > self.stall_threshold_ms {
                    let stall = Stall { start: prev - self.start, dur: gap, cause: StallCause::Network };
                    self.stalls.add(stall);
                    if prev < self.paint_from {
                        self.stalls_unwatched.add(stall);
                    }
                }
            } else {
                self.first_token = Some(t);
            }
            self.last_token = Some(t);
            self.arrivals += 1;
            self.delivery.on_read(t, c.content_events, c.content_chars, self.start, app_ms);
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

    /// A Long Animation Frame `[start, start + dur]` whose longest script was `invoker` from
    /// `source`, running `script_ms`. Kept when it overlaps the request (start to end, or
    /// still running) and is among the `MAX_BLAMES` longest scripts.
    pub fn on_long_frame(&mut self, start: f64, dur: f64, invoker: &str, source: &str, script_ms: f64) {
        let end = start + dur;
        if !(end.is_finite() && script_ms.is_finite()) || end < self.start || self.end.is_some_and(|e| start > e) {
            return;
        }
        // Invokers can hold URLs too (`IMG[src=…?token=…].onload`): queries go, like source's.
        let clip = |s: &str| String::from(truncate(strip_query(s), MAX_VALUE_LEN));
        let b = Blame { start, end, invoker: clip(invoker), source: clip(source), script_ms };
        if self.blames.len() < MAX_BLAMES {
            self.blames.push(b);
        } else if let Some(min) = self.blames.iter_mut().min_by(|a, b| a.script_ms.total_cmp(&b.script_ms)) {
            if min.script_ms < script_ms {
                *min = b;
            }
        }
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

    // ---- EventSource: the browser frames the events; the same content rules apply ----

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

    /// An EventSource attempt's Resource Timing entry, read when it ended: its request start
    /// (`startTime`; its `serverTiming` entries came just before, by `on_server_timing_entry`) — or
    /// `None` when no entry came (WebKit creates none for an EventSource): the server's timing
    /// was then invisible, which the record says with `serverTiming: null`, not `[]` ("the
    /// server sent none").
    pub fn on_resource_timing(&mut self, start: Option<f64>) {
        match start {
            Some(start) => {
                self.rebase_start(start);
                self.server_timing_added();
            }
            None => self.server_timing_seen = false,
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
            for s in self.stalls.list.iter_mut().chain(self.stalls_unwatched.list.iter_mut()) {
                s.start += d;
            }
            self.paint.shift_origin(d);
            // `delivery` keeps the first arrival's silence as measured from the `open`: a
            // reconnect's bursts are judged on the safe (shorter) side.
        }
    }

    /// A custom stage mark (`rum.mark(name)`); first of a name wins, list bounded.
    pub fn on_user_mark(&mut self, name: &str, t: f64) {
        if self.user_marks.len() < MAX_USER_MARKS && !self.user_marks.iter().any(|(n, _)| n == name) {
            self.user_marks.push((truncate(name, MAX_VALUE_LEN).into(), t));
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

    // ---- derived metrics, as the record defines them; `None` when the inputs are missing ----

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
    /// The model the stream named (`stream/formats.rs` says where each format names it).
    pub fn model(&self) -> Option<&str> {
        self.decoder.as_ref().and_then(StreamDecoder::model)
    }
    /// False when a line overflowed the bounded buffer (content metrics incomplete).
    pub fn understood(&self) -> bool {
        self.decoder.as_ref().is_none_or(|d| !d.overflowed())
    }
    pub fn complete(&self) -> bool {
        self.content.done
    }
    /// Answer text arrived before paint observation was watching this request: when it was
    /// first painted cannot be known.
    pub fn first_paint_unseen(&self) -> bool {
        self.first_token.is_some_and(|t| t < self.paint_from)
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
