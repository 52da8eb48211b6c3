//! llm-rum: real-user monitoring for streamed LLM answers.
//!
//! `core` is pure Rust (tested natively); `browser` holds the thin wasm adapters. This file
//! holds the `#[wasm_bindgen]` surface only: each export delegates in a line or two.
//!
//! `no_std` + `alloc`: the shipped wasm carries no std runtime (see the `tiny` feature).

#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;

pub mod core;

#[cfg(all(target_arch = "wasm32", feature = "tiny"))]
mod tiny_runtime;

#[cfg(target_arch = "wasm32")]
pub mod browser;

#[cfg(target_arch = "wasm32")]
pub mod exports {
    use crate::browser::headers::apply_response_headers;
    use crate::core::config::{Budget, Config};
    use crate::core::session::Session;
    use crate::core::timeline::Outcome;
    use crate::core::transport::Transport;
    use alloc::string::String;
    use alloc::vec::Vec;
    use wasm_bindgen::prelude::*;

    /// The per-page SDK state. Created once by `init()` in js/index.js.
    #[wasm_bindgen]
    pub struct Core {
        session: Session,
        correlation: Vec<String>,
    }

    /// Non-empty lines (lists cross the boundary as one newline-joined string: cheapest).
    fn lines(s: &str) -> Vec<String> {
        s.split('\n').filter(|l| !l.is_empty()).map(String::from).collect()
    }

    #[wasm_bindgen]
    impl Core {
        /// `propagate`, `correlation` (lower-case names): newline-separated lists.
        /// `budget_names`/`budget_limits`: parallel lists. `sdk`/`session`: the beacon
        /// envelope; an empty `sdk` means no collector (no beacon queue). `clock_step_ms`: the
        /// page's performance.now() step, measured by the facade at init.
        #[wasm_bindgen(constructor)]
        #[allow(clippy::too_many_arguments)]
        pub fn new(
            page_origin: String,
            propagate: &str,
            correlation: &str,
            stall_threshold_ms: f64,
            clock_step_ms: f64,
            strip_query: bool,
            sampled: bool,
            budget_names: &str,
            budget_limits: &[f64],
            sdk: &str,
            session: &str,
        ) -> Core {
            let budgets = lines(budget_names)
                .into_iter()
                .zip(budget_limits)
                .map(|(metric, &limit)| Budget { metric, limit })
                .collect();
            let cfg = Config { stall_threshold_ms, clock_step_ms, page_origin, propagate: lines(propagate), budgets, strip_query, sampled };
            let mut state = Session::new(cfg);
            if !sdk.is_empty() {
                state.transport = Some(Transport::new(sdk, session));
            }
            Core { session: state, correlation: lines(correlation) }
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
            let correlation = &self.correlation;
            let keep = match self.session.get(h) {
                Some(tl) => apply_response_headers(tl, t, status, headers, correlation, measure_any),
                None => false,
            };
            if !keep {
                self.session.discard(h);
            }
            keep
        }

        pub fn chunk(&mut self, h: u32, t: f64, bytes: &[u8]) {
            if let Some(tl) = self.session.get(h) {
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

        // ---- what the person saw (issue 3): js/paint.js stamps frames and text lengths ----

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

        // ---- EventSource (issue 4): js/eventsource.js stamps times and moves event data ----

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
            tl.rebase_start(rt_start);
            tl.on_server_timing(server_timing);
            // No entry: the server's timing was invisible, which is not "none was sent".
            tl.server_timing_seen = !rt_start.is_nan();
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
            self.session.transport.as_ref().and_then(Transport::due_at).unwrap_or(-1.0)
        }

        /// The next payload (≤ `max_bytes`), or undefined; `urgent` ignores the backoff hold.
        /// `sent_at`: epoch ms on the records' clock (`performance.timeOrigin + t`), the
        /// beacon's `sentAt`.
        pub fn transport_take(&mut self, max_bytes: u32, reason: &str, urgent: bool, page: &str, t: f64, sent_at: f64) -> Option<String> {
            self.session.transport.as_mut()?.take(max_bytes as usize, reason, urgent, page, t, sent_at)
        }

        pub fn transport_last_batch(&self) -> u32 {
            self.session.transport.as_ref().map_or(0, Transport::last_batch)
        }

        /// `status`: 2xx stored, 0 network error, else HTTP; `retry_after_ms` < 0 when absent;
        /// `jitter` in [0, 1).
        pub fn transport_result(&mut self, batch: u32, t: f64, status: u32, retry_after_ms: f64, jitter: f64) {
            if let Some(tr) = self.session.transport.as_mut() {
                tr.result(batch, t, status, retry_after_ms, jitter);
            }
        }

        /// Everything unsent, one record per line, for localStorage (page going away).
        pub fn transport_persist(&mut self) -> String {
            self.session.transport.as_mut().map(Transport::drain_for_persist).unwrap_or_default()
        }

        pub fn transport_restore(&mut self, text: &str, t: f64) {
            if let Some(tr) = self.session.transport.as_mut() {
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
}
