//! The `#[wasm_bindgen]` surface: `Core`, the per-page SDK state js/index.js creates once.
//! Each export delegates to the pure core in a line or two.

use super::response::apply_response_headers;
use crate::core::beacon::{queue::MAX_PAYLOAD, BeaconQueue};
use crate::core::config::Config;
use crate::core::request::kinds::Outcome;
use crate::core::session::{Session, MAX_IN_FLIGHT};
use alloc::string::String;
use wasm_bindgen::prelude::*;

/// The per-page SDK state. Created once by `init()` in js/index.js.
#[wasm_bindgen]
pub struct Core {
    session: Session,
}

#[wasm_bindgen]
impl Core {
    /// `config`: the SDK configuration as one JSON object (see `Config::from_json`).
    #[wasm_bindgen(constructor)]
    pub fn new(config: &str) -> Core {
        Core { session: Session::new(Config::from_json(config)) }
    }

    /// Requests in flight at once: past this many the oldest is ended `partial`
    /// (js/paint.js bounds its own list of running requests the same way).
    #[wasm_bindgen(getter)]
    pub fn max_in_flight(&self) -> u32 {
        MAX_IN_FLIGHT as u32
    }

    /// The largest beacon payload in bytes (js/transport.js asks for no more).
    #[wasm_bindgen(getter)]
    pub fn max_payload(&self) -> u32 {
        MAX_PAYLOAD as u32
    }

    /// Starts a fetch request's record. `interaction`: the user action's time, or < 0.
    pub fn begin(&mut self, url: &str, method: &str, t: f64, epoch_ms: f64, random: &[u8], interaction: f64) -> u32 {
        let h = self.session.begin(url, method, t, epoch_ms, random);
        if let Some(tl) = self.session.get(h) {
            tl.interaction = (interaction >= 0.0).then_some(interaction);
        }
        h
    }

    pub fn traceparent(&mut self, h: u32) -> String {
        self.session.traceparent(h)
    }

    pub fn adopt_traceparent(&mut self, h: u32, value: &str) {
        self.session.adopt_traceparent(h, value);
    }

    /// Response headers arrived. Returns false (and forgets the request) when it is not
    /// to be measured.
    pub fn response(&mut self, h: u32, t: f64, status: u16, headers: &web_sys::Headers, measure_any: bool) -> bool {
        let keep = match self.session.get_with_config(h) {
            Some((tl, cfg)) => apply_response_headers(tl, t, status, headers, &cfg.correlation, measure_any),
            None => false,
        };
        if !keep {
            self.session.discard(h);
        }
        keep
    }

    /// A body chunk delivered at `t`; `asked`: when the app's read asked for it (the
    /// wrapper's pull), so the app's own time is not taken for a network silence.
    pub fn chunk(&mut self, h: u32, t: f64, bytes: &[u8], asked: f64) {
        if let Some(tl) = self.session.get(h) {
            tl.on_asked(asked);
            tl.on_chunk(t, bytes);
        }
    }

    /// `outcome`: 0 ok, 1 aborted, 2 error, 3 partial; 4 = forget it, no record (the
    /// request turned out not to be measured). Returns false when the record waits for the
    /// answer's last paint (`paint` / `finish`).
    pub fn end(&mut self, h: u32, t: f64, outcome: u32) -> bool {
        if outcome == 4 {
            self.session.discard(h);
            true
        } else {
            self.session.end(h, t, Outcome::from_code(outcome))
        }
    }

    // ---- what the person saw: js/paint.js stamps frames and text lengths ----

    /// An answer element is associated with `h`: paint metrics will be reported.
    pub fn observe(&mut self, h: u32) -> bool {
        self.session.get(h).map(|tl| tl.observe()).is_some()
    }

    /// A frame painted `h`'s element at `t` (± `err_ms`) with `len` chars of text ending
    /// with `probe`. Returns true when the record completed (JS stops watching, delivers).
    pub fn paint(&mut self, h: u32, t: f64, len: u32, err_ms: f64, probe: &str) -> bool {
        self.session.paint(h, t, len, err_ms, probe)
    }

    /// No more paints will come for `h` (timeout, element removed): queue its record.
    pub fn finish(&mut self, h: u32, t: f64) {
        self.session.finish(h, t);
    }

    /// A native paint timestamp (LoAF / ICP `paintTime`) refines the running requests'
    /// bracketed paints that contain it.
    pub fn native_paint(&mut self, t: f64, res_ms: f64) {
        for h in self.session.running() {
            if let Some(tl) = self.session.get(h) {
                tl.paint.refine(t, res_ms);
            }
        }
    }

    /// A Long Animation Frame and its longest script, offered to every running request.
    pub fn long_frame(&mut self, start: f64, dur: f64, invoker: &str, source: &str, script_ms: f64) {
        for h in self.session.running() {
            if let Some(tl) = self.session.get(h) {
                tl.on_long_frame(start, dur, invoker, source, script_ms);
            }
        }
    }

    // ---- EventSource: js/eventsource.js stamps times and moves event data ----

    /// Begins one connection attempt's record (see `Session::begin_eventsource`).
    pub fn es_begin(
        &mut self,
        url: &str,
        t: f64,
        epoch_ms: f64,
        random: &[u8],
        first: &[u8],
        send_trace: bool,
        interaction: f64,
    ) -> u32 {
        let h = self.session.begin_eventsource(url, t, epoch_ms, random, first, send_trace);
        if let Some(tl) = self.session.get(h) {
            tl.interaction = (interaction >= 0.0).then_some(interaction);
        }
        h
    }

    /// One message event as the page received it; the `open` event with `event_type` ""
    /// (a message's type is never empty: the browser names unnamed ones `message`).
    pub fn es_message(&mut self, h: u32, t: f64, event_type: &str, data: &str, last_event_id: &str) {
        if let Some(tl) = self.session.get(h) {
            tl.on_message(t, event_type, data, last_event_id);
        }
    }

    /// The attempt ended at `t`: the app called `close()`, or the connection dropped or
    /// failed. `rt_start` and `server_timing`: the attempt's Resource Timing entry
    /// (`startTime`, and `serverTiming` as a header value), or NaN and "" when none came
    /// (the record's `serverTiming` is then `null`).
    /// Returns false when the record waits for the answer's last paint (as `end`).
    pub fn es_end(&mut self, h: u32, t: f64, closed_by_app: bool, rt_start: f64, server_timing: &str) -> bool {
        let Some(tl) = self.session.get(h) else { return true };
        tl.on_resource_timing((!rt_start.is_nan()).then_some((rt_start, server_timing)));
        self.session.end(h, t, Outcome::eventsource_end(closed_by_app))
    }

    // ---- end of the EventSource block ----

    /// A custom stage mark on the most recent running request; false when none runs.
    pub fn mark(&mut self, name: &str, t: f64) -> bool {
        match self.session.current() {
            Some(h) => {
                if let Some(tl) = self.session.get(h) {
                    tl.on_user_mark(name, t);
                }
                true
            }
            None => false,
        }
    }

    /// The page is being hidden (`unloading`: by pagehide, not into the back/forward cache):
    /// every running stream is flagged `hidden`, and (with a collector) a `partial` record of
    /// each is queued for the urgent flush. While unloading, streams that end are `partial`.
    pub fn page_hidden(&mut self, t: f64, unloading: bool) {
        self.session.page_hidden(t, unloading);
    }

    /// The page is shown again (back from the back/forward cache): not unloading.
    pub fn page_shown(&mut self) {
        self.session.unloading = false;
    }

    // ---- beacon transport: the core decides (queue, batching, backoff); js/transport.js sends ----

    /// When the next non-urgent flush is due (performance.now() ms), or -1 when the queue
    /// is empty.
    pub fn transport_due_at(&self) -> f64 {
        self.session.beacon.as_ref().and_then(BeaconQueue::due_at).unwrap_or(-1.0)
    }

    /// The next payload (≤ `max_bytes`), or undefined; `urgent` ignores the backoff hold.
    /// `sent_at`: epoch ms on the records' clock (`performance.timeOrigin + t`), the
    /// beacon's `sentAt`.
    pub fn transport_take(&mut self, max_bytes: u32, reason: &str, urgent: bool, page: &str, t: f64, sent_at: f64) -> Option<String> {
        self.session.beacon.as_mut()?.take(max_bytes as usize, reason, urgent, page, t, sent_at)
    }

    pub fn transport_last_batch(&self) -> u32 {
        self.session.beacon.as_ref().map_or(0, BeaconQueue::last_batch)
    }

    /// `status`: 2xx stored, 0 network error, else HTTP; `retry_after_ms` < 0 when absent;
    /// `jitter` in [0, 1).
    pub fn transport_result(&mut self, batch: u32, t: f64, status: u32, retry_after_ms: f64, jitter: f64) {
        if let Some(tr) = self.session.beacon.as_mut() {
            tr.result(batch, t, status, retry_after_ms, jitter);
        }
    }

    /// Everything unsent, one record per line, for localStorage (page going away).
    pub fn transport_persist(&mut self) -> String {
        self.session.beacon.as_mut().map(BeaconQueue::drain_for_persist).unwrap_or_default()
    }

    pub fn transport_restore(&mut self, text: &str, t: f64) {
        if let Some(tr) = self.session.beacon.as_mut() {
            tr.restore(text, t);
        }
    }

    /// Finished records as a JSON array text ("" when none).
    pub fn take_records(&mut self) -> String {
        let recs = self.session.take_finished();
        if recs.is_empty() {
            return String::new();
        }
        let mut out = String::with_capacity(recs.iter().map(|r| r.len() + 1).sum::<usize>() + 2);
        out.push('[');
        for (i, r) in recs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(r);
        }
        out.push(']');
        out
    }
}
