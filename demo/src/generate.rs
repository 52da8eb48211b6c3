//! The timed writer: turns a scenario into writes at absolute deadlines, and the body that
//! carries them to the HTTP layer.
//!
//! Owner of: when each byte is handed over, and noticing when the client is gone.
//!
//! Why absolute deadlines: every write is due at `generation start + offset` and is awaited
//! with `sleep_until` (timer.rs: µs-precise, unlike tokio's 1 ms wheel), so a late wake-up
//! delays that one write but never the ones after it: no drift accumulates over long answers.
//!
//! Why a channel body: the generator runs as its own task and hands each write to a bounded
//! channel that the response body drains. The send time recorded is right after the hand-over,
//! which is as close to "written to the socket" as the application can see (hyper writes a frame
//! as soon as it polls it; TCP_NODELAY keeps the kernel from merging them). When the client stops
//! reading, TCP buffers and then the channel fill up and the generator waits: writes are then
//! recorded when they actually left, which is the truth the client saw.

use crate::answer;
use crate::formats::{split_point, Event, Kind, Shaper};
use crate::scenario::Scenario;
use crate::timer;
use crate::truth::Record;
use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

/// Writes waiting in the channel before the generator blocks (beyond this the client is slow).
/// Token events are small, so 64 of them are a few kB: enough to absorb scheduling hiccups
/// without hiding a client that stopped reading.
const CHANNEL_CAPACITY: usize = 64;
/// For /bytes, whose writes can be large: keep backpressure tight so that `body_bytes` of a
/// stalled reader stays close to what the socket actually accepted.
const BYTES_CHANNEL_CAPACITY: usize = 2;

/// After an in-band error event (`error_at`) the connection stays open at most this long for
/// the client to end it, then the server drops it.
const ERROR_HOLD: Duration = Duration::from_secs(10);

type Msg = Result<Bytes, std::io::Error>;

/// Response body fed by the generator. Dropping it before its end means the client went away
/// (hyper drops the body when the connection fails or closes).
pub struct ChanBody {
    rx: mpsc::Receiver<Msg>,
    rec: Arc<Record>,
    ended: bool,
}

impl Body for ChanBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(Ok(b))) => Poll::Ready(Some(Ok(Frame::data(b)))),
            Poll::Ready(Some(Err(e))) => {
                // Injected failure: hyper aborts the connection without the final chunk.
                self.ended = true;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                self.ended = true;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

impl Drop for ChanBody {
    fn drop(&mut self) {
        if !self.ended {
            self.rec.client_gone();
        }
    }
}

/// The client went away; stop generating.
#[derive(Debug)]
struct Gone;

/// One streaming generation in progress.
pub struct Generator {
    rec: Arc<Record>,
    sc: Scenario,
    shaper: Shaper,
    tx: mpsc::Sender<Msg>,
    /// Generation start: the slot was acquired. Schedule offsets count from here.
    t_gen: Instant,
    /// Planned time (ms from t_gen) of the previous write: pings fill the gaps after it.
    last_ms: f64,
    /// Events held back for one later write (`events_per_write`, `proxy_buffer`).
    held: Held,
}

/// Events waiting to go out together.
#[derive(Default)]
struct Held {
    bytes: Vec<u8>,
    tokens: u64,
    events: u64,
    /// `content` when any content event is held, else the last event's kind.
    kind: Option<Kind>,
}

/// When the first write of a stream is due (ms from generation start): the preamble with early
/// headers, else the first content write (its first half when split). Late headers go out then.
pub fn first_write_ms(sc: &Scenario) -> f64 {
    if !sc.headers_late {
        return 0.0;
    }
    match sc.schedule().next() {
        Some(c) if sc.split => (c.at_ms - sc.split_ms).max(0.0),
        Some(c) => c.at_ms,
        None => sc.prefill_ms,
    }
}

impl Generator {
    /// Creates the generator and the body it feeds.
    pub fn new(
        rec: Arc<Record>,
        sc: Scenario,
        shaper: Shaper,
        t_gen: Instant,
    ) -> (Generator, ChanBody) {
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let body = ChanBody {
            rx,
            rec: rec.clone(),
            ended: false,
        };
        (
            Generator {
                rec,
                sc,
                shaper,
                tx,
                t_gen,
                last_ms: 0.0,
                held: Held::default(),
            },
            body,
        )
    }

    /// Runs the whole stream, holding the generation slot until it ends.
    pub async fn run(mut self, permit: OwnedSemaphorePermit) {
        let outcome = self.stream().await.unwrap_or("client_gone");
        drop(permit);
        if outcome == "client_gone" {
            self.rec.client_gone();
        } else {
            self.rec.finish(outcome);
        }
        // Dropping `self.tx` ends the body.
    }

    async fn stream(&mut self) -> Result<&'static str, Gone> {
        let pre_at = first_write_ms(&self.sc);
        self.last_ms = pre_at;
        for ev in self.shaper.preamble() {
            self.emit(pre_at, ev).await?;
        }

        let sc = self.sc.clone();
        for chunk in sc.schedule() {
            let mut text = String::new();
            for i in chunk.first..chunk.first + chunk.count {
                text.push_str(answer::token_of(sc.answer, sc.from + i));
            }
            let ev = self.shaper.content(&text, chunk.count);
            let first_at = self.first_part_at(chunk.at_ms, &ev);
            self.pings_until(first_at).await?;
            if sc.fail_at.is_some_and(|k| k < chunk.first + chunk.count) {
                // Abrupt drop before the write carrying token k.
                self.sleep_until(first_at).await?;
                self.flush().await?;
                let _ = self
                    .tx
                    .send(Err(std::io::Error::other("scripted failure (fail_at)")))
                    .await;
                return Ok("failed");
            }
            if sc.error_at.is_some_and(|k| k < chunk.first + chunk.count) {
                // The provider fails mid-answer: its error event instead of this write, then
                // silence on an open connection until the client ends it (bounded).
                let err = self.shaper.error(sc.error_failed);
                self.emit(chunk.at_ms, err).await?;
                self.flush().await?;
                return match tokio::time::timeout(ERROR_HOLD, self.tx.closed()).await {
                    Ok(()) => Err(Gone),
                    Err(_) => Ok("failed"),
                };
            }
            self.emit(chunk.at_ms, ev).await?;
            self.last_ms = chunk.at_ms;
        }

        let end_at = self.last_ms;
        for ev in self.shaper.epilogue(sc.tokens) {
            self.emit(end_at, ev).await?;
        }
        self.flush().await?;
        Ok("complete")
    }

    /// Where a write split in two (`split=1`) is cut, if it is.
    fn cut(&self, ev: &Event) -> Option<usize> {
        if self.sc.split && ev.kind != Kind::Ping {
            split_point(&ev.bytes)
        } else {
            None
        }
    }

    /// When the first byte of an event due at `at_ms` goes out: `split_ms` early for the first
    /// half of a split event (never before the previous write), so that the event completes on
    /// schedule either way.
    fn first_part_at(&self, at_ms: f64, ev: &Event) -> f64 {
        match self.cut(ev) {
            Some(_) => (at_ms - self.sc.split_ms).max(self.last_ms),
            None => at_ms,
        }
    }

    /// Sends one event, complete at `at_ms`, in one write or (split=1) two.
    async fn emit(&mut self, at_ms: f64, ev: Event) -> Result<(), Gone> {
        match self.cut(&ev) {
            Some(i) => {
                let first_at = self.first_part_at(at_ms, &ev);
                let Event {
                    kind,
                    tokens,
                    mut bytes,
                } = ev;
                let second = bytes.split_off(i);
                self.send_at(
                    first_at,
                    Event {
                        kind,
                        tokens: 0,
                        bytes,
                    },
                    Some(0),
                )
                .await?;
                self.send_at(
                    at_ms,
                    Event {
                        kind,
                        tokens,
                        bytes: second,
                    },
                    Some(1),
                )
                .await
            }
            None => self.send_at(at_ms, ev, None).await,
        }
    }

    /// Keep-alive pings in the gap between the previous write and `next_ms`.
    async fn pings_until(&mut self, next_ms: f64) -> Result<(), Gone> {
        if !self.sc.pings || self.shaper.ping().is_none() {
            return Ok(());
        }
        match self.sc.ping_ms {
            Some(every) => {
                // Bounded by the gap length / every (every >= 1 ms) and by wall time.
                let mut t = self.last_ms + every;
                while t < next_ms {
                    let ping = self.shaper.ping().unwrap();
                    self.send_at(t, ping, None).await?;
                    t += every;
                }
            }
            None if next_ms - self.last_ms >= 2.0 => {
                let ping = self.shaper.ping().unwrap();
                self.send_at((self.last_ms + next_ms) / 2.0, ping, None)
                    .await?;
            }
            None => {}
        }
        Ok(())
    }

    async fn sleep_until(&self, at_ms: f64) -> Result<(), Gone> {
        // Stop waiting as soon as the body is dropped, so a gone client frees its slot now.
        tokio::select! {
            _ = timer::sleep_until(deadline(self.t_gen, at_ms)) => Ok(()),
            _ = self.tx.closed() => Err(Gone),
        }
    }

    /// Hands `ev` to the body at `at_ms` after generation start and records it — or, when
    /// the scenario groups writes, holds it for a later write (which keeps the order).
    async fn send_at(&mut self, at_ms: f64, ev: Event, part: Option<u8>) -> Result<(), Gone> {
        self.sleep_until(at_ms).await?;
        let hold = self.sc.proxy_buffer.is_some() || (self.sc.events_per_write > 1 && ev.kind == Kind::Content);
        if hold {
            let h = &mut self.held;
            h.bytes.extend_from_slice(&ev.bytes);
            h.tokens += ev.tokens;
            h.events += (ev.tokens > 0) as u64;
            if h.kind != Some(Kind::Content) {
                h.kind = Some(ev.kind);
            }
            let full = match self.sc.proxy_buffer {
                Some(n) => h.bytes.len() as u64 >= n,
                None => h.events >= self.sc.events_per_write,
            };
            return if full { self.flush().await } else { Ok(()) };
        }
        self.flush().await?;
        let bytes = Bytes::from(ev.bytes);
        let t = hand_over(&self.tx, &self.rec, bytes.clone()).await?;
        self.rec.wrote_at(t, ev.kind, ev.tokens, &bytes, part);
        Ok(())
    }

    /// Sends what is held, now, as one write.
    async fn flush(&mut self) -> Result<(), Gone> {
        let Some(kind) = self.held.kind else { return Ok(()) };
        let h = std::mem::take(&mut self.held);
        let bytes = Bytes::from(h.bytes);
        let t = hand_over(&self.tx, &self.rec, bytes.clone()).await?;
        self.rec.wrote_events_at(t, kind, h.tokens, h.events, &bytes, None);
        Ok(())
    }
}

/// Hands `bytes` to the response body; returns when they were handed over (ms on `rec`'s
/// clock), the ground truth's send time. Stamped *before* the hand-over when the channel has
/// room: stamping after it let a preempted task record a write later than the browser received
/// it (the body is polled on another worker thread) — seen on a loaded machine as a client
/// "ahead" of the server by up to 2 s. When the channel is full (a reader applying
/// backpressure), the bytes go in only when the body takes earlier ones: stamped then.
async fn hand_over(tx: &mpsc::Sender<Msg>, rec: &Record, bytes: Bytes) -> Result<f64, Gone> {
    let t = rec.now_ms();
    match tx.try_send(Ok(bytes)) {
        Ok(()) => Ok(t),
        Err(mpsc::error::TrySendError::Closed(_)) => Err(Gone),
        Err(mpsc::error::TrySendError::Full(msg)) => {
            tx.send(msg).await.map_err(|_| Gone)?;
            Ok(rec.now_ms())
        }
    }
}

/// The instant "`at_ms` after `t0`".
pub fn deadline(t0: Instant, at_ms: f64) -> Instant {
    t0 + Duration::from_secs_f64(at_ms.max(0.0) / 1000.0)
}

/// Sends `total` deterministic bytes (`i * 31 mod 251`) in writes of `chunk` bytes every
/// `gap_ms`, from `t_start`; for transparency tests of /bytes.
pub async fn run_bytes(
    rec: Arc<Record>,
    tx: BytesSender,
    total: u64,
    chunk: u64,
    gap_ms: f64,
    t_start: Instant,
) {
    let mut sent = 0u64;
    let mut n = 0u64;
    while sent < total {
        let len = chunk.min(total - sent);
        let buf: Vec<u8> = (sent..sent + len).map(byte_at).collect();
        tokio::select! {
            _ = timer::sleep_until(deadline(t_start, n as f64 * gap_ms)) => {}
            _ = tx.0.closed() => { rec.client_gone(); return; }
        }
        let Ok(t) = hand_over(&tx.0, &rec, Bytes::from(buf.clone())).await else {
            rec.client_gone();
            return;
        };
        rec.wrote_at(t, Kind::Bytes, 0, &buf, None);
        sent += len;
        n += 1;
    }
    rec.finish("complete");
}

/// The sending half for [`run_bytes`].
pub struct BytesSender(mpsc::Sender<Msg>);

/// A body fed by [`run_bytes`].
pub fn bytes_channel(rec: Arc<Record>) -> (BytesSender, ChanBody) {
    let (tx, rx) = mpsc::channel(BYTES_CHANNEL_CAPACITY);
    (
        BytesSender(tx),
        ChanBody {
            rx,
            rec,
            ended: false,
        },
    )
}

/// The deterministic byte at offset `i` of /bytes.
pub fn byte_at(i: u64) -> u8 {
    (i * 31 % 251) as u8
}
