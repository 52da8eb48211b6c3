//! `Core`, the per-page SDK state js/core.js creates once: the `#[wasm_bindgen]` surface, whose
//! JS glue wasm-bindgen-cli generates (scripts/build.sh). Each method delegates to the pure
//! core in a line or two; arguments and results cross as wasm-bindgen converts them (text as
//! `&str`/`String`, bytes as `&[u8]`), and finished records as one text (`take_records`).

use crate::core::request::headers::apply_response_headers;
use crate::core::config::Config;
use crate::core::request::kinds::{Outcome, FORGET, UNSEEN_REST};
use crate::core::session::Session;
use crate::core::trace::server_timing::ServerTimingEntry;
use alloc::string::String;
use wasm_bindgen::prelude::*;

/// The per-page SDK state. Created once by `init()` (js/core.js `loadCore`).
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

    /// Starts a fetch request's record. `interaction`: the user action's time, or < 0.
    pub fn begin(&mut self, url: &str, method: &str, t: f64, epoch_ms: f64, random: &[u8], interaction: f64) -> u32 {
        let h = self.session.begin(url, method, t, epoch_ms, random);
        if let Some(tl) = self.session.get(h) {
            tl.interaction = (interaction >= 0.0).then_some(interaction);
        }
        h
    }

    /// One of the app's `urlTemplates` matched request `h` (fetch or EventSource): its
    /// recorded path is `template`. (A call of its own rather than a parameter of `begin`:
    /// measured, 0.2 KB less brotli in the shipped wasm.)
    pub fn set_route(&mut self, h: u32, template: &str) {
        if let Some(tl) = self.session.get(h) {
            tl.ident.route = Some(template.into());
        }
    }

    pub fn traceparent(&mut self, h: u32) -> String {
        self.session.traceparent(h)
    }

    pub fn adopt_traceparent(&mut self, h: u32, value: &str) {
        self.session.adopt_traceparent(h, value);
    }

    /// Response headers arrived: `headers`, one `name:value` per line as the `Headers`
    /// iterator gives them (js/capture/fetch.js writes them; see core/request/headers.rs).
    /// Returns false (and forgets the request) when it is not to be measured.
    pub fn response(&mut self, h: u32, t: f64, status: u16, headers: &str, measure_any: bool) -> bool {
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
        self.session.grain.see(t);
        if let Some(tl) = self.session.get(h) {
            tl.on_asked(asked);
            tl.on_chunk(t, bytes);
        }
    }

    /// The request ended: `outcome` is `Outcome::from_code`'s code (0 ok, 1 aborted, 2 error;
    /// numbers, so no string crosses per request), or `FORGET`. Returns false when the record
    /// waits for the answer's last paint (`paint` / `finish`).
    pub fn end(&mut self, h: u32, t: f64, outcome: u32) -> bool {
        if outcome == FORGET {
            self.session.discard(h);
            return true;
        }
        if outcome == UNSEEN_REST {
            self.session.end_unseen(h, t);
            return true;
        }
        self.session.end(h, t, Outcome::from_code(outcome))
    }

    /// The current answer for `rum.observe(el)` (see `Session::current_answer`), begun before
    /// `before` unless that is 0; 0 when there is none.
    pub fn current_answer(&mut self, before: u32) -> u32 {
        self.session.current_answer((before != 0).then_some(before)).unwrap_or(0)
    }

    // ---- what the person saw: js/capture/paint.js stamps frames and text lengths ----

    /// An answer element is associated with `h` (`source`: js/codes.js PAINT_OBSERVED or
    /// PAINT_AUTO), or auto mode starts looking for one (PAINT_NONE). Returns false when the
    /// core no longer holds `h` (see `Session::holds`: its record is queued, or newer requests
    /// pushed it out): the facade lets go of its watch. Asking again is harmless.
    pub fn observe(&mut self, h: u32, source: u32) -> bool {
        self.session.get(h).map(|tl| tl.observe(source)).is_some()
    }

    /// Auto mode: does `text` show `h`'s answer (`Timeline::claim`)?
    pub fn claim(&mut self, h: u32, text: &str, whole: bool) -> f64 {
        self.session.get(h).map_or(-1.0, |tl| tl.claim(text, whole))
    }

    /// A frame painted `h`'s element at `t` (± `err_ms`), its `len` chars of text ending with
    /// `probe` read at `read` (its rAF callback). Returns true when the record completed (JS
    /// stops watching, delivers).
    pub fn paint(&mut self, h: u32, read: f64, t: f64, len: u32, err_ms: f64, probe: &str) -> bool {
        self.session.paint(h, read, t, len, err_ms, probe)
    }

    /// Paint observation is in from `t` on (`Session::paint_ready`).
    pub fn paint_ready(&mut self, t: f64) {
        self.session.paint_ready(t);
    }

    /// No more paints will come for `h` (timeout, element removed): queue its record.
    pub fn finish(&mut self, h: u32) {
        self.session.finish(h);
    }

    /// The engine's own presentation time `t` (± `res_ms`) of the frame a paint was reported
    /// for at `key` (js/capture/paint.js matches the frame) refines that paint.
    pub fn native_paint(&mut self, key: f64, t: f64, res_ms: f64) {
        for h in self.session.running() {
            if let Some(tl) = self.session.get(h) {
                tl.paint.refine(key, t, res_ms);
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

    // ---- EventSource: js/capture/eventsource.js stamps times and moves event data ----

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

    /// One entry of the attempt's Resource Timing `serverTiming`, as the browser parsed it
    /// (`PerformanceServerTiming`: name, duration, description), before `es_end`.
    pub fn es_server_timing(&mut self, h: u32, name: &str, duration: f64, description: &str) {
        if let Some(tl) = self.session.get(h) {
            tl.on_server_timing_entry(ServerTimingEntry::parsed_by_browser(name, duration, description));
        }
    }

    /// The attempt ended at `t`: the app called `close()`, or the connection dropped or
    /// failed. `rt_start`: the `startTime` of the attempt's Resource Timing entry, or NaN when
    /// none came (the record's `serverTiming` is then `null`).
    /// Returns false when the record waits for the answer's last paint (as `end`).
    pub fn es_end(&mut self, h: u32, t: f64, closed_by_app: bool, rt_start: f64) -> bool {
        let Some(tl) = self.session.get(h) else { return true };
        tl.on_resource_timing((!rt_start.is_nan()).then_some(rt_start));
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

    /// The beacon's `page` (js/deliver/queue.js writes the envelope): the page's path
    /// (`location.pathname`) templated like a record's `url` (`template`: the app's template
    /// for it, or "").
    pub fn page(&mut self, path: &str, template: &str) -> String {
        self.session.cfg.page(path, (!template.is_empty()).then_some(template))
    }

    /// The records that finished (and, with a collector, the `partial` snapshots of a hiding
    /// page), each handed out once (`Session::take_records`), as one text: a line per record,
    /// `F` (final: for `onRecord` and the collector) or `S` (a snapshot: for the collector
    /// only), the record's 16-hex-digit id, then its JSON object (JSON text holds no raw line
    /// break). js/deliver/records.js reads it, parsing a record only when something needs the
    /// object; the id is the beacon queue's dedupe key. One string rather than a JS array of
    /// triples: the same crossing, measured 0.67 KB brotli smaller (js-sys's array building
    /// and its externref shim; README, Dependencies).
    pub fn take_records(&mut self) -> String {
        let recs = self.session.take_records();
        let mut out = String::with_capacity(recs.iter().map(|r| r.json.len() + 18).sum());
        for r in recs {
            out.push(if r.snapshot { 'S' } else { 'F' });
            out.push_str(&r.id);
            out.push_str(&r.json);
            out.push('\n');
        }
        out
    }
}
