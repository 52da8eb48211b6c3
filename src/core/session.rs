//! The SDK's per-page state: configuration, the in-flight timelines (bounded), and the
//! records that finished. The wasm surface (src/wasm/exports.rs) holds one `Session` and
//! talks to it with small integer handles, so no Rust object crosses into JS per request.

use alloc::{string::String, vec::Vec};
use crate::core::clock::ClockGrain;
use crate::core::config::Config;
use crate::core::util::url::strip_query;
use crate::core::util::hex;
use crate::core::util::json_write::JsonWriter;
use crate::core::record;
use crate::core::request::kinds::{Outcome, TraceSource, Via};
use crate::core::request::timeline::{Identity, Timeline};
use crate::core::trace::traceparent::TraceContext;

/// In-flight requests kept at once. A request the app never finishes reading (abandoned
/// body) would otherwise pin its state forever; past this, the oldest is ended `partial`.
pub const MAX_IN_FLIGHT: usize = 64;
/// Records waiting for the facade (`take_records`).
pub const MAX_FINISHED: usize = 256;

/// A handle: slot index in the low 8 bits, a generation above, so a stale handle from an
/// ended request never touches the slot's next occupant. 0 is never a valid handle.
pub type Handle = u32;

struct Slot {
    generation: u32,
    timeline: Option<Timeline>,
    /// Order of `begin`, to pick the oldest when full and the "current" request for marks.
    seq: u64,
}

/// A record on its way out of the core (`take_records`), handed to the facade once: the
/// facade gives final ones to `onRecord` and, with a collector, every one to the beacon queue
/// (js/deliver/records.js), parsing a text only when something needs the object.
#[derive(Debug)]
pub struct Finished {
    /// The record's `id`: the beacon queue's dedupe key, so the queue never reads it out of
    /// the text (and depends on no key order).
    pub id: String,
    /// The record, one JSON object.
    pub json: String,
    /// A `partial` snapshot of a request still running, made as the page hides (with a
    /// collector only): for the collector, where the final record with the same id supersedes
    /// it; `onRecord` sees only final records.
    pub snapshot: bool,
}

pub struct Session {
    pub cfg: Config,
    slots: Vec<Slot>,
    seq: u64,
    /// Records waiting for the facade, oldest first.
    records: Vec<Finished>,
    /// Records dropped because `records` was full: the facade stopped draining them
    /// (measurement failed), so nothing would send them anyway; counted for the tests.
    pub dropped: u32,
    /// The page is being unloaded (pagehide, not into the back/forward cache): the browser
    /// tears its streams down, and those that end now were cut by the page going away.
    pub unloading: bool,
    /// The page clock's step, read off the stamps the facade hands in (`see`).
    pub grain: ClockGrain,
    /// When paint observation came in (`paint_ready`), if the facade said so.
    paint_live_at: Option<f64>,
}

/// The 32 random bytes a request needs: 16 trace id, 8 span id, 8 record id.
pub const RANDOM_BYTES: usize = 32;

/// Encodes `tl` and appends it to `list`, bounded by `MAX_FINISHED`: the oldest goes (counted
/// in `dropped`). (A function of the fields it needs, so callers can hold other borrows.)
fn push_record(list: &mut Vec<Finished>, dropped: &mut u32, tl: &Timeline, cfg: &Config, clock_step_ms: f64, snapshot: bool) {
    let mut w = JsonWriter::new();
    record::encode(tl, cfg, clock_step_ms, &mut w);
    if list.len() >= MAX_FINISHED {
        list.remove(0);
        *dropped += 1;
    }
    list.push(Finished { id: tl.ident.id.clone(), json: w.out, snapshot });
}

/// The running timeline `h` refers to; `None` for a stale handle (its slot's generation moved on).
fn timeline_mut(slots: &mut [Slot], h: Handle) -> Option<&mut Timeline> {
    let slot = slots.get_mut((h & 0xff) as usize)?;
    if slot.generation != h >> 8 {
        return None;
    }
    slot.timeline.as_mut()
}

impl Session {
    pub fn new(cfg: Config) -> Session {
        Session {
            cfg,
            slots: Vec::new(),
            seq: 0,
            records: Vec::new(),
            dropped: 0,
            unloading: false,
            grain: ClockGrain::default(),
            paint_live_at: None,
        }
    }

    /// Starts a timeline for a request about to be sent. `url` is absolute. Returns the
    /// handle; `traceparent(h)` then says what to send (an app's own `traceparent` is taken
    /// with `adopt_traceparent`).
    pub fn begin(&mut self, url: &str, method: &str, t: f64, epoch_ms: f64, random: &[u8]) -> Handle {
        let mut r = [0u8; RANDOM_BYTES];
        let n = random.len().min(RANDOM_BYTES);
        r[..n].copy_from_slice(&random[..n]);
        let mut tr = [0u8; 24];
        tr.copy_from_slice(&r[..24]);
        let ours = TraceContext::from_random(&tr, self.cfg.sampled);
        let trace_source = if self.cfg.may_propagate(url) { TraceSource::Propagated } else { TraceSource::None };
        let trace = ours;
        let mut id = String::with_capacity(16);
        hex::push_hex(&mut id, &r[24..32]);
        let url = if self.cfg.strip_query { strip_query(url) } else { url };
        let ident = Identity {
            id,
            trace,
            trace_source,
            url: url.into(),
            route: None,
            method: method.to_ascii_uppercase(),
            start_epoch_ms: epoch_ms,
        };
        let mut tl = Timeline::new(&self.cfg, ident, t);
        if let Some(t) = self.paint_live_at {
            tl.paint_from = t;
        }
        self.grain.see(t);
        self.insert(tl, t)
    }

    /// Paint observation is in from `t` on (js/capture/paint-on-demand.js, once per page): the
    /// requests begun or running before that — the ones made before the core or the paint
    /// chunk was in (issue 27: they are never held back for it) — are watched from `t`, so text
    /// of theirs that arrived earlier may have been painted unseen (`Timeline::paint_from`).
    pub fn paint_ready(&mut self, t: f64) {
        if self.paint_live_at.is_some() {
            return;
        }
        self.paint_live_at = Some(t);
        for slot in self.slots.iter_mut() {
            if let Some(tl) = slot.timeline.as_mut() {
                tl.paint_from = t;
                // Every gap between its arrivals so far began before paint observation.
                tl.stalls_unwatched = tl.stalls.clone();
            }
        }
    }

    /// Starts the record of one EventSource connection attempt. An EventSource
    /// cannot send headers: a trace context reaches the server only as a query parameter, when
    /// the app opted in (`send_trace`; `traceparent(h)` then says what to append); otherwise
    /// the record starts unlinked and takes the server's trace when one shows up (Resource
    /// Timing Server-Timing, in-band id). `first`: for the browser's reconnects, the first
    /// attempt's random bytes ("" for the first attempt): the record links to the first one
    /// (`reconnectOf`) and, the reconnect requesting the same URL, carries the trace context
    /// the first one sent.
    pub fn begin_eventsource(&mut self, url: &str, t: f64, epoch_ms: f64, random: &[u8], first: &[u8], send_trace: bool) -> Handle {
        let sampled = self.cfg.sampled;
        let h = self.begin(url, "GET", t, epoch_ms, random);
        if let Some(tl) = self.get(h) {
            tl.via = Via::EventSource;
            if let Some(f) = first.get(..RANDOM_BYTES) {
                let mut id = String::with_capacity(16);
                hex::push_hex(&mut id, &f[24..]);
                tl.reconnect_of = Some(id);
                let mut tr = [0u8; 24];
                tr.copy_from_slice(&f[..24]);
                tl.ident.trace = TraceContext::from_random(&tr, sampled);
            }
            if !send_trace && tl.ident.trace_source == TraceSource::Propagated {
                tl.ident.trace_source = TraceSource::None;
            }
        }
        h
    }

    fn insert(&mut self, tl: Timeline, t: f64) -> Handle {
        self.seq += 1;
        let idx = match self.slots.iter().position(|s| s.timeline.is_none()) {
            Some(i) => i,
            None if self.slots.len() < MAX_IN_FLIGHT => {
                self.slots.push(Slot { generation: 0, timeline: None, seq: 0 });
                self.slots.len() - 1
            }
            None => {
                // Full: evict the oldest as partial.
                let i = self.oldest().unwrap_or(0);
                let h = self.handle_of(i);
                self.end(h, t, Outcome::Partial);
                i
            }
        };
        let slot = &mut self.slots[idx];
        slot.generation = slot.generation.wrapping_add(1) & 0x00ff_ffff;
        if slot.generation == 0 {
            slot.generation = 1;
        }
        slot.timeline = Some(tl);
        slot.seq = self.seq;
        self.handle_of(idx)
    }

    fn handle_of(&self, idx: usize) -> Handle {
        (self.slots[idx].generation << 8) | idx as u32
    }

    fn oldest(&self) -> Option<usize> {
        (0..self.slots.len()).filter(|&i| self.slots[i].timeline.is_some()).min_by_key(|&i| self.slots[i].seq)
    }

    pub fn get(&mut self, h: Handle) -> Option<&mut Timeline> {
        timeline_mut(&mut self.slots, h)
    }

    /// `get`, with the configuration alongside (for reading response headers).
    pub fn get_with_config(&mut self, h: Handle) -> Option<(&mut Timeline, &Config)> {
        Some((timeline_mut(&mut self.slots, h)?, &self.cfg))
    }

    /// The `traceparent` value to add to the request, or "" when none may be added (other
    /// origin, or the app already set one).
    pub fn traceparent(&mut self, h: Handle) -> String {
        let mut s = String::new();
        if let Some(tl) = self.get(h) {
            if tl.ident.trace_source == TraceSource::Propagated {
                tl.ident.trace.write_header(&mut s);
            }
        }
        s
    }

    /// The app's request already carried a `traceparent`: use its ids, send nothing more.
    /// An invalid one is left alone (the app sends it as it is) and ours is not added.
    pub fn adopt_traceparent(&mut self, h: Handle, value: &str) {
        if let Some(tl) = self.get(h) {
            match TraceContext::parse(value) {
                Some(app) => {
                    tl.ident.trace = app;
                    tl.ident.trace_source = TraceSource::App;
                }
                None => tl.ident.trace_source = TraceSource::None,
            }
        }
    }

    /// Forgets a request without a record (e.g. the response turned out not to be a stream).
    pub fn discard(&mut self, h: Handle) {
        if self.get(h).is_some() {
            self.slots[(h & 0xff) as usize].timeline = None;
        }
    }

    /// Ends a request and queues its record — unless an answer element is observed and the
    /// frame that paints the end of the answer has not come yet: then the record waits for
    /// `paint` to see it, or for `finish` (the browser layer's timeout). Returns whether the
    /// record was queued.
    pub fn end(&mut self, h: Handle, t: f64, outcome: Outcome) -> bool {
        // Chromium aborts the page's fetches after pagehide: not an error, not the user's
        // abort, but a stream cut by the page going away: the record's `partial` outcome.
        let outcome = if self.unloading && outcome != Outcome::Ok { Outcome::Partial } else { outcome };
        self.grain.see(t);
        let Some(tl) = self.get(h) else { return false };
        tl.on_end(t, outcome);
        if tl.awaits_paint() && outcome != Outcome::Partial {
            return false;
        }
        self.finish(h);
        true
    }

    /// The facade saw request `h` up to `t` and no further (`kinds::UNSEEN_REST`): its record
    /// ends there, `partial`, saying so.
    pub fn end_unseen(&mut self, h: Handle, t: f64) {
        if let Some(tl) = self.get(h) {
            tl.unseen_end = true;
            self.end(h, t, Outcome::Partial);
        }
    }

    /// A frame painted the observed answer element of `h` at `t` (± `err_ms`) showing
    /// `rendered_len` chars read at `read` (its rendering's start, ≤ `t − err_ms`), ending with
    /// `probe`. Returns true when this completed the record (queued now).
    pub fn paint(&mut self, h: Handle, read: f64, t: f64, rendered_len: u32, err_ms: f64, probe: &str) -> bool {
        self.grain.see(read);
        let Some(tl) = self.get(h) else { return false };
        tl.on_paint(read, t, rendered_len, err_ms, probe);
        if tl.is_ended() && !tl.awaits_paint() {
            self.finish(h);
            return true;
        }
        false
    }

    /// Queues the record of an ended request now (no more paints are coming). A running one
    /// is left alone.
    pub fn finish(&mut self, h: Handle) {
        if !self.get(h).is_some_and(|tl| tl.is_ended()) {
            return;
        }
        let Some(tl) = self.slots[(h & 0xff) as usize].timeline.take() else { return };
        if !self.cfg.sampled {
            return;
        }
        push_record(&mut self.records, &mut self.dropped, &tl, &self.cfg, self.grain.step_ms(), false);
    }

    /// Takes the records waiting for the facade, oldest first: each leaves the core once.
    pub fn take_records(&mut self) -> Vec<Finished> {
        core::mem::take(&mut self.records)
    }

    /// The page is being hidden or unloaded: queue a `partial` record (marks so far) for
    /// every running request. They keep running; if one completes later, its final record
    /// has the same id and supersedes the partial (in the queue, and at the collector).
    pub fn snapshot_running(&mut self, t: f64) {
        if !self.cfg.sampled || !self.cfg.collect {
            return;
        }
        let grain = self.grain.step_ms();
        for slot in self.slots.iter_mut() {
            // Ended ones waiting for their last paint are finished by the caller instead.
            let Some(tl) = slot.timeline.as_mut().filter(|tl| !tl.is_ended()) else { continue };
            let (end, outcome) = (tl.end, tl.outcome);
            tl.end = Some(t);
            tl.outcome = Some(Outcome::Partial);
            push_record(&mut self.records, &mut self.dropped, tl, &self.cfg, grain, true);
            tl.end = end;
            tl.outcome = outcome;
        }
    }

    /// The page is being hidden (`unloading`: by pagehide, not into the back/forward cache):
    /// every running request is flagged `hidden`; ended ones waiting for a last paint are
    /// finished (hidden pages do not paint); the rest get `partial` snapshots.
    pub fn page_hidden(&mut self, t: f64, unloading: bool) {
        self.unloading = unloading;
        for h in self.running() {
            if let Some(tl) = self.get(h) {
                tl.on_hidden(t);
            }
            self.finish(h);
        }
        self.snapshot_running(t);
    }

    /// Whether `h` still has a timeline here (running, or ended and waiting for its last
    /// paint): false once its record is queued, it was discarded, or it was pushed out by
    /// newer requests (`MAX_IN_FLIGHT`). The facade drops what it keeps for `h` then.
    pub fn holds(&self, h: Handle) -> bool {
        self.slots.get((h & 0xff) as usize).is_some_and(|s| s.generation == h >> 8 && s.timeline.is_some())
    }

    /// The newest request still running (begun, not ended) — with a measured response when
    /// `answered` — that began before `before` (`None`: any). "Current" is decided here, once,
    /// for both questions the page asks (`current`, `current_answer`).
    fn newest_running(&self, before: Option<Handle>, answered: bool) -> Option<Handle> {
        // Begun before `before`: below its sequence number (0 for a handle not held: none).
        let limit = before.map_or(u64::MAX, |b| if self.holds(b) { self.slots[(b & 0xff) as usize].seq } else { 0 });
        let (mut newest, mut seq) = (None, 0);
        for (i, s) in self.slots.iter().enumerate() {
            let running = s.timeline.as_ref().is_some_and(|tl| !tl.is_ended() && (tl.headers.is_some() || !answered));
            if running && s.seq < limit && s.seq > seq {
                (newest, seq) = (Some(i), s.seq);
            }
        }
        Some(self.handle_of(newest?))
    }

    /// The most recently started request that is still running (for `rum.mark`).
    pub fn current(&self) -> Option<Handle> {
        self.newest_running(None, false)
    }

    /// The current answer (for `rum.observe(el)`): the newest running request whose response
    /// is measured (headers seen: a stream, or a `match`ed request), begun before `before`
    /// when given — js/capture/paint.js walks back past the answers whose element the app
    /// named already.
    pub fn current_answer(&self, before: Option<Handle>) -> Option<Handle> {
        self.newest_running(before, true)
    }

    /// Every running request (page hide marks them `hidden`; unload ends them `partial`).
    pub fn running(&self) -> Vec<Handle> {
        (0..self.slots.len()).filter(|&i| self.slots[i].timeline.is_some()).map(|i| self.handle_of(i)).collect()
    }

}
