//! The beacon queue and its policy: the core decides what to send and when; the JS sender
//! (js/deliver/transport.js) only moves payloads and reports outcomes.
//!
//! Records wait here as finished JSON texts. The policy: flush a little after a record
//! completes (`FLUSH_DELAY_MS`), at once past `FLUSH_BYTES`, urgently when the page hides;
//! every payload ≤ the size the sender allows (60 KiB default, smaller for the keepalive quota
//! or a refused sendBeacon); failed sends go back to the front and wait out an exponential
//! backoff with jitter (or `Retry-After`); the queue is bounded and drops oldest, counting
//! what it dropped into the next payload. A record re-queued with the same id (a `partial`
//! sent on page hide, then completed) replaces the queued one.
//!
//! Which failures are retried and how long to wait is `retry.rs`. Kept small on purpose (a
//! `Vec`, no generic deque): it ships in the size-budgeted wasm.

use alloc::string::String;
use alloc::vec::Vec;

use crate::core::beacon::reason::FlushReason;
use crate::core::beacon::retry;
use crate::core::util::json_read;
use crate::core::util::json_write::{push_string, push_u64};

pub const MAX_PAYLOAD: usize = 60 * 1024;
pub const FLUSH_BYTES: usize = 16 * 1024;
pub const FLUSH_DELAY_MS: f64 = 1000.0;
pub const MAX_QUEUE_RECORDS: usize = 500;
pub const MAX_QUEUE_BYTES: usize = 512 * 1024;
/// Room for the envelope around the records.
const ENVELOPE_RESERVE: usize = 512;

/// A queued record: its id (the dedupe key: a record re-queued with the same id replaces the
/// queued one) and its JSON text.
struct Item {
    id: String,
    json: String,
}

impl Item {
    /// `None` unless `json` is a JSON object with a string `id` member.
    fn of(json: String) -> Option<Item> {
        let id = json_read::parse(&json)?.get("id")?.str_raw()?.into();
        Some(Item { id, json })
    }
}

/// Records sent in one payload, awaiting the sender's outcome.
struct Batch {
    id: u32,
    items: Vec<Item>,
    /// The `dropped` count the payload reported (counted again if the batch is dropped).
    dropped: u32,
}

pub struct BeaconQueue {
    sdk: String,
    session: String,
    /// Oldest first.
    queue: Vec<Item>,
    bytes: usize,
    dropped: u32,
    first_at: Option<f64>,
    /// Backoff: no non-urgent send before this time.
    hold_until: f64,
    attempt: u32,
    in_flight: Vec<Batch>,
    next_batch: u32,
}

impl BeaconQueue {
    pub fn new(sdk: &str, session: &str) -> BeaconQueue {
        BeaconQueue {
            sdk: sdk.into(),
            session: session.into(),
            queue: Vec::new(),
            bytes: 0,
            dropped: 0,
            first_at: None,
            hold_until: 0.0,
            attempt: 0,
            in_flight: Vec::new(),
            next_batch: 1,
        }
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }
    pub fn queued_bytes(&self) -> usize {
        self.bytes
    }
    pub fn dropped(&self) -> u32 {
        self.dropped
    }
    /// A record was lost before it reached the queue: counted into the next payload.
    pub fn dropped_one(&mut self) {
        self.dropped += 1;
    }

    fn remove_id(&mut self, id: &str) -> bool {
        match self.queue.iter().position(|it| it.id == id) {
            Some(i) => {
                self.bytes -= self.queue.remove(i).json.len();
                true
            }
            None => false,
        }
    }

    /// Queues a finished record (JSON object text). Same id as a queued one: replaces it.
    pub fn push(&mut self, json: String, t: f64) {
        let item = match Item::of(json) {
            Some(it) if it.json.len() + ENVELOPE_RESERVE <= MAX_PAYLOAD => it,
            // Not a record, or too big for any payload (records are bounded).
            _ => {
                self.dropped += 1;
                return;
            }
        };
        self.remove_id(&item.id);
        self.bytes += item.json.len();
        self.queue.push(item);
        while self.queue.len() > MAX_QUEUE_RECORDS || self.bytes > MAX_QUEUE_BYTES {
            self.bytes -= self.queue.remove(0).json.len();
            self.dropped += 1;
        }
        self.first_at.get_or_insert(t);
    }

    /// When the next non-urgent flush is due (absolute ms), or None with nothing queued.
    pub fn due_at(&self) -> Option<f64> {
        let first = self.first_at?;
        let at = if self.bytes >= FLUSH_BYTES { first } else { first + FLUSH_DELAY_MS };
        Some(at.max(self.hold_until))
    }

    /// True when a non-urgent flush should go now.
    pub fn is_due(&self, t: f64) -> bool {
        self.due_at().is_some_and(|at| t >= at)
    }

    /// The next payload of at most `max_bytes` (JSON text), moving its records in flight;
    /// None when nothing may be sent (empty, held by backoff unless `urgent`, or the oldest
    /// record exceeds the allowance). Its batch number is `last_batch()`. `sent_at`: now, in
    /// epoch ms on the records' `startEpochMs` clock, written as `sentAt` (whole ms) so the
    /// collector can correct the client's clock skew; omitted when negative.
    pub fn take(&mut self, max_bytes: usize, reason: FlushReason, urgent: bool, page: &str, t: f64, sent_at: f64) -> Option<String> {
        if !urgent && t < self.hold_until {
            return None;
        }
        let budget = max_bytes.min(MAX_PAYLOAD).saturating_sub(ENVELOPE_RESERVE + page.len() * 6);
        let mut n = 0;
        let mut size = 0;
        for it in &self.queue {
            if size + it.json.len() + 1 > budget {
                break;
            }
            size += it.json.len() + 1;
            n += 1;
        }
        if n == 0 {
            return None;
        }
        let items: Vec<Item> = self.queue.drain(..n).collect();
        self.bytes -= size - n;
        if self.queue.is_empty() {
            self.first_at = None;
        }
        let mut out = String::with_capacity(size + ENVELOPE_RESERVE);
        for (k, v) in [("{\"v\":1,\"sdk\":", &self.sdk), (",\"session\":", &self.session)] {
            out.push_str(k);
            push_string(&mut out, v);
        }
        out.push_str(",\"page\":");
        push_string(&mut out, page);
        out.push_str(",\"reason\":");
        push_string(&mut out, reason.as_str());
        out.push_str(",\"dropped\":");
        push_u64(&mut out, self.dropped as u64);
        if sent_at >= 0.0 {
            out.push_str(",\"sentAt\":");
            push_u64(&mut out, (sent_at + 0.5) as u64);
        }
        out.push_str(",\"records\":[");
        for (i, it) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&it.json);
        }
        out.push_str("]}");
        let id = self.next_batch;
        self.next_batch = self.next_batch.wrapping_add(1).max(1);
        self.in_flight.push(Batch { id, items, dropped: self.dropped });
        self.dropped = 0;
        Some(out)
    }

    pub fn last_batch(&self) -> u32 {
        self.in_flight.last().map_or(0, |b| b.id)
    }

    /// The outcome of sending `batch`: `status` 2xx = stored (or accepted by sendBeacon: no
    /// answer to wait for), 0 = network error, else the HTTP status; `retry_after_ms` from
    /// `Retry-After` (negative when absent); `jitter` in [0, 1).
    /// Retryable (`retry::retryable`): the records go back to the front and the queue holds
    /// for `retry::backoff_ms`. Anything else (400, 413: the collector will never take it) is
    /// dropped and counted.
    pub fn result(&mut self, batch: u32, t: f64, status: u32, retry_after_ms: f64, jitter: f64) {
        let Some(pos) = self.in_flight.iter().position(|b| b.id == batch) else { return };
        let Batch { items, dropped, .. } = self.in_flight.remove(pos);
        if (200..300).contains(&status) {
            self.attempt = 0;
            self.hold_until = 0.0;
            return;
        }
        if !retry::retryable(status) {
            self.dropped += items.len() as u32 + dropped;
            return;
        }
        self.dropped += dropped;
        // Back to the front, unless a newer version of the record was queued meanwhile.
        let mut front: Vec<Item> = Vec::with_capacity(items.len() + self.queue.len());
        for it in items {
            if !self.queue.iter().any(|q| q.id == it.id) {
                self.bytes += it.json.len();
                front.push(it);
            }
        }
        front.append(&mut self.queue);
        self.queue = front;
        self.hold_until = t + retry::backoff_ms(self.attempt, jitter, retry_after_ms);
        self.attempt += 1;
        self.first_at.get_or_insert(t);
    }

    /// Takes every queued and unacknowledged record (the page is going away and the browser
    /// refused to send): one record JSON per line, oldest first. The caller bounds what it
    /// stores; `restore` skips a line cut short.
    pub fn drain_for_persist(&mut self) -> String {
        let mut out = String::new();
        for batch in self.in_flight.drain(..) {
            for it in batch.items {
                out.push_str(&it.json);
                out.push('\n');
            }
        }
        for it in self.queue.drain(..) {
            out.push_str(&it.json);
            out.push('\n');
        }
        self.bytes = 0;
        self.first_at = None;
        out
    }

    /// Queues records given one per line: persisted by a previous page (`drain_for_persist`
    /// output), or returned by the app's `beforeSend`.
    pub fn restore(&mut self, text: &str, t: f64) {
        for line in text.split('\n') {
            if line.ends_with('}') {
                self.push(line.into(), t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    fn rec(id: u32, pad: usize) -> String {
        format!("{{\"id\":\"{id:016x}\",\"outcome\":\"ok\",\"pad\":\"{}\"}}", "x".repeat(pad))
    }

    fn ids(payload: &str) -> Vec<String> {
        payload.split("{\"id\":\"").skip(1).map(|s| s[..16].to_string()).collect()
    }

    #[test]
    fn flushes_after_the_delay_or_at_once_past_16_kib() {
        let mut tr = BeaconQueue::new("llm-rum/0.1.0", "s1");
        assert_eq!(tr.due_at(), None);
        tr.push(rec(1, 10), 100.0);
        assert_eq!(tr.due_at(), Some(100.0 + FLUSH_DELAY_MS));
        assert!(!tr.is_due(500.0));
        assert!(tr.is_due(1100.0));
        for i in 2..40 {
            tr.push(rec(i, 500), 200.0);
        }
        assert!(tr.queued_bytes() >= FLUSH_BYTES);
        assert!(tr.is_due(200.0), "size trigger");
        let p = tr.take(MAX_PAYLOAD, FlushReason::Timer, false, "/chat", 200.0, 1_764_000_000_200.4).unwrap();
        assert!(p.starts_with("{\"v\":1,\"sdk\":\"llm-rum/0.1.0\",\"session\":\"s1\",\"page\":\"/chat\",\"reason\":\"timer\",\"dropped\":0,\"sentAt\":1764000000200,\"records\":[{\"id\":\""));
        assert_eq!(ids(&p).len(), 39);
        assert_eq!(tr.queued(), 0);
        assert_eq!(tr.due_at(), None);
    }

    #[test]
    fn payloads_respect_the_size_limit_and_split() {
        let mut tr = BeaconQueue::new("sdk", "s");
        for i in 0..100 {
            tr.push(rec(i, 2000), 0.0);
        }
        let mut seen = Vec::new();
        while let Some(p) = tr.take(MAX_PAYLOAD, FlushReason::Manual, false, "/", 0.0, -1.0) {
            assert!(p.len() <= MAX_PAYLOAD, "{}", p.len());
            seen.extend(ids(&p));
            let b = tr.last_batch();
            tr.result(b, 0.0, 204, -1.0, 0.0);
        }
        assert_eq!(seen.len(), 100, "every record sent once, in order");
        assert_eq!(seen[0], format!("{:016x}", 0));
        // A smaller allowance (keepalive quota, refused sendBeacon) gives smaller payloads.
        tr.push(rec(1, 2000), 0.0);
        tr.push(rec(2, 2000), 0.0);
        let p = tr.take(3000, FlushReason::Hidden, true, "/", 0.0, -1.0).unwrap();
        assert_eq!(ids(&p).len(), 1);
        assert!(tr.take(100, FlushReason::Hidden, true, "/", 0.0, -1.0).is_none(), "a record larger than allowed waits");
    }

    #[test]
    fn retry_with_backoff_jitter_and_retry_after() {
        let mut tr = BeaconQueue::new("sdk", "s");
        tr.push(rec(1, 10), 0.0);
        tr.take(MAX_PAYLOAD, FlushReason::Timer, false, "/", 1000.0, -1.0).unwrap();
        let b = tr.last_batch();
        tr.result(b, 1000.0, 503, -1.0, 1.0);
        assert_eq!(tr.queued(), 1, "back in the queue");
        assert_eq!(tr.due_at(), Some(2000.0), "1 s backoff (jitter 1.0 → 100 %)");
        assert!(tr.take(MAX_PAYLOAD, FlushReason::Timer, false, "/", 1500.0, -1.0).is_none(), "held");
        assert!(tr.take(MAX_PAYLOAD, FlushReason::Timer, false, "/", 2000.0, -1.0).is_some());
        tr.result(tr.last_batch(), 2000.0, 0, -1.0, 0.0);
        assert_eq!(tr.due_at(), Some(3000.0), "2 s × 50 % jitter floor");
        tr.take(MAX_PAYLOAD, FlushReason::Timer, false, "/", 3000.0, -1.0).unwrap();
        tr.result(tr.last_batch(), 3000.0, 429, 30_000.0, 0.0);
        assert_eq!(tr.due_at(), Some(33_000.0), "Retry-After wins when longer");
        // Urgent sends ignore the hold: the page is going away.
        assert!(tr.take(MAX_PAYLOAD, FlushReason::Pagehide, true, "/", 3001.0, -1.0).is_some());
        tr.result(tr.last_batch(), 0.0, 200, -1.0, 0.0);
        assert_eq!(tr.queued(), 0);
        // The cap: after many failures, never more than 60 s.
        tr.push(rec(2, 10), 0.0);
        for k in 0..20 {
            let t = 100_000.0 * (k + 1) as f64;
            tr.take(MAX_PAYLOAD, FlushReason::Timer, false, "/", t, -1.0).unwrap();
            tr.result(tr.last_batch(), t, 500, -1.0, 1.0);
            assert!(tr.due_at().unwrap() - t <= retry::BACKOFF_CAP_MS);
        }
    }

    #[test]
    fn non_retryable_failures_are_dropped_and_counted() {
        let mut tr = BeaconQueue::new("sdk", "s");
        tr.push(rec(1, 10), 0.0);
        tr.push(rec(2, 10), 0.0);
        tr.take(MAX_PAYLOAD, FlushReason::Timer, false, "/", 1000.0, -1.0).unwrap();
        tr.result(tr.last_batch(), 1000.0, 400, -1.0, 0.5);
        assert_eq!(tr.queued(), 0);
        assert_eq!(tr.dropped(), 2);
        tr.push(rec(3, 10), 1000.0);
        let p = tr.take(MAX_PAYLOAD, FlushReason::Timer, false, "/", 5000.0, -1.0).unwrap();
        assert!(p.contains("\"dropped\":2,"), "reported in the next payload");
        assert_eq!(tr.dropped(), 0);
    }

    #[test]
    fn bounded_queue_drops_oldest() {
        let mut tr = BeaconQueue::new("sdk", "s");
        for i in 0..(MAX_QUEUE_RECORDS as u32 + 10) {
            tr.push(rec(i, 10), 0.0);
        }
        assert_eq!(tr.queued(), MAX_QUEUE_RECORDS);
        assert_eq!(tr.dropped(), 10);
        let p = tr.take(MAX_PAYLOAD, FlushReason::Manual, false, "/", 0.0, -1.0).unwrap();
        assert_eq!(ids(&p)[0], format!("{:016x}", 10), "oldest went first");
        let mut big = BeaconQueue::new("sdk", "s");
        for i in 0..2000 {
            big.push(rec(i, 1000), 0.0);
        }
        assert!(big.queued_bytes() <= MAX_QUEUE_BYTES);
    }

    #[test]
    fn same_id_supersedes_a_queued_partial() {
        let mut tr = BeaconQueue::new("sdk", "s");
        tr.push("{\"id\":\"00000000000000aa\",\"outcome\":\"partial\"}".into(), 0.0);
        tr.push(rec(1, 1), 0.0);
        tr.push("{\"id\":\"00000000000000aa\",\"outcome\":\"ok\"}".into(), 0.0);
        let p = tr.take(MAX_PAYLOAD, FlushReason::Manual, false, "/", 0.0, -1.0).unwrap();
        assert_eq!(ids(&p), vec![format!("{:016x}", 1), "00000000000000aa".to_string()]);
        assert!(!p.contains("partial"));
        // A failed batch does not resurrect a record superseded meanwhile.
        tr.push("{\"id\":\"00000000000000bb\",\"outcome\":\"partial\"}".into(), 0.0);
        tr.take(MAX_PAYLOAD, FlushReason::Hidden, true, "/", 0.0, -1.0).unwrap();
        tr.push("{\"id\":\"00000000000000bb\",\"outcome\":\"ok\"}".into(), 0.0);
        tr.result(tr.last_batch(), 0.0, 0, -1.0, 0.0);
        let p = tr.take(MAX_PAYLOAD, FlushReason::Pagehide, true, "/", 0.0, -1.0).unwrap();
        assert_eq!(ids(&p), vec!["00000000000000bb".to_string()]);
        assert!(p.contains("\"ok\""));
    }

    #[test]
    fn persist_and_restore_round_trip() {
        let mut tr = BeaconQueue::new("sdk", "s");
        for i in 0..5 {
            tr.push(rec(i, 100), 0.0);
        }
        tr.take(700, FlushReason::Hidden, true, "/", 0.0, -1.0).unwrap(); // one in flight, unacknowledged
        let text = tr.drain_for_persist();
        assert_eq!(text.lines().count(), 5, "in-flight ones too");
        assert_eq!(tr.queued(), 0);
        let mut next = BeaconQueue::new("sdk", "s2");
        // What the sender stores may be cut at the front (bounded storage): that line is skipped.
        next.restore(&text[40..], 50.0);
        assert_eq!(next.queued(), 4);
        next.restore(&text, 50.0);
        next.restore("garbage\n{\"x\":1}\n", 50.0);
        assert_eq!(next.queued(), 5, "same ids replace, garbage is ignored");
        let p = next.take(MAX_PAYLOAD, FlushReason::Restore, false, "/", 50.0, -1.0).unwrap();
        assert_eq!(ids(&p).len(), 5);
    }
}
