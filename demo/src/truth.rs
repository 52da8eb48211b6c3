//! Ground truth: what the server did, per request, and the log of every request seen.
//!
//! Owner of: the numbers the tests compare the SDK against. Times are milliseconds since the
//! request was received (the moment the server's middleware saw its head), f64 rounded to the
//! microsecond, taken right after each write was handed to the response body channel.
//!
//! Bounded: the newest [`MAX_RECORDS`] records and [`MAX_LOG`] log entries are kept, and at most
//! [`MAX_WRITES`] writes per record (later writes still count in bytes/hash/tokens; the record
//! says how many were left out).

use crate::formats::Kind;
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;

pub const MAX_RECORDS: usize = 10_000;
pub const MAX_LOG: usize = 10_000;
pub const MAX_WRITES: usize = 100_000;
/// Longest `wait_ms` honoured by `/__truth`.
pub const MAX_WAIT_MS: u64 = 120_000;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 over more bytes (start from [`FNV_OFFSET`]).
pub fn fnv1a64(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

pub fn fnv1a64_hex(bytes: &[u8]) -> String {
    format!("{:016x}", fnv1a64(FNV_OFFSET, bytes))
}

/// Milliseconds since `t0`, rounded to the microsecond.
pub fn ms_since(t0: Instant) -> f64 {
    round_us(t0.elapsed().as_secs_f64() * 1000.0)
}

pub fn round_us(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

pub fn unix_ms() -> f64 {
    round_us(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64()
            * 1000.0,
    )
}

/// One write of a response body.
#[derive(Clone, Debug, Serialize)]
pub struct Write {
    /// ms since the request was received.
    pub t_ms: f64,
    pub kind: Kind,
    /// Content tokens this write carried (a split event counts on its second part).
    pub tokens: u64,
    /// Content events this write carried (several with `events_per_write` / `proxy_buffer`).
    pub events: u64,
    pub bytes: u64,
    /// 0 (first half) or 1 (second half) when the event was split in two writes (`split=1`);
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<u8>,
}

/// The ground-truth record of one request (the `/__truth` JSON).
#[derive(Clone, Debug, Serialize)]
pub struct Truth {
    pub id: String,
    pub test_id: Option<String>,
    pub method: String,
    pub path: String,
    pub query: String,
    pub origin: Option<String>,
    /// `chat` (POST /v1/chat/completions), `stream` (GET /v1/stream), `bytes`, `plain`, `redirect`.
    pub endpoint: &'static str,
    pub stream: bool,
    pub format: Option<&'static str>,
    /// The model the stream names (null: the format names none, or no stream).
    pub model: Option<String>,
    pub status: u16,
    /// The received `traceparent` header, verbatim, or null.
    pub traceparent: Option<String>,
    /// Whether that traceparent was valid (and so adopted).
    pub traceparent_valid: bool,
    /// The trace id the server used: the received one when valid, else fresh.
    pub trace_id: String,
    /// The received span id (the server span's parent) when the traceparent was valid.
    pub parent_span_id: Option<String>,
    /// The server's own span id (as in `trace;desc=00-<trace_id>-<span_id>-01`).
    pub span_id: String,
    /// Wall clock at receipt (epoch ms), to line up with browser `timeOrigin + start`.
    pub received_unix_ms: f64,
    /// When the response head was handed to the HTTP layer.
    pub headers_ms: Option<f64>,
    /// Waiting for a generation slot.
    pub queue_ms: Option<f64>,
    /// Generation start (slot acquired) to the first content write.
    pub prefill_ms: Option<f64>,
    pub writes: Vec<Write>,
    pub writes_dropped: u64,
    pub content_tokens: u64,
    /// The last write (or the injected failure, or the client going away).
    pub end_ms: Option<f64>,
    /// `running`, `complete`, `failed` (fail_at), `client_gone`.
    pub outcome: &'static str,
    /// The response body was dropped before it ended: the client went away.
    pub client_gone_at_ms: Option<f64>,
    pub body_bytes: u64,
    pub body_fnv1a64: String,
    /// The scenario applied (streams only).
    pub scenario: Option<serde_json::Value>,
    /// Nothing more will be recorded.
    pub done: bool,
}

/// A live record: updated by the generator, read by `/__truth`.
pub struct Record {
    pub id: String,
    pub test_id: Option<String>,
    pub t0: Instant,
    data: Mutex<(Truth, u64)>,
    notify: Arc<Notify>,
}

impl Record {
    pub fn now_ms(&self) -> f64 {
        ms_since(self.t0)
    }

    pub fn update(&self, f: impl FnOnce(&mut Truth)) {
        let mut g = self.data.lock().unwrap();
        f(&mut g.0);
    }

    pub fn snapshot(&self) -> Truth {
        let g = self.data.lock().unwrap();
        let mut t = g.0.clone();
        t.body_fnv1a64 = format!("{:016x}", g.1);
        t
    }

    pub fn is_done(&self) -> bool {
        self.data.lock().unwrap().0.done
    }

    pub fn headers_sent(&self) {
        let t = self.now_ms();
        self.update(|d| {
            d.headers_ms.get_or_insert(t);
        });
    }

    /// Records a write that was just handed to the body channel; returns its time. A write
    /// carrying tokens is one content event.
    pub fn wrote(&self, kind: Kind, tokens: u64, bytes: &[u8], part: Option<u8>) -> f64 {
        self.wrote_at(self.now_ms(), kind, tokens, bytes, part)
    }

    /// [`Record::wrote`] with the send time `t` (ms on this record's clock) taken by the caller.
    pub fn wrote_at(&self, t: f64, kind: Kind, tokens: u64, bytes: &[u8], part: Option<u8>) -> f64 {
        self.wrote_events_at(t, kind, tokens, (tokens > 0) as u64, bytes, part)
    }

    /// [`Record::wrote_at`], for a write of several events at once (`events_per_write`,
    /// `proxy_buffer`): `events` content events carrying `tokens` tokens.
    pub fn wrote_events_at(&self, t: f64, kind: Kind, tokens: u64, events: u64, bytes: &[u8], part: Option<u8>) -> f64 {
        let mut g = self.data.lock().unwrap();
        g.1 = fnv1a64(g.1, bytes);
        let d = &mut g.0;
        d.body_bytes += bytes.len() as u64;
        d.content_tokens += tokens;
        if tokens > 0 && d.prefill_ms.is_none() {
            if let Some(q) = d.queue_ms {
                d.prefill_ms = Some(round_us(t - q));
            }
        }
        if d.writes.len() < MAX_WRITES {
            d.writes.push(Write {
                t_ms: t,
                kind,
                tokens,
                events,
                bytes: bytes.len() as u64,
                part,
            });
        } else {
            d.writes_dropped += 1;
        }
        t
    }

    /// The response ended (complete or failed). Idempotent: the first outcome wins.
    pub fn finish(&self, outcome: &'static str) {
        let t = self.now_ms();
        self.update(|d| {
            if !d.done {
                d.done = true;
                d.outcome = outcome;
                d.end_ms = Some(
                    d.writes
                        .last()
                        .map(|w| w.t_ms)
                        .filter(|_| outcome == "complete")
                        .unwrap_or(t),
                );
            }
        });
        self.notify.notify_waiters();
    }

    /// The client went away (body dropped before its end, or the handler was cancelled).
    pub fn client_gone(&self) {
        let t = self.now_ms();
        self.update(|d| {
            d.client_gone_at_ms.get_or_insert(t);
            if !d.done {
                d.done = true;
                d.outcome = "client_gone";
                d.end_ms = Some(t);
            }
        });
        self.notify.notify_waiters();
    }
}

/// One line of `/__log`: every request seen, preflights included, in arrival order.
#[derive(Clone, Debug, Serialize)]
pub struct LogEntry {
    pub seq: u64,
    pub id: String,
    /// ms since the server started.
    pub at_ms: f64,
    pub method: String,
    pub path: String,
    pub query: String,
    pub host: Option<String>,
    pub origin: Option<String>,
    pub had_traceparent: bool,
    pub traceparent: Option<String>,
    pub test_id: Option<String>,
    /// An OPTIONS request with `Access-Control-Request-Method`.
    pub preflight: bool,
    /// The preflight's `Access-Control-Request-Headers` (lower-cased by browsers).
    pub request_headers: Option<String>,
}

/// The bounded store of records and log entries.
pub struct Store {
    started: Instant,
    seq: AtomicU64,
    inner: Mutex<(VecDeque<Arc<Record>>, VecDeque<LogEntry>)>,
    notify: Arc<Notify>,
}

impl Default for Store {
    fn default() -> Self {
        Store {
            started: Instant::now(),
            seq: AtomicU64::new(0),
            inner: Mutex::new((VecDeque::new(), VecDeque::new())),
            notify: Arc::new(Notify::new()),
        }
    }
}

impl Store {
    /// Request ids: `req-<n>`, unique for the process (not reset by `/__reset`).
    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn since_start_ms(&self) -> f64 {
        ms_since(self.started)
    }

    pub fn log(&self, e: LogEntry) {
        let mut g = self.inner.lock().unwrap();
        if g.1.len() >= MAX_LOG {
            g.1.pop_front();
        }
        g.1.push_back(e);
    }

    pub fn log_snapshot(&self) -> Vec<LogEntry> {
        self.inner.lock().unwrap().1.iter().cloned().collect()
    }

    /// Creates and stores the record of a request received at `t0`.
    pub fn insert(&self, t0: Instant, truth: Truth) -> Arc<Record> {
        let rec = Arc::new(Record {
            id: truth.id.clone(),
            test_id: truth.test_id.clone(),
            t0,
            data: Mutex::new((truth, FNV_OFFSET)),
            notify: self.notify.clone(),
        });
        {
            let mut g = self.inner.lock().unwrap();
            if g.0.len() >= MAX_RECORDS {
                g.0.pop_front();
            }
            g.0.push_back(rec.clone());
        }
        self.notify.notify_waiters();
        rec
    }

    pub fn reset(&self) {
        let mut g = self.inner.lock().unwrap();
        g.0.clear();
        g.1.clear();
    }

    /// Records matching a request id or a test id, newest first.
    pub fn find(&self, id: Option<&str>, test_id: Option<&str>) -> Vec<Arc<Record>> {
        let g = self.inner.lock().unwrap();
        g.0.iter()
            .rev()
            .filter(|r| {
                id.is_none_or(|i| r.id == i)
                    && test_id.is_none_or(|t| r.test_id.as_deref() == Some(t))
            })
            .cloned()
            .collect()
    }

    /// Waits up to `wait` for a matching record to exist and be done; returns the matches then
    /// (newest first), done or not.
    pub async fn wait_for(
        &self,
        id: Option<&str>,
        test_id: Option<&str>,
        wait: Duration,
    ) -> Vec<Arc<Record>> {
        let deadline = tokio::time::Instant::now() + wait.min(Duration::from_millis(MAX_WAIT_MS));
        loop {
            // Register interest before checking, so a change between check and wait is not lost.
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let found = self.find(id, test_id);
            if found.first().is_some_and(|r| r.is_done()) {
                return found;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.find(id, test_id);
            }
        }
    }
}

/// A fresh Truth with the request's identity filled in and everything else empty.
pub fn blank(id: String, method: &str, path: &str, endpoint: &'static str) -> Truth {
    Truth {
        id,
        test_id: None,
        method: method.to_string(),
        path: path.to_string(),
        query: String::new(),
        origin: None,
        endpoint,
        stream: false,
        format: None,
        model: None,
        status: 200,
        traceparent: None,
        traceparent_valid: false,
        trace_id: String::new(),
        parent_span_id: None,
        span_id: String::new(),
        received_unix_ms: 0.0,
        headers_ms: None,
        queue_ms: None,
        prefill_ms: None,
        writes: Vec::new(),
        writes_dropped: 0,
        content_tokens: 0,
        end_ms: None,
        outcome: "running",
        client_gone_at_ms: None,
        body_bytes: 0,
        body_fnv1a64: String::new(),
        scenario: None,
        done: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_known_values() {
        assert_eq!(fnv1a64_hex(b""), "cbf29ce484222325");
        assert_eq!(fnv1a64_hex(b"a"), "af63dc4c8601ec8c");
        assert_eq!(fnv1a64_hex(b"foobar"), "85944171f73967e8");
        // Incremental == one shot.
        assert_eq!(
            fnv1a64(fnv1a64(FNV_OFFSET, b"foo"), b"bar"),
            fnv1a64(FNV_OFFSET, b"foobar")
        );
    }

    #[tokio::test]
    async fn store_is_bounded_and_finds_newest_first() {
        let s = Store::default();
        for i in 0..(MAX_RECORDS + 5) {
            let mut t = blank(format!("req-{i}"), "GET", "/v1/stream", "stream");
            t.test_id = Some(if i % 2 == 0 { "even" } else { "odd" }.into());
            s.insert(Instant::now(), t);
        }
        assert!(s.find(Some("req-0"), None).is_empty(), "oldest evicted");
        let even = s.find(None, Some("even"));
        assert_eq!(even.len(), MAX_RECORDS / 2);
        assert_eq!(even[0].id, format!("req-{}", MAX_RECORDS + 4));
        s.reset();
        assert!(s.find(None, None).is_empty());
    }

    #[tokio::test]
    async fn wait_for_wakes_on_finish() {
        let s = Arc::new(Store::default());
        let r = s.insert(Instant::now(), blank("req-1".into(), "GET", "/", "stream"));
        r.wrote(Kind::Content, 2, b"hello", None);
        let s2 = s.clone();
        let h = tokio::spawn(async move {
            s2.wait_for(Some("req-1"), None, Duration::from_secs(5))
                .await
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        r.finish("complete");
        let got = h.await.unwrap();
        let t = got[0].snapshot();
        assert!(t.done && t.outcome == "complete");
        assert_eq!((t.body_bytes, t.content_tokens), (5, 2));
        assert_eq!(t.body_fnv1a64, fnv1a64_hex(b"hello"));
        assert_eq!(t.end_ms, Some(t.writes[0].t_ms));
        // Unknown: returns empty after the wait.
        assert!(s
            .wait_for(Some("nope"), None, Duration::from_millis(10))
            .await
            .is_empty());
    }
}
