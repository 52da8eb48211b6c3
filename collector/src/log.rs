//! Logging: `tracing` events, formatted by `tracing-subscriber`, written to stderr by a thread
//! of their own.
//!
//! Nothing about logging may stop the collector. `eprintln!` panics when stderr fails (a
//! closed pipe, a full disk), which once killed the writer thread; tracing-subscriber by
//! default reports its own write errors with `eprintln!` too (`log_internal_errors`), so that
//! is off. Writes go through a bounded queue to a logging thread: a stderr that blocks (a pipe
//! nobody reads) stalls only that thread, and lines that do not fit the queue are dropped and
//! counted. Repeated events (timeouts, refusals) are summarised by `Every`, not logged one by
//! one: an attacker must not be able to turn requests into log volume.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::prelude::*;

/// Lines dropped because the queue to stderr was full.
pub static DROPPED: AtomicU64 = AtomicU64::new(0);
const QUEUE_LINES: usize = 4096;

#[derive(Clone)]
struct Queue(SyncSender<Vec<u8>>);

/// One formatted event (tracing-subscriber writes each event with one `write_all`).
struct Line<'a>(&'a Queue);

impl Write for Line<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Err(TrySendError::Full(_)) = self.0 .0.try_send(buf.to_vec()) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Queue {
    type Writer = Line<'a>;
    fn make_writer(&'a self) -> Line<'a> {
        Line(self)
    }
}

/// Installs the process's logger: level from `RUST_LOG` (`info` by default; the
/// tracing-subscriber `Targets` syntax, e.g. `debug` or `llm_rum_collector=debug`).
/// Call once, from the binary (library users and tests install their own, or none).
pub fn init() {
    let (tx, rx) = sync_channel::<Vec<u8>>(QUEUE_LINES);
    let spawned = std::thread::Builder::new()
        .name("rum-log".into())
        .spawn(move || {
            let mut err = std::io::stderr();
            for line in rx {
                // A failed write is dropped: there is nowhere left to report it.
                let _ = err.write_all(&line);
            }
        });
    if spawned.is_err() {
        return; // no thread, no logs; the collector runs on
    }
    let spec = std::env::var("RUST_LOG").unwrap_or_default();
    let (filter, bad) = match spec.parse::<Targets>() {
        Ok(t) if !spec.trim().is_empty() => (t, false),
        r => (Targets::new().with_default(LevelFilter::INFO), r.is_err()),
    };
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(Queue(tx))
        .with_ansi(false)
        .with_target(false)
        .log_internal_errors(false);
    let _ = tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .try_init();
    if bad {
        tracing::warn!(RUST_LOG = %spec, "RUST_LOG not understood; logging at info");
    }
}

/// Summarises a repeated event: `hit()` answers `Some(n)` at most once per period (the first
/// time at once), n being how many happened since the last time it answered. One per call
/// site: `static LOG: Every = Every::new(Duration::from_secs(10));`.
pub struct Every {
    period: Duration,
    state: Mutex<(Option<Instant>, u64)>,
}

impl Every {
    pub const fn new(period: Duration) -> Every {
        Every {
            period,
            state: Mutex::new((None, 0)),
        }
    }

    pub fn hit(&self) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.1 += 1;
        let now = Instant::now();
        if s.0.is_none_or(|t| now.duration_since(t) >= self.period) {
            let n = s.1;
            *s = (Some(now), 0);
            Some(n)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_summarises() {
        let e = Every::new(Duration::from_millis(50));
        assert_eq!(e.hit(), Some(1));
        assert_eq!((e.hit(), e.hit()), (None, None));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(e.hit(), Some(3));
    }
}
